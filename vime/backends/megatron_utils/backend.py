"""``--train-backend megatron``: the TrainBackend interface (vime.backends.base) over the Megatron actor.

The rollout's per-sample lists become right-padded ``[batch, tokens]`` tensors aligned to the tokens
(the actor's layout); advantages, the KL controller and the rollout-data hook are the very functions
the torch backend uses, so both backends train on identical numbers.
"""

from __future__ import annotations

import json
import logging
from functools import partial
from pathlib import Path

import torch
import torch.distributed as dist

from vime.algorithms import LossConfig, make_kl_controller
from vime.backends.base import TrainBackend
from vime.backends.lr_schedule import LrSchedule
from vime.backends.megatron_utils.actor import MegatronActor, MegatronActorConfig
from vime.backends.megatron_utils.batch import PaddedBatch
from vime.backends.megatron_utils.hf_config import load_shape
from vime.backends.megatron_utils.model_builder import BuildOptions, ParallelSizes
from vime.backends.megatron_utils.moe_config import warn_fallbacks
from vime.backends.megatron_utils.optimizer import OptimizerSettings
from vime.backends.micro_batches import BatchingConfig, plan_forward
from vime.backends.train_data import TrainBatch, old_log_probs_source
from vime.backends.train_prep import PrepPasses, own_share, prepare_train_step
from vime.utils.args.defaults import config_from_args
from vime.utils.args.megatron_runtime import MegatronRuntime
from vime.utils.args.model_arch import ModelArchFlags
from vime.utils.args.moe import MoeFlags
from vime.utils.lora_settings import LoraSettings

logger = logging.getLogger(__name__)


def _frozen(_model) -> None:
    """optimizer_factory of a model that never trains (the reference policy)."""
    return None


def parallel_sizes(args) -> ParallelSizes:
    """Megatron's flag names (as slime forwards them); 1 when the flag is absent."""

    def or_one(size: int | None) -> int:
        return size or 1

    return config_from_args(
        ParallelSizes,
        args,
        dests={
            "tp": ("tensor_model_parallel_size", or_one),
            "pp": ("pipeline_model_parallel_size", or_one),
            "cp": ("context_parallel_size", or_one),
            "ep": ("expert_model_parallel_size", or_one),
            "etp": "expert_tensor_parallel_size",
        },
    )


