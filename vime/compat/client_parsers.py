"""SGLang's client-side parsers, served by vLLM's: what slime's agent plugins import from SGLang.

slime's plugins parse model text on the client: tau-bench and the coding-agent harness call
SGLang's ``FunctionCallParser(tools, tool_call_parser).parse_non_stream(text)`` and
``ReasoningParser(model_type).parse_non_stream(text)``. The module rules point those imports
here; the classes keep SGLang's names, signatures and answers, and the parsing is vLLM's
(``vllm.tool_parsers.ToolParserManager``, ``vllm.reasoning.ReasoningParserManager``):

- ``FunctionCallParser.parse_non_stream(text) -> (normal_text, [ToolCallItem])``, each call
  ``ToolCallItem(tool_index, name, parameters)`` with ``parameters`` a JSON string, as SGLang's;
  a call to a function not among ``tools`` is dropped (SGLang's default). ``has_tool_call(text)``.
- ``ReasoningParser.parse_non_stream(text) -> (reasoning_text, normal_text)``; text without the
  start marker is all answer unless the model thinks without one (SGLang's ``force_reasoning``:
  ``deepseek-r1``, ``qwen3-thinking``).
- ``Tool`` / ``Function``: SGLang's request models (``io_struct`` and the OpenAI protocol).

Parser names may be SGLang's (``qwen25``, ``deepseek-r1``) or vLLM's (``hermes``,
``deepseek_r1``); one with no vLLM counterpart is refused in one line listing the known ones.
Whole texts need no token ids, so when no tokenizer is given vLLM's parsers get one whose
vocabulary answers any token (their constructors look their markers up; only streaming uses them).
"""

from __future__ import annotations

import json
import logging
import zlib
from typing import Any

from pydantic import BaseModel

logger = logging.getLogger(__name__)

# SGLang's --tool-call-parser names -> vLLM's (names both spell alike need no row)
TOOL_PARSER_NAMES = {
    "qwen": "hermes",
    "qwen25": "hermes",
    "llama3": "llama3_json",
    "deepseekv3": "deepseek_v3",
    "deepseekv31": "deepseek_v31",
    "deepseekv32": "deepseek_v32",
    "glm": "glm45",
    "minimax-m2": "minimax_m2",
}
# SGLang's --reasoning-parser names -> vLLM's
REASONING_PARSER_NAMES = {
    "deepseek-r1": "deepseek_r1",
    "deepseek-v3": "deepseek_v3",
    "kimi": "kimi_k2",
    "qwen3-thinking": "qwen3",
    "minimax": "minimax_m2",
    "minimax-append-think": "minimax_m2_append_think",
}
# SGLang's parsers whose models start thinking without a start marker (force_reasoning)
FORCED_REASONING = {"deepseek-r1", "deepseek_r1", "qwen3-thinking"}


class SGLangParserError(ValueError):
    """A parser name vLLM has no counterpart for; the message lists the names that work."""


class Function(BaseModel):
    """SGLang's ``Function`` (a tool's name, description and JSON-schema parameters)."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool = False


class Tool(BaseModel):
    """SGLang's ``Tool``: ``{"type": "function", "function": Function}``."""

    type: str = "function"
    function: Function


class ToolCallItem(BaseModel):
    """One parsed call, as SGLang returns it: ``parameters`` is the arguments' JSON text."""

    tool_index: int
    name: str | None = None
    parameters: str


class _AnyVocab(dict):
    """A vocabulary that has every token (a stable made-up id): enough for whole-text parsing."""

    def get(self, key: Any, default: Any = None) -> Any:
        return -1 - zlib.crc32(str(key).encode()) % 1_000_000

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: Any) -> int:
        return self.get(key)


class _TextOnlyTokenizer:
    """What a vLLM parser gets when the caller has no tokenizer (SGLang's parsers take none)."""

    def get_vocab(self) -> dict[str, int]:
        return _AnyVocab()

    def __bool__(self) -> bool:
        return True


def _vllm_name(name: str, renames: dict[str, str], known: list[str], what: str) -> str:
    target = renames.get(name, name)
    if target not in known:
        raise SGLangParserError(
            f"{what} {name!r} has no vLLM counterpart; use one of {', '.join(sorted(known))} "
            f"(or SGLang's {', '.join(sorted(renames))})"
        )
    return target


