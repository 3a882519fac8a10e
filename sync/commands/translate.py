"""`vime-sync translate SRC --out DIR`: porcelain over ``sync.translate.translate_tree``."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sync.collisions import find_collisions, refusal
from sync.commands.errors import guarded
from sync.gitio import git_run
from sync.model.fate import BINARY, NOT_MIRRORED, Fate, FileFate, RunFates
from sync.rules import RuleSet, RuleTableError, load_rules
from sync.translate import FileTranslation, Hit, TreeResult, translate_tree
from sync.translator.codec import decode
from sync.translator.compiled import compiled
from sync.translator.flag_report import LeftFlag, flags_of_hit
from sync.translator.sources import SourceError, read_directory, read_git_tree

console = Console(stderr=True)


def fail(message: str) -> typer.Exit:
    typer.echo(f"vime-sync translate: {message}", err=True)
    return typer.Exit(1)


def executable_paths(src: Path, rev: str | None) -> set[str]:
    """Source paths with the executable bit (mode 100755 in git, any x bit on disk)."""
    if rev:
        out = git_run(src, "ls-tree", "-r", "-z", "--full-tree", rev).stdout
        return {
            rec.partition(b"\t")[2].decode("utf-8", "surrogateescape")
            for rec in out.split(b"\0")
            if rec.startswith(b"100755 ")
        }
    return {
        p.relative_to(src).as_posix()
        for p in src.rglob("*")
        if p.is_file() and not p.is_symlink() and p.stat().st_mode & 0o111
    }


def check_targets(result: TreeResult, out: Path) -> None:
    """Refuse, before writing anything, two upstream files with one target (one would overwrite the
    other) and a target whose folder leads outside ``--out`` through a symlink."""
    collisions = find_collisions((item.src_path, item.dst_path) for item in result.files)
    if collisions:
        raise fail(f"{refusal(collisions)}; nothing was written")
    root = out.resolve()
    for item in result.files:
        if item.dst_path is None:
            continue
        target = out / item.dst_path
        if root not in target.parent.resolve().parents and target.parent.resolve() != root:
            raise fail(
                f"--out {out}: {item.dst_path} would be written outside it (a symlinked folder); remove the link"
            )


def check_report_path(report: Path | None) -> None:
    """Refuse, before ``--out`` is written, a ``--report`` that cannot be written (so no half-made run)."""
    if report is None:
        return
    folder = report.parent
    if report.is_dir():
        raise fail(f"--report {report} is a folder; pass a file path")
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise fail(f"--report {report}: {folder} is not a writable folder; create it or pass another path")


def _stage_name(out: Path, pid: int) -> Path:
    return out.parent / f".{out.name}.partial-{pid}"


def _remove_stale_stages(out: Path) -> None:
    """Staging folders of runs that were killed (their process is gone)."""
    for stale in out.parent.glob(f".{out.name}.partial-*"):
        pid = stale.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(stale, ignore_errors=True)


def write_tree(result: TreeResult, out: Path, executable: set[str] = frozenset()) -> int:  # type: ignore[assignment]
    """Write every mirrored file into a staging folder beside ``out``, then move it into place: a new or
    empty ``out`` appears whole or not at all (with ``--force`` each file is replaced whole); a
    symlink in the way is replaced, never written through; folders this run made go on failure."""
    made = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_stages(out)
    stage = _stage_name(out, os.getpid())
    try:
        written = 0
        for item in result.files:
            if item.dst_path is None:
                continue
            target = stage / item.dst_path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(item.data)
            target.chmod(0o755 if item.src_path in executable else 0o644)
            written += 1
        stage.mkdir(exist_ok=True)
        if out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        if not out.exists():
            stage.rename(out)
            return written
        for staged in sorted(p for p in stage.rglob("*") if not p.is_dir()):
            target = out / staged.relative_to(stage)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, target)  # replaces a symlink in the way, never writes through it
        shutil.rmtree(stage)
        return written
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def fate_of(item: FileTranslation) -> FileFate:
    """What became of one file: one fate each, a failure with the reason and what was written instead."""
    if item.kind == "not_mirrored":
        return FileFate(item.src_path, Fate.SKIPPED, NOT_MIRRORED)
    if item.kind == "binary":
        return FileFate(item.src_path, Fate.SKIPPED, BINARY)
    rewritten = any(applied.line > 0 for applied in item.applied)
    if item.parse_error:
        written = "text rules applied" if rewritten else "copied without a rewrite"
        return FileFate(item.src_path, Fate.FAILED, f"does not parse ({item.parse_error}); {written}")
    return FileFate(item.src_path, Fate.TRANSFORMED if rewritten else Fate.UNCHANGED)


def fates_of(result: TreeResult) -> RunFates:
    return RunFates(
        tuple(fate_of(item) for item in result.files), sum(len(item.unmapped) for item in result.files)
    )


def summary_table(result: TreeResult, fates: RunFates, show_rules: bool, left_flags: int = 0) -> Table:
    stats = result.stats
    table = Table(title="vime-sync translate", show_header=True)
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("files", str(len(fates.files)))
    table.add_row("translated (a rule applied)", str(fates.count(Fate.TRANSFORMED)))
    table.add_row("unchanged", str(fates.count(Fate.UNCHANGED)))
    table.add_row("binary (copied)", str(sum(1 for f in fates.of(Fate.SKIPPED) if f.reason == BINARY)))
    table.add_row("not mirrored", str(sum(1 for f in fates.of(Fate.SKIPPED) if f.reason == NOT_MIRRORED)))
    table.add_row("failed (does not parse)", str(fates.count(Fate.FAILED)))
    table.add_row("references converted", f"{stats.references_converted} ({stats.converted_percent:.1f} %)")
    table.add_row("left: unsupported (review questions)", str(stats.references_unsupported))
    table.add_row("left: unmapped", str(stats.references_unmapped))
    table.add_row("  of the unsupported: launch flags vime / vLLM lack (--stats lists them)", str(left_flags))
    table.add_row(
        "questioned (converted, but the conformance check objects)", str(stats.references_questioned)
    )
    table.add_row("HTTP calls to vLLM / vllm-router checked", str(stats.http_calls))
    table.add_row(
        "  files whose calls could not be checked (they do not parse)", str(stats.conformance_unread)
    )
    table.add_row("conformance findings (review questions)", str(stats.conformance_findings))
    if show_rules:
        for rule_id, count in sorted(stats.rules_applied.items(), key=lambda kv: (-kv[1], kv[0])):
            table.add_row(f"  rule {rule_id}", str(count))
        for rule_id, count in sorted(stats.unsupported_hits.items(), key=lambda kv: (-kv[1], kv[0])):
            table.add_row(f"  unsupported {rule_id}", str(count))
    return table


def run_conformance(result: TreeResult, rules: RuleSet) -> tuple[TreeResult, str]:
    """Check the translated HTTP calls against the installed vLLM's API (read once per vLLM version)."""
    from sync.conformance.schema import ApiUnavailable, load_api
    from sync.conformance.stage import check_tree

    with console.status("reading vLLM's API (cached per vLLM version)"):
        try:
            api = load_api()
        except ApiUnavailable as error:
            return check_tree(result, rules, None), f"conformance check of HTTP calls skipped: {error}"
    checked = check_tree(result, rules, api)
    return checked, f"conformance: checked against {api.version} and vllm-router"


