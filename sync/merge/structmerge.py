"""Structure-aware merge: settle a line conflict when no top-level statement changed on both sides.

A line merge conflicts when two sides edit nearby lines, even in different functions. Here each
version is split into top-level statements with libcst, and each side is compared with the base as
a diff over statements: its edits are base ranges it replaced (a statement changed, a run of them
rewritten, deleted) and places where it added statements. Identity is the position in the base,
never a statement's own text: a ``setup(...)`` call edited on both sides is one base statement
changed twice, not two statements. The edits of both sides apply together only when none touches a
base statement the other side changed (an identical edit on both sides counts once) and no two
sides add statements at one place; otherwise the file is left to the line merge: markers and a
Decide question. A statement deleted in one place and added elsewhere is a move, which does not
agree with the other side deleting it. The result must parse, and no statement (by text) or
definition (by name) may occur in it more often than in ours or in theirs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from difflib import SequenceMatcher

import libcst as cst

MAX_LISTED = 6  # statements named per side in a file's note; the rest are counted


@dataclass(frozen=True)
class _Stmt:
    code: str
    kind: str  # what pairs a changed statement with its base version: "def f", "call setup", "try", ...
    label: str  # how a report names it


@dataclass(frozen=True)
class Settled:
    """A merged module and what each side changed in it (for the report: what was settled, and why)."""

    data: bytes
    ours: tuple[str, ...]
    theirs: tuple[str, ...]

    def describe(self) -> str:
        def side(name: str, items: tuple[str, ...]) -> str:
            shown = ", ".join(items[:MAX_LISTED])
            more = f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else ""
            return f"{name} {shown}{more}" if items else f"{name} nothing"

        return f"{side('ours', self.ours)}; {side('theirs', self.theirs)}"


def _first_line(code: str) -> str:
    for line in code.splitlines():
        text = line.strip()
        if text and not text.startswith("#"):
            return text if len(text) <= 60 else text[:57] + "..."
    return code.strip()[:60]


def _describe(module: cst.Module, stmt: cst.CSTNode, code: str) -> tuple[str, str]:
    """(kind, label) of a top-level statement."""
    if isinstance(stmt, cst.FunctionDef):
        return f"def {stmt.name.value}", f"`def {stmt.name.value}`"
    if isinstance(stmt, cst.ClassDef):
        return f"class {stmt.name.value}", f"`class {stmt.name.value}`"
    label = f"`{_first_line(code)}`"
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        if isinstance(small, cst.Assign):
            return "assign " + ",".join(module.code_for_node(t.target) for t in small.targets), label
        if isinstance(small, cst.AnnAssign | cst.AugAssign):
            return f"assign {module.code_for_node(small.target)}", label
        if isinstance(small, cst.Import):
            return "import " + ",".join(module.code_for_node(a.name) for a in small.names), label
        if isinstance(small, cst.ImportFrom):
            name = module.code_for_node(small.module) if small.module else ""
            return f"from {'.' * len(small.relative)}{name}", label
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            return f"call {module.code_for_node(small.value.func)}", label
        return type(small).__name__, label
    if isinstance(stmt, cst.If):
        return f"if {module.code_for_node(stmt.test)}", label
    return type(stmt).__name__, label


def _split(text: str) -> tuple[str, list[_Stmt], str] | None:
    """(header, statements, footer) of a module, or None when it does not parse or round-trip."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return None
    header = "".join(module.code_for_node(line) for line in module.header)
    footer = "".join(module.code_for_node(line) for line in module.footer)
    stmts = []
    for node in module.body:
        code = module.code_for_node(node)
        stmts.append(_Stmt(code, *_describe(module, node, code)))
    if header + "".join(s.code for s in stmts) + footer != text:
        return None  # an encoding or newline quirk: do not risk a lossy merge
    return header, stmts, footer


@dataclass(frozen=True)
class _Edit:
    """One side's change against the base: base statements [start, end) (``old``) became ``new``
    (start == end: ``new`` added before base statement ``start``)."""

    start: int
    end: int
    old: tuple[_Stmt, ...]
    new: tuple[_Stmt, ...]
    in_place: bool = False  # one statement changed into one of the same kind
    moved: bool = False  # takes away a statement the side adds elsewhere, or adds one it takes away

    @property
    def adds(self) -> bool:
        """Brings statements that are not versions of those it replaces (a same-kind 1:1 edit does not)."""
        return bool(self.new) and not self.in_place


def _alike(a: _Stmt, b: _Stmt) -> bool:
    """Two statements that may be versions of one another: the same text, or the same kind and name."""
    return a.code == b.code or a.kind == b.kind


