"""On-policy distillation: the teacher's log-probs of the student's own tokens shape the advantages.

As slime does it (``apply_opd_kl_to_advantages``, after the Tinker cookbook): per response token
``reverse_kl = log p_student - log p_teacher`` and ``advantage -= opd_kl_coef * reverse_kl``, on top
of whatever the estimator gave (zero when the reward is zero, i.e. pure distillation). The student's
log-probs are the "old" ones the ratio is taken against (the trainer's, or the engine's with
``--use-rollout-logprobs``), so the term is a fixed per-token reward for this step's updates.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

import torch

from vime.utils.args.defaults import config_from_args


class OpdArgumentError(ValueError):
    """A bad OPD flag combination; one line naming the flag and the fix."""


@dataclass(frozen=True)
class OpdConfig:
    enabled: bool = False
    kind: str | None = None  # vllm | megatron
    kl_coef: float = 1.0
    teacher_load: str | None = None
    teacher_step: int | None = None
    # read by the checks only: the teacher in the trainer needs the torch backend, the engine's
    # scoring temperature 1
    train_backend: str = "auto"
    rollout_temperature: float = 1.0

    @property
    def teacher_in_trainer(self) -> bool:
        return self.enabled and self.kind == "megatron"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> OpdConfig:
        return config_from_args(
            cls,
            args,
            dests={
                "enabled": ("use_opd", bool),
                "kind": "opd_type",
                "kl_coef": ("opd_kl_coef", float),
                "teacher_load": "opd_teacher_load",
                "teacher_step": "opd_teacher_ckpt_step",
                "rollout_temperature": ("rollout_temperature", float),
            },
        )


def validate_opd_args(args: argparse.Namespace) -> None:
    """slime's checks (``--use-opd`` needs ``--opd-type``; the teacher checkpoint only with ``megatron``)."""
    cfg = OpdConfig.from_args(args)
    if not cfg.enabled:
        if cfg.teacher_load is not None or cfg.kind is not None:
            raise OpdArgumentError(
                "--opd-type / --opd-teacher-load are set but --use-opd is not: add --use-opd"
            )
        return
    if cfg.kind is None:
        raise OpdArgumentError(
            "--use-opd needs --opd-type: vllm (a teacher engine) or megatron (in the trainer)"
        )
    if cfg.kind == "megatron":
        if cfg.train_backend == "megatron":
            raise OpdArgumentError(
                "--opd-type megatron (teacher in the trainer) runs on the torch backend only so far: "
                "use --opd-type vllm with a teacher engine, or --train-backend torch"
            )
        if cfg.teacher_load is None:
            raise OpdArgumentError("--opd-type megatron needs --opd-teacher-load: the teacher model dir")
        if not os.path.isdir(cfg.teacher_load):
            raise OpdArgumentError(f"--opd-teacher-load {cfg.teacher_load} is not a directory")
    else:
        if cfg.teacher_load is not None:
            raise OpdArgumentError(
                "--opd-teacher-load is for --opd-type megatron; with vllm the teacher engine at --rm-url "
                "scores the tokens: drop it"
            )
        if cfg.rollout_temperature != 1.0:
            raise OpdArgumentError(
                "--opd-type vllm: vLLM scores prompt tokens from raw logits (temperature 1), but "
                f"--rollout-temperature is {cfg.rollout_temperature}: use 1.0, or --opd-type megatron"
            )
    if cfg.teacher_step is not None and cfg.kind != "megatron":
        raise OpdArgumentError(
            "--opd-teacher-ckpt-step picks a step of --opd-teacher-load: use --opd-type megatron"
        )


def reverse_kl(student_log_probs: torch.Tensor, teacher_log_probs: torch.Tensor) -> torch.Tensor:
    """Per-token ``log p_student - log p_teacher`` (a single-sample estimate of KL(student || teacher))."""
    return student_log_probs.float() - teacher_log_probs.float()


def apply_opd_to_advantages(
    advantages: list[torch.Tensor],
    student_log_probs: list[torch.Tensor],
    teacher_log_probs: list[torch.Tensor],
    kl_coef: float,
) -> list[torch.Tensor]:
    """Each sample's advantages minus ``kl_coef * reverse_kl``; returns the per-token reverse KL."""
    kls = []
    for i, (student, teacher) in enumerate(zip(student_log_probs, teacher_log_probs, strict=True)):
        teacher = torch.as_tensor(teacher, dtype=torch.float32)
        if teacher.numel() != student.numel():
            raise ValueError(
                f"sample {i}: {teacher.numel()} teacher log-probs for {student.numel()} response tokens; "
                "the teacher must score exactly the response"
            )
        kl = reverse_kl(student, teacher)
        advantages[i] = advantages[i] - kl_coef * kl
        kls.append(kl)
    return kls


def teacher_dir(cfg: OpdConfig) -> str:
    """The teacher's Hugging Face directory: ``--opd-teacher-load`` itself, or a step of a vime ``--save`` dir."""
    from pathlib import Path

    from vime.utils.checkpoint_dir import iteration_dir, read_marker

    root = Path(cfg.teacher_load or "")
    if (root / "config.json").is_file() and cfg.teacher_step is None:
        return str(root)
    step = cfg.teacher_step if cfg.teacher_step is not None else read_marker(root)
    if step is None:
        raise OpdArgumentError(
            f"--opd-teacher-load {root} is neither a Hugging Face model dir nor a vime checkpoint dir"
        )
    model = iteration_dir(root, step) / "model"
    if not (model / "config.json").is_file():
        raise OpdArgumentError(
            f"--opd-teacher-load {root} step {step}: no full model at {model} (a LoRA run saves only adapters)"
        )
    return str(model)
