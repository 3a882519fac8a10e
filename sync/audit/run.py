"""``audit``: every hunk of every upstream PR in a range, accounted for in a downstream revision.

The range is given by PR numbers as a window is (cutoff = the commit of PR ``from - 1``, tip = the
commit of PR ``to``). The downstream reflects upstream at its state file's cutoff, which may lie
after the tip: lines the range wrote and a later PR (up to that cutoff) rewrote are superseded,
not missing. Each upstream file's versions are taken from the window's cache (after a follow every
one of them is there), else translated without the conformance check; then each file is replayed
line by line and judged (``accounts``). Also listed: paths frozen at an older mirror and deletions upstream the downstream
still carries.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from sync.audit.accounts import Account, FileFacts, judge
from sync.audit.decided import recorded_answers
from sync.audit.history import Lineage, label, lineages
from sync.audit.lines import PR, replay
from sync.gitio import BlobReader, ls_tree
from sync.layout import LAYOUT_FILE, Layout, parse_layout
from sync.ledger import load_ledger
from sync.model.disposition import Disposition
from sync.model.errors import SyncError
from sync.window.checks import check_repos, git_common_dir, toplevel
from sync.window.history import WindowError, first_parent_log, resolve_window
from sync.window.parallel import pretranslate
from sync.window.run import load_translator
from sync.window.state import read_state
from sync.window.translation import TranslateFn, TranslationCache, translate_one, translator_fingerprint

if TYPE_CHECKING:
    from sync.rules import RuleSet

Translate = Callable[[str | None, str | None], bytes | None]


@dataclass(frozen=True)
class Frozen:
    """A downstream file equal to the translation of an older upstream version than the one it should mirror."""

    file: str
    upstream: str
    at: str  # the PR after which upstream had that version ("the cutoff": before the range)
    explained: bool


@dataclass(frozen=True)
class Stale:
    """A file upstream deleted (or moved away) that the downstream still has."""

    file: str
    upstream: str
    deleted_by: str
    explained: bool


@dataclass
class AuditResult:
    from_pr: int
    to_pr: int
    cutoff: str
    end: str  # the upstream commit the downstream is in step with
    prs: int
    accounts: list[Account] = field(default_factory=list)
    frozen: list[Frozen] = field(default_factory=list)
    stale: list[Stale] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: int = 0
    translated: int = 0
    seconds: float = 0.0

    def counts(self) -> Counter[str]:
        return Counter(a.category for a in self.accounts)

    @property
    def omissions(self) -> list[Account]:
        return [a for a in self.accounts if a.category == "omission"]

    @property
    def passed(self) -> bool:
        return not self.omissions


def _layout(downstream: Path, tree: dict[str, tuple[str, str]], read: BlobReader) -> Layout:
    entry = tree.get(LAYOUT_FILE)
    return parse_layout(read.read(entry[1]).decode("utf-8", "replace")) if entry else Layout()


def _place(rules: RuleSet, layout: Layout, path: str) -> tuple[str | None, str | None, str | None]:
    """(downstream path, why not mirrored, why vime-owned) of an upstream path."""
    place = layout.place(path)
    if place.action == "ignore":
        return None, place.why, None
    mapped = place.to or rules.map_path(path)
    if mapped is None:
        rule = rules.not_mirrored_rule(path)
        return None, f"rule {rule.id}" if rule else "the rules do not map this path", None
    return mapped, None, place.why if place.action == "port" else None


def _hand_marks(downstream: Path, rev: str) -> dict[PR, str]:
    return {
        r.pr if r.pr is not None else r.sha[:8]: f"{r.disposition}: {r.reason}"
        for r in load_ledger(downstream, rev)
        if r.disposition in (Disposition.PORTED, Disposition.EXCLUDED)
    }


def _end(
    upstream: Path, downstream: Path, rev: str, tip: str, to_pr: int, upstream_ref: str
) -> tuple[str, str]:
    """The upstream commit the downstream mirrors (its state file's cutoff), refused when before the tip."""
    try:
        state = read_state(downstream, rev)
    except ValueError as exc:
        raise SyncError(str(exc)) from None
    if state is None:
        return tip, f"the downstream has no state file at {rev}: judged against upstream at #{to_pr}"
    history = [c.sha for c in first_parent_log(upstream, upstream_ref)]
    if state.cutoff not in history:
        raise SyncError(
            f"the downstream's state file names cutoff {state.cutoff[:10]}, which is not on the upstream's "
            f"first-parent history ({upstream_ref}); pass --upstream-ref BRANCH"
        )
    if history.index(state.cutoff) < history.index(tip):
        raise SyncError(
            f"the downstream is in step with upstream only up to PR #{state.last_pr} ({state.cutoff[:10]}), before "
            f"#{to_pr}; audit up to #{state.last_pr}, or sync further first"
        )
    return state.cutoff, ""


def audit(
    upstream: Path,
    downstream: Path,
    from_pr: int,
    to_pr: int,
    *,
    rev: str = "HEAD",
    upstream_ref: str = "HEAD",
    rules: RuleSet | None = None,
    translate_fn: TranslateFn | None = None,
    use_cache: bool = True,
    console: Console | None = None,
) -> AuditResult:
    """Account for every hunk of upstream PRs #from..#to in the downstream at ``rev``; reads only (the
    translation cache in the downstream's ``.git`` may grow)."""
    started = time.perf_counter()
    console = console or Console(quiet=True)
    upstream, downstream = Path(upstream).resolve(), Path(downstream).resolve()
    check_repos(upstream, downstream)
    downstream = toplevel(downstream)
    try:
        window = resolve_window(upstream, to_pr, from_pr, None, upstream_ref)
    except WindowError as exc:
        raise SyncError(str(exc)) from None
    end, note = _end(upstream, downstream, rev, window.tip, to_pr, upstream_ref)
    result = AuditResult(
        from_pr, to_pr, window.cutoff, end, len(window.commits), notes=[note] if note else []
    )
    commits = first_parent_log(upstream, f"{window.cutoff}..{end}", with_files=True)
    in_range = {label(c) for c in window.commits}
    rules, translate_fn = load_translator(downstream, rules, translate_fn)
    root = git_common_dir(downstream) / "vime-sync-cache" if use_cache else None
    full = TranslationCache(root, translator_fingerprint(rules.hash, translate_fn))
    text_fn = _text_only(translate_fn)
    cache = TranslationCache(root, translator_fingerprint(rules.hash, text_fn))
    tree = ls_tree(downstream, rev)
    answers = recorded_answers(downstream, rev)
    marks = _hand_marks(downstream, rev)
    lins = lineages(upstream, window.cutoff, end, commits)
    with BlobReader(upstream) as up, BlobReader(downstream) as down:
        layout = _layout(downstream, tree, down)
        places = {lin.paths[0]: _place(rules, layout, lin.last_path) for lin in lins}
        jobs = [
            job
            for lin in lins
            if places[lin.paths[0]][1] is None and places[lin.paths[0]][2] is None
            for job in ([lin.first] if lin.first else []) + [(p, o) for _c, p, o in lin.steps if p and o]
        ]
        pretranslate([j for j in jobs if full.get(*j) is None], up.read, text_fn, rules, cache, console)

        def translated(path: str | None, oid: str | None) -> bytes | None:
            """The translated text: from a window's or follow's own cache when there, else translated
            without the conformance check (only the text is read here)."""
            if not path or not oid:
                return None
            found = full.get(path, oid)
            return (
                found.data
                if found is not None
                else translate_one(path, oid, up.read, text_fn, rules, cache).data
            )

        for lin in lins:
            path, excluded, port = places[lin.paths[0]]
            content = down.read(tree[path][1]) if path and path in tree else None
            facts = FileFacts(lin.last_path, path, content, excluded, port, answers.get(path or "", []),
                              marks)  # fmt: skip
            _judge_lineage(result, lin, facts, in_range, translated)
            if len(lin.paths) > 1 and excluded is None:
                old = _place(rules, layout, lin.paths[-1])[0]
                if old != path:
                    _moved_away(result, lin, old, tree)
    result.files, result.translated = len(lins), cache.misses
    result.seconds = time.perf_counter() - started
    return result


def _text_only(translate_fn: TranslateFn) -> TranslateFn:
    """vime's translator without the conformance check (its findings are not read here); an injected
    translator as it is."""
    from sync.conformance.stage import translate_checked
    from sync.translate import translate_file

    return translate_file if translate_fn is translate_checked else translate_fn


def _judge_lineage(
    result: AuditResult, lin: Lineage, facts: FileFacts, in_range: set[PR], translated
) -> None:
    if facts.excluded is not None or facts.port is not None:
        category, why = (
            ("excluded", facts.excluded) if facts.excluded else ("port", f"port request ({facts.port})")
        )
        for pr in dict.fromkeys(label(c) for c, _p, _o in lin.steps if label(c) in in_range):
            if facts.port and pr in facts.marks:
                result.accounts.append(
                    Account(pr, lin.last_path, facts.path, 0, "marked", f"ledger: {facts.marks[pr]}")
                )
            else:
                result.accounts.append(Account(pr, lin.last_path, facts.path, 0, category, why or ""))
        return
    first = translated(*lin.first) if lin.first else None
    versions: list[tuple[PR, bytes | None]] = []
    previous = first
    for c, path, oid in lin.steps:
        data = translated(path, oid)
        if data == previous and label(c) in in_range:
            result.accounts.append(
                Account(label(c), lin.last_path, facts.path, 0, "vanished", "no change after translation")
            )
        versions.append((label(c), data))
        previous = data
    r = replay(first, versions)
    accounts = judge(r, facts, in_range)
    result.accounts += accounts
    bad = any(a.category == "omission" for a in accounts)
    if facts.content is not None and lin.exists_at_end and facts.content != previous:
        older = [("the cutoff", first)] + [(_name(pr), d) for pr, d in versions[:-1]]
        at = next((n for n, data in reversed(older) if data is not None and data == facts.content), None)
        if at is not None:
            result.frozen.append(Frozen(facts.path or "", lin.last_path, at, not bad))
    if facts.content is not None and not lin.exists_at_end and facts.path is not None:
        gone = next(label(c) for c, _p, o in reversed(lin.steps) if o is None)
        result.stale.append(Stale(facts.path, lin.last_path, _name(gone), not bad))


def _moved_away(result: AuditResult, lin: Lineage, old: str | None, tree: dict[str, tuple[str, str]]) -> None:
    """A file upstream renamed whose old downstream path is still there, beside (or instead of) the new."""
    new_at = next((label(c) for c, p, o in lin.steps if o is not None and p == lin.paths[0]), None)
    if old is not None and old in tree and new_at is not None:
        result.stale.append(Stale(old, lin.paths[-1], f"{_name(new_at)} (moved to {lin.paths[0]})", False))
        why = f"upstream moved it to {lin.paths[0]}; the downstream still has it at {old}"
        result.accounts.append(Account(new_at, lin.paths[-1], old, 0, "omission", why))


def _name(pr: PR) -> str:
    return f"#{pr}" if isinstance(pr, int) else str(pr)
