"""Property test of the structure-aware merge against ``git merge-file``, over generated modules.

A module is a list of top-level statements of the kinds real files have (a ``setup(...)`` call, a
``for`` loop, a ``try``/``except ImportError`` block, a decorated function, a class, an ``if``, an
assignment, an import), each carrying its identity in its names (``_s3``) and two values on
different lines. Each side edits values, deletes, adds and moves statements; some edits are made
identically on both sides. The window's merge (``merge_contents``: ``git merge-file``, then the
per-statement pass) must then:

- where the line merge conflicts and a statement was changed on both sides (differently), leave the
  line merge's markers and ask (never settle it);
- where it settles a file, keep every statement at most once, with the version of the side that
  changed it, every added statement exactly once, and the order of the side that reordered.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import libcst as cst
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sync.merge.filemerge import merge_contents
from sync.merge.structmerge import struct_merge
from sync.merge.textmerge import merge3
from sync.reports.questions import build_questions
from sync.window.translation import Translated

LABELS = ("ours (vime)", "base", "theirs")
KINDS = ("call", "for", "try", "def", "class", "if", "assign", "import")
IDENTITY = re.compile(r"_s(\d+)\b")


@dataclass(frozen=True)
class Stmt:
    id: int
    kind: str
    a: int
    b: int
    sep: str  # blank lines before the statement (part of it, as libcst has it)

    def render(self) -> str:
        k, a, b = self.id, self.a, self.b
        body = {
            "call": f'setup(\n    name="pkg_s{k}",\n    version="{a}",\n    extras={b},\n)\n',
            "for": f"for item_s{k} in range({a}):\n    total += item_s{k} * {b}\n",
            "try": f"try:\n    from mod_s{k} import thing_{a}\nexcept ImportError:\n    fallback_s{k} = {b}\n",
            "def": f'@register("{a}")\ndef fn_s{k}():\n    return {b}\n',
            "class": f"class C_s{k}:\n    x = {a}\n    y = {b}\n",
            "if": f"if FLAG_s{k}:\n    run({a})\nelse:\n    run({b})\n",
            "assign": f"VALUE_s{k} = ({a}, {b})\n",
            "import": f"from pkg_s{k} import name_{a} as alias_{b}\n",
        }[self.kind]
        return self.sep + body

    @property
    def content(self) -> tuple[str, int, int]:
        return (self.kind, self.a, self.b)


def render(stmts: list[Stmt]) -> bytes:
    return "".join(s.render() for s in stmts).encode()


def apply(base: list[Stmt], ops: list[tuple], first_new: int) -> list[Stmt]:
    out, new_id = list(base), first_new
    for op in ops:
        name, at = op[0], op[1]
        if name == "insert":
            _, _, kind, a, b, sep = op
            out.insert(at % (len(out) + 1), Stmt(new_id, kind, a, b, sep))
            new_id += 1
            continue
        if not out:
            continue
        i = at % len(out)
        if name == "modify":
            _, _, slot, value = op
            out[i] = replace(out[i], **{slot: value})
        elif name == "delete":
            del out[i]
        elif name == "move":
            moved = out.pop(i)
            out.insert(op[2] % (len(out) + 1), moved)
    return out


values = st.integers(0, 2)
seps = st.sampled_from(["", "", "\n", "\n\n"])
stmt_spec = st.tuples(st.sampled_from(KINDS), values, values, seps)
op = st.one_of(
    st.tuples(st.just("modify"), st.integers(0, 9), st.sampled_from(["a", "b"]), values),
    st.tuples(st.just("delete"), st.integers(0, 9)),
    st.tuples(st.just("insert"), st.integers(0, 9), st.sampled_from(KINDS), values, values, seps),
    st.tuples(st.just("move"), st.integers(0, 9), st.integers(0, 9)),
)


def top_level(data: bytes) -> list[tuple[set[int], str]]:
    """(identities, code) of each top-level statement of a merged module."""
    module = cst.parse_module(data.decode())
    out = []
    for node in module.body:
        code = module.code_for_node(node)
        out.append(({int(x) for x in IDENTITY.findall(code)}, code))
    return out


def check_settled(result: bytes, base: list[Stmt], ours: list[Stmt], theirs: list[Stmt]) -> None:
    stmts = top_level(result)
    assert all(len(ids) == 1 for ids, _ in stmts), "a statement without a single identity"
    order = [next(iter(ids)) for ids, _ in stmts]
    assert len(order) == len(set(order)), f"a statement kept twice: {order}"
    got = dict(zip(order, (code for _, code in stmts), strict=True))
    by_id = {side: {s.id: s for s in stmts_} for side, stmts_ in (("b", base), ("o", ours), ("t", theirs))}
    for s in base:
        o, t = by_id["o"].get(s.id), by_id["t"].get(s.id)
        want = o if (o.content if o else None) != s.content else t
        if want is None:
            assert s.id not in got, f"statement {s.id} deleted by one side, unchanged by the other, came back"
        else:
            assert s.id in got and got[s.id].strip() == want.render().strip(), (
                f"statement {s.id} wrong version"
            )
    for side in ("o", "t"):
        for k, s in by_id[side].items():
            if k not in by_id["b"]:
                assert got.get(k, "").strip() == s.render().strip(), f"added statement {k} lost or changed"
    common = [k for k in order if k in by_id["b"] and k in by_id["o"] and k in by_id["t"]]
    rank = {side: {s.id: i for i, s in enumerate(by_id[side].values())} for side in ("b", "o", "t")}
    for x_i, x in enumerate(common):
        for y in common[x_i + 1 :]:  # x before y in the result
            before = {side: rank[side][x] < rank[side][y] for side in ("b", "o", "t")}
            changed = before["o"] if before["o"] != before["b"] else before["t"]
            assert changed, f"statements {x} and {y} in an order neither side made"


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base_specs=st.lists(stmt_spec, min_size=1, max_size=6),
    shared=st.lists(op, max_size=2),
    ours_ops=st.lists(op, max_size=3),
    theirs_ops=st.lists(op, max_size=3),
)
def test_per_statement_merge_never_settles_a_both_sides_change(base_specs, shared, ours_ops, theirs_ops):
    base = [Stmt(i, kind, a, b, sep if i else "") for i, (kind, a, b, sep) in enumerate(base_specs)]
    both = apply(base, shared, 300)
    ours, theirs = apply(both, ours_ops, 100), apply(both, theirs_ops, 200)
    o_b, b_b, t_b = render(ours), render(base), render(theirs)
    out = merge_contents("vime/m.py", "slime/m.py", o_b, Translated("m", "m", b_b, "python"),
                         Translated("m", "m", t_b, "python"), LABELS)  # fmt: skip
    line = merge3(o_b, b_b, t_b, LABELS)
    if o_b in (b_b, t_b) or b_b == t_b or line.conflicts == 0:
        assert out.outcome != "structural"
        return
    o_by, t_by = {s.id: s.content for s in ours}, {s.id: s.content for s in theirs}
    changed_twice = [
        s.id for s in base
        if o_by.get(s.id) != s.content and t_by.get(s.id) != s.content and o_by.get(s.id) != t_by.get(s.id)
    ]  # fmt: skip
    if out.outcome == "structural":
        assert not changed_twice, f"statements {changed_twice} changed on both sides were settled"
        assert out.data is not None
        check_settled(out.data, base, ours, theirs)
        assert "settled per top-level statement" in out.note
        return
    assert out.outcome == "conflict" and out.data == line.data  # exactly the line merge's markers
    questions = build_questions([out], lambda _o: [], lambda _key: None)
    assert len([q for q in questions if q.hunk is not None]) == line.conflicts


def test_setup_call_changed_on_both_sides_is_a_conflict():
    """slime's setup.py: a version bump upstream against a downstream edit of the same call."""
    base = b'from setuptools import setup\n\nsetup(\n    name="slime",\n    version="0.2.1",\n)\n'
    ours = b'from setuptools import setup\n\nsetup(\n    name="vime",\n    version="0.2.1",\n)\n'
    theirs = b'from setuptools import setup\n\nsetup(\n    name="slime",\n    version="0.2.2",\n)\n'
    assert merge3(ours, base, theirs, LABELS).conflicts == 1
    assert struct_merge(ours, base, theirs) is None


