"""``--train-backend megatron``: the TrainBackend interface (vime.backends.base) over the Megatron actor.

The rollout's per-sample lists become right-padded ``[batch, tokens]`` tensors aligned to the tokens
(the actor's layout); advantages, the KL controller and the rollout-data hook are the very functions
the torch backend uses, so both backends train on identical numbers.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import torch
import torch.distributed as dist

from vime.algorithms import LossConfig, make_kl_controller
from vime.backends.base import TrainBackend
from vime.backends.megatron_utils.actor import MegatronActor, MegatronActorConfig
from vime.backends.megatron_utils.batch import PaddedBatch
from vime.backends.megatron_utils.hf_config import load_shape
from vime.backends.megatron_utils.model_builder import ParallelSizes
from vime.backends.megatron_utils.optimizer import OptimizerSettings
from vime.backends.torch_utils.train_step import compute_advantages
from vime.backends.train_data import (
    TrainBatch,
    apply_rollout_data_postprocess,
    set_old_log_probs,
    step_indices,
)
from vime.utils.args.defaults import flag_value

logger = logging.getLogger(__name__)


def _frozen(_model) -> None:
    """optimizer_factory of a model that never trains (the reference policy)."""
    return None


def parallel_sizes(args) -> ParallelSizes:
    """Megatron's flag names (as slime forwards them); 1 when the flag is absent."""
    return ParallelSizes(
        tp=flag_value(args, "tensor_model_parallel_size") or 1,
        pp=flag_value(args, "pipeline_model_parallel_size") or 1,
        cp=flag_value(args, "context_parallel_size") or 1,
    )


def to_padded(batch: TrainBatch, per_token: dict[str, list[torch.Tensor]] | None = None) -> PaddedBatch:
    """Per-sample lists -> right-padded token-aligned tensors (response values at the response positions)."""
    width = max(len(t) for t in batch.tokens)
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


class MegatronTrainBackend(TrainBackend):
    """Megatron-core policy (and frozen reference) on this process's GPU; DP/TP/PP from the arguments.

    ``optimizer_factory`` stays None on GPUs (Megatron's distributed optimizer); CPU tests set a torch
    optimizer here because Megatron's optimizer is CUDA-only.
    """

    optimizer_factory = None

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
        cfg = MegatronActorConfig(
            shape=shape,
            sizes=sizes,
            dtype=dtype,
            micro_batch_size=args.micro_batch_size,
            optimizer=OptimizerSettings(
                lr=args.lr,
                min_lr=args.min_lr,
                weight_decay=args.weight_decay,
                adam_beta1=args.adam_beta1,
                adam_beta2=args.adam_beta2,
                adam_eps=args.adam_eps,
                clip_grad=args.clip_grad if args.clip_grad > 0 else 1e12,
            ),
            loss=LossConfig.from_args(args),
            hf_checkpoint=args.hf_checkpoint,
            temperature=args.rollout_temperature,
        )
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

    # ----- log-probs and training --------------------------------------------------------
    def _logprobs(self, actor: MegatronActor, batch: TrainBatch) -> list[torch.Tensor]:
        """Response log-probs per sample, on every rank (the last pipeline stage shares them)."""
        from megatron.core import parallel_state

        padded = to_padded(batch)
        lp = actor.compute_log_probs(padded)
        if parallel_state.get_pipeline_model_parallel_world_size() > 1:
            buf = lp if lp is not None else torch.empty(padded.input_ids.shape, device=actor.device)
            dist.broadcast(
                buf.contiguous(),
                parallel_state.get_pipeline_model_parallel_last_rank(),
                group=parallel_state.get_pipeline_model_parallel_group(),
            )
            lp = buf
        return response_slices(lp, batch)

    def compute_logprobs(self, batch: TrainBatch) -> list[torch.Tensor]:
        return self._logprobs(self.actor, batch)

    def train(self, rollout_id: int, batch: TrainBatch) -> dict[str, float]:
        args = self.args
        steps = step_indices(len(batch), args.global_batch_size, self.dp_size, self.dp_rank)
        local = batch.select([i for step in steps for i in step])
        recomputed = self.compute_logprobs(local)
        set_old_log_probs(local, recomputed, args.use_rollout_logprobs)
        if self.ref is not None:
            local.computed["ref_log_probs"] = self._logprobs(self.ref, local)
        if args.rollout_data_postprocess_path:
            apply_rollout_data_postprocess(args.rollout_data_postprocess_path, args, rollout_id, local)
        metrics = compute_advantages(args, local, self.kl_ctl.value)

        totals: dict[str, float] = {}
        offset = 0
        for step in steps:
            piece = local.select(list(range(offset, offset + len(step))))
            offset += len(step)
            per_token = {
                "advantages": piece.computed["advantages"],
                "old_log_probs": piece.computed["old_log_probs"],
            }
            if "ref_log_probs" in piece.computed:
                per_token["ref_log_probs"] = piece.computed["ref_log_probs"]
            if piece.rollout_log_probs is not None:
                per_token["rollout_log_probs"] = piece.rollout_log_probs
            for key, value in self.actor.train_step(to_padded(piece, per_token)).items():
                totals[key] = totals.get(key, 0.0) + value / len(steps)
        metrics |= totals
        if "reward_kl" in metrics:
            self.kl_ctl.update(metrics["reward_kl"], args.global_batch_size)
        metrics["kl_coef"] = self.kl_ctl.value
        metrics["lr"] = args.lr
        return metrics

    # ----- weights, checkpoints, memory --------------------------------------------------
    def export_weights(self, dest: Path) -> Path | None:
        from vime.backends.megatron_utils.weight_export import export_model_to_hf_dir

        exporter = self.actor.weight_exporter(flag_value(self.args, "update_weight_buffer_size"))
        out = export_model_to_hf_dir(exporter, dest, self.args.hf_checkpoint, progress=False)
        return out if dist.get_rank() == 0 else None

    def send_weights(self, sink, bucket_bytes: int) -> int:
        """Zero-copy HF views (TP=1) packed into buckets for ``sink``; every rank takes part."""
        return self.actor.update_weights(sink, bucket_bytes=bucket_bytes, progress=False)

    def save(self, rollout_id: int) -> None:
        from vime.backends.megatron_utils.checkpoint import iter_dir, save_checkpoint
        from vime.backends.megatron_utils.hf_io import unwrap

        if self.args.save is None:
            raise ValueError("saving a checkpoint needs --save DIR")
        optimizer = None if self.args.no_save_optim else self.actor.optimizer
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
        optimizer = self.actor.optimizer if state.get("has_optimizer", True) else None
        load_checkpoint(unwrap(self.actor.model), optimizer, self.args.load, rollout_id)
        self.kl_ctl.value = state.get("kl_coef", self.kl_ctl.value)
        self.actor.step = state.get("optimizer_steps", self.actor.step)
        logger.info("resumed from %s (rollout %d)", self.args.load, rollout_id)
        return rollout_id

    def offload(self) -> None:
        if torch.cuda.is_available():
            for actor in (self.actor, self.ref):
                if actor is not None:
                    actor.offload()

    def onload(self) -> None:
        if torch.cuda.is_available():
            for actor in (self.actor, self.ref):
                if actor is not None:
                    actor.onload()
