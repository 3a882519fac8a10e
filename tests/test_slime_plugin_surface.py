"""The slime names plugins import, as vime provides them: helpers, processing utils, the math
grade, and SGLang's client parsers served by vLLM's."""

from __future__ import annotations

import subprocess

import pytest

from sync.conformance.imports import check_file, installed_surface

# What slime's example plugins at #2298 import (translated to vime's names) that vime provides.
PLUGIN_IMPORTS = """\
from vime.utils.misc import SingletonMeta, load_function, exec_command
from vime.utils.processing_utils import load_tokenizer, load_processor, build_processor_kwargs
from vime.utils.processing_utils import encode_image_for_rollout_engine, process_vision_info
from vime.rollout.rm_hub import grade_answer_verl, batched_async_rm
from vime.rollout.rm_hub.math_utils import extract_answer
from vime.rollout.rm_hub.math_dapo_utils import compute_score
from vime.rollout.on_policy_distillation import reward_func, post_process_rewards
from vime.compat.client_parsers import FunctionCallParser, ReasoningParser, Function, Tool, ToolCallItem
"""


def test_every_name_the_plugins_import_exists_in_the_installed_vime():
    assert check_file("examples/any.py", PLUGIN_IMPORTS, installed_surface()) == []


def test_singleton_meta_and_exec_command_behave_as_slimes():
    from vime.utils.misc import SingletonMeta, exec_command

    class Registry(metaclass=SingletonMeta):
        def __init__(self, name):
            self.name = name

    try:
        assert Registry("first") is Registry("second") and Registry("third").name == "first"
        Registry.clear_instances()
        assert Registry("fresh").name == "fresh"
    finally:
        Registry.clear_instances()
    assert exec_command("printf 'a b'", capture_output=True) == "a b"
    assert exec_command("true") is None
    with pytest.raises(subprocess.CalledProcessError):
        exec_command("exit 3")


def test_grade_answer_verl_reads_the_last_box_against_a_plain_or_boxed_label():
    from vime.rollout.rm_hub import grade_answer_verl
    from vime.rollout.rm_hub.math_utils import extract_answer

    assert grade_answer_verl("so the answer is \\boxed{\\frac{1}{2}}", "0.5")
    assert grade_answer_verl("\\boxed{3} no, \\boxed{4}", "\\boxed{4}")
    assert not grade_answer_verl("\\boxed{3}", "4")
    assert not grade_answer_verl("4", "4")  # not boxed
    assert not grade_answer_verl("\\boxed{4}", "")
    assert extract_answer("a \\boxed{x+1} b") == "x+1" and extract_answer("plain") is None


def test_processing_utils_round_trip_an_image_and_build_kwargs(tmp_path):
    from PIL import Image

    from vime.utils.processing_utils import (
        build_processor_kwargs,
        encode_image_for_rollout_engine,
        extract_images_from_messages,
        load_processor,
        process_vision_info,
    )
    from vime.utils.tiny_model import build_tokenizer

    image = Image.new("L", (3, 2), color=200)
    url = encode_image_for_rollout_engine(image)
    assert url.startswith("data:image/png;base64,")
    path = tmp_path / "img.png"
    image.save(path)
    messages = [
        {"role": "user", "content": [{"type": "image", "image": url}, {"type": "image", "image": str(path)}]}
    ]
    decoded = extract_images_from_messages(messages)
    assert [(i.size, i.mode) for i in decoded] == [((3, 2), "RGB"), ((3, 2), "L")]
    assert decoded[0].getpixel((0, 0)) == (200, 200, 200)
    kwargs = build_processor_kwargs({"images_kwargs": {"max_pixels": 10}})
    assert kwargs["text_kwargs"] == {"return_tensors": None, "return_mm_token_type_ids": False}
    assert kwargs["images_kwargs"] == {"max_pixels": 10, "return_tensors": "pt"}
    assert kwargs["videos_kwargs"] == {"return_tensors": "pt"}
    build_tokenizer(tmp_path / "tok", seed=0)
    assert load_processor(str(tmp_path / "tok")) is None  # a text-only model has no processor
    assert process_vision_info(messages, None)["images"] is not None


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def test_sglangs_function_call_parser_is_served_by_vllms_tool_parser():
    from vime.compat.client_parsers import Function, FunctionCallParser, SGLangParserError, Tool

    tools = [Tool(type=t["type"], function=Function(**t["function"])) for t in TOOLS]
    text = (
        'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "launch_rockets", "arguments": {}}\n</tool_call>'
    )
    parser = FunctionCallParser(tools=tools, tool_call_parser="qwen25")  # SGLang's name for hermes
    assert parser.name == "hermes" and parser.has_tool_call(text) and not parser.has_tool_call("no call")
    normal, calls = parser.parse_non_stream(text)
    assert normal == "Checking.\n"
    assert [c.model_dump() for c in calls] == [
        {"tool_index": 0, "name": "get_weather", "parameters": '{"city": "Paris"}'}
    ]  # the undefined function is dropped, as SGLang drops it
    assert parser.parse_non_stream("just text") == ("just text", [])
    with pytest.raises(
        SGLangParserError, match="tool-call parser 'no_such' has no vLLM counterpart; use one of"
    ):
        FunctionCallParser(tools=tools, tool_call_parser="no_such")
    assert (
        FunctionCallParser(tools=TOOLS, tool_call_parser="hermes").parse_non_stream(text)[1][0].name
        == "get_weather"
    )


