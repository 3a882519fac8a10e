"""The typed views of ``args`` (frozen dataclasses built with ``config_from_args``).

Each view's field names must be real flag dests (or mapped to one), and a view built from an empty
namespace must equal its dataclass defaults: the defaults written in the class and the parser's
defaults must not drift apart.
"""

from __future__ import annotations

from argparse import Namespace
from dataclasses import MISSING, dataclass, fields

import pytest

from vime.algorithms.estimators import ESTIMATORS, estimator
from vime.algorithms.loss_select import LossSelection
from vime.backends.loss_hooks import HookFlags
from vime.backends.train_prep import AdvantageConfig
from vime.preflight import PathTemplates
from vime.rollout.data_source import DataSourcePaths
from vime.rollout.rm_hub.reward_config import RewardConfig
from vime.rollout.rollout_config import RolloutConfig, engines_started
from vime.rollout.rollout_metrics import RolloutLogConfig
from vime.rollout.sampling_params import SamplingConfig
from vime.rollout.sft_rollout import SftConfig
from vime.utils.args.defaults import config_from_args
from vime.utils.eval_config import EvalFlags
from vime.utils.lora_settings import LoraFlags

VIEWS = [
    AdvantageConfig,
    DataSourcePaths,
    EvalFlags,
    HookFlags,
    LoraFlags,
    LossSelection,
    PathTemplates,
    RewardConfig,
    RolloutConfig,
    RolloutLogConfig,
    SamplingConfig,
    SftConfig,
]


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.__name__)
def test_view_defaults_are_the_parsers(view):
    built = view.from_args(Namespace())
    for f in fields(view):
        default = f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]
        assert getattr(built, f.name) == default, f"{view.__name__}.{f.name}"


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.__name__)
def test_view_reads_what_args_say(view):
    """A value set on args reaches the view (a field that ignored args would keep its default)."""
    probes = {"str | None": "given-value", "str": "given-value", "int | None": 7, "int": 7}
    sample = next(f for f in fields(view) if f.type in probes)
    built = view.from_args(Namespace(**{sample.name: probes[sample.type]}))
    assert getattr(built, sample.name) == probes[sample.type]


@dataclass(frozen=True)
class _View:
    rollout_batch_size: int | None
    size: int
    doubled: int
    fixed: str


def test_config_from_args_renames_derives_and_takes_given_values():
    args = Namespace(rollout_batch_size=3, n_samples_per_prompt=4)
    view = config_from_args(
        _View,
        args,
        dests={"size": "n_samples_per_prompt", "doubled": ("n_samples_per_prompt", lambda n: 2 * n)},
        fixed="x",
    )
    assert view == _View(rollout_batch_size=3, size=4, doubled=8, fixed="x")


def test_config_from_args_refuses_a_field_that_is_no_flag():
    @dataclass(frozen=True)
    class Typo:
        rollout_batch_sise: int | None = None

    with pytest.raises(AttributeError, match="rollout_batch_sise"):
        config_from_args(Typo, Namespace())


def test_engines_started_counts_the_managers_engines_at_least_one():
    assert engines_started(Namespace()) == 1
    assert engines_started(Namespace(rollout_num_engines_total=0)) == 1
    assert engines_started(Namespace(rollout_num_engines_total=3)) == 3
    assert (
        RolloutConfig.from_args(
            Namespace(rollout_num_engines_total=3, vllm_server_concurrency=8)
        ).request_slots
        == 24
    )


def test_every_estimator_flag_choice_has_a_row_and_an_unknown_name_is_one_line():
    from vime.utils.args.defaults import flag_defaults

    assert flag_defaults()["advantage_estimator"] in ESTIMATORS
    for name in ESTIMATORS:
        assert estimator(name).name == name
    with pytest.raises(ValueError, match="unknown --advantage-estimator 'a2c': choose one of grpo"):
        estimator("a2c")
