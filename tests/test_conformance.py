"""The conformance checker on small translated snippets: one test per kind of finding, against the
installed vLLM's own API (read from its FastAPI app, cached per vLLM version)."""

from __future__ import annotations

import textwrap

import pytest

from sync.conformance.check import check_calls, check_policies
from sync.conformance.extract import ExtractStatus, Wrapper, extract
from sync.conformance.model import Body
from sync.conformance.schema import ApiUnavailable, load_api
from sync.rules import load_rules

WRAPPERS = [
    Wrapper("_make_request", "POST", route_arg=0, body_arg=1),
    Wrapper("post", "POST", url_arg=0, body_arg=1, modules=("vime.utils.http_utils",)),
]


@pytest.fixture(scope="module")
def api():
    try:
        return load_api()
    except ApiUnavailable as error:
        pytest.skip(f"vLLM's API cannot be read here: {error}")


def findings(api, source: str):
    found = extract("m.py", textwrap.dedent(source), WRAPPERS)
    return check_calls(found.calls, api) + check_policies("m.py", found.policies, api)


def kinds(api, source: str) -> list[tuple[int, str, str]]:
    return [(f.line, f.kind, f.effect) for f in findings(api, source)]


def test_correct_calls_have_no_findings(api):
    source = """
    import requests
    from vime.utils.http_utils import post

    async def f(host, port, ids, tags):
        requests.post(f"http://{host}:{port}/reset_prefix_cache")
        requests.post(f"http://{host}:{port}/wake_up", params=[("tags", t) for t in tags])
        requests.post(f"http://{host}:{port}/collective_rpc", json={"method": "reload_weights", "kwargs": {}})
        out = await post(f"http://{host}:{port}/inference/v1/generate", {"token_ids": ids, "sampling_params": {}})
        return out["choices"][0]["token_ids"], out["choices"][0]["logprobs"]["content"]
    """
    assert findings(api, source) == []


def test_unknown_route(api):
    source = """
    import requests
    def f(self):
        return requests.get(f"http://{self.server_host}:{self.server_port}/get_weight_version").json()
    """
    assert kinds(api, source) == [(4, "unknown-route", "rejected")]


def test_outside_service_and_route_definitions_are_not_checked(api):
    source = """
    import requests
    from fastapi import FastAPI
    app = FastAPI()

    @app.post("/retrieve")
    def retrieve(request):
        return requests.post(f"{search_url}/retrieve", json={"q": 1})

    app.get("/buffer/write")
    """
    found = extract("m.py", textwrap.dedent(source), WRAPPERS)
    assert [c.route for c in found.calls] == ["/retrieve"] and not found.calls[0].engine
    assert findings(api, source) == []


def test_wrong_method(api):
    source = """
    import requests
    def flush(self):
        requests.get(f"http://{self.server_host}:{self.server_port}/reset_prefix_cache")
    """
    [finding] = findings(api, source)
    assert (finding.kind, finding.effect) == ("wrong-method", "rejected")
    assert "takes POST, not GET" in finding.message


def test_body_not_query(api):
    source = """
    def resume(self, tags):
        return self._make_request("wake_up", {"tags": tags})
    """
    assert kinds(api, source) == [(3, "body-not-query", "ignored")]


def test_query_not_body(api):
    source = """
    import requests
    def version(self):
        requests.post(f"http://{self.server_host}:{self.server_port}/update_weight_version?new_version=3")
    """
    got = kinds(api, source)
    assert (4, "query-not-body", "rejected") in got
    assert (4, "missing-field", "rejected") in got  # and the body then lacks it


def test_missing_field_nested_and_subscript_assignment(api):
    source = """
    def update(self, names, version):
        payload = {"names": names}
        payload["weight_version"] = version
        return self._make_request("update_weights", payload)
    """
    got = kinds(api, source)
    assert (5, "missing-field", "rejected") in got  # update_info
    assert (3, "unknown-field", "ignored") in got  # names
    assert (4, "unknown-field", "ignored") in got  # weight_version, added by subscript


