"""The Megatron-core training backend (GPU): model building, HF<->Megatron weights, weight export.

Nothing here imports megatron at package import time, so ``check_available()`` can run (and
refuse with one clear line) on a machine that has neither a GPU nor megatron-core.
"""

from __future__ import annotations


class MegatronUnavailableError(RuntimeError):
    """The Megatron backend cannot run here (no CUDA GPU, or megatron-core missing)."""


def check_available() -> None:
    """Raise a one-line error unless a CUDA GPU and megatron-core are both present.

    ``train.py --train-backend megatron`` calls this before anything starts, so a CPU machine is
    refused at once instead of failing deep inside Megatron.
    """
    import importlib.util

    import torch

    if not torch.cuda.is_available():
        raise MegatronUnavailableError(
            "--train-backend megatron needs an NVIDIA GPU (torch.cuda.is_available() is False here); "
            "use --train-backend torch on the CPU"
        )
    if importlib.util.find_spec("megatron.core") is None:
        raise MegatronUnavailableError(
            "--train-backend megatron needs megatron-core: pip install 'vime[gpu]' (megatron-core==0.16.1)"
        )
