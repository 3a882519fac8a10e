"""translate(translate(x)) == translate(x), on generated sources (hypothesis) and on the fixtures."""

from __future__ import annotations

import ast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from translate_helpers import FIXTURES, rules, translate

from sync.translate import translate_file

IDENTIFIER_WORDS = ["sglang", "SGLang", "Sglang", "SGLANG", "url", "engine", "router", "config", "x", "meta"]
STRING_BODIES = [
    "/generate",
    "/flush_cache",
    "/inference/v1/generate",
    "/pull_weights",
    "max_new_tokens",
    "input_ids",
    "rid",
    "meta_info",
    "SGLANG_FOO",
    "--sglang-tp-size",
    "--sglang-",
    "SGLang engine failed",
    "see https://github.com/sgl-project/sglang",
    "slime.rollout.sglang_rollout.generate",
    "sglang_router",
    "plain words",
]
MODULES = [
    "sglang.srt.utils",
    "sglang.srt.server_args",
    "sglang_router.launch_router",
    "slime.rollout.sglang_rollout",
    "slime.backends.sglang_utils.sglang_engine",
    "sglang.srt.managers.io_struct",
    "os",
]
IMPORTED = ["kill_process_tree", "ServerArgs", "RouterArgs", "GenerateState", "SGLangEngine", "Tool", "path"]

identifiers = (
    st.lists(st.sampled_from(IDENTIFIER_WORDS), min_size=1, max_size=3)
    .map("_".join)
    .map(lambda name: name if name.isidentifier() and not name[0].isdigit() else "v_" + name)
)
strings = st.sampled_from(STRING_BODIES)


@st.composite
def statements(draw) -> str:
    kind = draw(st.integers(0, 9))
    name, other, text = draw(identifiers), draw(identifiers), draw(strings)
    if kind == 0:
        return f"from {draw(st.sampled_from(MODULES))} import {draw(st.sampled_from(IMPORTED))}"
    if kind == 1:
        return f"import {draw(st.sampled_from(MODULES))}"
    if kind == 2:
        return f'{name} = f"http://{{{other}}}{text}"'
    if kind == 3:
        return f'{name} = {{"{text}": {other}, "sampling_params": {{"max_new_tokens": 1}}}}'
    if kind == 4:
        return f"{name}({other}, max_new_tokens=1, no_stop_trim=True)"
    if kind == 5:
        return f'{name} = [t[1] for t in {other}["meta_info"]["output_token_logprobs"]]'
    if kind == 6:
        return f"# {text} {name}"
    if kind == 7:
        return f'{name} = {other}["meta_info"]["finish_reason"]["type"]'
    if kind == 8:
        return f'{name}.{other} = getattr(args, "{name}", "{text}")'
    return f'self._make_request("{text.lstrip("/")}")'


sources = st.lists(statements(), min_size=1, max_size=12).map(lambda lines: "\n".join(lines) + "\n")
PATHS = ["slime/rollout/sglang_rollout.py", "slime/backends/sglang_utils/sglang_engine.py", "tools/x.py"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=sources, path=st.sampled_from(PATHS))
def test_python_translation_is_idempotent_and_parses(source: str, path: str):
    ast.parse(source)
    once = translate(path, source)
    assert once.parse_error is None
    ast.parse(once.data)
    twice = translate_file(once.dst_path, once.data, rules())
    assert twice.data == once.data
    assert twice.dst_path == once.dst_path
    assert translate(path, source).data == once.data  # deterministic


words = st.sampled_from(
    STRING_BODIES + ["SGLang", "sglang", "sglang-router", "slime/rollout/x.py", "\n", " "]
)


@settings(max_examples=150, deadline=None)
@given(
    text=st.lists(words, max_size=30).map(" ".join), suffix=st.sampled_from([".md", ".sh", ".yaml", ".txt"])
)
def test_text_translation_is_idempotent(text: str, suffix: str):
    once = translate(f"docs/page{suffix}", text)
    twice = translate_file(once.dst_path, once.data, rules())
    assert twice.data == once.data


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()))
def test_every_fixture_is_idempotent(name: str):
    path = "slime/backends/sglang_utils/" + name.removesuffix(".txt")
    data = (FIXTURES / name).read_bytes()
    once = translate(path, data)
    again = translate_file(once.dst_path, once.data, rules())
    assert again.data == once.data
