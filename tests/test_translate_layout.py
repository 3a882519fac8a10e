"""Layout guarantees: lines stay where they were, untouched code stays byte for byte, and the fast
path (statement spans from Python's parser, narrowed visits) gives what a whole-module visit gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from translate_helpers import FIXTURES, fixture, text_of, translate

import sync.translator.python as python_translator

CLASS_SOURCE = '''\
import os;  import sys


class Engine:
    """A long class: only one method mentions the engine."""

    def a(self):
        return   os.getcwd()   # odd spacing stays

    @staticmethod
    def b(x):
        y = x + 1; z = y * 2
        return z

    def c(self, url):
        # flush before weights arrive
        return requests.get(f"{url}/flush_cache")

    def d(self):
        return 4
    # a comment at the end of the class body
'''


def test_only_the_statement_that_needs_it_changes_and_provenance_points_at_it():
    result = translate("slime/engine.py", CLASS_SOURCE)
    before, after = CLASS_SOURCE.split("\n"), text_of(result).split("\n")
    assert len(before) == len(after)
    changed = [number for number, (a, b) in enumerate(zip(before, after, strict=True), start=1) if a != b]
    assert changed == [17]
    assert after[16] == '        return requests.post(f"{url}/reset_prefix_cache")'  # vLLM takes POST only
    assert [(a.rule_id, a.line) for a in result.applied if a.line] == [("ep.flush_cache", 17)]


def test_return_logprob_moves_without_moving_lines():
    source = (
        "def f(sp, ids):\n"
        "    payload = {\n"
        '        "input_ids": ids,\n'
        '        "sampling_params": sp,\n'
        '        "return_logprob": True,\n'
        "    }\n"
        "    return payload\n"
    )
    result = translate("slime/rollout/sglang_rollout.py", source)
    out = text_of(result).split("\n")
    assert len(out) == len(source.split("\n"))
    assert out[3] == '        "sampling_params": {**sp, "logprobs": 0},'
    assert out[4] == '        # vime-sync: return_logprob became sampling_params["logprobs"] = 0'
    assert {a.line for a in result.applied if a.rule_id == "shape.return_logprob"} == {4, 5}


@pytest.mark.parametrize(
    "name", ["engine_upstream.py.txt", "rollout_upstream.py.txt", "negative_upstream.py.txt"]
)
def test_fast_path_equals_whole_module_visits(name, monkeypatch):
    path = "slime/backends/sglang_utils/sglang_engine.py"
    fast = translate(path, fixture(name))
    monkeypatch.setattr(python_translator, "_by_slices", lambda *args: None)  # one libcst parse of the file
    whole = translate(path, fixture(name))
    monkeypatch.setattr(python_translator, "statement_spans", lambda *args: None)  # and no spans from ast
    slow = translate(path, fixture(name))
    assert (fast.data, fast.applied, fast.unsupported) == (whole.data, whole.applied, whole.unsupported)
    assert (fast.data, fast.applied, fast.unsupported) == (slow.data, slow.applied, slow.unsupported)


def test_fast_path_equals_whole_module_visits_on_this_repository(monkeypatch):
    """The translator's own sources and tests are real, varied Python: both paths must agree."""
    root = Path(__file__).resolve().parents[1]
    files = sorted((root / "sync").rglob("*.py"))[:40] + [FIXTURES.parent.parent / "test_translate_python.py"]
    fast = {f: translate("slime/" + f.name, f.read_bytes()) for f in files}
    monkeypatch.setattr(python_translator, "_by_slices", lambda *args: None)
    monkeypatch.setattr(python_translator, "statement_spans", lambda *args: None)
    for f in files:
        slow = translate("slime/" + f.name, f.read_bytes())
        assert (fast[f].data, fast[f].applied) == (slow.data, slow.applied), f


def test_windows_line_endings_and_no_final_newline_survive():
    source = "import os\r\nURL = '/flush_cache'\r\nx = 1"
    out = text_of(translate("slime/a.py", source))
    assert out == "import os\r\nURL = '/reset_prefix_cache'\r\nx = 1"
