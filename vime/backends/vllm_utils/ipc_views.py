"""Colocated weight updates through vime's own route: the engine reads the trainer's memory in place.

``VimeIpcSink`` is a weight sink (``begin`` / ``send`` per packed bucket / ``finish``, like the other
senders) that also takes tensors as they are (``send_views``): at tensor-parallel size 1 the
exporter's tensors are views of the live parameters, so nothing is packed and the only copy of an
update is the engine's own, into its parameters. Every call is one ``POST /vime/update_weights``
(``server_routes``) that pauses, loads (``worker_extension.vime_load_ipc``: the first update of a
layout records ``load_weights``' copies, later ones replay them in one batch) and resumes.

Storages are shared by their CUDA IPC handle. With ``keep`` (the default) the trainer promises the
storages outlive the update — its parameters, the exporter's reused bucket buffers — so each is
reduced once here and opened once by the engine; ``close()`` lets both sides drop them (before the
trainer frees or moves that memory, e.g. at exit).
"""

from __future__ import annotations

import base64
import contextlib
import json
import pickle
import time
import uuid
from collections.abc import Sequence
from typing import Any

import torch

from vime.backends.megatron_utils.buckets import TensorMeta, unpack
from vime.backends.vllm_utils.engine_client import EngineClient
from vime.backends.vllm_utils.weight_transfer import dtype_name


class StorageShare:
    """The IPC handles of this process's storages, reduced once per storage while ``keep`` holds."""

    def __init__(self, keep: bool = True):
        self.keep = keep
        self._handles: dict[tuple[int, int], tuple[torch.UntypedStorage, str]] = {}

    def handle(self, storage: torch.UntypedStorage) -> tuple[str, str]:
        """(stable key, base64 pickled ``reduce_tensor`` arguments) of ``storage``."""
        from torch.multiprocessing.reductions import reduce_tensor

        key = (storage.data_ptr(), storage.nbytes())
        name = f"{key[0]:x}-{key[1]:x}"
        if self.keep and key in self._handles:
            return name, self._handles[key][1]
        whole = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
        encoded = base64.b64encode(pickle.dumps(reduce_tensor(whole)[1])).decode("ascii")
        if self.keep:
            self._handles[key] = (storage, encoded)  # holding the storage keeps its memory (and handle) valid
        return name, encoded

    def clear(self) -> None:
        self._handles.clear()
        torch.cuda.ipc_collect()


def views_payload(
    owner: str, share: StorageShare, named: Sequence[tuple[str, torch.Tensor]], layout: str = "0"
) -> dict[str, Any]:
    """What ``vime_load_ipc`` reads: each distinct storage once, each tensor as a view of one.

    ``layout`` names the tensor list; an engine that has seen it needs only the storages next time
    (``without_tensors``), which keeps a 1.5B model's update message at a few hundred bytes.
    """
    storages: list[dict[str, Any]] = []
    index: dict[int, int] = {}
    tensors = []
    for name, tensor in named:
        if not tensor.is_cuda:
            raise ValueError(f"{name} is on {tensor.device}: CUDA IPC shares GPU memory only")
        storage = tensor.untyped_storage()
        k = index.get(storage.data_ptr())
        if k is None:
            key, handle = share.handle(storage)
            k = index[storage.data_ptr()] = len(storages)
            storages.append({"key": key, "handle": handle, "keep": share.keep})
        tensors.append(
            {
                "name": name,
                "storage": k,
                "offset": tensor.storage_offset(),
                "shape": list(tensor.shape),
                "stride": list(tensor.stride()),
                "dtype": dtype_name(tensor.dtype),
            }
        )
    return {"owner": owner, "layout": layout, "storages": storages, "tensors": tensors}


def without_tensors(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k != "tensors"}


