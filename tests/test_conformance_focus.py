"""The extraction parses only the functions that may hold an HTTP call (``sync/conformance/focus.py``),
and finds exactly what it finds on the whole module, at the same lines."""

from __future__ import annotations

import sync.conformance.extract as extract_mod
from sync.conformance.extract import Wrapper, extract
from sync.conformance.focus import focus

WRAPPERS = [Wrapper("post", "POST", url_arg=0, body_arg=1, modules=("vime.utils.http_utils",))]

MODULE = """import requests
from vime.utils.http_utils import post

HEALTH_URL = "http://127.0.0.1:8000/health_generate"


def parse_flags(args):
    args.get("x")
    return {k: v for k, v in args.items() if k.get("y")}


def flush(host):
    return requests.post(f"http://{host}/flush_cache", json={})


def health(host):
    url = f"http://{host}/health"
    return requests.get(url)


def by_module_name():
    return requests.get(HEALTH_URL)


class Client:
    def unrelated(self):
        return self.cache.get("key")

    async def generate(self, url, ids):
        payload = {"input_ids": ids, "sampling_params": {}}
        out = await post(f"{url}/generate", payload)
        return out["meta_info"]["finish_reason"]
"""


def whole_module_extract(text: str):
    real = extract_mod.focus
    extract_mod.focus = lambda t, _w: (t, list(range(1, t.count("\n") + 2)))
    try:
        return extract("m.py", text, WRAPPERS)
    finally:
        extract_mod.focus = real


def test_focus_leaves_out_what_cannot_call_and_keeps_line_numbers():
    kept, lines = focus(MODULE, [(w.name, w.modules) for w in WRAPPERS])
    assert "def parse_flags" not in kept and "def unrelated" not in kept and "def flush" in kept
    assert "def health" in kept and "def by_module_name" in kept and "async def generate" in kept
    original = MODULE.splitlines()
    for text, line in zip(kept.splitlines(), lines, strict=True):
        assert text in (original[line - 1], "    pass")
    got, expected = extract("m.py", MODULE, WRAPPERS), whole_module_extract(MODULE)
    line_of = {text.strip(): n for n, text in enumerate(original, 1)}
    assert [(c.method, c.route, c.line) for c in got.calls] == [
        ("POST", "/flush_cache", line_of['return requests.post(f"http://{host}/flush_cache", json={})']),
        ("GET", "/health", line_of["return requests.get(url)"]),
        ("GET", "/health_generate", line_of["return requests.get(HEALTH_URL)"]),
        ("POST", "/generate", line_of['out = await post(f"{url}/generate", payload)']),
    ]  # fmt: skip
    assert repr(got) == repr(expected)


def test_focus_gives_up_on_text_python_cannot_parse_or_count():
    for text in ("def f(:\n    requests.get('/x')\n", "x = 1\x0c\ndef f():\n    return requests.get('/x')\n"):
        kept, lines = focus(text, [])
        assert kept == text and lines[:3] == [1, 2, 3]
