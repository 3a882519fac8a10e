"""Methods added to every vLLM worker (``--worker-extension-cls``), reached through ``POST /collective_rpc``.

This module is imported inside the vLLM worker process, so it must stay light: no Ray, no vime
training code. ``collective_rpc`` passes only strings, so paths travel as strings.
"""

from __future__ import annotations

from pathlib import Path


def _safetensors_files(weights_path: str) -> list[Path]:
    path = Path(weights_path)
    files = sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
    if not files or not all(f.exists() for f in files):
        raise FileNotFoundError(
            f"no *.safetensors under {weights_path!r}: save the checkpoint in Hugging Face format there"
        )
    return files


class VimeWorkerExtension:
    """Mixed into vLLM's worker class; ``self.model_runner`` is the worker's model runner."""

    def vime_reload_weights(self, weights_path: str) -> int:
        """Load a Hugging Face safetensors checkpoint into the running model, in place; return #files.

        Goes through the model runner's ``reload_weights`` rather than ``model.load_weights``: the
        CPU backend repacks linear weights after loading (the original parameters are emptied),
        and the runner's reload path redoes that processing.
        """
        files = _safetensors_files(weights_path)
        self.model_runner.reload_weights(weights_path=str(weights_path))
        return len(files)
