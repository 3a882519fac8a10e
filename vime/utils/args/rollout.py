"""Rollout: the model served, sampling, the rollout function and weight pushes."""

from __future__ import annotations

import argparse


def add_rollout_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("rollout")
    g.add_argument(
        "--hf-checkpoint", type=str, default=None, help="Hugging Face model dir served and trained."
    )
    g.add_argument(
        "--model-name",
        type=str,
        default=None,
        help="slime's name of the model family for weight conversion (default: from config.json); vime "
        "converts by config.json and checks that this names the same family.",
    )
    g.add_argument(
        "--rollout-function-path",
        type=str,
        default="vime.rollout.vllm_rollout.generate_rollout",
        help="Dotted path of the rollout function.",
    )
    g.add_argument(
        "--rollout-temperature", type=float, default=1.0, help="Sampling temperature of training rollouts."
    )
    g.add_argument("--rollout-top-p", type=float, default=1.0, help="Top-p of training rollouts (1: off).")
    g.add_argument("--rollout-top-k", type=int, default=-1, help="Top-k of training rollouts (-1: off).")
    g.add_argument(
        "--rollout-max-context-len",
        type=int,
        default=None,
        help="Most tokens of prompt and response together: each request's max_tokens shrinks to fit; "
        "unset --rollout-max-prompt-len becomes this minus 1, unset --eval-max-context-len this.",
    )
    g.add_argument(
        "--rollout-max-prompt-len",
        type=int,
        default=None,
        help="Drop prompts longer than this many tokens when the data is read.",
    )
    g.add_argument(
        "--rollout-max-response-len",
        type=int,
        default=1024,
        help="Most tokens generated per sample (max_tokens); longer ones are truncated.",
    )
    g.add_argument(
        "--rollout-skip-special-tokens",
        action="store_true",
        default=False,
        help="Leave special tokens out of the decoded response text.",
    )
    g.add_argument("--rollout-stop", type=str, nargs="+", default=None, help="Stop strings for generation.")
    g.add_argument(
        "--rollout-stop-token-ids",
        type=int,
        nargs="+",
        default=None,
        help="Stop token ids for generation (besides EOS).",
    )
    g.add_argument(
        "--rollout-shuffle",
        action="store_true",
        default=False,
        help="Shuffle the prompts every epoch (seeded by --rollout-seed).",
    )
    g.add_argument(
        "--rollout-seed", type=int, default=42, help="Seed of the prompt shuffle (--rollout-shuffle)."
    )
    g.add_argument(
        "--over-sampling-batch-size",
        type=int,
        default=None,
        help="Prompts requested per round when --dynamic-sampling-filter-path drops groups (default: --rollout-batch-size).",
    )
    g.add_argument(
        "--dynamic-sampling-filter-path",
        type=str,
        default=None,
        help="Hook fn(args, samples) -> keep? per group (DAPO dynamic sampling); dropped groups count in rollout/ metrics.",
    )
    g.add_argument(
        "--partial-rollout",
        action="store_true",
        default=False,
        help="Abort unfinished samples when the batch is full and continue them next step (from the buffer).",
    )
    g.add_argument(
        "--mask-offpolicy-in-partial-rollout",
        action="store_true",
        default=False,
        help="In --partial-rollout, mask the tokens generated with older weights out of the loss.",
    )
    g.add_argument(
        "--custom-generate-function-path",
        type=str,
        default=None,
        help="Hook async fn(args, sample, sampling_params) -> Sample replacing vime's generate call.",
    )
    g.add_argument(
        "--buffer-filter-path",
        type=str,
        default=None,
        help="Hook fn(args, rollout_id, buffer, num_samples) -> groups: which buffered groups go first.",
    )
    g.add_argument(
        "--rollout-sample-filter-path",
        type=str,
        default=None,
        help="Hook fn(args, groups) called on a step's kept groups before training (may edit them in place).",
    )
    g.add_argument(
        "--rollout-all-samples-process-path",
        type=str,
        default=None,
        help="Hook fn(args, all_groups, data_source) called on every generated group, kept or not.",
    )
    g.add_argument(
        "--custom-rollout-log-function-path",
        type=str,
        default=None,
        help="Hook logging a step's rollout metrics; return True to skip vime's default logging.",
    )
    g.add_argument(
        "--custom-eval-rollout-log-function-path",
        type=str,
        default=None,
        help="Hook logging eval metrics; return True to skip vime's default logging.",
    )
    g.add_argument(
        "--rollout-data-postprocess-path",
        type=str,
        default=None,
        help="Hook fn(args, rollout_id, rollout_data) run on the train data before training.",
    )
    g.add_argument(
        "--update-weights-interval",
        type=int,
        default=1,
        help="Push weights to the engines every N training steps (train_async.py).",
    )
    g.add_argument(
        "--update-weight-buffer-size", type=int, default=512 * 1024**2, help="Bytes per weight bucket."
    )
    g.add_argument(
        "--update-weight-disk-dir",
        type=str,
        default=None,
        help="vime: where weights are written for engines that reload from disk (the CPU path); "
        "default: a directory under --save or a temporary one.",
    )
    g.add_argument(
        "--keep-old-actor",
        action="store_true",
        default=False,
        help="Keep the weights the engines were given on the trainer (torch backend): each sample's old "
        "log-probs come from the policy that generated it (train_async.py's data is one update behind).",
    )
    g.add_argument(
        "--rollout-external-engine-addrs",
        type=str,
        nargs="*",
        default=None,
        help="host:port of vLLM servers started elsewhere; vime registers them with the router and starts none.",
    )


def fill_context_lengths(args: argparse.Namespace) -> None:
    """slime's derived context limits: eval falls back to the rollout one, and the prompt filter keeps
    room for one generated token (raises ``ValueError`` with one line)."""
    for flag, value in (
        ("--rollout-max-context-len", args.rollout_max_context_len),
        ("--eval-max-context-len", args.eval_max_context_len),
    ):
        if value is not None and value < 2:
            raise ValueError(f"{flag} must be 2 or more (a prompt token and a generated one), got {value}")
    if args.eval_max_context_len is None:
        args.eval_max_context_len = args.rollout_max_context_len
    context = args.rollout_max_context_len
    if context is None:
        return
    if args.rollout_max_prompt_len is None:
        args.rollout_max_prompt_len = context - 1
    if args.rollout_max_prompt_len > context - 1:
        raise ValueError(
            f"--rollout-max-prompt-len {args.rollout_max_prompt_len} leaves no room to generate within "
            f"--rollout-max-context-len {context}: make it at most {context - 1}"
        )


def check_keep_old_actor(args: argparse.Namespace) -> None:
    """``--keep-old-actor`` is the torch backend's (raises ``ValueError`` with one line)."""
    if args.keep_old_actor and args.train_backend == "megatron":
        raise ValueError(
            "--keep-old-actor: the Megatron backend keeps no copy of the weights it gave the engines yet; "
            "use --use-rollout-logprobs (the engine's own log-probs of that policy) or --train-backend torch"
        )