def test_sglangs_reasoning_parser_is_served_by_vllms():
    from vime.compat.client_parsers import ReasoningParser

    parser = ReasoningParser(model_type="deepseek-r1", stream_reasoning=False)
    assert parser.name == "deepseek_r1"
    assert parser.parse_non_stream("<think>add them</think>The answer is 2.") == (
        "add them",
        "The answer is 2.",
    )
    assert ReasoningParser(model_type="qwen3").parse_non_stream("no thinking here")[1] == "no thinking here"
    assert ReasoningParser(model_type="qwen3-thinking").parse_non_stream("thinking</think>answer") == (
        "thinking",
        "answer",
    )


def test_a_sample_built_with_a_status_value_has_that_status():
    """slime's tau-bench builds ``Sample(status="completed")``: vime reads the value as the status."""
    from vime.utils.types import Sample

    assert Sample(status="truncated").status is Sample.Status.TRUNCATED
    assert Sample().status is Sample.Status.PENDING
    with pytest.raises(ValueError, match="Sample status 'done' is not one of pending, completed"):
        Sample(status="done")


def test_fully_async_rollout_keeps_generating_between_calls_and_requeues_aborted_groups():
    """vime's fully-async worker: a call takes rollout_batch_size finished groups in prompt order,
    the surplus stays queued for the next call, an aborted group goes back to the data source."""
    import time
    from types import SimpleNamespace
    from unittest import mock

    from vime.rollout import fully_async_rollout as fa
    from vime.utils.types import Sample

    class Source:
        def __init__(self):
            self.next, self.returned = 0, []

        def get_samples(self, n):
            groups = [[Sample(index=self.next + i, prompt="p")] for i in range(n)]
            self.next += n
            return groups

        def add_samples(self, groups):
            self.returned += groups

    async def fake_group(args, group, sampling_params, evaluation=False):
        for sample in group:
            sample.status = Sample.Status.ABORTED if sample.index == 1 else Sample.Status.COMPLETED
        return group

    args = SimpleNamespace(rollout_batch_size=2, vllm_server_concurrency=3, rollout_num_engines_total=1)
    source = Source()
    with (
        mock.patch.object(fa, "generate_and_rm_group", fake_group),
        mock.patch.object(fa, "GenerateState", lambda a: SimpleNamespace(sampling_params={})),
    ):
        try:
            first = fa.generate_rollout_fully_async(args, 0, source)
            deadline = time.monotonic() + 10
            while fa._worker.finished.qsize() < 3 and time.monotonic() < deadline:
                time.sleep(0.05)  # the worker tops its pool up between calls
            queued = fa._worker.finished.qsize()
            second = fa.generate_rollout_fully_async(args, 1, source)
        finally:
            fa._stop_worker()
    assert [[s.index for s in g] for g in first.samples] == [[0], [2]]  # group 1 was aborted
    assert queued == 3 and all(g[0].status is Sample.Status.COMPLETED for g in second.samples)
    assert [g[0].index for g in source.returned][:1] == [1]
    with pytest.raises(ValueError, match="does not evaluate"):
        fa.generate_rollout_fully_async(args, 0, source, evaluation=True)
