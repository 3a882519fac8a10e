"""Contract: the policy loss's reducer (``--custom-pg-loss-reducer-function-path``), slime's signature.

A plugin author provides::

    def make_reducer(total_lengths, response_lengths, loss_masks, calculate_per_token_loss)
        -> Callable[[torch.Tensor], torch.Tensor]

The reducer maps a packed per-token tensor to a scalar that is linear in it and ignores masked
tokens (slime's ``sum_of_sample_mean`` is the model; vime divides the result by the step's samples,
or tokens with ``--calculate-per-token-loss``). With no path, vime's default is tested.

    python tools/run_contract.py tests/contract/test_custom_pg_loss_reducer_contract.py \\
        --custom-pg-loss-reducer-function-path my_pkg.reduce.make_reducer
"""

from __future__ import annotations

import pytest
import torch
from contract_support import ContractViolation, call_hook, is_overridden, load_hook
from loss_hook_support import contract_batch

FLAG = "custom-pg-loss-reducer-function-path"
DEFAULT = "vime.backends.loss_hooks.sum_of_sample_mean_reducer"


def _reducer(per_token: bool):
    path, factory = load_hook(FLAG, DEFAULT)
    batch = contract_batch()
    masks = [torch.tensor(m, dtype=torch.float32) for m in batch.loss_masks]
    totals = [len(t) for t in batch.tokens]
    reducer = call_hook(factory, f"pg-loss reducer {path}", totals, batch.response_lengths, masks, per_token)
    if not callable(reducer):
        raise ContractViolation(
            f"pg-loss reducer {path} must return a callable, got {type(reducer).__name__}"
        )
    return path, batch, reducer


@pytest.mark.parametrize("per_token", [False, True])
def test_reducer_is_a_linear_masked_scalar(per_token):
    path, batch, reducer = _reducer(per_token)
    n = sum(batch.response_lengths)
    values = torch.linspace(-1, 2, n)
    out = reducer(values)
    if not isinstance(out, torch.Tensor) or out.numel() != 1 or not torch.isfinite(out):
        raise ContractViolation(f"pg-loss reducer {path}: the result must be a finite scalar tensor")
    if not torch.allclose(reducer(3 * values), 3 * out, atol=1e-6):
        raise ContractViolation(f"pg-loss reducer {path}: the result must scale with the loss (linear)")
    masked = sum(batch.response_lengths[:3]) + 1  # sample 3's second token has loss mask 0
    changed = values.clone()
    changed[masked] = 100.0
    if not torch.allclose(reducer(changed), out, atol=1e-6):
        raise ContractViolation(f"pg-loss reducer {path}: a masked token changed the result")


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default")
def test_default_is_the_sum_of_per_sample_means():
    _, batch, reducer = _reducer(False)
    values = torch.arange(sum(batch.response_lengths), dtype=torch.float32)
    # samples: [0,1,2] -> 1, [3,4] -> 3.5, [5] -> 5, [6,(7),8,9] masked mean -> 23/3
    assert float(reducer(values)) == pytest.approx(1 + 3.5 + 5 + 23 / 3)
