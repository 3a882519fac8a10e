"""`vime-sync translate SRC --out DIR`: porcelain over ``sync.translate.translate_tree``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sync.commands.errors import guarded
from sync.rules import RuleSet, RuleTableError, load_rules
from sync.translate import TreeResult, translate_tree
from sync.translator.sources import SourceError, read_directory, read_git_tree

console = Console(stderr=True)


def fail(message: str) -> typer.Exit:
    typer.echo(f"vime-sync translate: {message}", err=True)
    return typer.Exit(1)


def executable_paths(src: Path, rev: str | None) -> set[str]:
    """Source paths with the executable bit (mode 100755 in git, any x bit on disk)."""
    if rev:
        out = subprocess.run(
            ["git", "-C", str(src), "ls-tree", "-r", "-z", "--full-tree", rev],
            capture_output=True,
            check=False,
        ).stdout
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
    """Refuse, before writing anything, a target whose folder leads outside ``--out`` through a symlink."""
    root = out.resolve()
    for item in result.files:
        if item.dst_path is None:
            continue
        target = out / item.dst_path
        if root not in target.parent.resolve().parents and target.parent.resolve() != root:
            raise fail(
                f"--out {out}: {item.dst_path} would be written outside it (a symlinked folder); remove the link"
            )


def write_tree(result: TreeResult, out: Path, executable: set[str] = frozenset()) -> int:  # type: ignore[assignment]
    """Write every mirrored file; a symlink in the way is replaced, never written through."""
    written = 0
    for item in result.files:
        if item.dst_path is None:
            continue
        target = out / item.dst_path
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        target.write_bytes(item.data)
        target.chmod(0o755 if item.src_path in executable else 0o644)
        written += 1
    return written


def summary_table(result: TreeResult, show_rules: bool) -> Table:
    stats = result.stats
    table = Table(title="vime-sync translate", show_header=True)
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("files", str(stats.files_total))
    table.add_row("translated (a rule applied)", str(stats.files_translated))
    table.add_row("unchanged", str(stats.files_unchanged))
    table.add_row("binary (copied)", str(stats.files_binary))
    table.add_row("not mirrored", str(stats.files_not_mirrored))
    table.add_row("parse errors (text rules used)", str(stats.files_parse_error))
    table.add_row("references converted", f"{stats.references_converted} ({stats.converted_percent:.1f} %)")
    table.add_row("left: unsupported (review questions)", str(stats.references_unsupported))
    table.add_row("left: unmapped", str(stats.references_unmapped))
    table.add_row(
        "questioned (converted, but the conformance check objects)", str(stats.references_questioned)
    )
    table.add_row("HTTP calls to vLLM / vllm-router checked", str(stats.http_calls))
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


def finding_lines(result: TreeResult) -> list[str]:
    """``path:line: rule: message`` for every conformance finding and unsupported hit, by path."""
    lines = []
    for item in result.files:
        path = item.dst_path or item.src_path
        entries = [(f.line, f.format()) for f in item.findings]
        entries += [
            (h.line, f"{path}:{h.line}: {h.rule_id}: unsupported: {h.snippet.strip()}")
            for h in item.unsupported
        ]
        lines += [text for _line, text in sorted(entries)]
    return lines


def write_report(result: TreeResult, path: Path, note: str) -> None:
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
        "references_converted": s.references_converted,
        "references_questioned": s.references_questioned,
        "references_unsupported": s.references_unsupported,
        "references_unmapped": s.references_unmapped,
        "http_calls": s.http_calls,
        "conformance_findings": s.conformance_findings,
    }
    path.write_text(json.dumps({"conformance": note, "totals": totals, "files": files}, indent=1) + "\n")


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
            files = read_git_tree(src, rev) if rev else read_directory(src)
        except (RuleTableError, SourceError) as error:
            raise fail(str(error)) from None
        with Progress(
            TextColumn("translating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        ) as bar:
            task = bar.add_task("translate", total=len(files))
            result = translate_tree(files, rules, progress=lambda _path: bar.advance(task))
        conformance_note = "conformance check skipped (--no-conformance)"
        if not no_conformance:
            result, conformance_note = run_conformance(result, rules)
        check_targets(result, out)
        written = write_tree(result, out, executable_paths(src, rev))
        console.print(summary_table(result, show_rules=stats))
        console.print(conformance_note, markup=False, highlight=False)
        if stats:
            for line in finding_lines(result):
                console.print(line, markup=False, highlight=False, soft_wrap=True)
        if report is not None:
            write_report(result, report, conformance_note)
        for item in result.files:
            for ref in item.unmapped:
                console.print(
                    f"unmapped {ref.path}:{ref.line}: {ref.snippet}",
                    markup=False,
                    highlight=False,
                    soft_wrap=True,
                )
            if item.parse_error:
                console.print(
                    f"warning {item.src_path}: does not parse ({item.parse_error}); text rules applied"
                )
        s = result.stats
        warnings = s.references_unmapped + s.files_parse_error
        console.print(
            f"Wrote {written} files to {out}. transformed {s.files_translated}, "
            f"skipped {s.files_unchanged + s.files_binary + s.files_not_mirrored}, failed 0, warnings {warnings}"
        )
        if strict and s.references_unmapped:
            typer.echo(
                f"vime-sync translate: {s.references_unmapped} unmapped SGLang references (--strict)",
                err=True,
            )
            raise typer.Exit(1)
