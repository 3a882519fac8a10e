"""vime.utils.args.defaults: typed configs take a missing flag's default from the parser, never a copy."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vime.rollout.data_source import DataSourceConfig
from vime.utils.args.defaults import flag_defaults, flag_value


def test_a_missing_flag_gets_the_parsers_default_and_a_given_one_wins():
    config = DataSourceConfig.from_args(SimpleNamespace(rollout_seed=7))
    assert config.rollout_seed == 7
    assert config.input_key == flag_defaults()["input_key"] == "input"
    assert config.n_samples_per_prompt == flag_defaults()["n_samples_per_prompt"]


def test_a_name_that_is_no_flag_is_an_error():
    with pytest.raises(AttributeError, match="'no_such_flag' is not a vime flag"):
        flag_value(SimpleNamespace(), "no_such_flag")