def to_padded(
    batch: TrainBatch, per_token: dict[str, list[torch.Tensor]] | None = None, pad_multiple: int = 1
) -> PaddedBatch:
    """Per-sample lists -> right-padded token-aligned tensors (response values at the response positions),
    the width rounded up to ``pad_multiple`` (``--data-pad-size-multiplier``)."""
    width = -(-max(len(t) for t in batch.tokens) // pad_multiple) * pad_multiple
    n = len(batch)
    ids = torch.zeros(n, width, dtype=torch.long)
    mask = torch.zeros(n, width)
    fields = {k: torch.zeros(n, width) for k in (per_token or {})}
    for i, (seq, length) in enumerate(zip(batch.tokens, batch.response_lengths, strict=True)):
        ids[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        start = len(seq) - length
        mask[i, start : len(seq)] = torch.tensor(batch.loss_masks[i], dtype=torch.float32)
        for key, values in (per_token or {}).items():
            fields[key][i, start : len(seq)] = torch.as_tensor(values[i], dtype=torch.float32)
    return PaddedBatch(input_ids=ids, loss_mask=mask, **fields)


def response_slices(padded: torch.Tensor, batch: TrainBatch) -> list[torch.Tensor]:
    """Token-aligned ``[batch, tokens]`` -> each sample's response part (inverse of ``to_padded``)."""
    out = []
    for i, (seq, length) in enumerate(zip(batch.tokens, batch.response_lengths, strict=True)):
        out.append(padded[i, len(seq) - length : len(seq)].detach().float().cpu())
    return out


def _per_token(piece: TrainBatch) -> dict[str, list]:
    """The per-token inputs of the loss, by PaddedBatch field name."""
    per_token = {"advantages": piece.computed["advantages"]}
    if "old_log_probs" in piece.computed:  # else the loss takes the training forward's own (in_loss)
        per_token["old_log_probs"] = piece.computed["old_log_probs"]
    if "ref_log_probs" in piece.computed:
        per_token["ref_log_probs"] = piece.computed["ref_log_probs"]
    if piece.rollout_log_probs is not None:
        per_token["rollout_log_probs"] = piece.rollout_log_probs
    return per_token


class MegatronTrainBackend(TrainBackend):
    """Megatron-core policy (and frozen reference) on this process's GPU; DP/TP/PP from the arguments.

    ``optimizer_factory`` stays None on GPUs (Megatron's distributed optimizer); CPU tests set a torch
    optimizer here because Megatron's optimizer is CUDA-only.
    """

    optimizer_factory = None
    old_log_probs_source = "recompute"  # the last train()'s (vime.backends.train_data.old_log_probs_source)

    def init(self) -> int:
        from megatron.core import parallel_state

        from vime.backends.megatron_utils.parallel import init_megatron_parallel

        args = self.args
        if args.use_critic:
            raise ValueError(
                "--advantage-estimator ppo (a critic) is not supported by --train-backend megatron yet; "
                "use --train-backend torch"
            )
        sizes = parallel_sizes(args)
        init_megatron_parallel(sizes, seed=args.seed)
        self.dp_rank = parallel_state.get_data_parallel_rank()
        self.dp_size = parallel_state.get_data_parallel_world_size()
        dtype = torch.bfloat16 if args.bf16 else torch.float32
        shape = load_shape(args.hf_checkpoint)
        arch = ModelArchFlags.from_args(args)
        total_steps = (args.num_rollout or 0) * args.num_steps_per_rollout
        self.batching = BatchingConfig.from_args(args)
        cfg = MegatronActorConfig(
            shape=shape,
            sizes=sizes,
            dtype=dtype,
            micro_batch_size=args.micro_batch_size,
            optimizer=OptimizerSettings.from_args(args),
            loss=LossConfig.from_args(args),
            hf_checkpoint=args.hf_checkpoint,
            temperature=args.rollout_temperature,
            runtime=MegatronRuntime.from_args(args),
            build=BuildOptions(
                spec=arch.spec,
                spec_args=args,
                vocab_divisible_by=arch.make_vocab_size_divisible_by,
                max_position_embeddings=arch.position_table_length(),
                moe=MoeFlags.from_args(args),
            ),
            lr_schedule=LrSchedule.from_args(args, total_steps),
            lora=LoraSettings.from_args(args),
        )
        if shape.moe is not None:
            warn_fallbacks(cfg.build.moe)
        self.actor = MegatronActor(cfg, optimizer_factory=type(self).optimizer_factory)
        self.ref = None
        if args.kl_coef or args.use_kl_loss:
            ref_cfg = MegatronActorConfig(
                **{**cfg.__dict__, "hf_checkpoint": args.ref_load or args.hf_checkpoint}
            )
            self.ref = MegatronActor(ref_cfg, optimizer_factory=_frozen)
        self.kl_ctl = make_kl_controller(args.kl_ctl, args.kl_coef, args.kl_target, args.kl_horizon)
        loaded = self.load()
        if args.start_rollout_id is not None:
            return args.start_rollout_id
        return 0 if loaded is None else loaded + 1

    @property
    def data_parallel_rank(self) -> int:
        return self.dp_rank

    @property
    def data_parallel_size(self) -> int:
        return self.dp_size

    # ----- log-probs and training --------------------------------------------------------
    def _logprobs(self, actor: MegatronActor, batch: TrainBatch) -> list[torch.Tensor]:
        """Response log-probs per sample in ``batch`` order, on every rank (the last pipeline stage
        shares them), computed over the forward plan's micro-batches (vime.backends.micro_batches)."""
        from megatron.core import parallel_state

        groups = plan_forward([len(t) for t in batch.tokens], self.batching)
        pieces = [batch.select(g) for g in groups]
        padded = [to_padded(p, pad_multiple=self.batching.pad_multiple) for p in pieces]
        lps = actor.compute_log_probs_micro(padded)
        if parallel_state.get_pipeline_model_parallel_world_size() > 1:
            shared = []
            for i, p in enumerate(padded):
                buf = lps[i] if lps is not None else torch.empty(p.input_ids.shape, device=actor.device)
                dist.broadcast(
                    buf.contiguous(),
                    parallel_state.get_pipeline_model_parallel_last_rank(),
                    group=parallel_state.get_pipeline_model_parallel_group(),
                )
                shared.append(buf)
            lps = shared
        out: dict[int, torch.Tensor] = {}
        for group, piece, lp in zip(groups, pieces, lps, strict=True):
            out.update(zip(group, response_slices(lp, piece), strict=True))
        return [out[i] for i in range(len(batch))]

    def compute_logprobs(self, batch: TrainBatch) -> list[torch.Tensor]:
        return self._logprobs(self.actor, batch)

    def train(self, rollout_id: int, batch: TrainBatch) -> dict[str, float]:
        args = self.args
        share, local = own_share(batch, args.global_batch_size, self.dp_size, self.dp_rank, self.batching)
        local_steps = share.steps
        self.old_log_probs_source = old_log_probs_source(
            args, len(local_steps), local.rollout_log_probs is not None
        )
        passes = PrepPasses(
            policy=self.compute_logprobs,
            reference=partial(self._logprobs, self.ref) if self.ref is not None else None,
        )
        metrics, _ = prepare_train_step(
            args, rollout_id, local, passes, self.old_log_probs_source, self.kl_ctl.value
        )

        totals: dict[str, float] = {}
        for step in local_steps:
            micro = [
                to_padded(piece, _per_token(piece), self.batching.pad_multiple)
                for piece in (local.select(g) for g in step)
            ]
            in_loss = self.old_log_probs_source == "in_loss"
            for key, value in self.actor.train_step_micro(micro, old_from_forward=in_loss).items():
                totals[key] = totals.get(key, 0.0) + value / len(local_steps)
        metrics |= totals
        metrics["old_log_probs_pass"] = float(self.old_log_probs_source == "recompute")
        if "reward_kl" in metrics:
            self.kl_ctl.update(metrics["reward_kl"], args.global_batch_size)
        metrics["kl_coef"] = self.kl_ctl.value
        metrics["lr"] = self.actor.cfg.lr_schedule.lr_at(max(self.actor.step - 1, 0))
        self.last_train_batch = local
        if torch.cuda.is_available():
            # the activations' cached blocks go back now: colocated, the engine wakes its weights into
            # this GPU next (on the H200 a 4B run's second wake-up ran out of memory without this)
            torch.cuda.empty_cache()
        return metrics

    # ----- weights, checkpoints, memory --------------------------------------------------
    def export_weights(self, dest: Path) -> Path | None:
        from vime.backends.megatron_utils.weight_export import export_model_to_hf_dir

        if self.actor.cfg.lora is not None and self.actor.cfg.lora.enabled:
            raise ValueError(
                "merged LoRA weights are not exported by the megatron backend yet: use --lora-sync adapter"
            )

        with self.actor.on_device():
            exporter = self.actor.weight_exporter(self.args.update_weight_buffer_size)
            out = export_model_to_hf_dir(exporter, dest, self.args.hf_checkpoint, progress=False)
        return out if dist.get_rank() == 0 else None

    def guard_weight_changes(self, wait) -> bool:
        """Where a push is views of the weights and no collective (one model-parallel rank, trainer
        resident, no adapter): the optimizer step waits for it; elsewhere the push runs alone."""
        sizes = parallel_sizes(self.args)
        alone = (sizes.tp, sizes.pp, sizes.cp, sizes.ep) == (1, 1, 1, 1)
        adapter = self.actor.cfg.lora is not None and self.actor.cfg.lora.enabled
        if not alone or adapter or self.args.offload_train:
            return False
        self.actor.before_weight_change = wait
        return True

    def send_weights(self, sink, bucket_bytes: int) -> int:
        """Zero-copy HF views (TP=1) packed into buckets for ``sink``; every rank takes part."""
        with self.actor.on_device():
            return self.actor.update_weights(sink, bucket_bytes=bucket_bytes, progress=False)

    def _adapter_state(self) -> dict[str, torch.Tensor]:
        """The whole adapter on every rank: each stage's (TP-gathered), joined over all ranks."""
        from vime.backends.megatron_utils.lora import adapter_state

        with self.actor.on_device():
            mine = adapter_state(self.actor.model)  # copies on the host: safe once offloaded again
        everyone: list = [None] * dist.get_world_size()
        dist.all_gather_object(everyone, mine)
        return {k: v for part in everyone for k, v in part.items()}

    def export_adapter(self, dest: Path) -> Path | None:
        """The LoRA adapter alone, as a PEFT directory (what the engines load on top of the base)."""
        from vime.backends.megatron_utils.lora import save_adapter_dir

        state = self._adapter_state()
        if dist.get_rank() != 0:
            return None
        return save_adapter_dir(state, self.actor.cfg.lora, Path(dest), self.args.hf_checkpoint)

    def save(self, rollout_id: int) -> None:
        from vime.backends.megatron_utils.checkpoint import iter_dir, save_checkpoint
        from vime.backends.megatron_utils.hf_io import unwrap

        if self.args.save is None:
            raise ValueError("saving a checkpoint needs --save DIR")
        if self.actor.cfg.lora is not None and self.actor.cfg.lora.enabled:  # the adapter alone
            self.export_adapter(iter_dir(self.args.save, rollout_id) / "adapter")
            if dist.get_rank() == 0:
                from vime.utils.checkpoint_dir import write_marker

                state = {
                    "rollout_id": rollout_id,
                    "kl_coef": self.kl_ctl.value,
                    "optimizer_steps": self.actor.step,
                }
                (iter_dir(self.args.save, rollout_id) / "vime_train_state.json").write_text(
                    json.dumps(state) + "\n"
                )
                write_marker(self.args.save, rollout_id)
            dist.barrier()
            return
        optimizer = None if self.args.no_save_optim else self.actor.optimizer
        with self.actor.on_device():  # saving on Ctrl-C may find the trainer offloaded (--colocate)
            save_checkpoint(unwrap(self.actor.model), optimizer, rollout_id, self.args.save)
        if dist.get_rank() == 0:
            state = {
                "rollout_id": rollout_id,
                "kl_coef": self.kl_ctl.value,
                "optimizer_steps": self.actor.step,
                "has_optimizer": optimizer is not None,
            }
            (iter_dir(self.args.save, rollout_id) / "vime_train_state.json").write_text(
                json.dumps(state) + "\n"
            )
        dist.barrier()

    def load(self) -> int | None:
        from vime.backends.megatron_utils.checkpoint import iter_dir, latest_step, load_checkpoint
        from vime.backends.megatron_utils.hf_io import unwrap

        if self.args.load is None:
            return None
        # validation resolved --load into its root and one step (a step dir, or the marker's)
        rollout_id = self.args.load_step
        if rollout_id is None:
            rollout_id = latest_step(self.args.load)
        if rollout_id is None:
            return None
        state_file = iter_dir(self.args.load, rollout_id) / "vime_train_state.json"
        state = json.loads(state_file.read_text()) if state_file.exists() else {}
        if (
            self.actor.cfg.lora is not None and self.actor.cfg.lora.enabled
        ):  # the adapter (optimizer restarts)
            from vime.backends.megatron_utils.lora import load_adapter_state, read_adapter_dir

            load_adapter_state(
                self.actor.model, read_adapter_dir(iter_dir(self.args.load, rollout_id) / "adapter")
            )
            self.kl_ctl.value = state.get("kl_coef", self.kl_ctl.value)
            self.actor.step = state.get("optimizer_steps", self.actor.step)
            return rollout_id
        optimizer = self.actor.optimizer if state.get("has_optimizer", True) else None
        load_checkpoint(unwrap(self.actor.model), optimizer, self.args.load, rollout_id)
        self.kl_ctl.value = state.get("kl_coef", self.kl_ctl.value)
        self.actor.step = state.get("optimizer_steps", self.actor.step)
        logger.info("resumed from %s (rollout %d)", self.args.load, rollout_id)
        return rollout_id

    def offload(self) -> dict[str, float]:
        """Policy and reference to their host regions (kept across steps); what that took."""
        from vime.backends.megatron_utils.offload import offload_metrics

        if not torch.cuda.is_available():
            return {}
        actors = [a for a in (self.actor, self.ref) if a is not None]
        for actor in actors:
            actor.offload()
        return offload_metrics([a.last_offload for a in actors if a.last_offload is not None])

    def onload(self) -> dict[str, float]:
        if not torch.cuda.is_available():
            return {}
        return {"offload/onload_s": sum(a.onload() for a in (self.actor, self.ref) if a is not None)}
