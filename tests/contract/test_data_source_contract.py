"""Contract: data sources (``--data-source-path``).

A plugin author provides a class, constructed as ``cls(args)``, with::

    get_samples(num_samples: int) -> list[list[Sample]]   # num_samples groups of n_samples_per_prompt
    add_samples(groups: list[list[Sample]]) -> None       # groups given back (partial rollout)
    save(rollout_id: int) -> None                         # state under args.save
    load(rollout_id: int | None = None) -> None           # state from args.load
    __len__() -> int

Handed-out samples are PENDING prompts (prompt set, no response yet) with ``group_index`` shared
inside a group and ``index`` unique. Groups given back come out again before new prompts, and a
data source saved at step k and loaded into a fresh instance hands out the same next prompts
(checkpoint resume loses and repeats nothing). Labels may be strings or dicts. With no path,
vime's ``RolloutDataSourceWithBuffer`` on a small JSONL file is tested.

    python tools/run_contract.py tests/contract/test_data_source_contract.py --data-source-path my_pkg.data.MySource
"""

from __future__ import annotations

import json

import pytest
from contract_support import ContractViolation, check_sample, hook_path, load_hook, make_args

from vime.utils.types import Sample

FLAG = "data-source-path"
DEFAULT = "vime.rollout.data_source.RolloutDataSourceWithBuffer"


@pytest.fixture
def args(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    rows = [{"input": f"What is {i}+{i}?", "label": str(2 * i)} for i in range(5)]
    rows[1]["label"] = {"ground_truth": "2"}
    prompts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return make_args(
        prompt_data=str(prompts),
        input_key="input",
        label_key="label",
        metadata_key="metadata",
        apply_chat_template=False,
        rollout_global_dataset=True,
        rollout_shuffle=True,
        save=str(tmp_path / "ckpt"),
        load=str(tmp_path / "ckpt"),
        data_source_path=hook_path(FLAG, DEFAULT),
    )


def _make(args):
    path, cls = load_hook(FLAG, DEFAULT)
    try:
        return path, cls(args)
    except Exception as exc:
        raise ContractViolation(
            f"data source {path}: {path}(args) raised {type(exc).__name__}: {exc}"
        ) from exc


def _check_groups(groups, path, n_groups, n_per):
    if (
        not isinstance(groups, list)
        or len(groups) != n_groups
        or not all(isinstance(g, list) for g in groups)
    ):
        raise ContractViolation(
            f"data source {path}: get_samples({n_groups}) must return {n_groups} groups (list[list[Sample]])"
        )
    for g, group in enumerate(groups):
        if len(group) != n_per:
            raise ContractViolation(
                f"data source {path}: group {g} has {len(group)} samples; expected n_samples_per_prompt={n_per}"
            )
        for sample in group:
            check_sample(sample, f"data source {path}: group {g}", generated=False)
            if sample.status != Sample.Status.PENDING:
                raise ContractViolation(
                    f"data source {path}: handed-out samples must be PENDING, got {sample.status.name}"
                )
        if len({s.group_index for s in group}) != 1:
            raise ContractViolation(f"data source {path}: group {g} mixes group_index values")
    indices = [s.index for g in groups for s in g]
    if len(set(indices)) != len(indices):
        raise ContractViolation(f"data source {path}: sample indices repeat: {indices}")


def _prompts(groups):
    return [g[0].prompt for g in groups]


def test_hands_out_groups_of_pending_prompts(args):
    path, source = _make(args)
    groups = source.get_samples(3)
    _check_groups(groups, path, 3, args.n_samples_per_prompt)
    if not isinstance(len(source), int):
        raise ContractViolation(f"data source {path}: len() must be an int")


def test_groups_given_back_come_out_first(args):
    path, source = _make(args)
    first = source.get_samples(2)
    source.add_samples([first[1]])
    again = source.get_samples(2)
    if again[0] is not first[1] and _prompts(again[:1]) != _prompts(first[1:]):
        raise ContractViolation(
            f"data source {path}: a group given back with add_samples was not handed out next"
        )


def test_save_and_load_resume_at_the_same_prompt(args):
    path, source = _make(args)
    source.get_samples(2)
    source.save(4)
    expected = _prompts(source.get_samples(2))
    _, fresh = _make(args)
    fresh.load(4)
    resumed = _prompts(fresh.get_samples(2))
    if resumed != expected:
        raise ContractViolation(
            f"data source {path}: after load(4) it hands out {resumed}, but the saved one went on with {expected}"
        )


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
