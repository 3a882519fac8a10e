"""What vime makes of a trainer command line written for slime: per flag, and for the whole launch.

Per flag: **honoured** (vime's parser has it and vime's code reads it), **refused** (vime says in
one line why not: ``vime/utils/args/refusals.py`` and the validation), **ignored** (parsed, but its
help says vime does not use it, or no code of vime's reads it), or **unknown** (argparse would
stop with "unrecognized arguments").

Per launch: ``vime.utils.arguments.parse_args`` and ``validate_args`` as on the cluster the recipe
was written for (a GPU present), then ``vime.preflight.preflight``. A refusal that only this
machine causes is **machine-bound** and kept apart: a path value (checkpoint, data file) that does
not exist here — that flag is set aside and the launch judged again without it — or the GPUs the
launch needs. What is left is the verdict: ``parses``, ``refused`` (vime's one-line reason),
``invalid`` (a value argparse rejects) or ``unrecognized``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from unittest import mock

IGNORED_HELP = re.compile(r"does not use|accepted for compatibility|\bignored\b", re.IGNORECASE)
GENERATED_GROUP = re.compile(r"pass-through \(generated from")  # --vllm-* / --router-*: read generically
HOOK_CHECKS = ("check_hooks", "probe_reward")
MAX_SET_ASIDE = 16  # machine-bound flags set aside before giving up
_MISSING_PACKAGE = re.compile(r"No module named '([\w.]+)'")


@dataclass(frozen=True)
class FlagVerdict:
    flag: str
    status: str  # honoured | refused | ignored | unknown
    reason: str = ""


@dataclass
class LaunchVerdict:
    """The launch as vime judges it; ``machine`` holds the refusals only this machine causes."""

    flags: list[FlagVerdict]
    verdict: str  # parses | refused | machine-bound | invalid | unrecognized
    line: str = ""  # vime's one line for refused / invalid / unrecognized
    machine: list[str] = field(default_factory=list)
    gpus_needed: int = 0

    def count(self, status: str) -> int:
        return sum(1 for f in self.flags if f.status == status)


def given_flags(argv: list[str]) -> list[str]:
    """The flags of a command line, in order, each once (``--x=1`` is ``--x``)."""
    return list(
        dict.fromkeys(token.split("=", 1)[0] for token in argv if token.startswith("--") and len(token) > 2)
    )


@cache
def _vime_source() -> str:
    """vime's code and its two launchers, for the reader scan (definitions included)."""
    root = Path(__file__).resolve().parents[1]  # the vime package
    files = [*sorted(root.rglob("*.py")), root.parent / "train.py", root.parent / "train_async.py"]
    return "\n".join(path.read_text(encoding="utf-8") for path in files if path.is_file())


@cache
def has_reader(dest: str) -> bool:
    """Does any code of vime's name ``dest`` (``args.x``, ``config.x``, ``"x"``) besides a
    ``dest="x"`` keyword of its definition?"""
    source = _vime_source()
    uses = len(re.findall(rf"(?<![\w-]){re.escape(dest)}(?![\w-])", source))
    definitions = len(re.findall(rf"dest\s*=\s*[\"']{re.escape(dest)}[\"']", source))
    return uses > definitions


@dataclass(frozen=True)
class ParserFacts:
    """What the parser says about each option string, computed once per parser."""

    actions: dict[str, argparse.Action]
    generated: frozenset[str]  # option strings of the --vllm-* / --router-* pass-through groups

    @classmethod
    def of(cls, parser: argparse.ArgumentParser) -> ParserFacts:
        actions = {option: action for action in parser._actions for option in action.option_strings}
        generated = {
            option
            for group in parser._action_groups
            if GENERATED_GROUP.search(group.title or "")
            for action in group._group_actions
            for option in action.option_strings
        }
        return cls(actions, frozenset(generated))


def _refused_names() -> frozenset[str]:
    try:
        from vime.utils.args.refusals import refused_flag_names
    except ImportError:
        return frozenset()
    return refused_flag_names()


def judge_flags(argv: list[str], facts: ParserFacts, refusals: dict[str, str] | None) -> list[FlagVerdict]:
    """Each flag of ``argv``: honoured, refused (``refusals``: flag -> vime's line; None when the
    command line did not parse: then every flag of vime's refusal table), ignored or unknown."""
    refused_names = _refused_names()
    table = refused_names if refusals is None else frozenset()
    verdicts = []
    for flag in given_flags(argv):
        action = facts.actions.get(flag)
        if action is None:
            line = refused_before_parsing(flag)
            if line is not None:
                verdicts.append(FlagVerdict(flag, "refused", line))
            else:
                verdicts.append(FlagVerdict(flag, "unknown", "argparse: unrecognized argument"))
        elif refusals is not None and flag in refusals:
            verdicts.append(FlagVerdict(flag, "refused", refusals[flag]))
        elif flag in table:
            verdicts.append(FlagVerdict(flag, "refused", action.help or "in vime's refusal table"))
        elif flag in refused_names:
            verdicts.append(FlagVerdict(flag, "honoured", "its value asks for what vime does"))
        elif action.help and IGNORED_HELP.search(action.help):
            verdicts.append(FlagVerdict(flag, "ignored", f"its help says: {action.help}"))
        elif flag not in facts.generated and not has_reader(action.dest):
            verdicts.append(FlagVerdict(flag, "ignored", f"no code of vime's reads {action.dest}"))
        else:
            verdicts.append(FlagVerdict(flag, "honoured"))
    return verdicts


