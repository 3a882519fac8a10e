"""Engine health monitor (``--use-fault-tolerance``): notice a dead engine, bring it back in sync.

Every ``--rollout-health-check-interval`` seconds each engine vime started is asked for
``/health``. A dead one is taken out of the router (so retried requests go to healthy engines or
wait), restarted on its port — in a fresh Ray actor if the actor itself died — reloaded with the
latest weights and re-tagged with their version, and only then registered with the router again.
Requests it lost are re-sent by the rollout's generate retry loop (``vime.rollout.generate``).

"Latest weights" are the latest on disk. Weights pushed over GPU (``--weight-sync ipc|nccl``) live
only in the trainer: a restarted engine then serves the last disk checkpoint (or the base model),
tagged with that version, so its samples say how old they are, until the trainer's next update
reaches every engine again. Such a recovery is marked ``stale`` and logged; it is not hidden.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import ray

from vime.ray.engine_group import EngineGroup
from vime.ray.router_process import RouterClient

logger = logging.getLogger(__name__)


def engine_problem(actor, timeout_s: float = 10.0) -> str | None:
    """None when the engine answers ``/health``, else why not (the actor died, the server did not answer)."""
    try:
        healthy = ray.get(actor.health.remote(timeout_s), timeout=timeout_s + 5)
    except ray.exceptions.RayActorError:
        return "engine actor died"
    except Exception as exc:
        return f"health check failed: {exc}"
    return None if healthy else "server not healthy"


@dataclass
class Recovery:
    rank: int
    url: str
    reason: str
    seconds: float
    weights_path: str | None
    weight_version: str | None = None  # the version the restarted engine serves
    stale: bool = False  # the trainer holds newer weights (pushed over GPU) than the engine booted from


@dataclass
class HealthMonitor:
    engines: EngineGroup
    router: RouterClient
    interval_s: float = 5.0
    check_timeout_s: float = 10.0
    first_wait_s: float = 0.0
    recoveries: list[Recovery] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._lock = threading.RLock()  # held while an engine is recovered or weights are pushed
        self.weights_path: str | None = None
        self.weight_version: str | None = None
        self.trainer_version: str | None = None  # newer weights pushed over GPU, on no disk
        self.stale_ranks: set[int] = set()  # restarted engines waiting for the trainer's next update
        self._thread = threading.Thread(target=self._loop, name="vime-health-monitor", daemon=True)

    def start(self) -> HealthMonitor:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval_s + self.check_timeout_s + 5)

    def pause(self) -> None:
        """Stop checking (during deliberate engine stops); ``resume`` starts again."""
        self._paused.set()

    def resume(self) -> None:
        self._paused.clear()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """No recovery starts while this is held (a weight push to every engine)."""
        with self._lock:
            yield

    def note_weights(self, path: str, version: str | None) -> None:
        """The checkpoint a restarted engine must load before it serves again."""
        with self._lock:
            self.weights_path, self.weight_version = path, version
            self.trainer_version = None
            self.stale_ranks.clear()

    def note_trainer_weights(self, version: str) -> None:
        """The trainer pushed ``version`` to every engine over GPU: no engine is stale any more, but a
        later restart can only boot from the last disk checkpoint."""
        with self._lock:
            self.trainer_version = str(version)
            self.stale_ranks.clear()

    def _loop(self) -> None:
        if self._stop.wait(self.first_wait_s):
            return
        while not self._stop.wait(self.interval_s):
            if self._paused.is_set():
                continue
            for rank in range(len(self.engines.actors)):
                reason = self.check(rank)
                if reason is not None and not self._stop.is_set():
                    self.recover(rank, reason)

    def check(self, rank: int) -> str | None:
        """None when healthy, else why not."""
        return engine_problem(self.engines.actors[rank], self.check_timeout_s)

    def recover(self, rank: int, reason: str) -> Recovery | None:
        """Restart engine ``rank``, re-sync its weights, put it back behind the router.

        None when the engine is healthy by the time the lock is free: another caller (the
        monitor thread, or a failed control call) has already brought it back.
        """
        with self._lock:
            if self.check(rank) is None:
                return None
            started = time.monotonic()
            url = self.engines.owned_urls[rank]
            logger.warning("vLLM engine %d at %s: %s; restarting it", rank, url, reason)
            self.router.remove_worker(url)
            actor = self.engines.actors[rank]
            if reason == "engine actor died":
                actor = self.engines.replace_actor(rank)
            if self.weights_path is not None:
                ray.get(actor.set_weights.remote(self.weights_path, self.weight_version))
            ray.get(actor.restart.remote(self.engines.start_timeout_s))
            self.router.add_worker(url)
            stale = self.trainer_version is not None and self.trainer_version != self.weight_version
            recovery = Recovery(
                rank, url, reason, time.monotonic() - started, self.weights_path, self.weight_version, stale
            )
            self.recoveries.append(recovery)
            booted = self.weights_path or "the base model"
            logger.warning("vLLM engine %d back after %.1fs on weights %s", rank, recovery.seconds, booted)
            if stale:
                self.stale_ranks.add(rank)
                logger.warning(
                    "vLLM engine %d serves %s (version %s), older than the trainer's version %s (pushed "
                    "over GPU, on no disk); it catches up at the next weight update",
                    rank, booted, self.weight_version, self.trainer_version,
                )  # fmt: skip
            return recovery
