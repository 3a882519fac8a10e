"""The translator's two shortcuts give the translation the long way gives, byte for byte and event
for event: remembered statements (``sync.translator.memo``) and the descent that parses only the
pieces that change (``sync.translator.lazy``). Each test compares against the same translation
with the shortcut switched off, on sources built to hit their edge cases.
"""

from __future__ import annotations

import pytest
from translate_helpers import fixture, translate

import sync.translator.lazy as lazy
from sync.translator.memo import MEMO

ENGINE = "slime/backends/sglang_utils/sglang_engine.py"


def _summary(result) -> tuple:
    return result.dst_path, result.data, sorted(result.applied), sorted(result.unsupported), result.unmapped


def _cold(path: str, source: str) -> tuple:
    MEMO.entries.clear()
    return _summary(translate(path, source))


@pytest.fixture(autouse=True)
def _empty_memo():
    MEMO.entries.clear()
    yield
    MEMO.entries.clear()


# A long class and function with comments where libcst puts them in footers and leading lines,
# decorators, a multi-line header, one-line bodies, an else clause, and SGLang names to rewrite.
LONG = '''\
import requests
from sglang.srt.server_args import ServerArgs
from slime.utils.http_utils import post


class Worker:
    """A worker that talks to an SGLang server."""

    @staticmethod
    def build(
        path,
        port,
    ):
        # a comment before the body
        args = ServerArgs(model_path=path, port=port)
        if port: return args
        for i in range(3):
            print(i)
            # trailing comment inside the for, deeper than the next statement
        return args

# a comment at column 0 inside the class
    def flush(self, url):
        return requests.get(f"{url}/flush_cache")

    def plain(self):
        x = 1
        y = 2
        z = 3
        return x + y + z

    async def generate(self, url, payload):
        with open("/dev/null") as sink:
            sink.write("sglang")
            output = await post(f"{url}/generate", payload)
            return output["meta_info"]["finish_reason"]
        # footer comment of the function


def pick(args, port):
    if port > 0:
        target = f"http://{args.sglang_router_ip}:{port}"
        print("sglang", target)
        print("x")
        print("y")
        print("z")
        print("w")
    else:
        target = None
    return target


def header_mentions(sglang_url):  # a header a rule acts on: parsed alone, with a placeholder body
    a = 1
    b = 2
    c = 3
    d = 4
    e = 5
    f = 6
    g = 7
    return sglang_url


@decorated(kind="sglang")
class SGLangThing(
    Base,
):
    # a comment on the first child
    name = "sglang"
    a = 1
    b = 2
    c = 3
    d = 4
    e = 5

# the comment above names SGLang: a module-level statement whose leading comment a rule acts on
def commented(url):
    a = 1
    b = 2
    c = 3
    d = 4
    e = 5
    f = 6
    return requests.get(f"{url}/flush_cache")
'''


def test_the_lazy_descent_equals_the_whole_parse(monkeypatch):
    with_lazy = _cold(ENGINE, LONG)
    monkeypatch.setattr(lazy.LazyNarrower, "statement", lambda self, *a: None)  # always the whole parse
    without = _cold(ENGINE, LONG)
    assert with_lazy == without
    assert with_lazy[1] != LONG.encode()  # there was something to translate
    assert b"EngineArgs" in with_lazy[1] and b"ServerArgs(" not in with_lazy[1]
    assert b"class VLLMThing(" in with_lazy[1] or b"class SGLangThing(" not in with_lazy[1]


def test_the_lazy_descent_is_taken_on_long_statements(monkeypatch):
    taken = []
    original = lazy.LazyNarrower.statement

    def spy(self, node, start, first, end):
        result = original(self, node, start, first, end)
        taken.append((type(node).__name__, result is not None))
        return result

    monkeypatch.setattr(lazy.LazyNarrower, "statement", spy)
    translate(ENGINE, LONG)
    assert ("ClassDef", True) in taken  # the class was not parsed whole
    assert taken.count(("FunctionDef", True)) == 2  # pick(), header_mentions() (its header too)
    assert ("ClassDef", True) in taken and taken.count(("ClassDef", True)) == 2  # Worker, SGLangThing
    assert ("FunctionDef", False) in taken  # commented(): parsed whole for its leading comment


def test_a_misaligned_piece_falls_back_to_the_whole_parse(monkeypatch):
    expected = _cold(ENGINE, LONG)

    def refuse(self, first, last):
        raise lazy.Fallback("test: refuse every piece")

    monkeypatch.setattr(lazy.LazyNarrower, "_leaf", refuse)
    assert _cold(ENGINE, LONG) == expected  # and no event of the abandoned attempt is left behind


def test_remembered_statements_follow_the_lines_they_moved_to():
    source = fixture("engine_upstream.py.txt").decode()
    moved = "# two new lines at the top\nimport os\n" + source
    translate(ENGINE, source)  # fills the memo
    warm = _summary(translate(ENGINE, moved))
    assert MEMO.hits > 0
    assert warm == _cold(ENGINE, moved)


def test_a_statement_whose_names_are_bound_differently_is_not_reused():
    with_import = "from sglang.srt.server_args import ServerArgs\n\n\ndef make(path):\n    return ServerArgs(model_path=path)\n"
    without_import = "\n\n\ndef make(path):\n    return ServerArgs(model_path=path)\n"
    first = _summary(translate(ENGINE, with_import))
    assert b"EngineArgs(" in first[1]
    warm = _summary(translate(ENGINE, without_import))  # same function text, ServerArgs now unbound
    assert warm == _cold(ENGINE, without_import)


def test_the_memo_is_bounded():
    MEMO.max_chars, saved = 10_000, MEMO.max_chars
    try:
        for i in range(50):
            translate(ENGINE, LONG.replace("x = 1", f"x = {i}"))
            assert MEMO.chars <= 10_000 + 20_000  # one entry may be large; the total is cleared when over
    finally:
        MEMO.max_chars = saved
