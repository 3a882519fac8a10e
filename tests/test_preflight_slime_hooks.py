"""Preflight takes slime's hook signatures as slime calls them, and its reward probe scores a sample
shaped like a generated one (token ids and response length)."""

from __future__ import annotations

import sys
import textwrap
from argparse import Namespace

import pytest

from vime.preflight import PreflightError, _tokenize_probe, check_hooks
from vime.utils.types import Sample


@pytest.fixture
def hook_module(tmp_path, monkeypatch):
    (tmp_path / "slime_style_hooks.py").write_text(
        textwrap.dedent(
            """
            def compute_mis_weights_with_cp(args, *, pg_loss, train_log_probs, rollout_log_probs,
                                            loss_masks, total_lengths, response_lengths, **kwargs):
                return pg_loss, loss_masks, {}

            def tis_positional_only(args, pg_loss, weights):
                return pg_loss

            def sample_hook(args, sample, *, rollout_id, evaluation):
                return sample
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "slime_style_hooks"
    sys.modules.pop("slime_style_hooks", None)


def test_a_tis_hook_with_slimes_keyword_only_signature_is_accepted(hook_module):
    args = Namespace(custom_tis_function_path=f"{hook_module}.compute_mis_weights_with_cp")
    assert "custom_tis_function_path" in check_hooks(args)


def test_a_tis_hook_that_cannot_take_the_keywords_is_refused(hook_module):
    args = Namespace(custom_tis_function_path=f"{hook_module}.tis_positional_only")
    with pytest.raises(PreflightError, match="pg_loss, train_log_probs"):
        check_hooks(args)


def test_a_sample_hook_with_keyword_only_parameters_is_accepted(hook_module):
    args = Namespace(rollout_sample_hook_path=[f"{hook_module}.sample_hook"])
    check_hooks(args)


def test_the_reward_probe_sample_carries_token_ids(tiny_model_dir):
    sample = Sample(prompt="What is 2+3?", label="5", response="\\boxed{5}", index=0)
    _tokenize_probe(Namespace(hf_checkpoint=str(tiny_model_dir)), sample)
    assert sample.tokens and 0 < sample.response_length < len(sample.tokens)
