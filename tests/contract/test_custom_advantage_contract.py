"""Contract: custom advantages (``--custom-advantage-function-path``), slime's signature.

A plugin author provides::

    def advantages(args, rollout_data) -> None

``rollout_data`` holds per sample ``rewards`` (floats), ``log_probs``, ``kl``, ``loss_masks`` and
``response_lengths`` (vime/backends/loss_hooks.py lists the rest); the hook sets
``rollout_data["advantages"]`` and ``["returns"]``: one finite tensor per sample, as long as its
response. With no path, vime's GRPO default is tested (each token gets its sample's reward).

    python tools/run_contract.py tests/contract/test_custom_advantage_contract.py \\
        --custom-advantage-function-path my_pkg.adv.advantages
"""

from __future__ import annotations

import pytest
import torch
from contract_support import ContractViolation, call_hook, is_overridden, load_hook, make_args
from loss_hook_support import contract_batch

from vime.backends.loss_hooks import rollout_data_for_advantages

FLAG = "custom-advantage-function-path"
DEFAULT = "vime.backends.loss_hooks.grpo_advantage_function"


def _run():
    path, fn = load_hook(FLAG, DEFAULT)
    batch = contract_batch()
    data = rollout_data_for_advantages(batch, [torch.zeros(n) for n in batch.response_lengths])
    rewards = list(data["rewards"])
    result = call_hook(fn, f"advantage function {path}", make_args(), data)
    return path, batch, data, rewards, result


def test_sets_advantages_and_returns_per_token():
    path, batch, data, rewards, result = _run()
    if result is not None:
        raise ContractViolation(f"advantage function {path} must fill rollout_data in place and return None")
    for key in ("advantages", "returns"):
        values = data.get(key)
        if values is None or len(values) != len(batch):
            raise ContractViolation(
                f"advantage function {path}: rollout_data[{key!r}] needs one tensor per sample"
            )
        for i, (value, length) in enumerate(zip(values, batch.response_lengths, strict=True)):
            value = torch.as_tensor(value)
            if value.numel() != length or not torch.isfinite(value).all():
                raise ContractViolation(
                    f"advantage function {path}: {key}[{i}] must be {length} finite values, got {value.tolist()}"
                )
    if data["rewards"] != rewards:
        raise ContractViolation(f"advantage function {path} changed rollout_data['rewards']")


@pytest.mark.skipif(is_overridden(FLAG), reason="checks vime's default")
def test_default_gives_each_token_its_reward():
    _, batch, data, rewards, _ = _run()
    for value, reward, length in zip(data["advantages"], rewards, batch.response_lengths, strict=True):
        assert torch.equal(value, torch.full((length,), reward))
