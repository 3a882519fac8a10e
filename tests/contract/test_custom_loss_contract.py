"""Contract: custom loss (``--loss-type custom_loss --custom-loss-function-path``), slime's signature.

A plugin author provides::

    def loss(args, batch, logits, sum_of_sample_mean) -> tuple[torch.Tensor, dict]

``logits`` are packed ``[1, sum(total_lengths), vocab]`` float32 (requires grad); ``batch`` holds per
sample ``unconcat_tokens``, ``total_lengths``, ``response_lengths``, ``loss_masks``, ``advantages``,
``log_probs`` (old), ``rewards`` (vime/backends/loss_hooks.py lists the rest); ``sum_of_sample_mean``
reduces a packed per-token tensor. It returns a finite scalar that gradients flow through to the
logits, and metrics that are scalars. With no path, vime's reference (a PPO-clip loss) is tested.

    python tools/run_contract.py tests/contract/test_custom_loss_contract.py \\
        --custom-loss-function-path my_pkg.losses.loss
"""

from __future__ import annotations

import math

import pytest
import torch
from contract_support import ContractViolation, call_hook, is_overridden, load_hook, make_args
from loss_hook_support import contract_logits, slime_contract_batch

from vime.backends.loss_hooks import sum_of_sample_mean_reducer

FLAG = "custom-loss-function-path"
DEFAULT = "vime.backends.loss_hooks.policy_loss_function"


def _call():
    path, fn = load_hook(FLAG, DEFAULT)
    batch = slime_contract_batch()
    logits = contract_logits_for(batch)
    reducer = sum_of_sample_mean_reducer(
        batch["total_lengths"], batch["response_lengths"], batch["loss_masks"]
    )
    out = call_hook(fn, f"custom loss {path}", make_args(loss_type="custom_loss"), batch, logits, reducer)
    return path, logits, out


def contract_logits_for(batch):
    from loss_hook_support import contract_batch

    return contract_logits(contract_batch())


def test_returns_a_differentiable_scalar_and_scalar_metrics():
    path, logits, out = _call()
    if not isinstance(out, tuple | list) or len(out) != 2:
        raise ContractViolation(f"custom loss {path} must return (loss, metrics); got {type(out).__name__}")
    loss, metrics = out
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not math.isfinite(float(loss)):
        raise ContractViolation(f"custom loss {path}: the loss must be a finite scalar tensor, got {loss!r}")
    if not loss.requires_grad:
        raise ContractViolation(f"custom loss {path}: the loss does not depend on the logits (no gradient)")
    loss.backward()
    if logits.grad is None or not torch.isfinite(logits.grad).all() or not logits.grad.abs().sum() > 0:
        raise ContractViolation(f"custom loss {path}: no finite, non-zero gradient reaches the logits")
    if not isinstance(metrics, dict):
        raise ContractViolation(f"custom loss {path}: metrics must be a dict, got {type(metrics).__name__}")
    for key, value in metrics.items():
        if torch.as_tensor(value).numel() != 1:
            raise ContractViolation(f"custom loss {path}: metric {key!r} is not a scalar")


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default")
def test_default_is_vimes_policy_loss():
    from loss_hook_support import contract_batch

    from vime.algorithms.loss import LossConfig, actor_loss
    from vime.backends.loss_hooks import get_log_probs_and_entropy
    from vime.backends.train_data import pad_2d

    _, logits, (loss, _) = _call()
    batch = slime_contract_batch()
    _, lp = get_log_probs_and_entropy(
        logits, args=make_args(), unconcat_tokens=batch["unconcat_tokens"],
        total_lengths=batch["total_lengths"], response_lengths=batch["response_lengths"],
    )  # fmt: skip
    piece = contract_batch()
    expected, _ = actor_loss(
        LossConfig(), pad_2d(lp["log_probs"]), pad_2d(piece.computed["old_log_probs"]),
        pad_2d(piece.computed["advantages"]), pad_2d(piece.loss_masks), 1.0,
    )  # fmt: skip
    assert float(loss) == pytest.approx(float(expected), rel=1e-5)
