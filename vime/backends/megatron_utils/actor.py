"""The Megatron-core actor: log-probs, the policy-loss step, weights out, checkpoints, offload.

It sits behind the same narrow interface as the torch backend (train on a batch, compute log-probs,
export weights, save, load, offload). Each process is one rank; the batch given to a rank is its
data-parallel shard. The loss is vime.algorithms.actor_loss, the same function the torch backend uses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist

from vime.algorithms import LossConfig, actor_loss, global_denominator
from vime.backends.lr_schedule import LrSchedule
from vime.backends.megatron_utils.batch import PaddedBatch
from vime.backends.megatron_utils.hf_config import ModelShape
from vime.backends.megatron_utils.hf_io import load_hf_into_megatron, unwrap
from vime.backends.megatron_utils.logprobs import token_logprobs_from_logits
from vime.backends.megatron_utils.model_builder import BuildOptions, ParallelSizes, build_gpt_model
from vime.backends.megatron_utils.moe_config import set_aux_loss_scale
from vime.backends.megatron_utils.optimizer import (
    OptimizerSettings,
    build_megatron_optimizer,
    finalize_grads_summed,
    set_learning_rate,
    wrap_ddp,
)
from vime.utils.args.megatron_runtime import MegatronRuntime
from vime.utils.lora_settings import LoraSettings


@dataclass
class MegatronActorConfig:
    shape: ModelShape
    sizes: ParallelSizes = field(default_factory=ParallelSizes)
    dtype: torch.dtype = torch.bfloat16
    micro_batch_size: int = 1
    optimizer: OptimizerSettings = field(default_factory=OptimizerSettings)
    loss: LossConfig = field(default_factory=LossConfig)
    hf_checkpoint: str | None = None  # initial weights; None keeps Megatron's random init
    temperature: float = 1.0  # the engines' sampling temperature: log-probs are of logits / temperature
    runtime: MegatronRuntime | None = None  # Megatron's runtime flags (None: defaults for these sizes)
    build: BuildOptions = field(default_factory=BuildOptions)  # --spec, vocabulary padding, positions
    lr_schedule: LrSchedule | None = None  # None: constant --lr
    lora: LoraSettings | None = None  # adapters on the linear layers, base frozen (megatron_utils/lora.py)


class MegatronActor:
    """One rank of the Megatron actor. ``init_megatron_parallel`` must have run in this process.

    ``optimizer_factory`` replaces Megatron's optimizer (and DDP) with a plain torch optimizer: Megatron's
    optimizer is CUDA-only, so the CPU parity tests pass ``torch.optim.AdamW`` here.
    """

    def __init__(self, cfg: MegatronActorConfig, optimizer_factory: Callable | None = None):
        self.cfg = cfg
        self.before_weight_change: Callable[[], None] | None = None  # see guard_weight_changes
        self.device = (
            torch.device("cuda", torch.cuda.current_device())
            if torch.cuda.is_available()
            else torch.device("cpu")
        )
        if cfg.runtime is not None and cfg.runtime.enable_experimental:
            from megatron.core.config import set_experimental_flag

            set_experimental_flag(True)
        model = build_gpt_model(
            cfg.shape,
            cfg.sizes,
            dtype=cfg.dtype,
            use_cpu_init=not torch.cuda.is_available(),
            runtime=cfg.runtime,
            build=cfg.build,
        )
        model.to(self.device)
        if cfg.hf_checkpoint:
            load_hf_into_megatron(model, cfg.hf_checkpoint, cfg.shape)
        if cfg.lora is not None and cfg.lora.enabled:  # before DDP and the optimizer: only adapters train
            from vime.backends.megatron_utils.lora import apply_lora, load_adapter_state, read_adapter_dir

            apply_lora(model, cfg.lora, cfg.shape)
            if cfg.lora.adapter_path:
                load_adapter_state(model, read_adapter_dir(cfg.lora.adapter_path))
        if optimizer_factory is None:
            self.model = wrap_ddp(model, cfg.optimizer)
            self.optimizer = build_megatron_optimizer(self.model, cfg.optimizer, cfg.dtype)
            model.config.finalize_model_grads_func = finalize_grads_summed
            model.config.no_sync_func = self.model.no_sync
        else:  # a torch optimizer (or None: a frozen model such as the reference policy)
            self.model = model
            self.optimizer = optimizer_factory(model)
            model.config.finalize_model_grads_func = None
        self.config = model.config
        self.step = 0
        self._offloader = None  # made at the first offload (colocated runs)
        self.last_offload = None

    # ---- forward / backward -------------------------------------------------------------------
    def _fixed_micro_batches(self, batch: PaddedBatch) -> list[PaddedBatch]:
        mbs = self.cfg.micro_batch_size
        if batch.input_ids.shape[0] % mbs:
            raise ValueError(
                f"batch of {batch.input_ids.shape[0]} samples is not a multiple of --micro-batch-size {mbs}"
            )
        return batch.micro_batches(mbs)

    def _run(self, micro_batches: list[PaddedBatch], loss_fn: Callable, forward_only: bool) -> list:
        """Forward (and backward) over ``micro_batches``, each padded to its own length."""
        from megatron.core.pipeline_parallel import get_forward_backward_func

        micro = [m.to(self.device) for m in micro_batches]

        def forward_step(data_iterator: Iterator[PaddedBatch], model):
            mb = next(data_iterator)
            positions = torch.arange(mb.input_ids.shape[1], device=self.device).expand_as(mb.input_ids)
            output = model(input_ids=mb.input_ids, position_ids=positions, attention_mask=None)
            return output, lambda out: loss_fn(out, mb)

        if self.cfg.sizes.pp > 1:
            return get_forward_backward_func()(
                forward_step_func=forward_step,
                data_iterator=iter(micro),
                model=[self.model],
                num_microbatches=len(micro),
                seq_length=max(m.input_ids.shape[1] for m in micro),
                micro_batch_size=max(m.input_ids.shape[0] for m in micro),
                forward_only=forward_only,
            )
        return self._run_no_pipelining(micro, forward_step, forward_only)

    def _run_no_pipelining(
        self, micro: list[PaddedBatch], forward_step: Callable, forward_only: bool
    ) -> list:
        """What Megatron's no-pipelining schedule does (it hard-codes a CUDA tensor, so it cannot run on
        the CPU): forward + loss + backward per micro-batch, the DP gradient reduce after the last."""
        outputs = []
        no_sync = getattr(self.model, "no_sync", None)
        for i, mb in enumerate(micro):
            last = i == len(micro) - 1
            ctx = (
                no_sync()
                if (no_sync is not None and not last and not forward_only)
                else contextlib.nullcontext()
            )
            with ctx:
                output, loss_of = forward_step(iter([mb]), self.model)
                loss, _count, metrics = loss_of(output)
                if not forward_only:
                    loss.backward()
            outputs.append(metrics)
        if not forward_only and self.config.finalize_model_grads_func is not None:
            self.config.finalize_model_grads_func([self.model])
        return outputs

    def _logprobs(self, logits: torch.Tensor, mb: PaddedBatch, with_entropy: bool):
        chunk = self.cfg.runtime.log_probs_chunk_size if self.cfg.runtime is not None else -1
        return token_logprobs_from_logits(
            logits, mb.input_ids, self.cfg.shape.vocab_size, with_entropy, self.cfg.temperature, chunk
        )

    @torch.no_grad()
    def compute_log_probs(self, batch: PaddedBatch) -> torch.Tensor | None:
        """Log-probs ``[batch, tokens]`` aligned to input_ids (on the last pipeline stage; None elsewhere)."""
        out = self.compute_log_probs_micro(self._fixed_micro_batches(batch))
        return None if out is None else torch.cat(out, dim=0)

    @torch.no_grad()
    def compute_log_probs_micro(self, micro_batches: list[PaddedBatch]) -> list[torch.Tensor] | None:
        """Log-probs of each micro-batch, ``[its samples, its tokens]`` (last pipeline stage; else None)."""
        from megatron.core import parallel_state

        self.model.eval()

        def loss_fn(logits, mb):
            lp, _ = self._logprobs(logits, mb, with_entropy=False)
            return lp.sum() * 0, torch.tensor(1), {"log_probs": lp}

        outputs = self._run(micro_batches, loss_fn, forward_only=True)
        if not parallel_state.is_pipeline_last_stage():
            return None
        return [o["log_probs"] for o in outputs]

    def train_step(self, batch: PaddedBatch) -> dict[str, float]:
        """One optimizer step on this rank's data-parallel shard, in --micro-batch-size chunks."""
        return self.train_step_micro(self._fixed_micro_batches(batch))

    def train_step_micro(
        self, micro_batches: list[PaddedBatch], old_from_forward: bool = False
    ) -> dict[str, float]:
        """One optimizer step over this rank's micro-batches; metrics are global (summed over DP).

        ``old_from_forward``: the ratio's old log-probs are this forward's own, detached (the first
        and only step of a rollout, where a separate pass would compute the same numbers)."""
        from megatron.core import parallel_state

        if any(m.advantages is None for m in micro_batches) or (
            not old_from_forward and any(m.old_log_probs is None for m in micro_batches)
        ):
            raise ValueError("train_step needs advantages and old_log_probs in the PaddedBatch")
        self.model.train()
        dp_group = parallel_state.get_data_parallel_group()
        local = sum(global_denominator(m.loss_mask, self.cfg.loss.agg_mode) for m in micro_batches)
        denom = torch.tensor(float(local), device=self.device)
        dist.all_reduce(denom, group=dp_group)
        denominator = float(denom)

        def loss_fn(logits, mb):
            lp, ent = self._logprobs(logits, mb, with_entropy=True)
            loss, metrics = actor_loss(
                self.cfg.loss,
                lp,
                lp.detach() if old_from_forward else mb.old_log_probs,
                mb.advantages,
                mb.loss_mask,
                denominator,
                entropy=ent,
                ref_log_probs=mb.ref_log_probs,
                rollout_log_probs=mb.rollout_log_probs,
            )
            return loss, torch.tensor(1), metrics

        self._zero_grad()
        set_aux_loss_scale(self.config, micro_batches, dp_group, self.device)  # MoE load balancing
        outputs = self._run(micro_batches, loss_fn, forward_only=False)
        if self.cfg.lr_schedule is not None:
            set_learning_rate(self.optimizer, self.cfg.lr_schedule.lr_at(self.step))
        grad_norm = self._optimizer_step()
        self.step += 1
        return self._reduce_metrics(outputs, dp_group) | {"grad_norm": grad_norm}

    def _zero_grad(self) -> None:
        if hasattr(self.model, "zero_grad_buffer"):
            self.model.zero_grad_buffer()
        self.optimizer.zero_grad()

    def _optimizer_step(self) -> float:
        if self.before_weight_change is not None:  # a push still reading these weights in place
            self.before_weight_change()
        if hasattr(self.model, "zero_grad_buffer"):  # Megatron optimizer
            _ok, grad_norm, _zeros = self.optimizer.step()
            return float(grad_norm or 0.0)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.optimizer.clip_grad)
        self.optimizer.step()
        return float(grad_norm)

    def _reduce_metrics(self, outputs: list[dict], dp_group) -> dict[str, float]:
        if not outputs:
            return {}
        keys = sorted(outputs[0])
        sums = torch.tensor(
            [sum(float(o[k]) for o in outputs) for k in keys], device=self.device, dtype=torch.float64
        )
        dist.all_reduce(sums, group=dp_group)
        return dict(zip(keys, sums.tolist(), strict=True))

    # ---- weights, checkpoints, memory ---------------------------------------------------------
    def weight_exporter(self, bucket_bytes: int | None = None):
        """The cached WeightExporter (bucket plan, zero-copy views at TP=1) for this actor."""
        from vime.backends.megatron_utils.weight_export import DEFAULT_BUCKET_BYTES, WeightExporter

        size = bucket_bytes or DEFAULT_BUCKET_BYTES
        if getattr(self, "_exporter", None) is None or self._exporter_bucket_bytes != size:
            self._exporter = WeightExporter(self.model, self.cfg.shape, size)
            self._exporter_bucket_bytes = size
        return self._exporter

    def update_weights(
        self, sink, *, lock=None, bucket_bytes: int | None = None, progress: bool = True
    ) -> int:
        """Send the current weights to the engines through ``sink`` under ``lock`` (every rank calls it)."""
        return self.weight_exporter(bucket_bytes).send(sink, lock=lock, progress=progress)

    def save(self, checkpoint_dir: str | Path) -> Path:
        from vime.backends.megatron_utils.checkpoint import save_checkpoint

        return save_checkpoint(unwrap(self.model), self.optimizer, self.step, checkpoint_dir)

    def load(self, checkpoint_dir: str | Path) -> int:
        from vime.backends.megatron_utils.checkpoint import load_checkpoint

        self.step = load_checkpoint(unwrap(self.model), self.optimizer, checkpoint_dir)
        return self.step

    def offload(self) -> int:
        """Free this rank's device memory (weights, grads, optimizer state) into one host region kept
        across steps (megatron_utils/offload.py); returns the bytes freed, details in ``last_offload``."""
        from vime.backends.megatron_utils.offload import (
            HostOffloader,
            actor_storages,
            pinned_region,
            plain_region,
        )

        if self._offloader is None:
            cuda = self.device.type == "cuda"
            self._offloader = HostOffloader(self.device.type, pinned_region if cuda else plain_region)
        if self._offloader.is_out:
            return 0
        self.last_offload = self._offloader.offload(actor_storages(self, self.device.type))
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        return self.last_offload.freed_bytes

    def onload(self) -> float:
        """Undo :meth:`offload` (same storages, same bytes; gradient buffers zeroed); seconds taken."""
        return self._offloader.onload() if self._offloader is not None else 0.0

    @property
    def is_offloaded(self) -> bool:
        return self._offloader is not None and self._offloader.is_out

    @contextlib.contextmanager
    def on_device(self) -> Iterator[None]:
        """The state back on the device for the block, and out again after it, if it was offloaded.

        A read of an offloaded weight sees a zero-byte storage: on CUDA an illegal memory access (an
        adapter push after the loop had offloaded the trainer died so on an H100), on the CPU an
        error. Saving on Ctrl-C while the engines generate is the everyday case.
        """
        if not self.is_offloaded:
            yield
            return
        self.onload()
        try:
            yield
        finally:
            self.offload()
