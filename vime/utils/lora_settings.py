"""The LoRA flags (``vime/utils/args/lora.py``) checked and resolved once, for both backends and the engines."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from vime.algorithms.estimators import estimator
from vime.utils.args.defaults import config_from_args
from vime.utils.args.lora import ALL_LINEAR, VLLM_MAX_LORA_RANKS


class LoraArgumentError(ValueError):
    """A bad LoRA flag; the message is one line naming the flag and the fix."""


@dataclass(frozen=True)
class LoraFlags:
    """The flags LoRA reads, as given (:class:`LoraSettings` is what they resolve to)."""

    lora_rank: int = 0
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    target_modules: str | None = "all-linear"
    exclude_modules: str | None = None
    lora_adapter_path: str | None = None
    lora_sync: str = "auto"
    rollout_external_engine_addrs: list[str] | None = None
    train_backend: str = "auto"
    save_hf: str | None = None
    advantage_estimator: str = "grpo"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LoraFlags:
        return config_from_args(cls, args)


@dataclass(frozen=True)
class LoraSettings:
    """What the trainer and the engines need to know about the adapters."""

    rank: int = 0
    alpha: int = 16
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ALL_LINEAR
    adapter_path: str | None = None
    sync: str = "adapter"  # adapter | merged

    @property
    def enabled(self) -> bool:
        return self.rank > 0

    @property
    def scale(self) -> float:
        return self.alpha / self.rank if self.rank else 0.0

    @property
    def sends_adapter(self) -> bool:
        return self.enabled and self.sync == "adapter"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LoraSettings:
        return cls.from_flags(LoraFlags.from_args(args))

    @classmethod
    def from_flags(cls, flags: LoraFlags) -> LoraSettings:
        rank = int(flags.lora_rank)
        adapter_path = flags.lora_adapter_path
        if adapter_path and rank <= 0:
            rank = adapter_rank(adapter_path)
        return cls(
            rank=rank,
            alpha=int(flags.lora_alpha),
            dropout=float(flags.lora_dropout),
            target_modules=parse_modules(flags.target_modules, flags.exclude_modules),
            adapter_path=adapter_path,
            sync=resolve_lora_sync(flags),
        )


def parse_modules(target: str | None, exclude: str | None = None) -> tuple[str, ...]:
    """``all-linear`` or ``a,b,c`` minus the excluded names, in order, without repeats."""
    names: list[str] = []
    for item in (target or "all-linear").split(","):
        item = item.strip()
        if item in ("all-linear", "all_linear", "all"):
            names.extend(ALL_LINEAR)
        elif item:
            names.append(item)
    dropped = {m.strip() for m in (exclude or "").split(",") if m.strip()}
    return tuple(dict.fromkeys(n for n in names if n not in dropped))


def adapter_rank(path: str) -> int:
    """The rank ``r`` in an adapter's ``adapter_config.json`` (PEFT's layout)."""
    config = Path(path) / "adapter_config.json"
    try:
        return int(json.loads(config.read_text())["r"])
    except (OSError, ValueError, KeyError) as exc:
        raise LoraArgumentError(
            f"--lora-adapter-path {path}: no readable adapter_config.json with 'r' there "
            f"({type(exc).__name__}); give a directory saved by vime or PEFT (save_pretrained)"
        ) from None


def resolve_lora_sync(flags: LoraFlags) -> str:
    """``--lora-sync`` made concrete: external engines may lack ``--enable-lora``, so they get merged weights."""
    if flags.lora_sync != "auto":
        return flags.lora_sync
    return "merged" if flags.rollout_external_engine_addrs else "adapter"


def max_lora_rank_for(rank: int) -> int:
    """The smallest rank vLLM's ``--max-lora-rank`` accepts that holds ``rank``."""
    for allowed in VLLM_MAX_LORA_RANKS:
        if allowed >= rank:
            return allowed
    raise LoraArgumentError(
        f"--lora-rank {rank} is above vLLM's largest --max-lora-rank {VLLM_MAX_LORA_RANKS[-1]}: lower it"
    )


def validate_lora_args(args: argparse.Namespace) -> None:
    """Refuse a bad LoRA combination in one line (raises LoraArgumentError)."""
    flags = LoraFlags.from_args(args)
    rank, path = flags.lora_rank, flags.lora_adapter_path
    if rank < 0:
        raise LoraArgumentError(f"--lora-rank must be >= 0 (0 turns LoRA off), got {rank}")
    if rank == 0 and not path:
        return
    settings = LoraSettings.from_flags(flags)  # reads the adapter's rank: a bad path fails here
    if path and rank and rank != adapter_rank(path):
        raise LoraArgumentError(
            f"--lora-rank {rank} but the adapter at --lora-adapter-path has rank {adapter_rank(path)}: "
            "drop --lora-rank or make them equal"
        )
    if settings.alpha <= 0:
        raise LoraArgumentError(f"--lora-alpha must be positive, got {settings.alpha}")
    if not 0.0 <= settings.dropout < 1.0:
        raise LoraArgumentError(f"--lora-dropout must be in [0, 1), got {settings.dropout}")
    unknown = [m for m in settings.target_modules if m not in ALL_LINEAR]
    if unknown or not settings.target_modules:
        raise LoraArgumentError(
            f"--target-modules {flags.target_modules!r} (minus --exclude-modules) gives "
            f"{unknown or 'no module'}: choose from all-linear, {', '.join(ALL_LINEAR)}"
        )
    max_lora_rank_for(settings.rank)
    if flags.train_backend == "megatron" and (settings.sync != "adapter" or flags.save_hf):
        raise LoraArgumentError(
            "--train-backend megatron with LoRA exports the adapter alone (no merged weights yet): "
            "use --lora-sync adapter, drop --save-hf, and merge later with tools/merge_lora_adapter.py"
        )
    if estimator(flags.advantage_estimator).needs_critic:
        raise LoraArgumentError(
            "--lora-rank with --advantage-estimator ppo: the critic would train in full; "
            "use grpo, gspo, cispo or reinforce_plus_plus"
        )


def engine_lora_flags(settings: LoraSettings) -> list[list[str]]:
    """``vllm serve`` flags for serving base + adapter (one list per flag; vime adds those the user left out)."""
    if not settings.sends_adapter:
        return []
    return [
        ["--enable-lora"],
        ["--max-lora-rank", str(max_lora_rank_for(settings.rank))],
        ["--max-loras", "1"],
    ]


# /v1/load_lora_adapter exists only with this set (vllm/entrypoints/serve/lora/api_router.py)
ENGINE_LORA_ENV = {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "1"}
