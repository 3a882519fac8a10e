"""A hook whose module exists but fails to import is named by the line that failed inside it."""

from __future__ import annotations

import sys

import pytest

from vime.utils.misc import HookLoadError, load_function


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    pkg = tmp_path / "userpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "agent.py").write_text("import os\nfrom vime.agent.harness import ClaudeCodeHarness\n")
    (pkg / "names.py").write_text("from vime.utils.types import NoSuchThing\n")
    (pkg / "chain.py").write_text("from userpkg.helper import thing\n")
    (pkg / "helper.py").write_text("import not_installed_anywhere\nthing = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg
    for name in [m for m in sys.modules if m.startswith("userpkg")]:
        del sys.modules[name]


def _error(path: str) -> str:
    with pytest.raises(HookLoadError) as caught:
        load_function(path)
    return str(caught.value)


def test_a_missing_import_inside_the_plugin_names_its_line_not_the_plugin(plugin_dir):
    message = _error("userpkg.agent.generate")
    assert "module 'userpkg.agent' exists, but agent.py:2" in message
    assert "`from vime.agent.harness import ClaudeCodeHarness`" in message
    assert "no module named 'vime.agent'" in message and "not found" not in message


def test_a_missing_name_inside_the_plugin_names_its_line(plugin_dir):
    message = _error("userpkg.names.fn")
    assert "names.py:1" in message and "cannot import name 'NoSuchThing'" in message


def test_a_failure_two_modules_deep_names_the_plugins_own_line(plugin_dir):
    message = _error("userpkg.chain.fn")
    assert "chain.py:1 `from userpkg.helper import thing`" in message
    assert "no module named 'not_installed_anywhere'" in message


def test_a_module_that_does_not_exist_is_still_not_found(plugin_dir):
    assert "module 'userpkg.nope' not found" in _error("userpkg.nope.fn")
    assert "module 'no_such_top.mod' not found" in _error("no_such_top.mod.fn")