def _refusal_lines(args: argparse.Namespace) -> dict[str, str]:
    """flag -> vime's one line, for every refused flag ``args`` sets (empty without the table)."""
    try:
        from vime.utils.args.refusals import refused_flags_given
    except ImportError:
        return {}
    lines = {}
    for line in refused_flags_given(args):
        lines.setdefault(line.split(" ", 1)[0].rstrip(":"), line)
    return lines


@contextlib.contextmanager
def on_a_gpu_node(gpus: int) -> Iterator[None]:
    """Validation as on a node of the recipe's cluster with ``gpus`` CUDA GPUs (0: this machine as it is)."""
    if not gpus:
        yield
        return
    import torch

    with (
        mock.patch("vime.utils.args.validation.has_gpu", return_value=True),
        mock.patch.object(torch.cuda, "device_count", return_value=gpus),
    ):
        yield


def _parse(argv: list[str]) -> tuple[argparse.Namespace | None, str]:
    """``parse_args(argv, validate=False)``: the namespace, or the one line it exits with (vime's
    own refusals start with ``error:``, argparse's with the program name)."""
    from vime.utils.arguments import parse_args

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parse_args(argv, validate=False), ""
    except SystemExit:
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        return None, lines[-1] if lines else "argparse exited"


def _raised_in(exc: BaseException) -> str:
    """The function of vime.preflight the exception came from (the last such frame)."""
    frames = [f.name for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith("preflight.py")]
    return frames[-1] if frames else ""


def _parse_verdict(line: str) -> str:
    if line.startswith("error:"):
        return "refused"  # vime's own line before argparse (e.g. a --sglang-* flag left by the translation)
    return "unrecognized" if "unrecognized arguments" in line else "invalid"


@cache
def refused_before_parsing(flag: str) -> str | None:
    """vime's one line for a flag its parser does not define but refuses by itself (``--sglang-*``)."""
    args, line = _parse([flag])
    return line if args is None and line.startswith("error:") and flag in line else None


def _validate_and_preflight(args: argparse.Namespace, gpus: int) -> tuple[str, str]:
    """("", "") when the launch passes; else (where it stopped: validation | preflight:<check>, line)."""
    from vime.preflight import PreflightError, preflight
    from vime.utils.arguments import ArgumentValidationError, validate_args

    with on_a_gpu_node(gpus):
        try:
            validate_args(args)
        except ArgumentValidationError as exc:
            return "validation", str(exc)
        try:
            preflight(args)
        except PreflightError as exc:
            return f"preflight:{_raised_in(exc)}", str(exc)
    return "", ""


def _missing_paths(argv: list[str]) -> dict[str, list[str]]:
    """flag -> its values that look like local paths and do not exist here."""
    found: dict[str, list[str]] = {}
    flag = None
    for token in argv:
        if token.startswith("--"):
            flag, _, inline = token.partition("=")
            values = [inline] if inline else []
        else:
            values = [token]
        for value in values:
            if flag and "://" not in value and ("/" in value or value.startswith("~")):
                path = Path(value.split("{", 1)[0]).expanduser()
                if not path.exists():
                    found.setdefault(flag, []).append(value)
    return found


def _machine_flag(line: str, argv: list[str]) -> str | None:
    """The flag whose missing path the refusal line names (so only this machine causes it)."""
    for flag, values in _missing_paths(argv).items():
        spellings = {s.rstrip("/") for v in values for s in (v, os.path.abspath(os.path.expanduser(v)))}
        if any(spelling in line for spelling in spellings):  # as given, or made absolute by vime
            return flag
    return None


def set_aside(argv: list[str], flag: str) -> list[str]:
    """``argv`` without ``flag`` and its values."""
    out, skipping = [], False
    for token in argv:
        if token.startswith("--"):
            skipping = token.split("=", 1)[0] == flag
        if not skipping:
            out.append(token)
    return out


def gpus_needed(args: argparse.Namespace) -> int:
    """GPUs the launch asks Ray for: the trainer's, plus the engines' unless they share them."""
    trainer = args.actor_num_nodes * args.actor_num_gpus_per_node
    engines = 0 if args.colocate else (args.rollout_num_gpus or 0)
    return trainer + engines


def local_gpus() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@contextlib.contextmanager
def _importable(paths: list[str]) -> Iterator[None]:
    """``paths`` first on sys.path, and the modules imported meanwhile forgotten afterwards (two
    examples may both have a ``generate.py``)."""
    before = set(sys.modules)
    sys.path[:0] = paths
    try:
        yield
    finally:
        del sys.path[: len(paths)]
        for name in set(sys.modules) - before:
            if not name.startswith(("vime", "vllm", "torch", "transformers", "megatron")):
                sys.modules.pop(name, None)


