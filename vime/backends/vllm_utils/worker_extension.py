"""Methods added to every vLLM worker (``--worker-extension-cls``), reached through ``POST /collective_rpc``.

This module is imported inside the vLLM worker process, so it must stay light: no Ray, no vime
training code. ``collective_rpc`` passes only strings, so paths travel as strings.
"""

from __future__ import annotations

import base64
import json
import pickle
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

    def vime_load_ipc_bucket(self, payload: str) -> int:
        """Load one packed bucket the trainer shares as a CUDA IPC handle (same GPU); return #tensors.

        ``payload`` is the JSON of ``weight_transfer.ipc_update_info``: names, dtypes, shapes, byte
        sizes (back to back) and the pickled handle keyed by GPU UUID. The weights are copied into the
        model before this returns, so the trainer may reuse its buffer right after.
        """
        import torch

        weights = rebuild_ipc_bucket(json.loads(payload), torch.cuda.current_device())
        model = self.model_runner.model
        model = model.unwrap() if hasattr(model, "unwrap") else model
        model.load_weights(weights=weights)
        torch.cuda.synchronize()
        return len(weights)


def rebuild_ipc_bucket(info: dict, device_index: int) -> list:
    """Views of the trainer's bucket (opened through its IPC handle) as (name, tensor) pairs."""
    import torch
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    handles = pickle.loads(base64.b64decode(info["ipc_handles_pickled"]))
    uuid = str(torch.cuda.get_device_properties(device_index).uuid)
    if uuid not in handles:
        raise ValueError(f"no IPC handle for this GPU ({uuid}); the trainer sent {sorted(handles)}")
    args = list(handles[uuid])
    args[6] = device_index  # the sender's device index means nothing in this process
    flat = rebuild_cuda_tensor(*args)
    out, offset = [], 0
    for name, dtype, shape, size in zip(
        info["names"], info["dtype_names"], info["shapes"], info["tensor_sizes"], strict=True
    ):
        out.append((name, flat[offset : offset + size].view(getattr(torch, dtype)).view(shape)))
        offset += size
    return out
