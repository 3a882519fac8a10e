"""The reward hub's dispatch: rm_type sources and precedence, custom and group RMs, and errors.

Custom reward plugins are real modules written to a temporary directory and loaded by dotted
path, as a plugin author's own code would be.
"""

from __future__ import annotations

import asyncio
import textwrap
from types import SimpleNamespace

import pytest

from vime.rollout.rm_hub import RewardInputError, async_rm, batched_async_rm, rule_based_reward
from vime.utils.types import Sample

PLUGIN = """
import asyncio

async def length_rm(args, sample, **kwargs):
    await asyncio.sleep(0)
    return float(len(sample.response))

def sync_rm(args, sample, **kwargs):
    return 0.25

async def text_rm(args, sample, **kwargs):
    return "good"

async def nan_rm(args, sample, **kwargs):
    return float("nan")

async def numpy_rm(args, sample, **kwargs):
    import numpy
    return numpy.float32(sample.metadata.get("value", 0.5))

async def dict_rm(args, sample, **kwargs):
    return {"score": 1.0, "acc": True}

async def group_rank_rm(args, samples, **kwargs):
    order = sorted(range(len(samples)), key=lambda i: len(samples[i].response))
    ranks = [0.0] * len(samples)
    for rank, i in enumerate(order):
        ranks[i] = rank / max(1, len(samples) - 1)
    return ranks

async def short_group_rm(args, samples, **kwargs):
    return [1.0]
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch) -> str:
    (tmp_path / "my_rewards.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "my_rewards"


def make_args(**overrides) -> SimpleNamespace:
    values = {
        "rm_type": "math",
        "custom_rm_path": None,
        "group_rm": False,
        "reward_key": None,
        "eval_reward_key": None,
    }
    values.update(overrides)
    return SimpleNamespace(**values)


def make_sample(index: int = 0, response: str = r"\boxed{7}", label=None, **kwargs) -> Sample:
    return Sample(index=index, response=response, label="7" if label is None else label, **kwargs)


def run(coro):
    return asyncio.run(coro)


def test_math_with_string_and_dict_labels() -> None:
    args = make_args()
    assert run(async_rm(args, make_sample())) == 1
    assert run(async_rm(args, make_sample(label={"ground_truth": "7", "source": "gsm8k"}))) == 1
    assert run(async_rm(args, make_sample(response=r"\boxed{8}"))) == 0


def test_metadata_rm_type_overrides_args() -> None:
    sample = make_sample(response="the Eiffel Tower", label="Eiffel Tower", metadata={"rm_type": "f1"})
    assert run(async_rm(make_args(rm_type="math"), sample)) == pytest.approx(1.0)


def test_boxed_prefix_scores_only_the_boxed_answer() -> None:
    sample = make_sample(response=r"Paris is nice. \boxed{Rome}", label="Rome")
    assert run(async_rm(make_args(rm_type="boxed_f1"), sample)) == pytest.approx(1.0)
    assert run(async_rm(make_args(rm_type="f1"), sample)) < 1.0
    assert run(async_rm(make_args(rm_type="boxed_math"), make_sample())) == 1


def test_dapo_dict_reward_needs_reward_key() -> None:
    sample = make_sample(response="Answer: 7")
    with pytest.raises(RewardInputError, match=r"dict reward .* --reward-key score"):
        run(async_rm(make_args(rm_type="dapo"), sample))
    assert run(async_rm(make_args(rm_type="dapo", reward_key="score"), sample))["score"] == 1.0


def test_custom_rm_path_sync_and_async(plugin: str) -> None:
    sample = make_sample(response="abcd")
    assert run(async_rm(make_args(custom_rm_path=f"{plugin}.length_rm"), sample)) == 4.0
    assert run(async_rm(make_args(custom_rm_path=f"{plugin}.sync_rm"), sample)) == 0.25


def test_numpy_rewards_are_numbers_and_their_nan_is_caught(plugin: str) -> None:
    args = make_args(custom_rm_path=f"{plugin}.numpy_rm")
    assert run(async_rm(args, make_sample())) == 0.5
    with pytest.raises(RewardInputError, match=r"returned nan for sample 2: a reward must be finite"):
        run(async_rm(args, make_sample(index=2, metadata={"value": float("nan")})))


def test_per_sample_custom_rm_path_wins(plugin: str) -> None:
    sample = make_sample(response="abcd", custom_rm_path=f"{plugin}.sync_rm")
    assert run(async_rm(make_args(custom_rm_path=f"{plugin}.length_rm"), sample)) == 0.25


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (
            "text_rm",
            r"custom RM my_rewards.text_rm returned str 'good' for sample 3: a reward must be a float",
        ),
        ("nan_rm", r"returned nan for sample 3: a reward must be finite"),
        ("dict_rm", r"dict reward with keys \['acc', 'score'\] for sample 3: pass --reward-key"),
    ],
)
def test_malformed_custom_reward_is_a_one_line_error(plugin: str, function: str, message: str) -> None:
    with pytest.raises(RewardInputError, match=message) as info:
        run(async_rm(make_args(custom_rm_path=f"{plugin}.{function}"), make_sample(index=3)))
    assert "\n" not in str(info.value)


def test_dict_reward_with_wrong_key_names_the_key(plugin: str) -> None:
    args = make_args(custom_rm_path=f"{plugin}.dict_rm", reward_key="reward")
    with pytest.raises(RewardInputError, match=r"'reward' entry is None: it must hold a number"):
        run(async_rm(args, make_sample(index=3)))


def test_missing_label_and_dict_label_without_ground_truth() -> None:
    sample = Sample(index=5, response=r"\boxed{1}")
    with pytest.raises(RewardInputError, match=r"sample 5 has no label for rm_type 'math': set --label-key"):
        run(async_rm(make_args(), sample))
    sample.label = {"answer": "1"}
    with pytest.raises(
        RewardInputError, match=r"sample 5 has a dict label without 'ground_truth' \(keys: \['answer'\]\)"
    ):
        run(async_rm(make_args(), sample))


def test_unknown_or_missing_rm_type() -> None:
    with pytest.raises(RewardInputError, match=r"unknown rm_type 'maths' for sample 0: use one of .*math"):
        run(async_rm(make_args(rm_type="maths"), make_sample()))
    with pytest.raises(RewardInputError, match=r"pass --rm-type \(e.g. math\) or --custom-rm-path"):
        run(async_rm(make_args(rm_type=None), make_sample()))


def test_bad_custom_path_names_module_and_attribute(plugin: str) -> None:
    with pytest.raises(ImportError, match=r"module 'my_rewards' has no attribute 'nope'"):
        run(async_rm(make_args(custom_rm_path=f"{plugin}.nope"), make_sample()))


def test_batched_rule_based_keeps_order() -> None:
    samples = [make_sample(i, response=rf"\boxed{{{v}}}") for i, v in enumerate([7, 6, 7, 0])]
    assert run(batched_async_rm(make_args(), samples)) == [1, 0, 1, 0]
    assert run(batched_async_rm(make_args(), [])) == []


def test_group_rm_gets_the_whole_group(plugin: str) -> None:
    args = make_args(custom_rm_path=f"{plugin}.group_rank_rm", group_rm=True)
    samples = [make_sample(i, response="x" * n) for i, n in enumerate([3, 1, 2])]
    assert run(batched_async_rm(args, samples)) == [1.0, 0.0, 0.5]


def test_batched_without_group_rm_scores_a_per_sample_custom_rm_one_by_one(plugin: str) -> None:
    args = make_args(custom_rm_path=f"{plugin}.length_rm", group_rm=False)
    samples = [make_sample(i, response="x" * n) for i, n in enumerate([3, 1])]
    assert run(batched_async_rm(args, samples)) == [3.0, 1.0]


def test_group_rm_returning_too_few_rewards(plugin: str) -> None:
    args = make_args(custom_rm_path=f"{plugin}.short_group_rm", group_rm=True)
    samples = [make_sample(i) for i in range(3)]
    with pytest.raises(RewardInputError, match=r"returned 1 rewards for a batch of 3 samples"):
        run(batched_async_rm(args, samples))


def test_random_needs_no_label() -> None:
    values = {rule_based_reward("random", Sample(index=i)) for i in range(64)}
    assert values == {0, 1}