def _edits(base: list[_Stmt], side: list[_Stmt]) -> list[_Edit]:
    matcher = SequenceMatcher(None, [s.code for s in base], [s.code for s in side], autojunk=False)
    edits: list[_Edit] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if [s.kind for s in base[i1:i2]] == [s.kind for s in side[j1:j2]]:  # each statement changed in place
            edits += [
                _Edit(i1 + k, i1 + k + 1, (base[i1 + k],), (side[j1 + k],), in_place=True)
                for k in range(i2 - i1)
            ]
        else:
            edits.append(_Edit(i1, i2, tuple(base[i1:i2]), tuple(side[j1:j2])))

    def moves(e: _Edit) -> bool:
        gone = [g for o in edits if o is not e for g in o.old]
        added = [a for o in edits if o is not e for a in o.new]
        return any(_alike(g, a) for g in e.old for a in added) or any(
            _alike(a, g) for a in e.new for g in gone
        )

    return [replace(e, moved=moves(e)) for e in edits]


def _next_to(addition: _Edit, e: _Edit) -> bool:
    """An addition clashes with another side's edit inside its range; at its edge when that edit adds
    too (the order of the two sides' additions), moves away the statement the addition stands next to,
    or touches a statement like an added one (which of them is which is a person's call)."""
    gap = addition.start
    if e.start < gap < e.end:
        return True
    if gap not in (e.start, e.end):
        return False
    return e.adds or e.moved or any(_alike(a, x) for a in addition.new for x in e.old + e.new)


def _clash(a: _Edit, b: _Edit) -> bool:
    if a == b:
        return False  # the same change on both sides
    if a.start == a.end and b.start == b.end:
        return a.start == b.start
    if a.start == a.end:
        return _next_to(a, b)
    if b.start == b.end:
        return _next_to(b, a)
    return max(a.start, b.start) < min(a.end, b.end)


def _apply(base: list[_Stmt], edits: list[_Edit]) -> list[_Stmt]:
    """The base with non-clashing edits applied (additions at a place before the edit starting there)."""
    order = sorted(set(edits), key=lambda e: (e.start, e.end != e.start, e.end))
    out: list[_Stmt] = []
    pos = 0
    for e in order:
        out += base[pos : e.start]
        out += e.new
        pos = max(pos, e.start, e.end)
    return out + base[pos:]


def _changes(edits: list[_Edit]) -> tuple[str, ...]:
    """What one side did, in base order, for the report: inside an edit, statements of one kind pair up
    as "changed"; the rest were deleted (or moved) and added."""
    out: list[str] = []
    for e in edits:
        old = e.old
        kinds = SequenceMatcher(None, [s.kind for s in old], [s.kind for s in e.new], autojunk=False)
        for tag, i1, i2, j1, j2 in kinds.get_opcodes():
            if tag == "equal":
                out += [f"changed {s.label}" for s in old[i1:i2]]
                continue
            out += [f"{'moved' if e.moved else 'deleted'} {s.label}" for s in old[i1:i2]]
            out += [f"added {s.label}" for s in e.new[j1:j2]]
    return tuple(out)


def _pick(ours: str, base: str, theirs: str) -> tuple[bool, str]:
    """3-way choice for the module's header or footer: (ok, result); not ok when both sides changed it."""
    if ours == theirs or theirs == base:
        return True, ours
    if ours == base:
        return True, theirs
    return False, ""


def _repeats(result: list[_Stmt], ours: list[_Stmt], theirs: list[_Stmt]) -> bool:
    """True when a statement (by text) or a definition (by name) occurs more often than in either side."""

    def counts(stmts: list[_Stmt]) -> Counter[tuple[str, str]]:
        defs = (("name", s.kind) for s in stmts if s.kind.startswith(("def ", "class ")))
        return Counter([("code", s.code.strip()) for s in stmts]) + Counter(defs)  # blank lines aside

    o, t = counts(ours), counts(theirs)
    return any(n > max(o[k], t[k]) for k, n in counts(result).items())


def struct_merge(ours: bytes, base: bytes, theirs: bytes) -> Settled | None:
    """The merged module when no top-level statement changed on both sides (differently), else None."""
    try:
        texts = [t.decode("utf-8") for t in (ours, base, theirs)]
    except UnicodeDecodeError:
        return None
    split = [_split(t) for t in texts]
    if any(s is None for s in split):
        return None
    (oh, o_stmts, of), (bh, b_stmts, bf), (th, t_stmts, tf) = split  # type: ignore[misc]
    ok_h, header = _pick(oh, bh, th)
    ok_f, footer = _pick(of, bf, tf)
    if not (ok_h and ok_f):
        return None
    o_edits, t_edits = _edits(b_stmts, o_stmts), _edits(b_stmts, t_stmts)
    if any(_clash(a, b) for a in o_edits for b in t_edits):
        return None  # a statement changed on both sides, or additions at one place: a person decides
    if any(e.moved and e not in t_edits for e in o_edits) and any(
        e.moved and e not in o_edits for e in t_edits
    ):
        return None  # both sides moved statements: the order they want may be a cycle
    merged = _apply(b_stmts, o_edits + t_edits)
    if _repeats(merged, o_stmts, t_stmts):
        return None
    result = header + "".join(s.code for s in merged) + footer
    try:
        cst.parse_module(result)
    except cst.ParserSyntaxError:
        return None
    return Settled(result.encode("utf-8"), _changes(o_edits), _changes(t_edits))
