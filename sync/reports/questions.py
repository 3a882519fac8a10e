"""The review queue, grouped by what a person decides: one question per conflict hunk, modify/delete,
add/add, binary clash, parse failure and port request, and one per ``unsupported`` rule and per
unmapped reference (listing every site: file, line, PRs). Each has options, a proposed default and a
tier (Decide: a human must choose; Confirm: a default is proposed; Settled: a recorded decision).
A group's decision applies to all its sites; recorded decisions are kept and found per site.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from sync.merge.filemerge import FileOutcome
from sync.merge.textmerge import Hunk, parse_hunks, replace_hunks
from sync.merge.whitespace import kind_of, same_meaning
from sync.model.outcome import ASKED_AS_A_FILE, NOTHING_LANDS, WITH_MARKERS, Outcome
from sync.model.question import (
    FILE_OPTIONS,
    GROUP_KINDS,
    HUNK_OPTIONS,
    NOTE_OPTIONS,
    PORT_OPTIONS,
    SIDE_OPTIONS,
    TIERS,
    Option,
    Question,
    QuestionKind,
    Site,
    Tier,
)
from sync.reports.review_config import REVIEW_CONFIG_PATH, ReviewConfig


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def propose_hunk_default(
    ours: bytes, base: bytes, theirs: bytes, kind: str = "text", before: bytes = b"", after: bytes = b""
) -> tuple[str | None, str]:
    """A safe default for a conflict hunk, or None (Decide). Only whitespace that means nothing in the
    file's ``kind`` qualifies (``sync.merge.whitespace``), judged with the hunk in its file
    (``before`` and ``after``): a space inside a string or between two tokens is content."""
    o, b, t = (before + x + after for x in (ours, base, theirs))
    if same_meaning(o, t, kind):
        return "ours", "the sides differ in whitespace only"
    if same_meaning(o, b, kind):
        return "theirs", "ours changed whitespace only"
    if same_meaning(t, b, kind):
        return "ours", "theirs changed whitespace only"
    return None, ""


def hunk_context(data: bytes, hunk: Hunk, marker_size: int) -> tuple[bytes, bytes]:
    """The file around ``hunk`` (the other hunks taken as ours), so a hunk is judged where it stands."""
    others = {h.index: h.ours for h in parse_hunks(data, marker_size) if h.index != hunk.index}
    lines = replace_hunks(data, others, marker_size).splitlines(keepends=True)
    [alone] = parse_hunks(b"".join(lines), marker_size)
    return b"".join(lines[: alone.start_line - 1]), b"".join(lines[alone.end_line :])


def port_diff(out: FileOutcome) -> str:
    """The translated upstream change of a port request as a unified diff (base -> theirs, upstream paths)."""
    base = _text(out.base.data) if out.base is not None else ""
    theirs = _text(out.theirs.data) if out.theirs is not None else ""
    old = f"a/{out.upstream_old or out.upstream_path}" if out.base is not None else "/dev/null"
    lines = difflib.unified_diff(
        base.splitlines(keepends=True), theirs.splitlines(keepends=True), old, f"b/{out.upstream_path}"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


_TOKEN = re.compile(r"[A-Za-z_][\w.]*")
_SGLANG = re.compile(r"sglang", re.IGNORECASE)


def reference_of(snippet: str) -> str:
    """The SGLang reference a line names (a dotted module or a name), which groups unmapped sites."""
    for m in _TOKEN.finditer(snippet):
        token = m.group(0).strip(".")
        if _SGLANG.search(token):
            return token
    return snippet.strip()


def content_key(kind: str, *parts: bytes | str) -> str:
    """Key of a question by its content, so the same question in a later window finds its decision."""
    h = hashlib.sha256(kind.encode())
    for part in parts:
        raw = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        h.update(len(raw).to_bytes(8, "big") + raw)
    return h.hexdigest()[:24]


def _rules_in(out: FileOutcome) -> list[str]:
    if out.theirs is None:
        return []
    return sorted({rid for rid, _ in out.theirs.applied})


def _hunk_rules(out: FileOutcome, theirs_side: bytes) -> list[str]:
    """Rules the translator applied on the lines of theirs that the hunk shows (all of the file's if not found)."""
    if out.theirs is None:
        return []
    at = out.theirs.data.find(theirs_side) if theirs_side else -1
    if at < 0:
        return _rules_in(out)
    first = out.theirs.data.count(b"\n", 0, at) + 1
    last = first + max(theirs_side.count(b"\n") - 1, 0)
    return sorted({rid for rid, line in out.theirs.applied if first <= line <= last})


def _new_hits(out: FileOutcome) -> tuple[list[tuple[str, int, str]], list[tuple[str, int, str]]]:
    """Unsupported hits and unmapped references in theirs that the base did not already have."""
    if out.theirs is None:
        return [], []
    old_hits = {(r, s.strip()) for r, _, s in out.base.unsupported} if out.base else set()
    old_refs = {(p, s.strip()) for p, _, s in out.base.unmapped} if out.base else set()
    hits = [h for h in out.theirs.unsupported if (h[0], h[2].strip()) not in old_hits]
    refs = [r for r in out.theirs.unmapped if (r[0], r[2].strip()) not in old_refs]
    return hits, refs


class Provenance(Protocol):
    """Which upstream PRs produced a hunk or a line of theirs (None: not known, use the file's PRs)."""

    def hunk_prs(self, out: FileOutcome, base: bytes, theirs: bytes) -> list[int | str] | None: ...

    def line_prs(self, out: FileOutcome, line: int) -> list[int | str] | None: ...

    def annotate(self, out: FileOutcome, diff: str) -> str: ...


class RegionProvenance(Provenance, Protocol):
    """A provenance that also lists the regions each PR changed in a file (decisions.json's ``regions``):
    the window's, sync.window.provenance.WindowProvenance."""

    def regions(self, out: FileOutcome) -> list[dict[str, object]]: ...


class FilePRsOnly:
    """The fallback provenance: every hunk and line carries the PRs that touched its file."""

    def hunk_prs(self, out: FileOutcome, base: bytes, theirs: bytes) -> list[int | str] | None:
        return None

    def line_prs(self, out: FileOutcome, line: int) -> list[int | str] | None:
        return None

    def annotate(self, out: FileOutcome, diff: str) -> str:
        return diff


def _in_order(prs: list[int | str], order: list[int | str]) -> list[int | str]:
    rank = {p: i for i, p in enumerate(order)}
    return sorted(set(prs), key=lambda p: rank.get(p, len(rank)))


@dataclass
class _Group:
    kind: QuestionKind
    ref: str  # the rule id (unsupported) or the SGLang reference (unmapped)
    sites: list[Site] = field(default_factory=list)


def _group_question(g: _Group, qid: str, order: list[int | str]) -> Question:
    """One question for every site of a rule (or reference): Settled when every site has a recorded answer."""
    files = sorted({s["file"] for s in g.sites})
    where = f"{len(g.sites)} site{'s' * (len(g.sites) != 1)} in {len(files)} file{'s' * (len(files) != 1)}"
    if g.kind == QuestionKind.UNSUPPORTED:
        summary = f"rule {g.ref} has no vLLM equivalent ({where}); the code is left as upstream wrote it"
    else:
        summary = (
            f"SGLang reference {g.ref} that no rule covers ({where}); the code is left as upstream wrote it"
        )
    prs = _in_order([p for s in g.sites for p in s["prs"]], order)
    first = g.sites[0]
    q = Question(
        id=qid, kind=g.kind, file=first["file"], lines=list(first["lines"]), prs=prs,
        rules=[g.ref] if g.kind == QuestionKind.UNSUPPORTED else [], options=NOTE_OPTIONS, default=Option.KEEP,
        tier=Tier.CONFIRM,
        key=content_key(f"group-{g.kind}", g.ref, *(s["key"] for s in g.sites)), summary=summary,
        sides={"theirs": first["snippet"]}, sites=g.sites,
    )  # fmt: skip
    settled = [s for s in g.sites if s.get("decision")]
    if settled and len(settled) == len(g.sites):
        q.tier = Tier.SETTLED
        q.decision = Option.KEEP if all(s["decision"] == Option.KEEP for s in settled) else None
        windows = sorted({s.get("recorded_in") or "?" for s in settled})
        q.summary += f" (recorded decisions from window {', '.join(windows)})"
    elif settled:
        q.summary += f"; {len(settled)} of {len(g.sites)} sites already have a recorded decision"
    return q


def asks_provenance(out: FileOutcome) -> bool:
    """Whether the queue asks the provenance about this file (the window translates its versions ahead):
    every file with a question or a site does (its hunks, port diff, lines, or changed regions)."""
    if out.theirs is None or out.outcome == Outcome.NOT_MIRRORED:
        return False
    if out.outcome in ASKED_AS_A_FILE:
        return True
    if out.theirs.parse_error or out.eol is not None or out.mode_change is not None:
        return True
    hits, refs = _new_hits(out)
    return bool(hits or refs or _new_findings(out))


def _new_findings(out: FileOutcome) -> list[tuple[int, str, str, str, str]]:
    """Conformance findings in theirs that the base did not already have (by rule and message)."""
    if out.theirs is None:
        return []
    old = {(f[1], f[3]) for f in out.base.findings} if out.base else set()
    return [f for f in out.theirs.findings if (f[1], f[3]) not in old]


def _conformance_scope(confirm_glob: str | None) -> str:
    return "conformance" if confirm_glob is None else "conformance-confirm"


def _confirm_reason(glob: str | None, review: ReviewConfig) -> str:
    """Why a conformance finding is proposed "keep" instead of asked ("" when it is asked)."""
    if glob is None:
        return ""
    where = review.source or f"the default of {REVIEW_CONFIG_PATH}"
    return (
        f"; proposed keep: the file matches {glob!r} of [conformance] confirm_in ({where}), a file "
        "not run at serve or train time, where the line fails loudly in its own test"
    )


def _line_of(data: bytes, line: int) -> str:
    lines = data.decode("utf-8", "replace").split("\n")
    return lines[line - 1] if 0 < line <= len(lines) else ""


def build_questions(
    outcomes: list[FileOutcome],
    prs_for: Callable[[FileOutcome], list[int | str]],
    recorded: Callable[[str], dict[str, Any] | None],
    provenance: Provenance | None = None,
    order: list[int | str] | None = None,
    whitespace_kind: Callable[[str, bytes], str] = kind_of,
    review: ReviewConfig | None = None,
) -> list[Question]:
    """Every question of the window, numbered Q1..Qn: per-file questions in file order, then one per
    ``unsupported`` rule and per unmapped reference; recorded decisions make them (or their sites) Settled.

    ``provenance`` names the PRs behind each hunk and line (else the file's PRs); ``order`` is merge order;
    ``review`` (the downstream's review.toml, else its defaults) says which files' conformance findings
    are proposed "keep" (Confirm) rather than asked (Decide).
    """
    questions: list[Question] = []
    prov = provenance or FilePRsOnly()
    review = review or ReviewConfig()
    order = order or []
    groups: dict[tuple[str, str], _Group] = {}

    def add(
        kind: QuestionKind,
        out: FileOutcome,
        key: str,
        summary: str,
        options: list[str],
        default: str | None,
        **kw: Any,
    ) -> None:
        q = Question(
            id=f"Q{len(questions) + 1}", kind=kind, file=out.path, lines=kw.pop("lines", []),
            prs=kw.pop("prs", None) or prs_for(out), rules=kw.pop("rules", _rules_in(out)), options=options,
            default=default, tier=Tier.CONFIRM if default else Tier.DECIDE, key=key, summary=summary, **kw,
        )  # fmt: skip
        record = recorded(key)
        if record is not None and record.get("decision") in options:
            q.tier, q.decision, q.edit = Tier.SETTLED, record["decision"], record.get("edit")
            q.summary += f" (recorded decision from window {record.get('window', '?')})"
        questions.append(q)

    def site(kind: QuestionKind, ref: str, out: FileOutcome, line: int, snippet: str, key: str) -> None:
        entry: Site = {
            "file": out.path, "lines": [line, line], "prs": prov.line_prs(out, line) or prs_for(out),
            "snippet": snippet, "key": key, "decision": None, "edit": None,
        }  # fmt: skip
        record = recorded(key)
        if record is not None and record.get("decision") in NOTE_OPTIONS:
            entry["decision"], entry["edit"] = record["decision"], record.get("edit")
            entry["recorded_in"] = record.get("window", "?")
        groups.setdefault((kind, ref), _Group(kind, ref)).sites.append(entry)

    ports: dict[str, list[FileOutcome]] = {}  # port requests by group (one question per group of 2+)
    for out in sorted(outcomes, key=lambda o: o.upstream_path):
        if out.outcome == Outcome.PORT:
            ports.setdefault(_port_group_of(out), []).append(out)
    for out in sorted(outcomes, key=lambda o: o.path):
        if out.outcome in WITH_MARKERS and out.data is not None:
            for h in parse_hunks(out.data, out.marker_size):
                before, after = hunk_context(out.data, h, out.marker_size)
                kind = whitespace_kind(out.path, out.data)
                default, why = propose_hunk_default(h.ours, h.base, h.theirs, kind, before, after)
                what = (
                    "added on both sides"
                    if out.outcome == Outcome.ADD_ADD
                    else "both sides changed these lines"
                )
                add(
                    QuestionKind(out.outcome), out, h.key(out.outcome), f"{what}{'; ' + why if why else ''}", HUNK_OPTIONS, default,
                    lines=[h.start_line, h.end_line], hunk=h.index, marker_size=out.marker_size,
                    rules=_hunk_rules(out, h.theirs), prs=prov.hunk_prs(out, h.base, h.theirs),
                    sides={"ours": _text(h.ours), "base": _text(h.base), "theirs": _text(h.theirs)},
                )  # fmt: skip
        elif out.outcome == Outcome.MODIFY_DELETE:
            upstream_deleted = out.data is not None
            ours = out.data or b""
            theirs = out.alternative or b""
            summary = (
                "deleted upstream, changed downstream: ours = keep the file, theirs = delete it"
                if upstream_deleted
                else "deleted downstream, changed upstream: ours = stay deleted, theirs = restore upstream's version"
            )
            add(
                QuestionKind.MODIFY_DELETE, out, content_key("modify_delete", out.path, ours, theirs), summary, FILE_OPTIONS,
                Option.OURS, sides={"ours": _text(ours), "theirs": _text(theirs)},
                alternative=f"alternatives/{out.path}" if not upstream_deleted else None,
            )  # fmt: skip
        elif out.outcome == Outcome.BINARY:
            add(
                QuestionKind.BINARY, out, content_key("binary", out.path, out.data or b"", out.alternative or b""),
                "binary file changed on both sides: ours kept; theirs = take upstream's file", [Option.OURS, Option.THEIRS],
                Option.OURS, alternative=f"alternatives/{out.path}",
            )  # fmt: skip
        elif out.outcome == Outcome.PORT and len(ports[_port_group_of(out)]) > 1:
            pass  # asked once for its whole group, below
        elif out.outcome == Outcome.PORT:
            add(
                QuestionKind.PORT, out, content_key("port", out.path, out.alternative or b""),
                f"{out.note}: ours = vime stays as it is and the change is ported by hand (the translated "
                f"upstream diff is saved beside this report); theirs = adopt upstream's "
                f"{'translated file' if out.alternative is not None else 'deletion'}",
                PORT_OPTIONS, Option.OURS, diff=_port_diff_path(out), alternative=_port_alternative(out),
                sides={"theirs": prov.annotate(out, port_diff(out))},
            )  # fmt: skip
        if out.eol is not None:
            styles = {"ours": out.eol[0].upper(), "theirs": out.eol[1].upper()}
            add(
                QuestionKind.LINE_ENDINGS, out, content_key("line_endings", out.path, *out.eol, out.eol_by),
                f"{out.eol_by} converted the line endings (ours {styles['ours']}, theirs {styles['theirs']}); "
                f"the file has {styles[out.eol_by]} now: ours / theirs = that side's line endings",
                SIDE_OPTIONS, out.eol_by, sides=styles,
            )  # fmt: skip
        if out.mode_change is not None:
            add(
                QuestionKind.MODE, out, content_key("mode", out.path, *out.mode_change),
                f"upstream changed the file mode {out.mode_change[0]} -> {out.mode_change[1]}; the file has "
                f"{out.mode_change[1]} now: theirs keeps it, ours restores {out.mode_change[0]}",
                SIDE_OPTIONS, Option.THEIRS, sides={"ours": out.mode_change[0], "theirs": out.mode_change[1]},
            )  # fmt: skip
        if out.theirs is not None and out.theirs.parse_error and out.outcome not in NOTHING_LANDS:
            add(
                QuestionKind.PARSE_ERROR, out, content_key("parse_error", out.path, out.theirs.parse_error),
                f"upstream file does not parse, left untranslated: {out.theirs.parse_error}", NOTE_OPTIONS, Option.KEEP,
            )  # fmt: skip
        if out.outcome in NOTHING_LANDS:
            continue  # nothing of theirs lands: no line of it to keep or edit
        confirm_glob = review.confirm_glob(out.path)
        for line, rule_id, kind, message, effect in _new_findings(out):
            what = ("the translated import names what vime does not have; provide it in vime, or map the "
                    "upstream name" if effect == "import" else
                    "the translated call does not match vLLM's API; edit the call")  # fmt: skip
            # a finding proposed "keep" is keyed apart: its recorded default never settles the same
            # finding in a file that is asked, nor a person's answer there one that is proposed
            add(
                QuestionKind.CONFORMANCE, out, content_key(_conformance_scope(confirm_glob), rule_id, message),
                f"{message} ({effect}; {kind}): {what}, or fix rule {rule_id} in translations/ (never counted "
                f"as converted){_confirm_reason(confirm_glob, review)}", NOTE_OPTIONS,
                Option.KEEP if confirm_glob else None,
                lines=[line, line], rules=[rule_id], sides={"theirs": _line_of(out.theirs.data, line)},
                prs=prov.line_prs(out, line),
            )  # fmt: skip
        hits, refs = _new_hits(out)
        for rule_id, line, snippet in hits:
            site(
                QuestionKind.UNSUPPORTED,
                rule_id,
                out,
                line,
                snippet,
                content_key("unsupported", rule_id, snippet.strip()),
            )
        for _path, line, snippet in refs:
            site(
                QuestionKind.UNMAPPED,
                reference_of(snippet),
                out,
                line,
                snippet,
                content_key("unmapped", snippet.strip()),
            )
    for group, members in sorted(ports.items()):
        if len(members) > 1:
            questions.append(
                _port_group_question(group, members, f"Q{len(questions) + 1}", prs_for, prov, recorded, order)
            )
    for kind in GROUP_KINDS:
        for (k, _ref), g in sorted(groups.items()):
            if k == kind:
                questions.append(_group_question(g, f"Q{len(questions) + 1}", order))
    return questions


def _port_group_of(out: FileOutcome) -> str:
    return out.port_group or out.path


def _port_diff_path(out: FileOutcome) -> str:
    return f"ports/{out.upstream_path}.diff"  # upstream path: two may share a target


def _port_alternative(out: FileOutcome) -> str | None:
    return f"alternatives/{out.upstream_path}" if out.alternative is not None else None


def _port_group_question(
    group: str,
    members: list[FileOutcome],
    qid: str,
    prs_for: Callable[[FileOutcome], list[int | str]],
    prov: Provenance,
    recorded: Callable[[str], dict[str, Any] | None],
    order: list[int | str],
) -> Question:
    """One question for the port requests of one layout entry or folder; a site per file, each of
    which may take its own answer (and keeps a recorded one)."""
    sites: list[Site] = []
    attachments: dict[str, str] = {}
    for out in members:
        key = content_key("port", out.path, out.alternative or b"")
        diff = port_diff(out)
        attachments[_port_diff_path(out)] = prov.annotate(out, diff)
        lines = diff.splitlines()
        added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
        change = "deleted upstream" if out.alternative is None else f"+{added} -{removed} lines"
        site: Site = {
            "file": out.path, "upstream": out.upstream_path, "lines": [], "prs": prs_for(out),
            "snippet": f"{out.upstream_path}: {change}", "key": key, "decision": None, "edit": None,
            "diff": _port_diff_path(out), "alternative": _port_alternative(out),
        }  # fmt: skip
        record = recorded(key)
        if record is not None and record.get("decision") in PORT_OPTIONS:
            site["decision"], site["recorded_in"] = record["decision"], record.get("window", "?")
        sites.append(site)
    reasons = {m.note.split(" -> ")[0] for m in members}  # the layout entry, without each file's target
    why = reasons.pop() if len(reasons) == 1 else "port requests"
    summary = (
        f"{len(members)} upstream files under {group} ({why}): ours = vime stays as it is and each change "
        "is ported by hand (the translated upstream diffs are saved beside this report, one per file); "
        "theirs = adopt upstream's translated files (deletions included)"
    )
    q = Question(
        id=qid, kind=QuestionKind.PORT, file=members[0].path, lines=[], options=PORT_OPTIONS, default=Option.OURS,
        prs=_in_order([p for site in sites for p in site["prs"]], order), rules=[], tier=Tier.CONFIRM,
        key=content_key("group-port", group, *(site["key"] for site in sites)), summary=summary,
        sides={"theirs": attachments[_port_diff_path(members[0])]}, sites=sites, attachments=attachments,
    )  # fmt: skip
    settled = [site for site in sites if site["decision"]]
    if len(settled) == len(sites):
        q.tier = Tier.SETTLED
        q.decision = settled[0]["decision"] if len({site["decision"] for site in settled}) == 1 else None
        q.summary += (
            f" (recorded decisions from window {', '.join(sorted({s['recorded_in'] for s in settled}))})"
        )
    elif settled:
        q.summary += f"; {len(settled)} of {len(sites)} files already have a recorded decision"
    return q


def expand_sites(questions: list[Question]) -> list[Question]:
    """One question per site for ``resolve`` (and the recorded decisions): a site takes its own
    decision, else its group's (a group's ``edit`` text replaces the line of every such site)."""
    out: list[Question] = []
    for q in questions:
        if not q.sites:
            out.append(q)
            continue
        for i, s in enumerate(q.sites, 1):
            own = s.get("decision")
            decision, edit = (own, s.get("edit")) if own else (q.decision, q.edit)
            out.append(
                Question(
                    id=f"{q.id}.{i}", kind=q.kind, file=s["file"], lines=list(s["lines"]), prs=list(s["prs"]),
                    rules=q.rules, options=q.options, default=q.default,
                    tier=Tier.SETTLED if s.get("recorded_in") else q.tier, key=s["key"], summary=q.summary,
                    sides={"theirs": s["snippet"]}, decision=decision, edit=edit,
                    alternative=s.get("alternative"), diff=s.get("diff"),
                )
            )  # fmt: skip
    return out


def settle_sites(questions: list[Question], chosen: list[tuple[Question, str]]) -> None:
    """Write the options ``resolve`` chose per site back into each group's ``sites`` (and the group)."""
    by_id = {q.id: d for q, d in chosen}
    for q in questions:
        for i, s in enumerate(q.sites, 1):
            s["decision"] = by_id.get(f"{q.id}.{i}", s.get("decision"))
        if q.sites and q.decision is None:
            q.decision = q.default


def tier_counts(questions: list[Question]) -> dict[str, int]:
    counts = dict.fromkeys(TIERS, 0)
    for q in questions:
        counts[q.tier] += 1
    return counts