def _chat_request(tools: list[Tool]) -> Any:
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    specs = [{"type": "function", "function": tool.function.model_dump(exclude_none=True)} for tool in tools]
    return ChatCompletionRequest(
        model="vime", messages=[{"role": "user", "content": ""}], **({"tools": specs} if specs else {})
    )


def _as_tool(tool: Any) -> Tool:
    if isinstance(tool, Tool):
        return tool
    if isinstance(tool, BaseModel):
        tool = tool.model_dump()
    return Tool.model_validate(tool)


class FunctionCallParser:
    """SGLang's ``FunctionCallParser`` over vLLM's tool parser of the same format."""

    def __init__(self, tools: list[Any], tool_call_parser: str, tokenizer: Any = None) -> None:
        from vllm.tool_parsers import ToolParserManager

        known = list(ToolParserManager.list_registered())
        self.tools = [_as_tool(tool) for tool in tools]
        self.name = _vllm_name(tool_call_parser, TOOL_PARSER_NAMES, known, "tool-call parser")
        parser_cls = ToolParserManager.get_tool_parser(self.name)
        self._request = _chat_request(self.tools)
        try:
            self._parser = parser_cls(tokenizer or _TextOnlyTokenizer(), self._request.tools)
        except NotImplementedError as exc:  # e.g. gpt-oss: vLLM parses it with Harmony, not from text
            raise SGLangParserError(f"vLLM's {self.name!r} tool parser does not parse text: {exc}") from None
        self._index = {tool.function.name: i for i, tool in enumerate(self.tools)}

    def has_tool_call(self, text: str) -> bool:
        """Does ``text`` hold a tool call in this format (its start marker, or a parsed call)?"""
        marker = getattr(self._parser, "tool_call_start_token", None)
        if isinstance(marker, str) and marker:
            return marker in text
        return bool(self.parse_non_stream(text)[1])

    def parse_non_stream(self, full_text: str) -> tuple[str, list[ToolCallItem]]:
        """(the text around the calls, the calls) of a complete model output."""
        info = self._parser.extract_tool_calls(full_text, self._request)
        if not info.tools_called:
            return info.content if info.content is not None else full_text, []
        calls = []
        for call in info.tool_calls:
            name = call.function.name
            if name not in self._index:
                logger.warning("model called undefined function %r; dropped (as SGLang does)", name)
                continue
            arguments = call.function.arguments
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            calls.append(ToolCallItem(tool_index=self._index[name], name=name, parameters=arguments))
        return info.content or "", calls


class ReasoningParser:
    """SGLang's ``ReasoningParser`` over vLLM's reasoning parser of the same format."""

    def __init__(
        self, model_type: str, stream_reasoning: bool = True, force_reasoning: bool | None = None,
        tokenizer: Any = None,
    ) -> None:  # fmt: skip
        from vllm.reasoning import ReasoningParserManager

        if stream_reasoning:
            logger.info(
                "vime.compat ReasoningParser parses whole texts (parse_non_stream); streaming is not served"
            )
        known = list(ReasoningParserManager.list_registered())
        self.name = _vllm_name(model_type, REASONING_PARSER_NAMES, known, "reasoning parser")
        # SGLang reads text without a start marker as all answer, except for models that think
        # without one (its force_reasoning); vLLM's parsers read such text as all reasoning
        self.force_reasoning = model_type in FORCED_REASONING if force_reasoning is None else force_reasoning
        parser_cls = ReasoningParserManager.get_reasoning_parser(self.name)
        self._parser = parser_cls(tokenizer or _TextOnlyTokenizer())
        self._request = _chat_request([])

    def parse_non_stream(self, full_text: str) -> tuple[str, str]:
        """(reasoning text, the rest) of a complete model output."""
        start = getattr(self._parser, "start_token", None) or "<think>"
        if not self.force_reasoning and start not in full_text:
            return "", full_text
        try:
            reasoning, rest = self._parser.extract_reasoning(full_text, self._request)
            return reasoning or "", rest or ""
        except NotImplementedError as exc:  # e.g. gpt-oss: only Harmony parses it
            raise SGLangParserError(
                f"vLLM's {self.name!r} reasoning parser does not parse text: {exc}"
            ) from None
