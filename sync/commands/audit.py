"""`vime-sync audit`: is every hunk of upstream PRs #from..#to accounted for in the downstream? (porcelain over sync.audit)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from sync.commands.errors import REFUSED, guarded


def register(app: typer.Typer) -> None:
    @app.command("audit")
    @guarded("audit")
    def audit(
        upstream: Annotated[Path, typer.Option("--upstream", help="Path to a slime clone (bare or not).")],
        from_pr: Annotated[
            int, typer.Option("--from", help="First PR of the range (the cutoff is PR #from-1).")
        ],
        to_pr: Annotated[int, typer.Option("--to", help="Last PR of the range (its merge commit).")],
        downstream: Annotated[
            Path, typer.Option("--downstream", help="The vime repository or a sync worktree (default: here).")
        ] = Path("."),
        rev: Annotated[str, typer.Option("--rev", help="The downstream revision to audit.")] = "HEAD",
        upstream_ref: Annotated[
            str,
            typer.Option("--upstream-ref", help="Upstream branch whose first-parent history is merge order."),
        ] = "HEAD",
        json_out: Annotated[
            Path | None, typer.Option("--json", help="Also write every account (one per hunk) to this file.")
        ] = None,
    ) -> None:
        """Account for every hunk the upstream PRs of the range changed: present, superseded, excluded,
        decided, a port request, or an omission (file, line, PR). Exit 1 on omissions."""
        from sync.audit.report import detail_lines, summary_lines, to_dict
        from sync.audit.run import audit as run_audit

        console = Console()
        with console.status("audit: translating and replaying every file the range touched"):
            result = run_audit(
                upstream, downstream, from_pr, to_pr, rev=rev, upstream_ref=upstream_ref, console=console
            )
        for line in summary_lines(result) + detail_lines(result):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        if json_out is not None:
            json_out.write_text(json.dumps(to_dict(result), indent=2) + "\n", encoding="utf-8")
        if not result.passed:
            typer.echo(
                f"vime-sync audit: {len(result.omissions)} omission(s); each is listed above", err=True
            )
            raise typer.Exit(REFUSED)