def left_flags_of(result: TreeResult, rules: RuleSet) -> list[LeftFlag]:
    """Every launch flag the translation left (an ``unsupported`` flag rule, or a ``--vllm-*``
    name the installed vLLM lacks), one per flag and line."""
    found = []
    for item in result.files:
        path = item.dst_path or item.src_path
        for hit, flags in _flag_hits(item, rules):
            found += [
                LeftFlag(path, hit.line, flag, hit.rule_id, rules.rule(hit.rule_id).note) for flag in flags
            ]
    return found


def _flag_hits(item: FileTranslation, rules: RuleSet) -> list[tuple[Hit, list[str]]]:
    """Each unsupported hit of a translated file with the launch flags it is about (maybe none)."""
    if not item.unsupported:
        return []
    rules_c = compiled(rules)
    lines = decode(item.data)[0].split("\n")
    return [
        (hit, flags_of_hit(rules_c, hit, lines[hit.line - 1] if 0 < hit.line <= len(lines) else None))
        for hit in item.unsupported
    ]


def finding_lines(result: TreeResult, rules: RuleSet) -> list[str]:
    """``path:line: rule: message`` for every conformance finding and unsupported hit, by path; a
    hit about launch flags names each flag and what vLLM takes instead (the rule's note)."""
    lines = []
    for item in result.files:
        path = item.dst_path or item.src_path
        entries = [(f.line, f.format()) for f in item.findings]
        for h, flags in _flag_hits(item, rules):
            if flags:
                note = rules.rule(h.rule_id).note
                entries += [
                    (h.line, LeftFlag(path, h.line, flag, h.rule_id, note).format()) for flag in flags
                ]
            else:
                entries.append((h.line, f"{path}:{h.line}: {h.rule_id}: unsupported: {h.snippet.strip()}"))
        lines += [text for _line, text in sorted(entries)]
    return lines


def flag_check_note(rules: RuleSet) -> str:
    """Against which vLLM the ``--vllm-*`` targets of flag rules were checked."""
    from sync.vllm_serve import VllmNotInstalled, installed_vllm

    if compiled(rules).vllm_options() is None:
        return "launch flags: --vllm-* names not checked (vLLM is not installed here)"
    try:
        version = installed_vllm()[0]
    except VllmNotInstalled:  # pragma: no cover - vllm_options() just read it
        version = "vLLM"
    return f"launch flags: every --vllm-* name written exists in {version}'s `vllm serve`"


