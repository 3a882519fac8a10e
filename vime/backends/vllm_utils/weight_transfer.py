"""GPU weight sync from the trainer into running vLLM engines, through vLLM's weight-transfer API.

Two paths, both driven from trainer rank 0 (every trainer rank calls ``send_weights``; the
non-senders only join the trainer-side gathers):

- NCCL broadcast to engines on other GPUs: the engines are started with
  ``--vllm-weight-transfer-config '{"backend": "nccl"}'``; the trainer is NCCL rank 0 and engine
  ``i`` occupies ranks ``1 + i * engine_world_size ...``.
- CUDA IPC for engines colocated with the trainer: ``'{"backend": "ipc"}'``; handles travel over HTTP.

The engine side is the HTTP control plane (``/init_weight_transfer_engine``, ``/start_weight_update``,
``/update_weights``, ``/finish_weight_update``); vLLM's trainer engines drive it through any object
with those four methods, which ``FanoutWeightSyncClient`` provides for several engines at once.
On the CPU none of this runs (vLLM's backends are NCCL and CUDA IPC only): use
``RolloutManager.update_weights_from_disk``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from vime.backends.vllm_utils.engine_client import EngineClient


class FanoutWeightSyncClient:
    """vLLM's ``VLLMWeightSyncClient`` protocol over several engines, called in parallel.

    NCCL rendezvous blocks inside ``init_weight_transfer_engine`` until every rank has joined, so
    the engines must be called concurrently; each gets its own ``rank_offset``.
    """

    def __init__(self, clients: list[EngineClient], engine_world_size: int = 1):
        if not clients:
            raise ValueError("no engines to send weights to: start engines or pass their URLs")
        self.clients = clients
        self.engine_world_size = engine_world_size

    def _each(self, fn) -> list[Any]:
        with ThreadPoolExecutor(len(self.clients)) as pool:
            return list(pool.map(fn, range(len(self.clients))))

    def init_weight_transfer_engine(self, init_info: dict[str, Any]) -> None:
        def one(i: int) -> None:
            info = dict(init_info)
            if "rank_offset" in info:
                info["rank_offset"] = int(info["rank_offset"]) + i * self.engine_world_size
            self.clients[i].init_weight_transfer_engine(info)

        self._each(one)

    def shutdown_weight_transfer_engine(self) -> None:
        self._each(lambda i: self.clients[i]._call("POST", "/shutdown_weight_transfer_engine"))

    def start_weight_update(self) -> None:
        self._each(lambda i: self.clients[i].start_weight_update())

    def update_weights(self, update_info: Any) -> None:
        self._each(lambda i: self.clients[i].update_weights(update_info))

    def finish_weight_update(self, weight_version: str | None = None) -> None:
        self._each(lambda i: self.clients[i].finish_weight_update(weight_version))


def create_nccl_sender(
    model,
    engine_urls: list[str],
    *,
    master_address: str,
    master_port: int,
    rank: int = 0,
    engine_world_size: int = 1,
    packed: bool = True,
):
    """A trainer-side NCCL sender for ``model``; call ``.send_weights()`` after each training step."""
    from vllm.distributed.weight_transfer.base import ModuleSource
    from vllm.distributed.weight_transfer.nccl_engine import (
        NCCLTrainerInitInfo,
        NCCLTrainerWeightTransferEngine,
    )

    client = FanoutWeightSyncClient([EngineClient(u) for u in engine_urls], engine_world_size)
    info = NCCLTrainerInitInfo(
        master_address=master_address,
        master_port=master_port,
        world_size=1 + len(engine_urls) * engine_world_size,
        packed=packed,
        rank=rank,
    )
    return NCCLTrainerWeightTransferEngine.trainer_init(info, client=client, source=ModuleSource(model))


def create_ipc_sender(model, engine_urls: list[str], *, rank: int = 0, packed: bool = False):
    """A trainer-side CUDA IPC sender for engines on the trainer's own GPUs."""
    from vllm.distributed.weight_transfer.base import ModuleSource
    from vllm.distributed.weight_transfer.ipc_engine import IPCTrainerInitInfo, IPCTrainerWeightTransferEngine

    client = FanoutWeightSyncClient([EngineClient(u) for u in engine_urls])
    info = IPCTrainerInitInfo(packed=packed, rank=rank)
    return IPCTrainerWeightTransferEngine.trainer_init(info, client=client, source=ModuleSource(model))


def push_weights(
    sender, clients: list[EngineClient], version: str | None = None, pause_mode: str = "wait"
) -> None:
    """Pause → send → reset prefix cache → tag version → resume on every engine (rank 0 only)."""
    for client in clients:
        client.pause(pause_mode)
    try:
        sender.send_weights()
        for client in clients:
            client.reset_prefix_cache()
            if version is not None:
                client.update_weight_version(version)
    finally:
        for client in clients:
            client.resume()
