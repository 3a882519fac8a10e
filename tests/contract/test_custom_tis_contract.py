"""Contract: truncated importance sampling (``--use-tis --custom-tis-function-path``), slime's signature.

A plugin author provides::

    def tis(args, *, pg_loss, train_log_probs, rollout_log_probs, loss_masks, **kwargs)
        -> tuple[torch.Tensor, list[torch.Tensor], dict[str, torch.Tensor]]

``pg_loss`` is the packed per-token policy loss; the log-probs and masks are per sample (``kwargs``
also brings ``total_lengths`` and ``response_lengths``). It returns the corrected per-token loss
(same shape), the loss masks (tokens it rejects set to 0; same shapes) and per-token metrics. With
no path, vime's default is tested: weights clamp(exp(train - rollout), --tis-clip-low, --tis-clip).

    python tools/run_contract.py tests/contract/test_custom_tis_contract.py \\
        --custom-tis-function-path my_pkg.tis.tis
"""

from __future__ import annotations

import pytest
import torch
from contract_support import ContractViolation, call_hook, is_overridden, load_hook, make_args
from loss_hook_support import contract_batch

from vime.backends.loss_hooks import pack
from vime.backends.train_data import pad_2d

FLAG = "custom-tis-function-path"
DEFAULT = "vime.backends.loss_hooks.vanilla_tis_function"


def _run(rollout_shift: float = 0.0):
    path, fn = load_hook(FLAG, DEFAULT)
    batch = contract_batch()
    lengths = batch.response_lengths
    old = batch.computed["old_log_probs"]
    pg_loss = pack(pad_2d([torch.linspace(-1, 1, n) for n in lengths]), lengths)
    out = call_hook(
        fn, f"TIS function {path}", make_args(use_tis=True, tis_clip=2.0, tis_clip_low=0.0),
        pg_loss=pg_loss, train_log_probs=old, rollout_log_probs=[o + rollout_shift for o in old],
        loss_masks=[torch.tensor(m, dtype=torch.float32) for m in batch.loss_masks],
        total_lengths=[len(t) for t in batch.tokens], response_lengths=lengths,
    )  # fmt: skip
    return path, batch, pg_loss, out


def test_returns_loss_masks_and_metrics_in_shape():
    path, batch, pg_loss, out = _run(rollout_shift=-0.3)
    if not isinstance(out, tuple | list) or len(out) != 3:
        raise ContractViolation(f"TIS function {path} must return (pg_loss, loss_masks, metrics)")
    loss, masks, metrics = out
    if not isinstance(loss, torch.Tensor) or loss.shape != pg_loss.shape or not torch.isfinite(loss).all():
        raise ContractViolation(
            f"TIS function {path}: pg_loss must keep shape {tuple(pg_loss.shape)} and be finite"
        )
    if len(masks) != len(batch) or any(
        torch.as_tensor(m).numel() != n for m, n in zip(masks, batch.response_lengths, strict=True)
    ):
        raise ContractViolation(f"TIS function {path}: one loss mask per sample, as long as its response")
    for key, value in (metrics or {}).items():
        if torch.as_tensor(value).shape != pg_loss.shape:
            raise ContractViolation(f"TIS function {path}: metric {key!r} must be per token like pg_loss")


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default")
def test_default_weights_are_clamped_ratios():
    _, _, pg_loss, (loss, _, _) = _run(rollout_shift=0.0)
    assert torch.allclose(loss, pg_loss)  # engine and trainer agree: weight 1
    _, _, pg_loss, (loss, _, metrics) = _run(rollout_shift=-5.0)
    assert torch.allclose(loss, 2.0 * pg_loss) and float(metrics["tis_clipfrac"].mean()) == 1.0
