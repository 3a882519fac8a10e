"""On-policy distillation (OPD): the student generates, a teacher scores the student's tokens.

slime's flags and meaning: ``--use-opd --opd-type {vllm,megatron} --opd-kl-coef C``. The reverse KL
``log p_student - log p_teacher`` of each response token, times C, is subtracted from that token's
advantage, on top of whatever estimator (and reward) the run uses. ``vllm`` (slime's ``sglang``):
the teacher is a vLLM engine that scores the tokens during the rollout
(``--custom-rm-path vime.rollout.on_policy_distillation.reward_func --rm-url http://teacher/generate``);
``megatron``: the trainer loads the teacher from ``--opd-teacher-load`` and scores the tokens itself.
"""

from __future__ import annotations

import argparse

OPD_TYPES = ("vllm", "megatron")


def add_opd_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("on-policy distillation")
    g.add_argument(
        "--use-opd", action="store_true", default=False, help="On-policy distillation; needs --opd-type."
    )
    g.add_argument(
        "--opd-type",
        choices=OPD_TYPES,
        default=None,
        help="vllm: a teacher vLLM engine scores the student's tokens during the rollout (slime's sglang); "
        "megatron: the trainer loads the teacher (--opd-teacher-load) and scores them while training.",
    )
    g.add_argument(
        "--opd-kl-coef",
        type=float,
        default=1.0,
        help="Weight of the reverse KL (log p_student - log p_teacher) subtracted from each token's advantage.",
    )
    g.add_argument(
        "--opd-teacher-load",
        type=str,
        default=None,
        help="--opd-type megatron: the teacher, a Hugging Face model dir or a vime --save dir "
        "(then --opd-teacher-ckpt-step picks the step; default its latest).",
    )
    g.add_argument(
        "--opd-teacher-ckpt-step",
        type=int,
        default=None,
        help="The step of a vime checkpoint dir given as --opd-teacher-load.",
    )
