"""What whitespace means in each kind of file: a "whitespace only" difference may be settled by a
default only where the format gives that whitespace no meaning.

Only three kinds of whitespace may ever be layout: leading indentation (where the format ignores
it), trailing spaces and blank lines. A space added or removed between two tokens, or anywhere
inside a quoted string, heredoc, code fence or block scalar, is content in every kind: ``pip
install a b`` and ``pip install ab`` name different packages; ``"fast"]`` and ``"fast" ]`` differ
for ``[``. Per kind:

- python: indentation is content; trailing spaces and blank lines outside strings are layout
  (strings found with the tokenizer).
- yaml: indentation is content; trailing spaces and blank lines outside block scalars are layout.
- shell, dockerfile: indentation, trailing spaces and blank lines are layout outside quotes and
  heredocs, except a blank line or the indentation after a ``\\`` continuation and a space after a
  trailing ``\\``.
- toml, json: indentation, trailing spaces and blank lines outside multi-line strings are layout.
- markdown: outside code fences a trailing single space and repeated blank lines are layout (two
  trailing spaces are a line break, one blank line a paragraph break, indentation nests lists).
- exact (Makefiles: trailing spaces end up in variable values): nothing is layout.
- text (anything else, and the files the text table's ``indent_significant = [...]`` names):
  trailing spaces only.

Line endings are not whitespace here: a ``\\r`` is kept, since converting them is an outcome of its
own (``filemerge``).
"""

from __future__ import annotations

import fnmatch
import io
import re
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sync.rules import RuleSet

KIND_GLOBS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("python", ("*.py", "*.pyi")),
    ("yaml", ("*.yaml", "*.yml")),
    ("exact", ("Makefile", "makefile", "GNUmakefile", "*.mk", "*.pyx")),
    ("dockerfile", ("Dockerfile", "Dockerfile.*", "*.dockerfile", "Containerfile")),
    ("shell", ("*.sh", "*.bash", "*.zsh", "*.ksh")),
    ("markdown", ("*.md", "*.markdown", "*.mdx")),
    ("toml", ("*.toml",)),
    ("json", ("*.json", "*.jsonl", "*.ipynb")),
)
INDENT_KINDS = ("python", "yaml", "exact", "text", "markdown")  # leading whitespace is content there
_SHELL_SHEBANG = re.compile(rb"#!\s*\S*(?:/|\benv\s+)(?:ba|z|k|da)?sh\b")


def rules_globs(rules: RuleSet | None) -> tuple[str, ...]:
    """Extra patterns from the rule tables (the ``indent_significant`` setting of the text table)."""
    settings = rules.settings if hasattr(rules, "settings") else {}
    value = settings.get("text", {}).get("indent_significant", ())
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def _matches(path: str, globs: Iterable[str]) -> bool:
    name = PurePosixPath(path).name
    return any(fnmatch.fnmatchcase(name, g) or fnmatch.fnmatchcase(path, g) for g in globs)


def kind_of(path: str, data: bytes = b"", extra: Iterable[str] = ()) -> str:
    """The whitespace kind of ``path`` (``extra``: globs the rules call indentation-significant)."""
    extra = tuple(extra)
    if extra and _matches(path, extra):
        return "text"
    for kind, globs in KIND_GLOBS:
        if _matches(path, globs):
            return kind
    if _SHELL_SHEBANG.match(data[:80]):
        return "shell"
    return "text"


def indent_matters(path: str, extra: Iterable[str] = ()) -> bool:
    """Whether leading whitespace is content in ``path`` (kept for callers that ask only that)."""
    return kind_of(path, b"", extra) in INDENT_KINDS


def matcher(rules: RuleSet | None) -> Callable[[str, bytes], str]:
    """``(path, data) -> kind`` with the rule tables' extra globs."""
    globs = rules_globs(rules)
    return lambda path, data=b"": kind_of(path, data, globs)


@dataclass
class _Line:
    """How one line may be normalised: what of its whitespace is layout."""

    text: bytes
    verbatim: bool = False  # inside a string, heredoc, fence or block scalar: every byte counts
    lead: bool = False  # leading whitespace is layout
    trail: bool = False  # trailing spaces are layout
    blank: bool = False  # the line may vanish when blank


