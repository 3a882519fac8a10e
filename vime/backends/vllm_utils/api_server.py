"""``python -m vime.backends.vllm_utils.api_server ARGS`` = ``python -m vllm.entrypoints.openai.api_server ARGS``,
after ``import vime`` has hidden the CUDA torch extensions a CPU install cannot load
(:mod:`vime.utils.cpu_wheels`). vLLM's engine process is spawned and re-imports the parent's
``__main__`` by name: that stays this module (``run_module`` without ``alter_sys``), so the child
runs the same guard before it imports anything of vLLM's."""

import runpy

import vime  # noqa: F401  (the import does the hiding)

if __name__ == "__main__":
    runpy.run_module("vllm.entrypoints.openai.api_server", run_name="__main__")
