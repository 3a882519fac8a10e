"""Build the policy (and critic, reference) from a Hugging Face checkpoint and wrap it for DP."""

from __future__ import annotations

import logging
from argparse import Namespace

import torch
import torch.distributed as dist
from torch import nn

logger = logging.getLogger(__name__)


def load_causal_lm(path: str, dtype: torch.dtype, attention_dropout: float | None = None) -> nn.Module:
    """A Hugging Face causal LM from a local dir (never the hub); ``attention_dropout`` overrides the
    config's (``--attention-dropout``)."""
    from transformers import AutoModelForCausalLM

    overrides = {} if attention_dropout is None else {"attention_dropout": attention_dropout}
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=True, **overrides)
    model.config.use_cache = False
    return model


class ValueModel(nn.Module):
    """The critic: the policy's backbone with a scalar head, one value per position."""

    def __init__(self, causal_lm: nn.Module) -> None:
        super().__init__()
        self.backbone = causal_lm.base_model if hasattr(causal_lm, "base_model") else causal_lm.model
        hidden = causal_lm.config.hidden_size
        self.value_head = nn.Linear(hidden, 1, dtype=next(causal_lm.parameters()).dtype)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.value_head(hidden).squeeze(-1)


def resolve_strategy(args: Namespace, world_size: int) -> str:
    """``auto``: nothing for one rank, FSDP2 when it is importable, else DDP."""
    strategy = args.torch_dist_strategy
    if strategy != "auto":
        return strategy
    if world_size == 1:
        return "none"
    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401
    except ImportError:
        return "ddp"
    return "fsdp2"


def wrap_for_data_parallel(model: nn.Module, strategy: str) -> nn.Module:
    """Shard (FSDP2: each decoder layer, then the root) or replicate (DDP) the model."""
    if strategy == "none":
        return model
    if not dist.is_initialized():
        raise RuntimeError(f"--torch-dist-strategy {strategy} needs torch.distributed initialised")
    if strategy == "fsdp2":
        from torch.distributed.fsdp import fully_shard

        for module in model.modules():
            if type(module).__name__.endswith("DecoderLayer"):
                fully_shard(module)
        fully_shard(model)
        return model
    if strategy == "ddp":
        return nn.parallel.DistributedDataParallel(model)
    raise ValueError(f"unknown --torch-dist-strategy {strategy!r}: choose auto, fsdp2, ddp or none")


def unwrap(model: nn.Module) -> nn.Module:
    """The module under a DDP wrapper (FSDP2 shards in place and needs no unwrapping)."""
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


def lr_lambda(args: Namespace, total_steps: int):
    """Warmup then constant / linear / cosine decay towards ``--min-lr``, as a LambdaLR factor."""
    from vime.backends.lr_schedule import LrSchedule

    return LrSchedule.from_args(args, total_steps).factor


def make_optimizer(args: Namespace, params, lr: float) -> torch.optim.Optimizer:
    """``--optimizer adam``: AdamW (decoupled weight decay, as Megatron's adam); ``sgd``: SGD with
    ``--sgd-momentum`` and L2 weight decay (as Megatron's)."""
    if args.optimizer == "sgd":
        return torch.optim.SGD(
            [p for p in params if p.requires_grad],
            lr=lr,
            momentum=args.sgd_momentum,
            weight_decay=args.weight_decay,
        )
    return torch.optim.AdamW(
        [p for p in params if p.requires_grad],
        lr=lr,
        betas=(args.adam_beta1, args.adam_beta2),
        eps=args.adam_eps,
        weight_decay=args.weight_decay,
    )
