"""The RolloutManager: vLLM engines + vllm-router + data source + rollout function, behind one Ray actor.

API (``RolloutManager`` is the Ray actor class; ``LocalRolloutManager`` the same class in-process)::

    manager = RolloutManager.options(num_cpus=0).remote(args, pg)   # starts router + engines, waits
    data = ray.get(manager.generate.remote(rollout_id))     # train data dict (convert_samples_to_train_data)
    shards = ray.get(manager.generate_for_training.remote(rollout_id, dp_size))  # summary + a ref per DP rank
    out = ray.get(manager.generate_samples.remote(rollout_id))  # RolloutFnTrainOutput (groups of Samples)
    metrics = ray.get(manager.eval.remote(rollout_id))       # {"eval/<name>": mean reward, ...}
    seconds = ray.get(manager.update_weights_from_disk.remote(path, version))  # pause→reload→reset→resume
    ray.get(manager.pause.remote("wait")); ray.get(manager.resume.remote())
    ray.get(manager.offload.remote()); ray.get(manager.onload.remote())  # sleep/wake (GPU; CPU logs why not)
    ray.get(manager.health.remote())       # {"engines": [...], "router": url, "recoveries": [...]}
    ray.get(manager.save.remote(rollout_id)); ray.get(manager.load.remote(rollout_id))  # data-source state
    ray.get(manager.num_rollout.remote())
    ray.get(manager.dispose.remote())      # stop monitor, engines, router (also: shutdown)

``--debug-rollout-only`` (train.py): create the manager, then per step ``generate`` →
``vime.rollout.debug_data.save_rollout_data(args.save_debug_rollout_data, rollout_id, data)``;
``--load-debug-rollout-data`` reads it back with ``load_rollout_data`` and needs no manager.

Engines: ``--rollout-num-engines`` local ones (0 allowed) plus ``--rollout-external-engine-addrs``.
After start, ``args.vllm_router_ip`` / ``args.vllm_router_port`` name the router that rollout
functions send generate requests to.
"""

from __future__ import annotations

import copy
import logging
import tempfile
import time
from argparse import Namespace
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

import ray

from vime.backends.vllm_utils.arguments import router_cli_args, vllm_server_cli_args
from vime.backends.vllm_utils.sink_choice import WeightSyncConfig
from vime.ray.engine_group import EngineGroup
from vime.ray.health_monitor import HealthMonitor, engine_problem
from vime.ray.router_process import RouterClient, RouterProcess
from vime.rollout.sample_hooks import set_current_rollout_id
from vime.utils.args.weight_sync import engine_flags_for
from vime.utils.http_utils import allocate_ports, get_host_ip
from vime.utils.misc import load_function
from vime.utils.types import RolloutFnEvalOutput, RolloutFnTrainOutput, Sample, call_rollout_fn

logger = logging.getLogger(__name__)

DEFAULT_ROLLOUT_FUNCTION = "vime.rollout.vllm_rollout.generate_rollout"
COLOCATED_ENGINE_GPU_SHARE = 0.2  # of a GPU the trainer holds 0.4 of (TrainGroup), as slime does


def _on_cpu() -> bool:
    try:
        import torch

        return not torch.cuda.is_available()
    except ImportError:
        return True


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _flatten(groups: list) -> list[Sample]:
    return [s for group in groups for item in group for s in (item if isinstance(item, list) else [item])]


class EngineDiedError(RuntimeError):
    """An engine vime started died and fault tolerance is off; the message is one line."""


def _check_checkpoint_dir(path: str) -> None:
    """Refuse a path the engines cannot load before any engine is paused (a failed reload kills vLLM)."""
    directory = Path(path)
    if not directory.is_dir() or not any(directory.glob("*.safetensors")):
        raise ValueError(
            f"weights path {path!r} is not a directory with *.safetensors: save the checkpoint in "
            "Hugging Face format (save_pretrained) there first"
        )