def _argv_value(argv: list[str], flag: str) -> str | None:
    for index, token in enumerate(argv):
        if token == flag and index + 1 < len(argv):
            return argv[index + 1]
        if token.startswith(flag + "="):
            return token.split("=", 1)[1]
    return None


def stand_in_checkpoint(folder: Path, argv: list[str]) -> Path:
    """A stand-in for a Hugging Face model dir this machine lacks: a ``config.json`` with only what
    the launch states itself (layer count, tied embeddings, number of experts) and no model family,
    so the checks against the checkpoint find nothing to compare: they cannot run here."""
    folder.mkdir(parents=True, exist_ok=True)
    layers, experts = _argv_value(argv, "--num-layers"), _argv_value(argv, "--num-experts")
    config: dict[str, object] = {
        "num_hidden_layers": int(layers) if layers and layers.isdigit() else 1,
        "tie_word_embeddings": "--untie-embeddings-and-output-weights" not in argv,
    }
    if experts and experts.isdigit():
        config["num_experts"] = int(experts)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def replace_value(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` with ``flag``'s value(s) replaced by ``value``."""
    return set_aside(argv, flag) + [flag, value]


def _on_the_cluster(
    argv: list[str], machine: list[str], scratch: Path, gpus: int
) -> tuple[str, str, argparse.Namespace | None, list[str]]:
    """Parse, validate and preflight as on a GPU node. A refusal naming a path this machine lacks
    is machine-bound: ``--hf-checkpoint`` gets an empty stand-in, any other such flag is set aside,
    and the launch is judged again; a refusal of the stand-in or of a flag set aside ends it as
    ``machine-bound``. Returns (verdict, line, the parsed namespace, the argv judged)."""
    current = list(argv)
    replaced: dict[str, str] = {}  # flag -> its stand-in, or "" when set aside
    for _ in range(MAX_SET_ASIDE):
        with on_a_gpu_node(gpus):
            args, error = _parse(current)
        if args is None:
            return _parse_verdict(error), error, None, current
        stage, line = _validate_and_preflight(args, gpus)
        if not line:
            return "parses", "", args, current
        bound = _machine_flag(line, current)
        if bound is not None and bound not in replaced:
            if bound == "--hf-checkpoint":
                stand_in = stand_in_checkpoint(scratch / "hf-checkpoint", argv)
                machine.append(f"{bound}: {line} (judged with an empty stand-in)")
                replaced[bound] = str(stand_in)
                current = replace_value(current, bound, str(stand_in))
            else:
                machine.append(f"{bound}: {line} (set aside)")
                replaced[bound] = ""
                current = set_aside(current, bound)
            continue
        if any(flag in line or (path and path in line) for flag, path in replaced.items()):
            return "machine-bound", line, args, current
        missing = _MISSING_PACKAGE.search(line)
        if stage.split(":", 1)[-1] in HOOK_CHECKS and missing and not missing.group(1).startswith("vime"):
            machine.append(f"hook: {line} (a package this machine lacks)")
            return "parses", "", args, current
        return "refused", line, args, current
    return "machine-bound", f"more than {MAX_SET_ASIDE} machine-bound refusals", None, current


def _refused_by(flag: FlagVerdict, line: str) -> FlagVerdict:
    """The flag a launch's refusal line starts with is refused by it."""
    named = line.split(" ", 1)[0].rstrip(":,")
    return (
        FlagVerdict(flag.flag, "refused", line) if flag.flag == named and flag.status == "honoured" else flag
    )


def judge_launch(
    argv: list[str],
    scratch: Path,
    python_path: list[str] | None = None,
    gpus_per_node: int = 8,
    cwd: Path | None = None,
) -> LaunchVerdict:
    """The verdict on one trainer command line; ``scratch``: a folder for stand-ins;
    ``python_path``: where the launch finds its hooks (its folder, its runtime's PYTHONPATH);
    ``gpus_per_node``: the GPUs of a node of the cluster the launch is written for; ``cwd``: the
    folder the launch runs in (relative paths in it are read from there)."""
    from vime.utils.arguments import build_parser

    facts = ParserFacts.of(build_parser())
    machine: list[str] = []
    scratch = scratch.resolve()
    here = contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext()
    with here, _importable([p for p in python_path or [] if Path(p).is_dir()]):
        verdict, line, args, judged = _on_the_cluster(argv, machine, scratch, gpus_per_node)
        refusals = _refusal_lines(args) if args is not None else None
        flags = judge_flags(argv, facts, refusals)
        if verdict == "refused":
            flags = [_refused_by(f, line) for f in flags]
        if verdict != "parses" or args is None:
            return LaunchVerdict(flags, verdict, line, machine)
        needed, local = gpus_needed(args), local_gpus()
        if needed > local:
            machine.append(f"GPUs: the launch asks for {needed}; this machine has {local}")
        args_here, _error = _parse(judged)
        if args_here is not None and local == 0:
            _stage, line_here = _validate_and_preflight(args_here, 0)
            if line_here and not any(line_here in entry for entry in machine):
                machine.append(f"no GPU here: {line_here}")
    return LaunchVerdict(flags, "parses", "", machine, needed)
