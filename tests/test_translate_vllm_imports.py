"""tools/check_vllm_imports.py: real imports against the installed vLLM (skipped where it is absent)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sync.translator.vllm_imports import imports_in_source, vllm_installed

TOOL = Path(__file__).resolve().parents[1] / "tools" / "check_vllm_imports.py"


def test_imports_are_found_with_lines_and_names():
    source = "import os\nimport vllm_router\nfrom vllm.utils.network_utils import get_ip, get_open_port\nfrom . import vllm\n"
    uses = imports_in_source("a.py", source)
    assert [(u.line, u.module, u.name) for u in uses] == [
        (2, "vllm_router", None),
        (3, "vllm.utils.network_utils", "get_ip"),
        (3, "vllm.utils.network_utils", "get_open_port"),
    ]


@pytest.mark.skipif(not vllm_installed(), reason="vLLM is not installed here")
def test_checker_passes_real_imports_and_names_the_wrong_ones(tmp_path):
    (tmp_path / "good.py").write_text("from vllm.engine.arg_utils import EngineArgs\nimport vllm_router\n")
    (tmp_path / "bad.py").write_text(
        "from vllm.srt.managers.io_struct import Tool\nfrom vllm.utils.system_utils import no_such_name\n"
    )
    done = subprocess.run(
        [sys.executable, str(TOOL), str(tmp_path), "--json"], capture_output=True, text=True
    )
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["imports"] == 4 and summary["wrong"] == 2
    assert any(
        p.startswith("bad.py:1: vllm.srt.managers.io_struct.Tool: no module") for p in summary["problems"]
    )
    assert any("bad.py:2:" in p and "defines no 'no_such_name'" in p for p in summary["problems"])


def test_checker_rejects_a_missing_directory(tmp_path):
    done = subprocess.run([sys.executable, str(TOOL), str(tmp_path / "nope")], capture_output=True, text=True)
    assert done.returncode == 2 and "is not a directory" in done.stderr
