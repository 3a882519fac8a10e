"""The torch training backend: a Hugging Face policy (and critic) trained on one DP rank.

Runs anywhere torch runs: one process, or several ranks over gloo with FSDP2 (DDP when
FSDP2 is missing). It is the CPU trainer of vime and the reference the Megatron backend
is checked against.
"""

from __future__ import annotations

import copy
import logging
import random
from functools import partial
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from vime.algorithms import LossConfig, make_kl_controller
from vime.algorithms.opd import OpdConfig, teacher_dir
from vime.backends.attention_kernels import use_attention_backend
from vime.backends.base import TrainBackend
from vime.backends.micro_batches import BatchingConfig, plan_forward
from vime.backends.torch_utils import checkpoint as ckpt
from vime.backends.torch_utils.lora import (
    apply_lora,
    base_model,
    load_adapter_weights,
    merged_state,
    save_adapter,
)
from vime.backends.torch_utils.model import (
    ValueModel,
    load_causal_lm,
    lr_lambda,
    make_optimizer,
    resolve_strategy,
    unwrap,
    wrap_for_data_parallel,
)
from vime.backends.torch_utils.old_actor import RolloutWeights
from vime.backends.torch_utils.train_step import (
    actor_forward_loss,
    batched_logprobs,
    batched_values,
    critic_forward_loss,
    run_optimizer_steps,
)
from vime.backends.torch_utils.weights import full_model_state, write_hf_dir
from vime.backends.train_data import TrainBatch
from vime.backends.train_prep import PrepPasses, own_share, prepare_train_step
from vime.utils.args.megatron_runtime import MegatronRuntime
from vime.utils.lora_settings import LoraSettings

logger = logging.getLogger(__name__)