def test_try_import_block_changed_on_both_sides_is_a_conflict():
    """A ``try``/``except ImportError`` block: upstream drops an import, the downstream edits another."""
    base = b"import os\ntry:\n    from fla import a, b\nexcept ImportError:\n    a = b = None\nX = 1\n"
    ours = (
        b"import os\ntry:\n    from fla import a, b\nexcept ImportError:  # vime\n    a = b = None\nX = 1\n"
    )
    theirs = b"import os\ntry:\n    from fla import a\nexcept ImportError:\n    a = None\nX = 2\n"
    assert merge3(ours, base, theirs, LABELS).conflicts == 1
    assert struct_merge(ours, base, theirs) is None


def test_one_sided_changes_next_to_each_other_are_settled_and_named():
    base = b"setup(a=1)\nfor x in y:\n    f(x)\n"
    ours = b"setup(a=2)\nfor x in y:\n    f(x)\n"
    theirs = b"setup(a=1)\nfor x in z:\n    f(x)\nDONE = True\n"
    assert merge3(ours, base, theirs, LABELS).conflicts == 1
    settled = struct_merge(ours, base, theirs)
    assert settled is not None and settled.data == b"setup(a=2)\nfor x in z:\n    f(x)\nDONE = True\n"
    assert settled.ours == ("changed `setup(a=1)`",)
    assert settled.theirs == ("changed `for x in y:`", "added `DONE = True`")