class LocalRolloutManager:
    """Owns the rollout side of a run (see the module docstring for the call sequence)."""

    def __init__(self, args: Namespace, pg: Any = None):
        self.args = args
        self.weight_sync = WeightSyncConfig.from_args(args)
        self.pg = pg
        self.on_cpu = _on_cpu()
        self.log_dir = args.vllm_log_dir or tempfile.mkdtemp(prefix="vime_vllm_logs_")
        self.router_process: RouterProcess | None = None
        self.engines: EngineGroup | None = None
        self.monitor: HealthMonitor | None = None
        self.weights_path: str | None = None
        self.weight_version: str | None = None
        self.data_source = None
        self._rollout_metrics: dict[int, dict[str, float]] = {}  # per step, until the driver takes them
        self._source_state_before: tuple[int, Any] | None = None  # (step, data-source state when it began)
        started = time.monotonic()
        try:
            if not args.debug_train_only:  # --debug-train-only: data through the rollout function, no engine
                self._start_router()
                self._start_engines()
        except Exception:
            self.dispose()
            raise
        self.start_seconds = time.monotonic() - started
        if args.use_fault_tolerance and self.engines is not None and self.engines.actors:
            self.monitor = HealthMonitor(
                self.engines,
                self.router,
                interval_s=float(args.rollout_health_check_interval),
                check_timeout_s=float(args.rollout_health_check_timeout),
                first_wait_s=float(args.rollout_health_check_first_wait),
            ).start()

    # ----- startup --------------------------------------------------------------------------------
    def _start_router(self) -> None:
        args = self.args
        if args.vllm_router_ip and args.vllm_router_port:
            self.router = RouterClient(f"http://{args.vllm_router_ip}:{args.vllm_router_port}")
            return
        host = get_host_ip()
        port = args.vllm_router_port or allocate_ports(1, start=30000, host=host, spread=5000)[0]
        extra = router_cli_args(args)
        if args.router_prometheus_port is None:  # its fixed default collides between routers
            extra += ["--prometheus-port", str(allocate_ports(1, start=35000, host=host, spread=5000)[0])]
        self.router_process = RouterProcess(host, port, extra, self.log_dir)
        self.router_process.start()
        self.router = self.router_process.client
        args.vllm_router_ip, args.vllm_router_port = host, port

    def _start_engines(self) -> None:
        args = self.args
        num_engines = args.rollout_num_engines
        external = list(args.rollout_external_engine_addrs or [])
        if num_engines is None:
            num_engines = 0 if (external or not self.on_cpu) else 1
        self.engines = EngineGroup(
            args.hf_checkpoint,
            int(num_engines),
            self._server_args() if num_engines else [],
            self.log_dir,
            host=get_host_ip(),
            base_port=int(args.vllm_base_port),
            on_cpu=self.on_cpu,
            num_gpus_per_engine=0 if self.on_cpu else int(args.rollout_num_gpus_per_engine),
            external_addrs=external,
            start_timeout_s=float(args.vllm_engine_start_timeout),
            **self._gpu_placement(),
        )
        self.engines.start()
        for url in self.engines.urls:
            if url not in self.router.workers():
                self.router.add_worker(url)
        args.rollout_num_engines_total = len(self.engines)
        logger.info("rollout engines behind %s: %s", self.router.url, self.engines.urls)

    def _server_args(self) -> list[str]:
        """The user's ``--vllm-*`` flags plus those ``--weight-sync`` / ``--offload-rollout`` need."""
        from vime.backends.vllm_utils.arguments import server_has_flag

        tokens = vllm_server_cli_args(self.args, on_cpu=self.on_cpu)
        extra = engine_flags_for(
            self.weight_sync.mode, self.weight_sync.offload_rollout, gpus=not self.on_cpu
        )
        from vime.utils.lora_settings import LoraSettings, engine_lora_flags

        extra += engine_lora_flags(LoraSettings.from_args(self.args))  # serve base + adapter
        for group in extra:
            if group[0] not in tokens:  # a flag the user gave wins
                tokens += group
        if server_has_flag("--enable-scale-out") and "--no-enable-scale-out" not in tokens:
            tokens.append("--enable-scale-out")  # decided here once, not in every engine actor
        return tokens

    def _gpu_placement(self) -> dict[str, Any]:
        """Where GPU engines go in the run's placement group (colocated: a share of the trainer's GPUs)."""
        if self.on_cpu or self.pg is None:
            return {}
        from vime.ray.placement_group import placement_layout

        layout = placement_layout(self.args)
        env = {}
        if self.weight_sync.mode == "ipc":
            env["VLLM_ALLOW_INSECURE_SERIALIZATION"] = "1"  # vLLM's ipc backend unpickles the handles
        return {
            "placement_group": self.pg,
            "bundle_indices": list(range(layout.rollout_offset, layout.rollout_offset + layout.rollout_gpus)),
            "gpu_share": COLOCATED_ENGINE_GPU_SHARE if self.args.colocate else None,
            "env": env,
        }

    def note_weight_version(self, version: str) -> None:
        """GPU weight sync (ipc / nccl) went from the trainer straight to the engines: remember the version
        (an engine restarted from now on boots from the last disk checkpoint and is marked stale)."""
        self.weight_version = str(version)
        if self.monitor is not None:
            self.monitor.note_trainer_weights(version)
        self._version_pushed(version)

    def _version_pushed(self, version: str | None) -> None:
        """--fully-async: the producer measures staleness against the version the engines now serve."""
        if self.weight_sync.fully_async and version is not None:
            from vime.rollout.async_rollout import note_weight_version

            note_weight_version(version)

    # ----- data ----------------------------------------------------------------------------------
    def _data_source(self):
        if self.data_source is None:
            from vime.rollout.data_source import make_data_source

            self.data_source = make_data_source(self.args)
        return self.data_source

    def _require_engines(self) -> None:
        if self.args.debug_train_only:
            if (self.args.rollout_function_path or DEFAULT_ROLLOUT_FUNCTION) == DEFAULT_ROLLOUT_FUNCTION:
                raise RuntimeError(
                    "--debug-train-only starts no engine, but the default rollout function generates: give "
                    "--rollout-function-path vime.rollout.sft_rollout.generate_rollout (SFT data) or "
                    "--load-debug-rollout-data"
                )
            return
        if self.engines is None or len(self.engines) == 0:
            raise RuntimeError(
                "no rollout engines: --rollout-num-engines is 0 and no --rollout-external-engine-addrs; "
                "start some, or use --load-debug-rollout-data"
            )

    def generate_samples(self, rollout_id: int) -> RolloutFnTrainOutput:
        """Run the rollout function for one step and return its groups of Samples."""
        self._require_engines()
        self._note_source_state(rollout_id)
        set_current_rollout_id(rollout_id)
        fn = load_function(self.args.rollout_function_path or DEFAULT_ROLLOUT_FUNCTION)
        return self._watched(
            lambda: call_rollout_fn(fn, self.args, rollout_id, self._data_source(), evaluation=False),
            f"the generation of step {rollout_id}",
        )

    def generate(self, rollout_id: int) -> dict[str, list]:
        """One step's training data: generate, log rollout metrics, convert samples to the trainer's dict."""
        from vime.rollout.engine_stats import scrape as scrape_engines
        from vime.rollout.rollout_metrics import log_rollout_data, set_metrics_sink
        from vime.rollout.train_data import convert_samples_to_train_data

        engines_before = scrape_engines(self.engine_urls())
        started = time.monotonic()
        output = self.generate_samples(rollout_id)
        samples = _flatten(output.samples)
        collected: dict[str, float] = {}
        set_metrics_sink(lambda metrics, _step_key: collected.update(metrics))
        try:
            log_rollout_data(rollout_id, self.args, samples, output.metrics, time.monotonic() - started)
        finally:
            set_metrics_sink(None)
        engines_after = scrape_engines(self.engine_urls()) if engines_before is not None else None
        if engines_after is not None:  # the engines' own account of the same span (engine_stats.py)
            collected.update(engines_after.since(engines_before))
        versions = [int(v) for s in samples for v in s.weight_versions[:1] if str(v).isdigit()]
        if versions:  # the oldest weights any sample began with: the driver turns it into a lag
            collected["rollout/weight_version_min"] = float(min(versions))
        if self.monitor is not None:
            collected["rollout/engine_restarts"] = float(len(self.monitor.recoveries))
            collected["rollout/engines_on_stale_weights"] = float(len(self.monitor.stale_ranks))
        self._rollout_metrics[rollout_id] = {k: v for k, v in collected.items() if _is_number(v)}
        path = self.args.custom_convert_samples_to_train_data_path
        convert = load_function(path) if path else convert_samples_to_train_data
        return convert(self.args, samples)

    def generate_for_training(self, rollout_id: int, dp_size: int, keep_whole: bool = False):
        """:meth:`generate`, split here into one object reference per data-parallel rank (the samples
        never pass through the driver); returns a ``vime.ray.rollout_data.RolloutShards`` with the
        step's summary, and the whole dict as a reference too when ``keep_whole`` (the driver saves it)."""
        from vime.ray.rollout_data import shards_for_training

        return shards_for_training(self.generate(rollout_id), self.args, dp_size, keep_whole)

    def pop_metrics(self, rollout_id: int) -> dict[str, float]:
        """The rollout metrics of step ``rollout_id`` (retries, filter drops, truncation, speed, ...)."""
        return self._rollout_metrics.pop(rollout_id, {})

    def _note_source_state(self, rollout_id: int) -> None:
        """Keep the data-source state from before this step's generation: a save of the previous step
        that runs after it (train_async, or a save on Ctrl-C) must not skip this step's prompts."""
        source = self._data_source()
        if self.args.save and hasattr(source, "state_dict"):
            self._source_state_before = (rollout_id, copy.deepcopy(source.state_dict()))

    def _watched(self, fn: Callable[[], Any], what: str) -> Any:
        """Run ``fn``; without fault tolerance, fail within seconds if an engine dies meanwhile.

        (With ``--use-fault-tolerance`` the health monitor restarts the engine and the rollout's
        retry loop re-sends what it lost, so nothing is watched here.)
        """
        if self.monitor is not None or self.engines is None or not self.engines.actors:
            return fn()
        interval = float(self.args.rollout_health_check_interval)
        pool = ThreadPoolExecutor(1, thread_name_prefix="vime-rollout")
        future = pool.submit(fn)
        strikes = [0] * len(self.engines.actors)  # two failed checks in a row: a busy engine is not dead
        try:
            while True:
                try:
                    return future.result(timeout=interval)
                except FutureTimeout:
                    pass
                for rank, actor in enumerate(self.engines.actors):
                    reason = engine_problem(actor, float(self.args.rollout_health_check_timeout))
                    strikes[rank] = 0 if reason is None else strikes[rank] + 1
                    if strikes[rank] >= 2:
                        raise EngineDiedError(self._death_line(rank, reason, what))
        finally:
            pool.shutdown(wait=False)

    def _death_line(self, rank: int, reason: str, what: str) -> str:
        return (
            f"vLLM engine {rank} ({self.engines.owned_urls[rank]}): {reason} during {what}; its log: "
            f"{self.engines.log_path(rank)}. Rerun with --use-fault-tolerance to restart dead engines and go on"
        )

    def _control(self, method: str, *args: Any) -> list[Any]:
        """A control call on every engine; a dead one is restarted and re-synced (fault tolerance) or named."""
        results = self.engines.call_each(method, *args)
        for rank, result in enumerate(results[: len(self.engines.actors)]):
            if not isinstance(result, Exception):
                continue
            reason = engine_problem(self.engines.actors[rank], float(self.args.rollout_health_check_timeout))
            if reason is None:
                raise result  # the engine is up: a real error of this call
            if self.monitor is None:
                raise EngineDiedError(self._death_line(rank, reason, method.replace("_", " "))) from None
            # the restarted engine boots from the weights noted last, already tagged with their version
            self.monitor.recover(rank, f"{reason} during {method}")
            results[rank] = None
        for result in results:
            if isinstance(result, Exception):
                raise result
        return results

    def eval_output(self, rollout_id: int) -> RolloutFnEvalOutput:
        self._require_engines()
        set_current_rollout_id(rollout_id)
        path = self.args.eval_function_path or self.args.rollout_function_path
        fn = load_function(path or DEFAULT_ROLLOUT_FUNCTION)
        return self._watched(
            lambda: call_rollout_fn(fn, self.args, rollout_id, self._data_source(), evaluation=True),
            f"the evaluation after step {rollout_id}",
        )

    def eval(self, rollout_id: int) -> dict[str, float]:
        """Run the eval datasets; return ``eval/<name>`` mean rewards and truncation ratios."""
        from vime.rollout.rollout_metrics import log_eval_rollout_data

        output = self.eval_output(rollout_id)
        log_eval_rollout_data(rollout_id, self.args, output.data, output.metrics)
        metrics: dict[str, float] = {}
        for name, result in output.data.items():
            rewards = [float(r) for r in result.get("rewards") or []]
            if rewards:
                metrics[f"eval/{name}"] = sum(rewards) / len(rewards)
            truncated = result.get("truncated") or []
            if truncated:
                metrics[f"eval/{name}-truncated_ratio"] = sum(map(bool, truncated)) / len(truncated)
        return metrics

    def num_rollout(self) -> int:
        args = self.args
        if args.num_rollout is not None:
            return int(args.num_rollout)
        prompts = len(self._data_source())
        epochs = args.num_epoch or 1  # unset: one pass over the prompts
        return max(1, prompts * int(epochs) // int(args.rollout_batch_size))

    def save(self, rollout_id: int) -> None:
        """Save the data-source state as it was after step ``rollout_id`` (see ``_note_source_state``)."""
        source = self._data_source()
        before = self._source_state_before
        if before is None or before[0] != rollout_id + 1:
            source.save(rollout_id)
            return
        current = source.state_dict()
        source.load_state_dict(before[1])
        try:
            source.save(rollout_id)
        finally:
            source.load_state_dict(current)

    def load(self, rollout_id: int | None = None) -> None:
        self._data_source().load(rollout_id)

    # ----- engines control --------------------------------------------------------------------
    def update_weights_from_disk(
        self, path: str, version: str | None = None, pause_mode: str = "wait"
    ) -> float:
        """Every engine: pause → reload ``path`` → reset prefix cache → tag ``version`` → resume."""
        started = time.monotonic()
        _check_checkpoint_dir(path)
        if self.monitor is not None:
            self.monitor.note_weights(path, version)  # what an engine restarted from now on boots from
            with self.monitor.exclusive():  # not while an engine is being recovered
                self._control("update_weights_from_disk", path, version, pause_mode)
        elif self.engines is not None and len(self.engines):
            self._control("update_weights_from_disk", path, version, pause_mode)
        self.weights_path, self.weight_version = path, version
        self._version_pushed(version)
        return time.monotonic() - started

    def update_lora_adapter(self, path: str, version: str | None = None, pause_mode: str = "wait") -> float:
        """Every engine serves base + the LoRA adapter in ``path`` (a PEFT directory) from now on."""
        from vime.utils.args.lora import ADAPTER_NAME

        started = time.monotonic()
        if not (Path(path) / "adapter_config.json").is_file():
            raise ValueError(
                f"adapter path {path!r} has no adapter_config.json: save the adapter there first"
            )
        if self.monitor is not None:
            with self.monitor.exclusive():
                self._control("update_lora_adapter", ADAPTER_NAME, path, version, pause_mode)
        elif self.engines is not None and len(self.engines):
            self._control("update_lora_adapter", ADAPTER_NAME, path, version, pause_mode)
        self.weight_version = version
        self._version_pushed(version)
        return time.monotonic() - started

    def pause(self, mode: str = "wait") -> None:
        self._control("pause", mode)

    def resume(self) -> None:
        self._control("resume")

    def abort(self) -> list[int]:
        return self._control("abort")

    def reset_prefix_cache(self) -> None:
        self._control("reset_prefix_cache")

    def offload(self) -> list[bool]:
        """Release engine memory while training runs (GPU); on the CPU each engine logs that it cannot."""
        if self.engines is None:
            return []
        return self.engines.call("sleep", self.weight_sync.sleep_level)

    def onload(self, tags: list[str] | None = None) -> list[bool]:
        if self.engines is None:
            return []
        return self.engines.call("wake_up", tags)

    def health(self) -> dict[str, Any]:
        return {
            "router": self.router.url if self.engines is not None else None,
            "engines": self.engines.urls if self.engines else [],
            "healthy": self.engines.call("health") if self.engines else [],
            "recoveries": [vars(r) for r in self.monitor.recoveries] if self.monitor else [],
            "stale_engines": sorted(self.monitor.stale_ranks) if self.monitor else [],
            "weights_path": self.weights_path,
            "weight_version": self.weight_version,
        }

    def engine_urls(self) -> list[str]:
        return self.engines.urls if self.engines else []

    def router_url(self) -> str:
        return self.router.url

    def kill_engine_server(self, rank: int) -> int | None:
        """Crash engine ``rank``'s server (SIGKILL), as a fault would; returns the pid killed. For tests."""
        actor = self.engines.actors[rank]
        pid = ray.get(actor.server_pid.remote())
        ray.get(actor.kill_server.remote())
        return pid

    def dispose(self, fast: bool = False) -> None:
        """Stop the health monitor, every engine vime started and the router; safe to call twice.

        ``fast`` (Ctrl-C): SIGKILL the engine servers first instead of waiting out their graceful
        shutdown; an engine holds nothing that must be saved.
        """
        if self.weight_sync.fully_async:
            from vime.rollout.async_rollout import stop_worker

            stop_worker()  # before the engines go: its requests are cancelled, not failed
        if self.monitor is not None:
            self.monitor.stop()
            self.monitor = None
        if fast:
            self._kill_servers()
        if self.engines is not None:
            self.engines.stop()
        if self.router_process is not None:
            self.router_process.stop()

    def _kill_servers(self, wait_s: float = 3.0) -> None:
        """SIGKILL every server vime started, then give their guards a moment to notice and exit
        (a guard told to stop while its server is still being reaped waits out its grace period)."""
        if self.router_process is not None:
            self.router_process.process.kill_server()
        if self.engines is None or not self.engines.actors:
            return
        self.engines.call_each("kill_server", timeout_s=5)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(
            a is True for a in self.engines.call_each("alive", timeout_s=2)
        ):
            time.sleep(0.2)

    shutdown = dispose


RolloutManager = ray.remote(LocalRolloutManager)