def test_missing_method_in_raw_handler_body(api):
    """/collective_rpc reads its body by hand; 'method' is required by the handler's own source."""
    source = """
    def reload(self, path):
        return self._make_request("collective_rpc", {"kwargs": {"weights_path": path}})
    """
    [finding] = findings(api, source)
    assert (finding.kind, finding.effect) == ("missing-field", "rejected")
    assert "'method'" in finding.message


def test_unknown_field_in_generate_payload(api):
    source = """
    from vime.utils.http_utils import post
    async def gen(url, ids, sp):
        payload = {"sampling_params": sp, "return_logprob": True}
        payload["input_ids"] = ids
        return await post(f"{url}/inference/v1/generate", payload)
    """
    got = kinds(api, source)
    assert (4, "unknown-field", "ignored") in got
    assert (5, "unknown-field", "ignored") in got
    assert (6, "missing-field", "rejected") in got  # token_ids


def test_response_field_reads(api):
    source = """
    from vime.utils.http_utils import post
    async def gen(url, ids):
        output = await post(f"{url}/inference/v1/generate", {"token_ids": ids, "sampling_params": {}})
        text = output["text"]
        if "output_token_logprobs" in output["choices"][0]:
            pass
        return output["choices"][0]["finish_reason"], text
    """
    got = kinds(api, source)
    assert got == [(5, "response-field", "read"), (6, "response-field", "read")]


def test_router_policy(api):
    source = """
    def route(args):
        return args.router_policy == "consistent_hashing" or args.router_policy == "consistent_hash"
    """
    assert kinds(api, source) == [(3, "router-policy", "ignored")]


def test_router_routes_are_known(api):
    source = """
    import requests
    def workers(self):
        return requests.get(f"http://{self.router_ip}:{self.router_port}/workers").json()["workers"]
    def bad(self):
        return requests.get(f"http://{self.router_ip}:{self.router_port}/list_engines")
    """
    [finding] = findings(api, source)
    assert finding.kind == "unknown-route" and "vllm-router has no route" in finding.message


def test_the_extractor_says_whether_it_read_a_file():
    read = extract("m.py", 'def f(s):\n    return s._make_request("flush_cache", {})\n', WRAPPERS)
    assert read.status is ExtractStatus.CHECKED and [c.route for c in read.calls] == ["/flush_cache"]
    nothing = extract("m.py", "x = 1\n", WRAPPERS)
    assert nothing.status is ExtractStatus.SKIPPED and not nothing.calls
    broken = extract("m.py", 'def f(s):\n    return s._make_request("flush_cache", {}\n', WRAPPERS)
    assert broken.status is ExtractStatus.FAILED and not broken.calls
    assert broken.reason.startswith("m.py: ")


def test_wrappers_come_from_the_rule_tables():
    rules = load_rules()
    names = {row["name"] for row in rules.settings["string"]["http_wrapper"]}
    assert {"_make_request", "post", "get"} <= names


def test_translate_stage_questions_the_rule_on_the_line(api):
    """End to end through the translator: the finding names the rule that wrote the line, and that
    line is counted as questioned, not converted."""
    from sync.conformance.stage import check_tree
    from sync.translate import translate_tree

    upstream = textwrap.dedent(
        """
        class Engine:
            def update_weights_from_distributed(self, names, dtypes, shapes, group_name):
                return self._make_request(
                    "update_weights_from_distributed",
                    {"names": names, "dtypes": dtypes, "shapes": shapes, "group_name": group_name},
                )
        """
    ).encode()
    rules = load_rules()
    result = check_tree(
        translate_tree([("slime/backends/sglang_utils/sglang_engine.py", upstream)], rules), rules, api
    )
    [ft] = result.files
    text = ft.data.decode()
    assert '{"update_info": {"names": names, "dtype_names": dtypes' in text
    [finding] = ft.findings
    assert finding.rule == "ep.update_distributed" and finding.kind == "unknown-field"
    assert "'group_name' in update_info" in finding.message and finding.effect == "rejected"
    assert result.stats.references_questioned == 1
    assert result.stats.http_calls == 1


