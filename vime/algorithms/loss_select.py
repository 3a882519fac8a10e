"""Which loss a run trains with (``--loss-type``), the SFT loss, and the rules for the loss hooks.

``policy_loss`` is the RL loss (:func:`vime.algorithms.loss.actor_loss`); ``sft_loss`` is slime's
masked cross-entropy, ``-mean(log p(token))`` over the loss-masked response tokens, aggregated like
the RL loss (per-sample means, or a token mean with ``--calculate-per-token-loss``) so that it does
not depend on how the batch is split; ``custom_loss`` calls ``--custom-loss-function-path`` with
slime's signature (``vime/backends/loss_hooks.py``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch

from vime.algorithms.aggregation import aggregate
from vime.algorithms.estimators import estimator
from vime.utils.args.defaults import config_from_args

LOSS_TYPES = ("policy_loss", "sft_loss", "custom_loss")


@dataclass(frozen=True)
class LossSelection:
    """The flags that choose the loss and its hooks (checked once by :func:`validate_loss_args`)."""

    loss_type: str = "policy_loss"
    custom_loss_function_path: str | None = None
    custom_tis_function_path: str | None = None
    custom_pg_loss_reducer_function_path: str | None = None
    use_tis: bool = False
    advantage_estimator: str = "grpo"
    train_backend: str = "auto"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LossSelection:
        return config_from_args(cls, args)


def validate_loss_args(args: argparse.Namespace) -> None:
    """One line per bad combination (raises ValueError)."""
    sel = LossSelection.from_args(args)
    loss_type, path = sel.loss_type, sel.custom_loss_function_path
    if loss_type == "custom_loss" and not path:
        raise ValueError("--loss-type custom_loss needs --custom-loss-function-path module.fn")
    if path and loss_type != "custom_loss":
        raise ValueError(
            f"--custom-loss-function-path is used only with --loss-type custom_loss (it is {loss_type}): add it"
        )
    if sel.custom_tis_function_path and not sel.use_tis:
        raise ValueError("--custom-tis-function-path replaces truncated importance sampling: add --use-tis")
    if loss_type == "sft_loss" and estimator(sel.advantage_estimator).needs_critic:
        raise ValueError("--loss-type sft_loss trains no critic: drop --advantage-estimator ppo")
    megatron_gaps = [
        flag
        for flag, used in (
            ("--loss-type custom_loss", loss_type == "custom_loss"),
            ("--custom-tis-function-path", sel.custom_tis_function_path),
            ("--custom-pg-loss-reducer-function-path", sel.custom_pg_loss_reducer_function_path),
        )
        if used
    ]
    if sel.train_backend == "megatron" and megatron_gaps:
        raise ValueError(
            f"{megatron_gaps[0]} runs on the torch backend only so far: use --train-backend torch"
        )
    if loss_type != "policy_loss" and sel.custom_pg_loss_reducer_function_path:
        raise ValueError(
            f"--custom-pg-loss-reducer-function-path reduces the policy loss, but --loss-type is {loss_type}"
        )


def sft_loss(
    log_probs: torch.Tensor, loss_mask: torch.Tensor, agg_mode: str, denominator: float
) -> tuple[torch.Tensor, dict[str, float]]:
    """Negative log-likelihood of the masked response tokens, this piece's share of the global mean."""
    loss = -aggregate(log_probs, loss_mask, agg_mode, denominator)
    return loss, {"loss": loss.item(), "sft_loss": loss.item()}
