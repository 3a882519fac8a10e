"""The data source's cursor: groups and indices, shuffling per epoch, buffer, save and resume."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from vime.rollout.data_source import (
    RolloutDataSource,
    RolloutDataSourceWithBuffer,
    make_data_source,
    pop_first,
)
from vime.rollout.synthetic import write_arithmetic_dataset
from vime.utils.types import Sample

NUM_PROMPTS = 10


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    return write_arithmetic_dataset(tmp_path / "prompts.jsonl", NUM_PROMPTS, seed=1, max_operand=50)


def make_args(prompts: Path, tmp_path: Path, **overrides) -> SimpleNamespace:
    values = {
        "prompt_data": str(prompts),
        "label_key": "label",
        "n_samples_per_prompt": 3,
        "rollout_shuffle": True,
        "rollout_seed": 7,
        "save": str(tmp_path / "ckpt"),
        "load": str(tmp_path / "ckpt"),
        "buffer_filter_path": None,
    }
    values.update(overrides)
    return SimpleNamespace(**values)


def prompts_of(groups: list[list[Sample]]) -> list[str]:
    return [g[0].prompt for g in groups]


def test_groups_hold_copies_with_running_indices(prompts: Path, tmp_path: Path) -> None:
    source = RolloutDataSource(make_args(prompts, tmp_path))
    groups = source.get_samples(2) + source.get_samples(1)
    assert [[s.index for s in g] for g in groups] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert [[s.group_index for s in g] for g in groups] == [[0] * 3, [1] * 3, [2] * 3]
    assert all(len({s.prompt for s in g}) == 1 for g in groups)
    groups[0][0].metadata["touched"] = True  # copies are independent of each other and the dataset
    assert "touched" not in groups[0][1].metadata
    assert all("touched" not in s.metadata for s in source.dataset.origin_samples)


def test_shuffle_is_deterministic_per_seed_and_epoch(prompts: Path, tmp_path: Path) -> None:
    first = prompts_of(RolloutDataSource(make_args(prompts, tmp_path)).get_samples(NUM_PROMPTS))
    again = prompts_of(RolloutDataSource(make_args(prompts, tmp_path)).get_samples(NUM_PROMPTS))
    other_seed = prompts_of(
        RolloutDataSource(make_args(prompts, tmp_path, rollout_seed=8)).get_samples(NUM_PROMPTS)
    )
    in_file_order = prompts_of(
        RolloutDataSource(make_args(prompts, tmp_path, rollout_shuffle=False)).get_samples(NUM_PROMPTS)
    )
    assert first == again
    assert first != other_seed
    assert sorted(first) == sorted(in_file_order)
    assert in_file_order == [json.loads(line)["input"] for line in prompts.read_text().splitlines()]


def test_epochs_wrap_and_reshuffle(prompts: Path, tmp_path: Path) -> None:
    source = RolloutDataSource(make_args(prompts, tmp_path))
    epoch0 = prompts_of(source.get_samples(NUM_PROMPTS - 2))
    straddle = prompts_of(source.get_samples(4))  # 2 from epoch 0, 2 from epoch 1
    assert source.epoch_id == 1 and source.sample_offset == 2
    rest = prompts_of(source.get_samples(NUM_PROMPTS - 2))
    epoch1 = straddle[2:] + rest
    assert sorted(epoch0 + straddle[:2]) == sorted(epoch1)  # each epoch sees every prompt once
    assert epoch0 + straddle[:2] != epoch1  # in a new order


def test_request_larger_than_the_dataset_spans_epochs(prompts: Path, tmp_path: Path) -> None:
    source = RolloutDataSource(make_args(prompts, tmp_path, n_samples_per_prompt=1))
    groups = source.get_samples(2 * NUM_PROMPTS + 3)
    assert len(groups) == 2 * NUM_PROMPTS + 3
    assert source.epoch_id == 2 and source.sample_offset == 3


def test_save_and_load_resume_at_the_same_offset(prompts: Path, tmp_path: Path) -> None:
    original = RolloutDataSourceWithBuffer(make_args(prompts, tmp_path))
    original.get_samples(4)
    original.get_samples(8)  # into epoch 1
    original.save(rollout_id=2)
    expected = original.get_samples(5)

    resumed = RolloutDataSourceWithBuffer(make_args(prompts, tmp_path))
    resumed.load(rollout_id=2)
    assert (resumed.epoch_id, resumed.sample_offset) == (1, 2)
    got = resumed.get_samples(5)
    assert prompts_of(got) == prompts_of(expected)
    assert [[s.index for s in g] for g in got] == [[s.index for s in g] for g in expected]


def test_load_latest_and_missing_state(prompts: Path, tmp_path: Path) -> None:
    source = RolloutDataSourceWithBuffer(make_args(prompts, tmp_path))
    source.get_samples(1)
    source.save(1)
    source.get_samples(2)
    source.save(3)
    latest = RolloutDataSourceWithBuffer(make_args(prompts, tmp_path))
    latest.load()
    assert latest.sample_offset == 3
    fresh = RolloutDataSourceWithBuffer(make_args(prompts, tmp_path))
    fresh.load(rollout_id=99)  # nothing saved there: start from the beginning
    assert (fresh.epoch_id, fresh.sample_offset) == (0, 0)


def test_buffer_is_served_first_and_saved_with_the_state(prompts: Path, tmp_path: Path) -> None:
    source = RolloutDataSourceWithBuffer(make_args(prompts, tmp_path))
    taken = source.get_samples(2)
    for sample in taken[1]:
        sample.response, sample.status = "partial", Sample.Status.ABORTED
    source.add_samples([taken[1]])
    source.save(0)

    resumed = RolloutDataSourceWithBuffer(make_args(prompts, tmp_path))
    resumed.load(0)
    assert resumed.get_buffer_length() == 1
    groups = resumed.get_samples(2)
    assert groups[0][0].response == "partial" and groups[0][0].status is Sample.Status.ABORTED
    assert [s.index for s in groups[0]] == [s.index for s in taken[1]]
    assert groups[1][0].index == 6  # the next fresh prompt continues the counters
    assert resumed.get_buffer_length() == 0


def test_non_json_buffer_falls_back_to_pickle(prompts: Path, tmp_path: Path) -> None:
    source = RolloutDataSourceWithBuffer(make_args(prompts, tmp_path, n_samples_per_prompt=1))
    group = source.get_samples(1)[0]
    group[0].multimodal_inputs = {"images": [{1, 2}]}  # a set is not JSON
    source.add_samples([group])
    source.save(4)
    assert (Path(tmp_path) / "ckpt" / "rollout" / "data_source_state_4.pkl").is_file()
    resumed = RolloutDataSourceWithBuffer(make_args(prompts, tmp_path, n_samples_per_prompt=1))
    resumed.load(4)
    assert resumed.get_samples(1)[0][0].multimodal_inputs == {"images": [{1, 2}]}


def test_add_samples_rejects_partial_groups(prompts: Path, tmp_path: Path) -> None:
    source = RolloutDataSourceWithBuffer(make_args(prompts, tmp_path))
    group = source.get_samples(1)[0]
    with pytest.raises(ValueError, match=r"group of 2 samples, expected n_samples_per_prompt=3"):
        source.add_samples([group[:2]])
    with pytest.raises(TypeError, match=r"list of groups"):
        source.add_samples(group)
    with pytest.raises(RuntimeError, match=r"read-only"):
        RolloutDataSource(make_args(prompts, tmp_path)).add_samples([group])


def test_custom_buffer_filter_and_data_source_path(prompts: Path, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "my_source.py").write_text(
        "from vime.rollout.data_source import RolloutDataSourceWithBuffer\n"
        "def newest_first(args, rollout_id, buffer, num_samples):\n"
        "    taken = list(reversed(buffer[-num_samples:]))\n"
        "    del buffer[-num_samples:]\n"
        "    return taken\n"
        "class MySource(RolloutDataSourceWithBuffer):\n"
        "    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    args = make_args(
        prompts, tmp_path, n_samples_per_prompt=1, buffer_filter_path="my_source.newest_first",
        data_source_path="my_source.MySource",
    )  # fmt: skip
    source = make_data_source(args)
    assert type(source).__name__ == "MySource"
    groups = source.get_samples(3)
    source.add_samples(groups)
    assert [g[0].index for g in source.get_samples(2)] == [2, 1]
    assert [g[0].index for g in pop_first(args, None, source.buffer, 5)] == [0]