def translated(source: str, path: str = "slime/backends/sglang_utils/sglang_engine.py") -> str:
    from sync.translate import translate_file

    return translate_file(path, textwrap.dedent(source).encode(), load_rules()).data.decode()


def test_rules_reshape_calls_the_way_vllm_takes_them(api):
    """The endpoint rules' call shapes (method, embedded body, query tags, rpc method), each checked
    by the checker afterwards: the translated calls have no findings, and no line moved."""
    source = """
    import requests


    class Engine:
        def flush_cache(self):
            return requests.get(f"http://{self.server_host}:{self.server_port}/flush_cache")

        def resume_memory_occupation(self, tags):
            return self._make_request("resume_memory_occupation", {"tags": tags})

        def init_weights_update_group(self, address, port, offset, size):
            return self._make_request(
                "init_weights_update_group",
                {
                    "master_address": address,
                    "master_port": port,
                    "rank_offset": offset,
                    "world_size": size,
                },
            )

        def update_weights_from_disk(self, path):
            return self._make_request("update_weights_from_disk", {"weights_path": path})

        def destroy_weights_update_group(self, group_name):
            return self._make_request("destroy_weights_update_group", {"group_name": group_name})

        def resume_memory_occupation_multiline(self, tags):
            return self._make_request(
                "resume_memory_occupation",
                {"tags": tags},
            )

        def destroy_weights_update_group_multiline(self, group_name):
            return self._make_request(
                "destroy_weights_update_group",
                {
                    "group_name": group_name,
                },
            )
    """
    text = translated(source)
    assert text.count("\n") == textwrap.dedent(source).count("\n")
    assert 'requests.post(f"http://{self.server_host}:{self.server_port}/reset_prefix_cache")' in text
    assert "self._make_request(f\"wake_up?{'&'.join('tags=' + str(v) for v in (tags or []))}\", None)" in text
    assert '"init_weight_transfer_engine",\n            {"init_info": {' in text
    assert '{"method": "reload_weights", "kwargs": {"weights_path": path}}' in text
    assert 'self._make_request("shutdown_weight_transfer_engine", None)' in text
    compile(text, "translated.py", "exec")
    calls = extract("m.py", text, WRAPPERS).calls
    assert [c.route for c in calls] == [
        "/reset_prefix_cache", "/wake_up", "/init_weight_transfer_engine", "/collective_rpc",
        "/shutdown_weight_transfer_engine", "/wake_up", "/shutdown_weight_transfer_engine",
    ]  # fmt: skip
    assert calls[1].query_open and calls[1].body == Body()
    # a body over several lines cannot be dropped without dropping lines: left, and reported
    [left] = findings(api, text)
    assert (left.kind, left.line, left.effect) == (
        "unknown-field",
        39,
        "ignored",
    ) and "group_name" in left.message


def test_payload_variable_subscript_is_renamed():
    text = translated(
        """
        def generate(ids, sp):
            payload["input_ids"] = ids
            other["input_ids"] = ids
        """,
        path="slime/rollout/sglang_rollout.py",
    )
    assert 'payload["token_ids"] = ids' in text and 'other["input_ids"] = ids' in text


def test_router_policy_name_is_translated():
    text = translated(
        'ok = args.router_policy == "consistent_hashing"\n', path="slime/rollout/sglang_rollout.py"
    )
    assert '"consistent_hash"' in text