def write_report(
    result: TreeResult, fates: RunFates, path: Path, note: str, left: list[LeftFlag] | None = None
) -> None:
    files = []
    for item in result.files:
        if not (item.findings or item.unsupported or item.unmapped):
            continue
        files.append(
            {
                "src_path": item.src_path,
                "dst_path": item.dst_path,
                "http_calls": item.http_calls,
                "findings": [f.to_json() for f in item.findings],
                "unsupported": [
                    {"rule": h.rule_id, "line": h.line, "snippet": h.snippet} for h in item.unsupported
                ],
                "unmapped": [{"line": r.line, "snippet": r.snippet} for r in item.unmapped],
            }
        )
    s = result.stats
    totals = {
        "files": s.files_total,
        "files_failed": fates.count(Fate.FAILED),
        "references_converted": s.references_converted,
        "references_questioned": s.references_questioned,
        "references_unsupported": s.references_unsupported,
        "references_unmapped": s.references_unmapped,
        "http_calls": s.http_calls,
        "conformance_findings": s.conformance_findings,
        "launch_flags_left": len(left or []),
    }
    flags = [
        {"path": f.path, "line": f.line, "flag": f.flag, "rule": f.rule_id, "note": f.note}
        for f in left or []
    ]
    failed = [{"path": f.path, "reason": f.reason} for f in fates.of(Fate.FAILED)]
    document = {
        "conformance": note,
        "totals": totals,
        "files": files,
        "failed": failed,
        "launch_flags_left": flags,
    }
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        tmp.write_text(json.dumps(document, indent=1) + "\n")
        tmp.replace(path)  # the whole report or none
    finally:
        tmp.unlink(missing_ok=True)


def register(app: typer.Typer) -> None:
    @app.command("translate")
    @guarded("translate")
    def translate(
        src: Annotated[Path, typer.Argument(help="Upstream directory, or a git repository with --rev.")],
        out: Annotated[Path, typer.Option("--out", help="Directory to write the translated tree into.")],
        rev: Annotated[
            str | None, typer.Option("--rev", help="Translate this revision of the repository SRC.")
        ] = None,
        strict: Annotated[
            bool, typer.Option("--strict", help="Exit 1 when unmapped SGLang references remain.")
        ] = False,
        stats: Annotated[
            bool, typer.Option("--stats", help="Also list every rule applied and unsupported hit.")
        ] = False,
        force: Annotated[
            bool,
            typer.Option("--force", help="Write into a non-empty --out (files there may be overwritten)."),
        ] = False,
        rules_dir: Annotated[
            Path | None, typer.Option("--rules", help="Rule tables (default: translations/).")
        ] = None,
        report: Annotated[
            Path | None,
            typer.Option(
                "--report", help="Write every finding, unsupported hit and unmapped reference as JSON."
            ),
        ] = None,
        no_conformance: Annotated[
            bool, typer.Option("--no-conformance", help="Skip checking HTTP calls against vLLM's API.")
        ] = False,
    ) -> None:
        """Translate an upstream slime tree (SGLang) into vime's layout and vLLM code."""
        if not src.exists():
            raise fail(f"{src} does not exist; pass an upstream directory or git repository")
        if out.resolve() == src.resolve() or src.resolve() in out.resolve().parents:
            raise fail(f"--out {out} is inside the source {src}; pass a directory outside it")
        if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not force)):
            raise fail(f"--out {out} is not an empty directory; pass a new one, or --force to write into it")
        try:
            rules = load_rules(rules_dir)
            links: list[str] = []
            files = read_git_tree(src, rev) if rev else read_directory(src, links)
        except (RuleTableError, SourceError) as error:
            raise fail(str(error)) from None
        if links:
            console.print(
                f"skipped {len(links)} symlinks (never followed or read, as with --rev):", highlight=False
            )
            for link in links:
                console.print(f"  {link}", markup=False, highlight=False, soft_wrap=True)
        with Progress(
            TextColumn("translating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        ) as bar:
            task = bar.add_task("translate", total=len(files))
            result = translate_tree(files, rules, progress=lambda _path: bar.advance(task))
        conformance_note = "conformance check skipped (--no-conformance)"
        if not no_conformance:
            result, conformance_note = run_conformance(result, rules)
        check_targets(result, out)
        check_report_path(report)
        written = write_tree(result, out, executable_paths(src, rev))
        left = left_flags_of(result, rules)
        fates = fates_of(result)
        console.print(summary_table(result, fates, show_rules=stats, left_flags=len(left)))
        console.print(conformance_note, markup=False, highlight=False)
        console.print(flag_check_note(rules), markup=False, highlight=False)
        if stats:
            for line in finding_lines(result, rules):
                console.print(line, markup=False, highlight=False, soft_wrap=True)
        if report is not None:
            write_report(result, fates, report, conformance_note, left)
        for item in result.files:
            for ref in item.unmapped:
                console.print(
                    f"unmapped {ref.path}:{ref.line}: {ref.snippet}",
                    markup=False,
                    highlight=False,
                    soft_wrap=True,
                )
        for failure in fates.of(Fate.FAILED):
            console.print(
                f"failed {failure.path}: {failure.reason}", markup=False, highlight=False, soft_wrap=True
            )
        s = result.stats
        console.print(
            f"Wrote {written} files to {out}: {fates.closing_line()}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        if strict and s.references_unmapped:
            typer.echo(
                f"vime-sync translate: {s.references_unmapped} unmapped SGLang references (--strict)",
                err=True,
            )
            raise typer.Exit(1)
