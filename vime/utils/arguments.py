"""vime's command line in three layers: training backend, ``--vllm-*`` / ``--router-*``, vime's own.

``parse_args`` builds one parser from the three layers (each a list of small group
functions), applies a ``--preset`` as defaults (explicit flags still win), then
``validate_args`` fills derived values and rejects bad combinations with a one-line
error. Derived values never overwrite an explicit choice: ``--rollout-num-gpus 0`` stays 0.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Sequence

from vime.utils.args import VIME_GROUPS, add_train_backend_arguments
from vime.utils.args.validation import ArgumentValidationError, check_backend_available, validate_args

__all__ = ["ArgumentValidationError", "build_parser", "parse_args", "validate_args"]


def _add_engine_layer(parser: argparse.ArgumentParser) -> None:
    """``--vllm-*`` and ``--router-*``: generated from vLLM's and the router's own options.

    Added after vime's own groups: the engine layer skips any flag vime already defines.
    """
    from vime.backends.vllm_utils.arguments import add_router_arguments, add_vllm_arguments

    add_vllm_arguments(parser)
    add_router_arguments(parser)


USAGE = (
    "%(prog)s [--preset tiny-cpu] [options]   (--help: vime's flags; --help-all: also --vllm-*/--router-*)"
)


class VimeArgumentParser(argparse.ArgumentParser):
    """A bad flag is one line (with the closest flag names), not the 2,000-flag usage."""

    def error(self, message: str) -> None:  # type: ignore[override]
        hint = ""
        if message.startswith("unrecognized arguments:"):
            known = [o for action in self._actions for o in action.option_strings]
            guesses = []
            for word in message.split(":", 1)[1].split():
                if word.startswith("--"):
                    guesses += difflib.get_close_matches(word.split("=")[0], known, n=2, cutoff=0.75)
            if guesses:
                hint = f" (did you mean {' or '.join(dict.fromkeys(guesses))}?)"
        self.exit(2, f"{self.prog}: error: {message}{hint}; see {self.prog} --help\n")


class _HelpAll(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.print_help()
        parser.exit()


def build_parser(
    add_custom_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    engine_layer: bool = True,
):
    """The full parser; ``add_custom_arguments`` lets a launcher add its own flags (as in slime).

    ``engine_layer=False`` leaves out the generated ``--vllm-*`` / ``--router-*`` pass-through
    flags: that parser is what ``--help`` prints (vime's own flags, each with its text).
    """
    parser = VimeArgumentParser(
        prog="train.py",
        usage=USAGE,
        description="vime: RL post-training with vLLM rollouts.",
        epilog="Pass-through flags: --vllm-X goes to `vllm serve --X`, --router-X to vllm-router; "
        "list them with --help-all.",
        allow_abbrev=False,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--help-all",
        action=_HelpAll,
        help="Show every flag, the --vllm-* / --router-* pass-through ones too.",
    )
    parser.add_argument(
        "--preset", type=str, default=None, help="Start from a named set of defaults: tiny-cpu."
    )
    add_train_backend_arguments(parser)
    for add_group in VIME_GROUPS:
        add_group(parser)
    if engine_layer:
        _add_engine_layer(parser)
    if add_custom_arguments is not None:
        add_custom_arguments(parser)
    return parser


def _refuse_unavailable_backend(argv: Sequence[str]) -> None:
    """Refuse ``--train-backend megatron`` without a GPU before anything slow (vLLM's parser) loads."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--train-backend", default="auto")
    pre.add_argument("--debug-rollout-only", action="store_true")
    known, _ = pre.parse_known_args(list(argv))
    try:
        check_backend_available(known)
    except ArgumentValidationError as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(2) from None


def _hide_refused(parser: argparse.ArgumentParser) -> None:
    """--help leaves out the flags vime refuses (each refusal says why when given); --help-all lists them."""
    from vime.utils.args.refusals import refused_flag_names

    refused = refused_flag_names()
    for action in parser._actions:
        if refused.intersection(action.option_strings):
            action.help = argparse.SUPPRESS
    for group in parser._action_groups:
        if group.title == "refused":
            group.description = "slime / Megatron flags vime refuses with a reason: listed by --help-all"


def _refuse_sglang_flags(argv: Sequence[str]) -> None:
    """A ``--sglang-*`` flag left in a translated launch is one line from vime, not argparse's error.

    vime-sync maps every SGLang flag vLLM has a counterpart for; what stays has none (speculative
    decoding's EAGLE knobs, DP attention, DeepEP modes, ...) and is listed by ``translate --stats``.
    """
    left = [a.split("=", 1)[0] for a in argv if a.startswith("--sglang-")]
    if left:
        more = (
            f" (and {len(left) - 1} more: {', '.join(left[1:4])}{', ...' if len(left) > 4 else ''})"
            if len(left) > 1
            else ""
        )
        sys.stderr.write(
            f"error: {left[0]}{more}: an SGLang server flag with no vLLM counterpart (vime's engines are vLLM); "
            "drop it, or pass vLLM's own option as --vllm-<option> (`vime-sync translate --stats` lists "
            "each such flag with its reason)\n"
        )
        raise SystemExit(2)


def _preset_name(argv: Sequence[str]) -> str | None:
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--preset", default=None)
    known, _ = pre.parse_known_args(list(argv))
    return known.preset


def parse_args(
    argv: Sequence[str] | None = None,
    add_custom_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
    validate: bool = True,
) -> argparse.Namespace:
    """Parse and validate; a bad value exits with status 2 and one line naming the flag and the fix."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if ("-h" in argv or "--help" in argv) and "--help-all" not in argv:
        short = build_parser(add_custom_arguments, engine_layer=False)  # fast: no vLLM import
        _hide_refused(short)
        short.print_help()
        raise SystemExit(0)
    _refuse_sglang_flags(argv)
    _refuse_unavailable_backend(argv)
    parser = build_parser(add_custom_arguments)
    preset = _preset_name(argv)
    if preset is not None:
        from vime.utils.args.presets import preset_defaults

        try:
            parser.set_defaults(**preset_defaults(preset))
        except KeyError as exc:
            parser.exit(2, f"error: {exc.args[0]}\n")
    args = parser.parse_args(argv)
    if preset is not None:
        from vime.utils.args.presets import prepare_preset

        prepare_preset(preset, args)
    from vime.utils.args.custom_config import apply_custom_config

    try:
        apply_custom_config(args)
    except ValueError as exc:
        parser.exit(2, f"error: {exc}\n")
    if validate:
        try:
            validate_args(args)
        except ArgumentValidationError as exc:
            parser.exit(2, f"error: {exc}\n")
    return args