class TorchTrainBackend(TrainBackend):
    """Policy, optional reference model and critic, their optimizers and checkpoints."""

    def init(self) -> int:
        args = self.args
        self.saved_steps: list[int] = []  # steps this run wrote: the only ones --keep-checkpoints prunes
        torch.manual_seed(args.seed)
        random.seed(args.seed)
        np.random.seed(args.seed)
        dtype = torch.bfloat16 if args.bf16 else torch.float32
        self.strategy = resolve_strategy(args, self.world_size)
        runtime = MegatronRuntime.from_args(args)
        use_attention_backend(runtime.attention_backend)
        # Megatron's full recompute (every layer: validation refuses a partial one) is HF's checkpointing
        recompute = args.gradient_checkpointing or runtime.recompute_granularity == "full"
        policy = load_causal_lm(args.hf_checkpoint, dtype, attention_dropout=runtime.attention_dropout)
        if recompute:
            policy.gradient_checkpointing_enable()
        self.lora = LoraSettings.from_args(args)
        if self.lora.enabled:  # base weights frozen, only the adapters train (and are saved)
            if self.strategy == "fsdp2":
                raise ValueError("--lora-rank with FSDP2: use --torch-dist-strategy ddp (adapters are small)")
            if recompute:
                policy.enable_input_require_grads()
            policy = apply_lora(policy, self.lora)
        self.teacher = None
        opd = OpdConfig.from_args(args)
        if opd.teacher_in_trainer:  # on-policy distillation scored by a frozen teacher in the trainer
            self.teacher = load_causal_lm(teacher_dir(opd), dtype).eval().requires_grad_(False)
        self.ref_model = None
        if args.kl_coef or args.use_kl_loss:
            self.ref_model = (
                load_causal_lm(args.ref_load or args.hf_checkpoint, dtype).eval().requires_grad_(False)
            )
        self.critic = None
        if args.use_critic:
            self.critic = wrap_for_data_parallel(ValueModel(copy.deepcopy(policy)), self.strategy)
        self.model = wrap_for_data_parallel(policy, self.strategy)
        self.rollout_weights = RolloutWeights(self.model) if args.keep_old_actor else None
        self.loss_cfg = LossConfig.from_args(args)
        self.batching = BatchingConfig.from_args(args)
        self._forward_plan: tuple[TrainBatch, list[list[int]], int] | None = None
        self.agg_mode = self.loss_cfg.agg_mode
        total_steps = (args.num_rollout or 0) * args.num_steps_per_rollout
        self.optimizer = make_optimizer(args, self.model.parameters(), args.lr)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lr_lambda(args, total_steps))
        self.critic_optimizer = None
        if self.critic is not None:
            self.critic_optimizer = make_optimizer(args, self.critic.parameters(), args.critic_lr)
        self.kl_ctl = make_kl_controller(args.kl_ctl, args.kl_coef, args.kl_target, args.kl_horizon)
        loaded = self.load()
        if args.start_rollout_id is not None:
            return args.start_rollout_id
        return 0 if loaded is None else loaded + 1

    # ----- training ----------------------------------------------------------------------
    def note_weights_pushed(self, version: str) -> None:
        if self.rollout_weights is not None:
            self.rollout_weights.note(version)

    def _forward_groups(self, batch: TrainBatch) -> tuple[list[list[int]], int]:
        """Micro-batches of a forward pass over ``batch`` and the idle forwards that keep this rank
        in step with the others: the plan made in ``train`` for its shard, else a fresh one."""
        planned = self._forward_plan
        if planned is not None and planned[0] is batch:
            return planned[1], planned[2]
        return plan_forward([len(t) for t in batch.tokens], self.batching), 0

    def _logprobs_of(self, model, batch: TrainBatch) -> list[torch.Tensor]:
        groups, idle = self._forward_groups(batch)
        return batched_logprobs(
            model, batch, self.args.micro_batch_size, self.args.rollout_temperature, groups, idle
        )

    def compute_logprobs(self, batch: TrainBatch) -> list[torch.Tensor]:
        return self._logprobs_of(self.model, batch)

    def _shard(self, batch: TrainBatch) -> tuple[TrainBatch, list[list[list[int]]]]:
        """This rank's samples of every step and their micro-batches (vime.backends.micro_batches);
        also plans the forward passes over them, aligned across ranks."""
        share, local = own_share(
            batch, self.args.global_batch_size, self.world_size, self.rank, self.batching
        )
        at_least = share.forward_at_least
        groups = plan_forward([len(t) for t in local.tokens], self.batching, at_least=at_least)
        self._forward_plan = (local, groups, max(0, at_least - len(groups)))
        return local, share.steps

    def _prep_passes(self) -> PrepPasses:
        def old_actor(batch: TrainBatch, recomputed: list[torch.Tensor]):
            return self.rollout_weights.old_logprobs(
                batch, recomputed, self.compute_logprobs, every_kept_version=self.strategy == "fsdp2"
            )

        def values(batch: TrainBatch) -> list[torch.Tensor]:
            return batched_values(
                self.critic, batch, self.args.micro_batch_size, *self._forward_groups(batch)
            )

        return PrepPasses(
            policy=self.compute_logprobs,
            reference=partial(self._logprobs_of, self.ref_model) if self.ref_model is not None else None,
            teacher=partial(self._logprobs_of, self.teacher) if self.teacher is not None else None,
            values=values if self.critic is not None else None,
            old_actor=old_actor if self.rollout_weights is not None else None,
        )

    def train(self, rollout_id: int, batch: TrainBatch) -> dict[str, float]:
        args = self.args
        local, local_steps = self._shard(batch)

        self.model.train()
        # the torch backend has no in-loss old log-probs: the policy pass always runs
        metrics, fallback = prepare_train_step(
            args, rollout_id, local, self._prep_passes(), "recompute", self.kl_ctl.value
        )

        if self.critic is not None:
            critic_metrics = run_optimizer_steps(
                args,
                local,
                local_steps,
                self.world_size,
                critic_forward_loss(self.critic, args, self.agg_mode),
                self.critic.parameters(),
                self.critic_optimizer,
                None,
                self.agg_mode,
            )
            metrics |= {f"critic/{k}": v for k, v in critic_metrics.items()}
        if not args.use_critic or rollout_id >= args.num_critic_only_steps:
            metrics |= run_optimizer_steps(
                args,
                local,
                local_steps,
                self.world_size,
                actor_forward_loss(self.model, self.loss_cfg, args),
                self.model.parameters(),
                self.optimizer,
                self.scheduler,
                self.agg_mode,
            )
        if "reward_kl" in metrics:
            self.kl_ctl.update(metrics["reward_kl"], args.global_batch_size)
        metrics["kl_coef"] = self.kl_ctl.value
        metrics["lr"] = self.optimizer.param_groups[0]["lr"]
        if fallback is not None:
            metrics["old_actor_fallback_samples"] = float(fallback)
        self.last_train_batch = local
        return metrics

    # ----- weights and checkpoints -------------------------------------------------------
    def export_weights(self, dest: Path) -> Path | None:
        if self.lora.enabled:  # the merged weights, a plain Hugging Face model
            if self.rank != 0:
                return None
            model = unwrap(self.model)
            return write_hf_dir(base_model(model), merged_state(model), Path(dest), self.args.hf_checkpoint)
        state = full_model_state(self.model)
        if self.rank != 0:
            return None
        return write_hf_dir(self.model, state, Path(dest), self.args.hf_checkpoint)

    def export_adapter(self, dest: Path) -> Path | None:
        """The LoRA adapter alone, as a PEFT directory (what the engines load on top of the base)."""
        if not self.lora.enabled:
            raise ValueError("export_adapter needs --lora-rank > 0 or --lora-adapter-path")
        return save_adapter(unwrap(self.model), Path(dest)) if self.rank == 0 else None

    def send_weights(self, sink, bucket_bytes: int) -> int:
        """Rank 0 packs its full weights into CUDA buckets (the model may live on the CPU) for ``sink``.

        Needs every rank to hold the full model (one rank, or DDP); FSDP2 shards go through disk.
        """
        from vime.backends.megatron_utils.buckets import plan_buckets, specs_of
        from vime.backends.megatron_utils.weight_export import send_weights

        if self.strategy == "fsdp2":
            raise ValueError("--torch-dist-strategy fsdp2 shards the weights: use --weight-sync disk")
        if self.rank != 0:
            return 0
        model = unwrap(self.model)
        tied = bool(getattr(model.config, "tie_word_embeddings", False))
        state = merged_state(model) if self.lora.enabled else model.state_dict()
        named = [
            (k, v.detach())
            for k, v in state.items()
            if not (tied and k == "lm_head.weight")  # the engine ties it to the embedding itself
        ]
        if getattr(sink, "takes_views", False) and all(t.is_cuda for _, t in named):
            return sink.send_views(named)  # no packing: the engine copies from the parameters
        plan = plan_buckets(specs_of(named), bucket_bytes)
        return send_weights(iter(named), plan, sink, device="cuda", progress=False)

    def _load_lora(self, folder: Path, step: int) -> int:
        """Resume a LoRA run: the adapter, then the optimizer over the adapter's parameters."""
        if not (folder / "adapter").is_dir():
            raise ValueError(f"{folder} holds no adapter/: it was not saved by a LoRA run (--lora-rank)")
        load_adapter_weights(unwrap(self.model), folder / "adapter")
        optim_file = folder / "optimizer.pt"
        if optim_file.exists():
            optim = torch.load(optim_file, weights_only=False)
            self.optimizer.load_state_dict(optim["optimizer"])
            self.scheduler.load_state_dict(optim["scheduler"])
        state = ckpt.read_train_state(folder / "train_state.json")
        if "kl_coef" in state:
            self.kl_ctl.value = state["kl_coef"]
        logger.info("resumed the LoRA adapter from %s (rollout %d)", folder, step)
        return step

    def _barrier(self) -> None:
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.barrier()

    def save(self, rollout_id: int) -> None:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

        args = self.args
        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        model_state, optim_state = get_state_dict(self.model, self.optimizer, options=options)
        critic_state = None
        if self.critic is not None:
            critic_state = get_state_dict(self.critic, self.critic_optimizer, options=options)
        if self.rank == 0:
            staging = ckpt.staging_dir(args.save, rollout_id)
            if self.lora.enabled:  # the adapter alone: the base is --hf-checkpoint, unchanged
                save_adapter(unwrap(self.model), staging / "adapter")
            else:
                write_hf_dir(self.model, model_state, staging / "model", args.hf_checkpoint)
            if not args.no_save_optim:
                torch.save(
                    {"optimizer": optim_state, "scheduler": self.scheduler.state_dict()},
                    staging / "optimizer.pt",
                )
            if critic_state is not None:
                torch.save({"model": critic_state[0], "optimizer": critic_state[1]}, staging / "critic.pt")
            ckpt.write_train_state(
                staging / "train_state.json",
                {"rollout_id": rollout_id, "kl_coef": self.kl_ctl.value, "world_size": self.world_size},
            )
            ckpt.commit(args.save, rollout_id, staging)
            self.saved_steps.append(rollout_id)
            ckpt.prune(args.save, args.keep_checkpoints, self.saved_steps)
            logger.info("saved checkpoint of rollout %d to %s", rollout_id, args.save)
        self._barrier()

    def load(self) -> int | None:
        from safetensors.torch import load_file
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

        args = self.args
        if args.load is None:
            return None
        # validation resolved --load into its root and one step (a step dir, or the marker's)
        step = args.load_step if args.load_step is not None else ckpt.latest_iteration(args.load)
        if step is None:
            return None
        folder = ckpt.iteration_dir(args.load, step)
        if self.lora.enabled:
            return self._load_lora(folder, step)
        model_state: dict = {}
        for shard in sorted((folder / "model").glob("*.safetensors")):
            model_state |= load_file(str(shard))
        if unwrap(self.model).config.tie_word_embeddings and "lm_head.weight" not in model_state:
            model_state["lm_head.weight"] = model_state["model.embed_tokens.weight"]
        options = StateDictOptions(full_state_dict=True, strict=True)
        optim_file = folder / "optimizer.pt"
        optim = torch.load(optim_file, weights_only=False) if optim_file.exists() else None
        set_state_dict(
            self.model,
            self.optimizer,
            model_state_dict=model_state,
            optim_state_dict=optim["optimizer"] if optim else {},
            options=options,
        )
        if optim:
            self.scheduler.load_state_dict(optim["scheduler"])
        critic_file = folder / "critic.pt"
        if self.critic is not None and critic_file.exists():
            critic = torch.load(critic_file, weights_only=False)
            set_state_dict(
                self.critic,
                self.critic_optimizer,
                model_state_dict=critic["model"],
                optim_state_dict=critic["optimizer"],
                options=options,
            )
        state = ckpt.read_train_state(folder / "train_state.json")
        if "kl_coef" in state:
            self.kl_ctl.value = state["kl_coef"]
        logger.info("resumed from %s (rollout %d)", folder, step)
        return step
