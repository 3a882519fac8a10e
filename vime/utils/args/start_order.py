"""Which side of a colocated GPU run takes the GPU first at start-up: the trainer, or both at once.

vLLM sizes its KV cache from the memory it sees used while it profiles, so a trainer growing on
the same GPU during that profile would be counted as the engine's own and shrink (or wipe out)
the cache: colocated on a GPU, the trainer is built (and offloaded, with --offload-train) before
the engines start. That serialises start-up: the engine's start (minutes, with compile and CUDA
graphs) waits for the trainer's. When the user sizes the cache in bytes
(``--vllm-kv-cache-memory-bytes``), vLLM skips that measurement and the trainer's memory no
longer matters to it, so both start side by side and the first weight push hands over as usual.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vime.utils.args.defaults import config_from_args


@dataclass(frozen=True)
class StartOrder:
    """The start-up order of a run, from ``args`` and the machine."""

    colocate: bool = False  # --colocate: trainer and engines share the GPUs
    debug_rollout_only: bool = False  # no trainer at all
    engine_kv_cache_sized: bool = False  # --vllm-kv-cache-memory-bytes given: vLLM does not profile
    engine_memory_share_given: bool = False  # --vllm-gpu-memory-utilization given
    on_gpu: bool = False

    @classmethod
    def from_args(cls, args: Any, *, on_gpu: bool) -> StartOrder:
        """``on_gpu``: ``validation.has_gpu()``, passed in (validation checks this order itself)."""
        from vime.backends.vllm_utils.arguments import given_vllm_value

        return config_from_args(
            cls,
            args,
            engine_kv_cache_sized=given_vllm_value(args, "kv_cache_memory_bytes") is not None,
            engine_memory_share_given=given_vllm_value(args, "gpu_memory_utilization") is not None,
            on_gpu=on_gpu,
        )

    @property
    def shares_gpu(self) -> bool:
        """Trainer and engines start on the same GPUs."""
        return self.colocate and not self.debug_rollout_only and self.on_gpu

    @property
    def trainer_first(self) -> bool:
        """The trainer is built (and offloaded) before the engines start, so their profile sees a free
        GPU. Kept on the GPU (--no-offload-train) it still comes first: the profile would otherwise
        count its growth as the engine's."""
        return self.shares_gpu and not self.engine_kv_cache_sized

    @property
    def side_by_side(self) -> bool:
        """Sharing the GPU but starting together: the engines' KV cache has a size of its own."""
        return self.shares_gpu and self.engine_kv_cache_sized

    def refusal(self) -> str | None:
        """Why this start cannot work, in one line, or None. Side by side, vLLM still checks at its
        start that ``gpu_memory_utilization`` of the GPU is free, and its default (0.9) leaves the
        trainer nothing: the engine would refuse in its own log, minutes into the launch."""
        if self.side_by_side and not self.engine_memory_share_given:
            return (
                "--vllm-kv-cache-memory-bytes starts the engines beside the trainer, but vLLM still wants "
                "--vllm-gpu-memory-utilization (default 0.9) of the GPU free at its start: give a share "
                "that leaves the trainer its memory, e.g. --vllm-gpu-memory-utilization 0.2"
            )
        return None
