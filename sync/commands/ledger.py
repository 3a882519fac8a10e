"""`vime-sync ledger`: print the running account of upstream commits, answer "where is PR #N?",
or mark a PR by hand (ported, excluded) — porcelain over ``sync.ledger``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sync.commands.errors import guarded
from sync.model.window import UpstreamCommit


def register(app: typer.Typer) -> None:
    @app.command("ledger")
    @guarded("ledger")
    def ledger(
        downstream: Annotated[
            Path, typer.Option("--downstream", help="The vime repository or a sync worktree (default: here).")
        ] = Path("."),
        pr: Annotated[int | None, typer.Option("--pr", help="Say where upstream PR #N went.")] = None,
        upstream: Annotated[
            Path | None,
            typer.Option("--upstream", help="With --pr: a slime clone, to place PRs not synced yet."),
        ] = None,
        mark: Annotated[
            int | None, typer.Option("--mark", help="Set the disposition of PR #N by hand (edits the file).")
        ] = None,
        disposition: Annotated[
            str, typer.Option("--disposition", help="With --mark: ported, excluded, mirrored or port.")
        ] = "ported",
        reason: Annotated[str, typer.Option("--reason", help="With --mark: why (one line).")] = "",
        markdown: Annotated[
            bool, typer.Option("--markdown", help="Print LEDGER.md instead of the rows.")
        ] = False,
    ) -> None:
        """Every upstream first-parent commit the syncs took: PR, window, disposition, reason, vime commit."""
        from sync.gitio import is_git_repo
        from sync.ledger import (
            LEDGER_PATH,
            LedgerError,
            dump_ledger,
            fill_downstream,
            ledger_files,
            parse_ledger,
            render_ledger_md,
            set_disposition,
            where_is,
        )
        from sync.model.errors import SyncError
        from sync.textio import read_utf8

        root = downstream.resolve()
        path = root / LEDGER_PATH
        if not path.is_file():
            raise SyncError(
                f"no {LEDGER_PATH} in {root}; run `vime-sync window` first (or pass --downstream)"
            )
        if upstream is not None and not is_git_repo(upstream):
            raise SyncError(f"--upstream {upstream} is not a git repository; pass a slime clone")
        text = read_utf8(path, f"restore it with `git checkout -- {LEDGER_PATH}`", LEDGER_PATH)
        try:
            rows = parse_ledger(text, str(path))
            if mark is not None:
                if not reason:
                    raise LedgerError('--mark needs --reason "..." (why it was ported or excluded)')
                rows = set_disposition(rows, mark, disposition, reason)
                for rel, data in ledger_files(rows).items():
                    (root / rel).write_bytes(data)
                typer.echo(f"PR #{mark}: {disposition} ({reason}); commit {LEDGER_PATH} and LEDGER.md")
                return
        except LedgerError as exc:
            typer.echo(f"vime-sync ledger: {exc}", err=True)
            raise typer.Exit(1) from None
        rows = fill_downstream(root, rows)
        if pr is not None:
            merged = None
            if upstream is not None:
                from sync.window.history import find_pr_commit, first_parent_log

                def merged(number: int) -> UpstreamCommit | None:
                    return find_pr_commit(first_parent_log(upstream, "HEAD"), number)

            typer.echo(where_is(rows, pr, merged))
            raise typer.Exit(0 if any(r.pr == pr for r in rows) else 1)
        if markdown:
            typer.echo(render_ledger_md(rows), nl=False)
        else:
            typer.echo(dump_ledger(rows).decode(), nl=False)