def test_sglang_names_through_a_reexport_module_are_reported_where_used():
    """slime's megatron_utils/sglang.py re-exports SGLang helpers; the files that import them from
    it carry no SGLang reference, yet must be reported (at the importing line, under the rule that
    left the SGLang import)."""
    from sync.conformance.stage import check_tree
    from sync.translate import translate_tree

    compat = textwrap.dedent(
        """
        try:
            from sglang.srt.utils.patch_torch import monkey_patch_torch_reductions
        except ImportError:
            monkey_patch_torch_reductions = None
        from sglang.srt.utils import MultiprocessingSerializer
        """
    ).encode()
    user = b"import torch\n\nfrom ..sglang import MultiprocessingSerializer, monkey_patch_torch_reductions\n"
    plain = b"from ..sglang import something_else\n"
    rules = load_rules()
    files = [
        ("slime/backends/megatron_utils/sglang.py", compat),
        ("slime/backends/megatron_utils/update_weight/update_weight_from_tensor.py", user),
        ("slime/backends/megatron_utils/update_weight/other.py", plain),
    ]
    before = translate_tree(files, rules)
    user_before = next(ft for ft in before.files if ft.src_path.endswith("from_tensor.py"))
    assert user_before.unsupported == []  # the translator alone does not see it
    result = check_tree(before, rules, None)
    by_src = {ft.src_path.rsplit("/", 1)[-1]: ft for ft in result.files}
    hits = by_src["update_weight_from_tensor.py"].unsupported
    assert sorted(h.line for h in hits) == [3, 3]
    assert {h.snippet.split("# ")[1].split(":")[0] for h in hits} == {
        "MultiprocessingSerializer",
        "monkey_patch_torch_reductions",
    }
    assert all(rules.rule(h.rule_id).status == "unsupported" for h in hits)
    assert by_src["other.py"].unsupported == []
    assert result.stats.references_unsupported == before.stats.references_unsupported + 2


def test_gate_check_names_file_line_and_prs(api, tmp_path):
    from sync.gate.conformance_check import check_conformance

    bad = 'import requests\n\n\ndef flush(self):\n    requests.get(f"http://{self.server_host}:1/reset_prefix_cache")\n'
    (tmp_path / "vime").mkdir()
    (tmp_path / "vime" / "engine.py").write_text(bad)
    (tmp_path / "vime" / "fine.py").write_text(bad.replace("requests.get", "requests.post"))
    failures, summary = check_conformance(
        tmp_path, ["vime/engine.py", "vime/fine.py"], load_rules(), {"vime/engine.py": [2101]}
    )
    [failure] = failures
    assert failure.check == "conformance" and failure.files == ["vime/engine.py"] and failure.line == 5
    assert failure.prs == [2101] and "takes POST, not GET" in failure.message
    assert (summary.status, summary.checked) == ("failed", 2)


