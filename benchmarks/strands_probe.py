"""strands-agents' Agent on strands-sglang's SGLangModel, against vime's router through vime's adapter.

    PYTHONPATH=<strands site> python benchmarks/strands_probe.py ROUTER_URL MODEL_DIR

What slime's strands_sglang example does per sample (an Agent with a Python tool, its model's
rollout read back as tokens, loss mask and log-probs), without the example's ToolLimiter hook
(the strands-sglang this registry serves, 0.4.3, has none). Prints one JSON line: engine requests
the facade sent, tokens, response tokens, response log-probs, and whether they line up.
"""

from __future__ import annotations

import asyncio
import json
import sys
from types import SimpleNamespace
from urllib.parse import urlsplit


def main() -> None:
    from strands import Agent, tool
    from strands_sglang import SGLangModel
    from strands_sglang.tool_parsers import HermesToolParser
    from transformers import AutoTokenizer

    from vime.compat.generate_facade import facade_for, get_client_from_slime_args

    router, model_dir = sys.argv[1], sys.argv[2]
    parts = urlsplit(router)
    args = SimpleNamespace(vllm_router_ip=parts.hostname, vllm_router_port=parts.port,
                           vllm_server_concurrency=4, rollout_num_engines_total=1)  # fmt: skip

    @tool
    def execute_python_code(code: str) -> str:
        """Execute Python code and return the output."""
        return "4"

    model = SGLangModel(
        tokenizer=AutoTokenizer.from_pretrained(model_dir),
        client=get_client_from_slime_args(args, timeout=120.0),
        tool_parser=HermesToolParser(),
        sampling_params={"max_new_tokens": 24, "temperature": 1.0},
    )
    agent = Agent(model=model, tools=[execute_python_code], callback_handler=None, system_prompt="Solve it.")
    error = None
    try:
        asyncio.run(agent.invoke_async("What is 2+2? Put the answer in \\boxed{}."))
    except Exception as exc:  # the example marks such a sample TRUNCATED; the probe reports it
        error = f"{type(exc).__name__}: {exc}"[:200]
    rollout = model.rollout
    start = rollout.initial_prompt_length
    response_lps = rollout.logprobs[start:]
    mask = rollout.loss_mask[start:]
    aligned = len(response_lps) == len(mask) == len(rollout.token_ids) - start
    generated = [lp for bit, lp in zip(mask, response_lps, strict=False) if bit]
    print(json.dumps({
        "engine_requests": facade_for(f"http://{parts.hostname}:{parts.port}").requests,
        "tokens": len(rollout.token_ids), "response_tokens": len(rollout.token_ids) - start,
        "model_tokens": sum(mask), "model_log_probs": sum(lp is not None for lp in generated),
        "aligned": aligned, "error": error,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
