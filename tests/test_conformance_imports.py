"""The conformance check of ``vime.*`` imports, attributes and hook paths (sync/conformance/imports.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from sync.conformance.imports import (
    MISSING_MODULE,
    MISSING_NAME,
    Surface,
    Union,
    check_file,
    installed_surface,
)


def _package(root: Path, files: dict[str, str]) -> Surface:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return Surface(root)


def _vime(tmp_path: Path) -> Surface:
    return _package(
        tmp_path,
        {
            "vime/__init__.py": "",
            "vime/utils/__init__.py": "from .types import *\n",
            "vime/utils/types.py": """
                import os as _os
                from dataclasses import dataclass
                __all__ = ["Sample"]
                @dataclass
                class Sample:
                    pass
                try:
                    import yaml
                    HAVE_YAML = True
                except ImportError:
                    HAVE_YAML = False
                def setup():
                    global CONFIGURED
                    CONFIGURED = True
                if True:
                    A, (B, *C) = 1, (2, 3)
            """,
            "vime/utils/misc.py": "def load_function(path):\n    return path\n",
            "vime/lazy.py": "def __getattr__(name):\n    return name\n",
            "vime/rollout/__init__.py": "",
            "vime/rollout/rm_hub/__init__.py": "async def async_rm(args, sample):\n    return 0\n",
        },
    )


def test_surface_reads_module_names_without_importing(tmp_path):
    vime = _vime(tmp_path)
    names = vime.names("vime.utils.types")
    assert {"Sample", "_os", "dataclass", "yaml", "HAVE_YAML", "CONFIGURED", "A", "B", "C", "setup"} <= set(
        names.names
    )
    assert not names.open
    assert vime.has("vime.utils", "Sample")  # through `from .types import *`
    assert vime.has("vime.utils", "misc")  # a submodule
    assert vime.has("vime.lazy", "anything")  # a module-level __getattr__ answers every name
    assert not vime.has("vime.utils.misc", "SingletonMeta")
    assert vime.names("vime.agent") is None


def test_plugin_imports_are_findings_with_file_line_and_the_missing_name(tmp_path):
    vime = _vime(tmp_path / "vime_root")
    plugin = textwrap.dedent(
        """\
        import vime.utils.misc as U
        from vime.utils.types import Sample
        from vime.agent.harness import ClaudeCodeHarness
        from vime.utils.misc import SingletonMeta, load_function
        from vime.rollout import rm_hub


        def go(args):
            from vime.utils.processing_utils import load_tokenizer

            U.exec_command("ls")
            U.load_function("x.y")
            return rm_hub.async_rm, rm_hub.nope
        """
    )
    findings = check_file("examples/agent/generate.py", plugin, vime)
    got = [(f.line, f.kind, f.message.split(";")[0]) for f in findings]
    assert got == [
        (3, MISSING_MODULE, "from vime.agent.harness import ...: vime has no module vime.agent"),
        (4, MISSING_NAME, "from vime.utils.misc import SingletonMeta: vime.utils.misc has no name 'SingletonMeta'"),
        (9, MISSING_MODULE, "from vime.utils.processing_utils import ...: vime has no module vime.utils.processing_utils"),
        (11, MISSING_NAME, "U.exec_command: vime.utils.misc has no name 'exec_command'"),
        (13, MISSING_NAME, "rm_hub.nope: vime.rollout.rm_hub has no name 'nope'"),
    ]  # fmt: skip
    assert all(f.path == "examples/agent/generate.py" and f.effect == "import" for f in findings)
    assert findings[0].format().startswith("examples/agent/generate.py:3: conformance: ")


def test_hook_paths_in_launch_scripts_are_checked(tmp_path):
    vime = _vime(tmp_path)
    script = (
        "ARGS=(\n"
        "   --custom-rm-path vime.rollout.rm_hub.async_rm\n"
        "   --custom-reward-post-process-path=vime.rollout.opd.post_process_rewards\n"
        '   --rollout-function-path "vime.rollout.rm_hub.missing_fn"\n'
        ")\n"
    )
    findings = check_file("examples/opd/run.sh", script, vime)
    assert [(f.line, f.kind) for f in findings] == [(3, MISSING_MODULE), (4, MISSING_NAME)]
    assert "vime has no module vime.rollout.opd" in findings[0].message
    assert "vime.rollout.rm_hub has no name 'missing_fn'" in findings[1].message


def test_a_name_rebound_in_the_file_and_a_function_attribute_are_left_alone(tmp_path):
    vime = _vime(tmp_path)
    plugin = (
        "from vime.utils.misc import load_function\n"
        "import vime.utils.misc as U\n"
        "load_function.cache_clear()\n"  # an attribute of a function: not a module
        "U = object()\n"
        "U.anything\n"  # rebound: no longer the module
    )
    assert check_file("p.py", plugin, vime) == []


def test_the_translated_tree_is_named_when_it_carries_the_missing_module(tmp_path):
    vime = _vime(tmp_path)
    tree = Surface(None, {"vime.agent": "", "vime.agent.harness": "class ClaudeCodeHarness: ...\n"})
    plugin = "from vime.agent.harness import ClaudeCodeHarness\n"
    [finding] = check_file("examples/a.py", plugin, vime, carried=tree)
    assert "the translated tree carries vime.agent" in finding.message
    # vime's own translated files are checked against vime plus the tree: nothing missing there
    assert check_file("vime/agent/x.py", plugin, Union([vime, tree])) == []


def test_relative_imports_inside_vime_resolve_against_the_file(tmp_path):
    vime = _vime(tmp_path)
    text = "from ...utils.types import Sample\nfrom ...utils.types import Missing\nfrom . import async_rm\n"
    findings = check_file("vime/rollout/rm_hub/__init__.py", text, vime)
    assert [(f.line, f.message.split(";")[0]) for f in findings] == [
        (2, "from ...utils.types import Missing: vime.utils.types has no name 'Missing'")
    ]


def test_the_installed_vime_is_the_default_surface():
    vime = installed_surface()
    assert vime is not None and (vime.root / "vime" / "utils" / "types.py").is_file()
    text = "from vime.utils.types import Sample\nfrom vime.utils.types import NoSuchName\n"
    [finding] = check_file("examples/p.py", text, vime)
    assert finding.line == 2 and finding.kind == MISSING_NAME


def test_the_gate_fails_a_plugin_import_vime_lacks_naming_file_and_prs(tmp_path):
    from sync.gate.imports_check import check_vime_imports

    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins/agent.py").write_text(
        "from vime.utils.types import Sample\nfrom vime.agent import sandbox\n"
    )
    (tmp_path / "run.sh").write_text("python train.py --custom-rm-path vime.rollout.rm_hub.no_such_reward\n")
    failures, summary = check_vime_imports(
        tmp_path, ["plugins/agent.py", "run.sh"], {"plugins/agent.py": [2201], "run.sh": [2202]}
    )
    assert summary.status == "failed" and summary.checked == 2 and "installed vime" in summary.note
    assert [(f.check, f.files, f.line, f.prs) for f in failures] == [
        ("vime-import", ["plugins/agent.py"], 2, [2201]),
        ("vime-import", ["run.sh"], 1, [2202]),
    ]
    assert "vime has no module vime.agent" in failures[0].message
    assert "vime.rollout.rm_hub has no name 'no_such_reward'" in failures[1].message


def test_translate_reports_a_slime_module_vime_lacks_and_maps_sglangs_tool_parser(tmp_path):
    """Two slime-style plugins through ``vime-sync translate --stats --report``: one imports a
    slime module vime lacks (a finding with file, line and the missing module), the other uses
    SGLang's tool parser and router address (mapped onto vime's, no finding)."""
    import json
    import subprocess
    import sys

    src = tmp_path / "src"
    (src / "examples/agent_rl").mkdir(parents=True)
    (src / "examples/agent_rl/generate.py").write_text(
        "from slime.agent.harness import ClaudeCodeHarness\n"
        "from slime.utils.types import Sample\n"
        "from slime.utils.misc import NoSuchHelper\n"
    )
    (src / "examples/tools_rl").mkdir(parents=True)
    (src / "examples/tools_rl/parse.py").write_text(
        "from sglang.srt.function_call.function_call_parser import FunctionCallParser\n"
        "from sglang.srt.managers.io_struct import Function, Tool\n"
        "\n"
        "\n"
        "def parse(args, text, tools):\n"
        '    url = f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate"\n'
        '    name = getattr(args, "sglang_tool_call_parser", None) or "qwen25"\n'
        "    parser = FunctionCallParser(tools=[Tool(function=Function(**t['function'])) for t in tools], tool_call_parser=name)\n"
        "    return url, parser.parse_non_stream(text)\n"
    )
    out, report = tmp_path / "out", tmp_path / "report.json"
    vime_sync = [sys.executable, "-c", "from sync.cli import run; run()"]
    done = subprocess.run(
        [*vime_sync, "translate", str(src), "--out", str(out), "--stats", "--report", str(report)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = (done.stdout + done.stderr).replace("\n ", " ")
    assert (
        "examples/agent_rl/generate.py:1: mod.slime: from vime.agent.harness import ...: vime has no module vime.agent"
        in lines
    )
    assert "examples/agent_rl/generate.py:3: mod.slime: from vime.utils.misc import NoSuchHelper: vime.utils.misc has no name 'NoSuchHelper'" in lines  # fmt: skip
    files = {f["dst_path"]: f for f in json.loads(report.read_text())["files"]}
    findings = [
        (f["line"], f["kind"], f["effect"]) for f in files["examples/agent_rl/generate.py"]["findings"]
    ]
    assert findings == [(1, "missing-module", "import"), (3, "missing-name", "import")]
    assert "examples/tools_rl/parse.py" not in files  # mapped, nothing left to report
    mapped = (out / "examples/tools_rl/parse.py").read_text()
    assert "from vime.compat.client_parsers import FunctionCallParser\n" in mapped
    assert "from vime.compat.client_parsers import Function, Tool\n" in mapped
    assert "args.vllm_router_ip" in mapped and "args.vllm_router_port" in mapped
    assert 'getattr(args, "vllm_tool_call_parser", None)' in mapped
    assert "sglang" not in mapped.replace('"qwen25"', "")
    # and the mapped code runs on vLLM's parser
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location("mapped_parse", out / "examples/tools_rl/parse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    args = SimpleNamespace(vllm_router_ip="127.0.0.1", vllm_router_port=8, vllm_tool_call_parser=None)
    url, (text, calls) = module.parse(
        args, 'x<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>', tools
    )
    assert url == "http://127.0.0.1:8/inference/v1/generate" and text == "x"
    assert [(c.name, c.parameters) for c in calls] == [("add", '{"a": 1}')]
