"""slime and Megatron flags vime refuses: parsed (so a launch gets a reason, not argparse's
"unrecognized arguments"), then refused in one line before anything starts.

A flag is refused when it is given with a value other than its default. Each row says why vime
cannot honour it and what to use instead; a flag that vime learns to honour leaves this table and
gets its own argument group. Conditional refusals (a value vime cannot honour with another flag)
live in the validation of the group that owns the flag.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from vime.utils.args.flag_types import int_or_pattern


@dataclass(frozen=True)
class RefusedFlag:
    """One refused flag: how it parses, why vime refuses it, and what to use instead."""

    flag: str
    why: str
    instead: str
    takes: Literal["switch", "value", "values"] = "value"
    type: Callable[[str], Any] = str

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    def line(self, value: Any) -> str:
        given = self.flag if self.takes == "switch" else f"{self.flag} {_shown(value)}"
        return f"{given}: {self.why}; {self.instead}"


def _shown(value: Any) -> str:
    return " ".join(map(str, value)) if isinstance(value, list) else str(value)


_MLA = (
    "multi-latent attention (DeepSeek-V3, Kimi-K2, GLM-5, Moonlight) is an architecture vime cannot build yet"
)
_MLA_INSTEAD = "train a grouped-query-attention model (Qwen3, Llama, GLM-4.x MoE)"
_GATED = "gated / linear attention (Qwen3-Next, Qwen3.5) is an architecture vime cannot build yet"
_MTP = "multi-token-prediction layers are not in vime's models yet"
_MTP_INSTEAD = "drop the MTP flags (the policy trains without MTP)"
_DELTA = "slime's delta / local-checkpoint weight transport has no vime counterpart yet"
_DELTA_INSTEAD = "choose how weights travel with --weight-sync {auto,disk,ipc,nccl}"

REFUSED_FLAGS: tuple[RefusedFlag, ...] = (
    # architectures vime cannot build yet
    RefusedFlag("--multi-latent-attention", _MLA, _MLA_INSTEAD, takes="switch"),
    RefusedFlag("--q-lora-rank", _MLA, _MLA_INSTEAD, type=int),
    RefusedFlag("--kv-lora-rank", _MLA, _MLA_INSTEAD, type=int),
    RefusedFlag("--qk-head-dim", _MLA, _MLA_INSTEAD, type=int),
    RefusedFlag("--qk-pos-emb-head-dim", _MLA, _MLA_INSTEAD, type=int),
    RefusedFlag("--v-head-dim", _MLA, _MLA_INSTEAD, type=int),
    RefusedFlag("--mscale", _MLA, _MLA_INSTEAD, type=float),
    RefusedFlag("--mscale-all-dim", _MLA, _MLA_INSTEAD, type=float),
    RefusedFlag(
        "--attention-output-gate", _GATED, "train a model with plain softmax attention", takes="switch"
    ),
    RefusedFlag(
        "--use-gated-attention", _GATED, "train a model with plain softmax attention", takes="switch"
    ),
    RefusedFlag(
        "--post-self-attn-layernorm",
        "GLM-4's extra norms after attention and MLP are not in vime's layer spec yet",
        "train GLM-4.x MoE or a Qwen3 / Llama model",
        takes="switch",
    ),
    RefusedFlag(
        "--post-mlp-layernorm",
        "GLM-4's extra norms after attention and MLP are not in vime's layer spec yet",
        "train GLM-4.x MoE or a Qwen3 / Llama model",
        takes="switch",
    ),
    RefusedFlag(
        "--apply-layernorm-1p",
        "zero-centred norm weights (Qwen3-Next, Gemma) are not in the model families vime converts",
        "drop it for Qwen2/Qwen3/Llama checkpoints",
        takes="switch",
    ),
    RefusedFlag(
        "--no-rope-freq",
        "skipping RoPE on some layers (Llama 4) is not in the model families vime converts",
        "drop it",
        type=int_or_pattern,
    ),
    # multi-token prediction
    RefusedFlag("--mtp-num-layers", _MTP, _MTP_INSTEAD, type=int),
    RefusedFlag("--enable-mtp-training", _MTP, _MTP_INSTEAD, takes="switch"),
    RefusedFlag("--mtp-loss-scaling-factor", _MTP, _MTP_INSTEAD, type=float),
    # slime's delta weight sync example
    RefusedFlag("--update-weight-mode", _DELTA, _DELTA_INSTEAD),
    RefusedFlag("--update-weight-transport", _DELTA, _DELTA_INSTEAD),
    RefusedFlag("--update-weight-delta-encoding", _DELTA, _DELTA_INSTEAD),
    RefusedFlag("--update-weight-delta-checksum", _DELTA, _DELTA_INSTEAD),
    RefusedFlag("--update-weight-local-checkpoint-dir", _DELTA, _DELTA_INSTEAD),
    RefusedFlag("--custom-update-weight-post-write-path", _DELTA, _DELTA_INSTEAD),
    # context parallelism
    RefusedFlag(
        "--allgather-cp",
        "context parallelism needs Transformer Engine attention, which vime's install does not ship",
        "use --context-parallel-size 1 and a --max-tokens-per-gpu that fits one GPU",
        takes="switch",
    ),
    # vision-language rollouts
    RefusedFlag(
        "--multimodal-keys",
        "vime has no vision-language path yet (no image processor, no image inputs to vLLM, no "
        "multimodal train inputs)",
        "train on text prompts: drop it and keep the text under --input-key",
        type=json.loads,
    ),
    # engine layouts
    RefusedFlag(
        "--prefill-num-servers",
        "prefill/decode disaggregation (engines that only prefill, handing their KV cache to decode "
        "engines) is not in vime's engine group",
        "drop it: every vLLM engine prefills and decodes its own requests",
        type=int,
    ),
    # precision modes vime does not train in
    RefusedFlag(
        "--fp16",
        "fp16 training (loss scaling) is not in vime; slime trains Megatron models in bf16",
        "use --bf16",
        takes="switch",
    ),
    RefusedFlag(
        "--fp8-format",
        "fp8 training needs Transformer Engine, which vime's install does not ship",
        "train in bf16 (--bf16)",
    ),
)

# Values slime or Megatron documents as their default: passing one of them asks for what vime does.
ACCEPTED_VALUES: dict[str, tuple[Any, ...]] = {
    "--update-weight-mode": ("full",),
    "--update-weight-transport": ("nccl",),
    "--update-weight-delta-encoding": ("xor",),
    "--update-weight-delta-checksum": ("xxh3-128",),
}


def add_refused_arguments(parser: argparse.ArgumentParser) -> None:
    """Every refused flag, parsed with its upstream shape; its help says why it is refused."""
    g = parser.add_argument_group(
        "refused", "slime / Megatron flags vime refuses with a reason (given, they stop the launch)"
    )
    for row in REFUSED_FLAGS:
        help_text = f"refused: {row.why}."
        if row.takes == "switch":
            g.add_argument(row.flag, action="store_const", const=True, default=None, help=help_text)
        elif row.takes == "values":
            g.add_argument(row.flag, nargs="*", type=row.type, default=None, help=help_text)
        else:
            g.add_argument(row.flag, type=row.type, default=None, help=help_text)


def refused_flags_given(args: argparse.Namespace) -> list[str]:
    """One line per refused flag set in ``args`` (a value that only restates the default is accepted)."""
    lines = []
    for row in REFUSED_FLAGS:
        value = getattr(args, row.dest, None)
        if value is None or value in ACCEPTED_VALUES.get(row.flag, ()):
            continue
        lines.append(row.line(value))
    return lines


def refused_flag_names() -> frozenset[str]:
    """The option strings of every refused flag (the launch-script benchmark counts them)."""
    return frozenset(row.flag for row in REFUSED_FLAGS)