class VimeIpcSink:
    """Send weights to engines on this GPU through ``/vime/update_weights`` (one call per bucket, or one in all).

    The sink pauses and resumes the engines itself (``controls_pause``): the first call pauses
    (``auto``: not when the engine sleeps — ``/sleep`` already paused it and cleared its caches), the
    last one resumes what the first paused. ``seconds`` gathers the servers' own phase times.
    """

    controls_pause = True
    takes_views = True

    def __init__(self, clients: list[EngineClient], keep: bool = True, pause_mode: str = "wait"):
        if not clients:
            raise ValueError("no engines to send weights to: start engines or pass their URLs")
        self.clients, self.pause_mode = clients, pause_mode
        self.share = StorageShare(keep)
        self.owner = uuid.uuid4().hex
        self.version: str | None = None
        self.bytes_sent = self.buckets = 0
        self.seconds: dict[str, float] = {}
        self.answers: list[dict[str, Any]] = []
        self._left = 0
        self._paused: list[bool] = []
        self._layouts: dict[tuple, dict[str, Any]] = {}
        # a CUDA event after which the weights are final: a push beside the next train step waits
        # for it instead of for the whole stream (which holds that step's kernels)
        self.ready: torch.cuda.Event | None = None

    # ----- WeightSink -------------------------------------------------------------------------
    def begin(self, plan: list[list[TensorMeta]]) -> None:
        self._start(len(plan))

    def send(self, metas: list[TensorMeta], flat: torch.Tensor) -> None:
        self._post([(m.name, t) for m, (_, t) in zip(metas, unpack(flat, metas), strict=True)])

    def finish(self) -> None:
        if self._left:
            raise RuntimeError(f"weight update ended with {self._left} of its buckets not sent")

    # ----- in place ------------------------------------------------------------------------------
    def send_views(self, named: Sequence[tuple[str, torch.Tensor]]) -> int:
        """Send ``named`` as they lie in memory, in one call per engine; returns the bytes sent."""
        self._start(1)
        self._post(list(named))
        return sum(t.numel() * t.element_size() for _, t in named)

    def close(self) -> None:
        """Let the engines close this trainer's storages, then drop the handles here."""
        if self.share.keep:
            for c in self.clients:
                c.collective_rpc("vime_release_ipc")
        self.share.clear()
        self._layouts.clear()

    # ----- internals ---------------------------------------------------------------------------
    def _start(self, calls: int) -> None:
        self.bytes_sent = self.buckets = 0
        self.seconds, self.answers = {}, []
        self._left, self._paused = calls, []

    def _message(self, named: list[tuple[str, torch.Tensor]]) -> tuple[dict[str, Any], bool]:
        """(payload, whether it is a layout the engines were already sent)."""
        signature = tuple((t.data_ptr(), t.shape, t.stride(), t.dtype) for _, t in named)
        known = self._layouts.get(signature) if self.share.keep else None
        if known is not None:
            return known, True
        layout = str(len(self._layouts))
        payload = views_payload(self.owner, self.share, named, layout)
        if self.share.keep:  # kept handles do not change, so the whole message can be reused
            self._layouts[signature] = payload
        return payload, False

    def _post(self, named: list[tuple[str, torch.Tensor]]) -> None:
        if self._left <= 0:
            raise RuntimeError("more buckets sent than the plan announced in begin()")
        mark = time.perf_counter()
        if self.ready is not None:
            self.ready.synchronize()
        else:
            torch.cuda.current_stream().synchronize()  # the engine reads this memory from another process
        self.seconds["trainer_gpu_wait"] = (
            self.seconds.get("trainer_gpu_wait", 0.0) + time.perf_counter() - mark
        )
        payload, known = self._message(named)
        short = json.dumps(without_tensors(payload)) if known else None
        full = None if known else json.dumps(payload)
        first, last = not self._paused, self._left == 1
        for i, client in enumerate(self.clients):  # one GPU's engines: sequential, each copies in place
            resume: str | bool = "auto" if first and last else (False if not last else self._paused[i])
            call = {
                "pause": "auto" if first else "never",
                "pause_mode": self.pause_mode,
                "resume": resume,
                "version": self.version if last else None,
            }
            paused = False
            try:
                answer = client.vime_update_weights("vime_load_ipc", {"payload": short or full}, **call)
                paused = bool(answer.get("paused"))
                # a restarted engine does not know the layout: send it whole
                if any(r.get("unknown_layout") for r in answer["results"]):
                    if not first:
                        raise RuntimeError(
                            f"engine {client.url} restarted during a weight update (it lost the earlier "
                            "buckets): send the weights again"
                        )
                    full = full or json.dumps(payload)
                    # a single call has resumed already and pauses again; a first bucket holds its pause
                    again = call if resume == "auto" else dict(call, pause="never")
                    answer = client.vime_update_weights("vime_load_ipc", {"payload": full}, **again)
                    paused = bool(answer.get("paused")) if resume == "auto" else paused
            except Exception:
                if first and paused and resume is False:  # this engine's pause is held by the sink
                    with contextlib.suppress(Exception):
                        client.resume()
                self._resume_after_failure()
                raise
            if first:
                self._paused.append(paused)
            self.answers.append(answer)
            for phase, s in (answer.get("seconds") or {}).items():
                self.seconds[phase] = self.seconds.get(phase, 0.0) + float(s)
        self._left -= 1
        self.bytes_sent += sum(t.numel() * t.element_size() for _, t in named)
        self.buckets += 1
        if last and not self.share.keep:
            torch.cuda.ipc_collect()  # the engines closed their mappings: let this process free the memory

    def _resume_after_failure(self) -> None:
        """A later bucket failed: resume the engines the first bucket paused (best effort)."""
        self._left = 0
        for client, paused in zip(self.clients, self._paused, strict=False):
            if paused:
                with contextlib.suppress(Exception):  # the caller sees the original failure
                    client.resume()
