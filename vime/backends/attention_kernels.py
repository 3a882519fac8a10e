"""``--attention-backend`` for PyTorch's scaled-dot-product attention, shared by both backends.

flash, fused (memory-efficient / cuDNN) and unfused (math) narrow SDPA's choice of kernel; auto
leaves it to SDPA. Every SDPA kernel accumulates the softmax in fp32 (``--attention-softmax-in-fp32``).
"""

from __future__ import annotations

import contextlib

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

SDPA_BACKENDS = {
    "flash": [SDPBackend.FLASH_ATTENTION],
    "fused": [SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION],
    "unfused": [SDPBackend.MATH],
}


def sdpa_choice(backend_name: str):
    """The ``sdpa_kernel`` context of ``--attention-backend`` (a no-op for auto)."""
    kernels = SDPA_BACKENDS.get(backend_name)
    return sdpa_kernel(kernels) if kernels else contextlib.nullcontext()


def use_attention_backend(backend_name: str) -> None:
    """Make ``--attention-backend`` this process's SDPA setting (the torch backend's models call
    SDPA from inside Hugging Face code; each trainer rank is its own process)."""
    if backend_name not in SDPA_BACKENDS:
        return
    allowed = set(SDPA_BACKENDS[backend_name])
    torch.backends.cuda.enable_flash_sdp(SDPBackend.FLASH_ATTENTION in allowed)
    torch.backends.cuda.enable_mem_efficient_sdp(SDPBackend.EFFICIENT_ATTENTION in allowed)
    torch.backends.cuda.enable_cudnn_sdp(SDPBackend.CUDNN_ATTENTION in allowed)
    torch.backends.cuda.enable_math_sdp(SDPBackend.MATH in allowed)