def _split(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _python_lines(data: bytes) -> list[_Line]:
    lines = _split(data)
    inside: set[int] = set()  # 0-based lines that end inside a string (or continue one)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(data.decode("utf-8", "surrogateescape")).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0] - 1, tok.end[0]))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return [_Line(t, trail=True) for t in lines]  # not Python we can read: trailing spaces only
    return [_Line(t, verbatim=i in inside, trail=True, blank=True) for i, t in enumerate(lines)]


_BLOCK_SCALAR = re.compile(rb"[:\-]\s*[|>][-+0-9]*\s*(#.*)?$")


def _yaml_lines(data: bytes) -> list[_Line]:
    out: list[_Line] = []
    block_indent: int | None = None  # indentation of the line that opened a block scalar
    for text in _split(data):
        body = text.rstrip(b"\r")
        indent = len(body) - len(body.lstrip(b" "))
        if block_indent is not None and (not body.strip() or indent > block_indent):
            out.append(_Line(text, verbatim=True))
            continue
        block_indent = indent if _BLOCK_SCALAR.search(body) else None
        out.append(_Line(text, trail=True, blank=True))
    return out


_HEREDOC = re.compile(rb"<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")


class _ShellScan:
    """Quote, command-substitution and heredoc state across the lines of a shell script or Dockerfile."""

    def __init__(self) -> None:
        self.stack: list[str] = []  # "'", '"', "`", "$(" (with its paren depth after it)
        self.depth: list[int] = []
        self.heredocs: list[tuple[bytes, bool]] = []  # pending (delimiter, tabs stripped)
        self.in_heredoc: tuple[bytes, bool] | None = None

    def clean(self) -> bool:
        return not self.stack and self.in_heredoc is None

    def feed(self, body: bytes) -> None:
        """Advance over one line (without its line ending)."""
        if self.in_heredoc is not None:
            delim, tabs = self.in_heredoc
            if (body.lstrip(b"\t") if tabs else body) == delim:
                self.in_heredoc = self.heredocs.pop(0) if self.heredocs else None
            return
        i, n = 0, len(body)
        while i < n:
            ch = body[i : i + 1]
            top = self.stack[-1] if self.stack else ""
            if top == "'":
                if ch == b"'":
                    self.stack.pop()
                i += 1
                continue
            if ch == b"\\":
                i += 2
                continue
            if top == '"':
                if ch == b'"':
                    self.stack.pop()
                elif body[i : i + 2] == b"$(":
                    self.stack.append("$(")
                    self.depth.append(0)
                    i += 1
                elif ch == b"`":
                    self.stack.append("`")
                i += 1
                continue
            if ch == b"#" and (i == 0 or body[i - 1 : i] in (b" ", b"\t", b";", b"(")):
                break  # a comment to the end of the line
            if ch in (b"'", b'"'):
                self.stack.append(ch.decode())
            elif ch == b"`":
                if top == "`":
                    self.stack.pop()
                else:
                    self.stack.append("`")
            elif body[i : i + 2] == b"$(":
                self.stack.append("$(")
                self.depth.append(0)
                i += 1
            elif ch == b"(" and top == "$(":
                self.depth[-1] += 1
            elif ch == b")" and top == "$(":
                if self.depth[-1] == 0:
                    self.stack.pop()
                    self.depth.pop()
                else:
                    self.depth[-1] -= 1
            elif body[i : i + 2] == b"<<" and body[i : i + 3] != b"<<<":
                m = _HEREDOC.match(body, i)
                if m:
                    self.heredocs.append((m.group(3), m.group(1) == b"-"))
                    i = m.end()
                    continue
            i += 1
        if not self.stack and self.heredocs:
            self.in_heredoc = self.heredocs.pop(0)


def _continues(body: bytes) -> bool:
    """The line ends in a ``\\`` that joins the next line (an even number of backslashes does not)."""
    run = len(body) - len(body.rstrip(b"\\"))
    return run % 2 == 1


def _shell_lines(data: bytes) -> list[_Line]:
    scan, out, joined, space_before = _ShellScan(), [], False, True
    for text in _split(data):
        body = text[:-1] if text.endswith(b"\r") else text
        clean_before = scan.clean()
        scan.feed(body)
        if not clean_before or not scan.clean():
            out.append(_Line(text, verbatim=True))
            joined = False
            continue
        # after a `\` continuation the next line's indentation separates words (unless a space came
        # before the `\`), and a blank line ends the command: both are content then
        out.append(_Line(text, lead=not joined or space_before, trail=True, blank=not joined))
        stripped = body.rstrip(b" \t")
        joined = _continues(stripped) and stripped == body
        space_before = stripped[-2:-1] in (b" ", b"\t") if joined else True
    return out


_TOML_TRIPLE = re.compile(rb'"""|\'\'\'|"(?:\\.|[^"\\])*"|\'[^\']*\'|#')


def _toml_lines(data: bytes) -> list[_Line]:
    out, open_quote = [], None
    for text in _split(data):
        starts_inside = open_quote is not None
        i = 0
        while True:
            if open_quote is not None:
                end = text.find(open_quote, i)
                if end < 0:
                    break
                open_quote, i = None, end + 3
                continue
            m = _TOML_TRIPLE.search(text, i)
            if m is None or m.group(0) == b"#":
                break
            if m.group(0) in (b'"""', b"'''"):
                open_quote = m.group(0)
            i = m.end()
        if starts_inside or open_quote is not None:
            out.append(_Line(text, verbatim=True))
        else:
            out.append(_Line(text, lead=True, trail=True, blank=True))
    return out


def _json_lines(data: bytes) -> list[_Line]:
    return [_Line(t, lead=True, trail=True, blank=True) for t in _split(data)]


_FENCE = re.compile(rb"^ {0,3}(`{3,}|~{3,})")


def _markdown_lines(data: bytes) -> list[_Line]:
    out, fence = [], None
    for text in _split(data):
        m = _FENCE.match(text)
        if fence is not None:
            out.append(_Line(text, verbatim=True))
            if m and m.group(1)[:1] == fence[:1] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            out.append(_Line(text, verbatim=True))
            continue
        out.append(_Line(text, trail=True, blank=True))
    return out


def _lines_of(data: bytes, kind: str) -> list[_Line]:
    if kind == "python":
        return _python_lines(data)
    if kind == "yaml":
        return _yaml_lines(data)
    if kind in ("shell", "dockerfile"):
        return _shell_lines(data)
    if kind == "toml":
        return _toml_lines(data)
    if kind == "json":
        return _json_lines(data)
    if kind == "markdown":
        return _markdown_lines(data)
    if kind == "exact":
        return [_Line(t, verbatim=True) for t in _split(data)]
    return [_Line(t, trail=True) for t in _split(data)]


def _normal(line: _Line, kind: str) -> bytes | None:
    """The line without its layout whitespace; None when it vanishes (a blank line that is layout)."""
    if line.verbatim:
        return line.text
    cr = b"\r" if line.text.endswith(b"\r") else b""
    body = line.text[: len(line.text) - len(cr)]
    if line.trail:
        stripped = body.rstrip(b" \t")
        if not _continues(stripped) or stripped == body:  # a space after a final `\` escapes it
            tail = body[len(stripped) :]
            body = stripped + (b"  " if kind == "markdown" and tail.count(b" ") >= 2 else b"")
    if line.lead:
        body = body.lstrip(b" \t")
    if not body.strip() and line.blank:
        return None if kind != "markdown" else b""
    return body + cr


def meaningful_lines(data: bytes, kind: str) -> list[bytes]:
    """The lines of ``data`` with only the whitespace that carries no meaning in ``kind`` removed."""
    out: list[bytes] = []
    for line in _lines_of(data, kind):
        normal = _normal(line, kind)
        if normal is None:
            continue
        if kind == "markdown" and not line.verbatim and normal == b"" and out and out[-1] == b"":
            continue  # blank lines in a row are one paragraph break
        out.append(normal)
    if kind == "markdown":
        while out and out[-1] == b"":
            out.pop()  # blank lines at the end of a document
    elif out and out[-1] == b"":
        out.pop()  # what follows the last line ending
    return out


def same_meaning(a: bytes, b: bytes, kind: str) -> bool:
    """``a`` and ``b`` differ at most in whitespace that means nothing in ``kind``."""
    return a == b or meaningful_lines(a, kind) == meaningful_lines(b, kind)