def test_vimes_own_engine_and_router_clients_conform(api):
    """vime's hand-written clients speak vLLM already: the checker finds their calls, and no fault."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    wrappers = WRAPPERS + [
        Wrapper("_call", "POST", route_arg=1, method_arg=0, body_kwarg="json", params_kwarg="params")
    ]
    calls = []
    for rel in ("vime/backends/vllm_utils/engine_client.py", "vime/ray/router_process.py"):
        calls += extract(rel, (root / rel).read_text(), wrappers).calls
    assert len([c for c in calls if c.checkable]) >= 15
    assert check_calls(calls, api) == []


def test_cli_stats_lists_findings_and_hits_and_report_is_json(api, tmp_path):
    import json

    from typer.testing import CliRunner

    from sync.cli import app

    src = tmp_path / "up" / "slime" / "backends" / "sglang_utils"
    src.mkdir(parents=True)
    (src / "sglang_engine.py").write_text(
        "class E:\n"
        "    def pull(self):\n"
        '        return self._make_request("pull_weights", {"target_version": 1})\n'
        "    def init(self, group_name):\n"
        '        return self._make_request("init_weights_update_group", {"group_name": group_name})\n'
    )
    out, report = tmp_path / "out", tmp_path / "report.json"
    result = CliRunner().invoke(
        app, ["translate", str(tmp_path / "up"), "--out", str(out), "--stats", "--report", str(report)]
    )
    assert result.exit_code == 0, result.output
    path = "vime/backends/vllm_utils/vllm_engine.py"
    assert f"{path}:3: ep.pull_weights: unsupported:" in result.output
    assert (
        f"{path}:5: ep.init_group: POST /init_weight_transfer_engine: unknown field 'group_name'"
        in result.output
    )
    saved = json.loads(report.read_text())
    [entry] = saved["files"]
    kinds = sorted(f["kind"] for f in entry["findings"])
    assert entry["dst_path"] == path and "unknown-field" in kinds and "unknown-route" in kinds
    assert saved["totals"]["conformance_findings"] == len(entry["findings"])


def test_url_helpers_get_the_body_reshaped_too(api):
    """``await post(url, body)`` (an [[http_wrapper]] with a URL first) is reshaped like requests."""
    text = translated(
        """
        from slime.utils.http_utils import post

        async def abort(url):
            await post(f"{url}/abort_request", {"abort_all": True})
        """,
        path="slime/backends/sglang_utils/server_control.py",
    )
    assert 'await post(f"{url}/abort_requests", {})' in text
    assert findings(api, text) == []


def test_gate_reports_sglang_names_through_a_reexport_module(api, tmp_path):
    from sync.gate.conformance_check import check_conformance

    package = tmp_path / "vime" / "backends" / "megatron_utils"
    (package / "update_weight").mkdir(parents=True)
    (package / "vllm_compat.py").write_text("from sglang.srt.utils import MultiprocessingSerializer\n")
    (package / "update_weight" / "from_tensor.py").write_text(
        "from ..vllm_compat import MultiprocessingSerializer\n"
    )
    files = [
        "vime/backends/megatron_utils/vllm_compat.py",
        "vime/backends/megatron_utils/update_weight/from_tensor.py",
    ]
    failures, _summary = check_conformance(tmp_path, files, load_rules(), {files[1]: [2200]})
    [failure] = failures
    assert failure.files == [files[1]] and failure.line == 1 and failure.prs == [2200]
    assert "MultiprocessingSerializer: SGLang-only" in failure.message


def _routes(source: str) -> list[tuple[int, str]]:
    return [(c.line, c.route) for c in extract("m.py", textwrap.dedent(source), WRAPPERS).calls]


def test_a_name_is_read_where_python_would_find_it():
    """LibCST's scopes: a nested function sees its enclosing function's URL, a method never sees a
    name bound in its class body (Python looks it up in the module), and a local shadows the module."""
    source = """
    import requests
    URL = "http://engine/health"

    def outer():
        url = "http://engine/reset_prefix_cache"
        def inner():
            return requests.post(url)
        return inner

    class Client:
        URL = "http://engine/class_body_only"
        def ping(self):
            return requests.get(URL)

    def shadowed():
        URL = "http://engine/is_paused"
        return requests.get(URL)
    """
    assert _routes(source) == [(8, "/reset_prefix_cache"), (14, "/health"), (18, "/is_paused")]


def test_a_declared_wrapper_is_found_through_any_import_of_its_module():
    """What ``post`` was imported from is its qualified name, however the module was imported."""
    source = """
    import vime.utils.http_utils as hu
    from vime.utils import http_utils
    from elsewhere import post

    async def f(url_base):
        await hu.post("http://engine/pause", {"mode": "keep"})
        await http_utils.post("http://engine/resume", {"tags": []})
        await post("http://engine/not_the_wrapper", {})
    """
    calls = extract("m.py", textwrap.dedent(source), WRAPPERS).calls
    # as the wrapper, its second argument is the body (read as a requests-style verb call, it has none)
    assert [(c.line, c.route, sorted(c.body.keys) if c.body else None) for c in calls] == [
        (7, "/pause", ["mode"]),
        (8, "/resume", ["tags"]),
    ]
