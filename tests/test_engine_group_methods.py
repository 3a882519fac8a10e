"""EngineGroup's control calls are a closed set that both kinds of engine implement by name:
the VLLMEngine Ray actor vime starts, and ExternalEngine for servers started elsewhere."""

from __future__ import annotations

import inspect

import pytest

from vime.backends.vllm_utils.engine_actor import VLLMEngine
from vime.ray.engine_group import CONTROL_METHODS, EngineGroup, ExternalEngine


def _params(fn) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p != "self"]


@pytest.mark.parametrize("name", sorted(CONTROL_METHODS))
def test_both_kinds_of_engine_take_the_same_arguments(name):
    actor, external = getattr(VLLMEngine, name), getattr(ExternalEngine, name)
    # positional arguments fan out to both alike; the external one may lack trailing options
    assert _params(external) == _params(actor)[: len(_params(external))], name


def test_a_name_outside_the_set_is_refused_before_anything_is_sent():
    group = EngineGroup.__new__(EngineGroup)  # no engines: the refusal comes first
    group.actors, group.external = [], []
    with pytest.raises(ValueError, match="'restart_all' is not an engine control call"):
        group.call("restart_all")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not an engine control call"):
        group.call_each("pause_everything")  # type: ignore[arg-type]
