"""Which ``--vllm-*`` flags a translation may produce: those the installed vLLM's ``vllm serve`` has.

vime passes ``--vllm-X`` on to ``vllm serve --X`` (``vime/backends/vllm_utils/arguments.py`` mirrors
every serve option it does not set itself; a switch also gets ``--no-vllm-X``). A renamed SGLang
flag whose ``--vllm-*`` name vLLM lacks is a flag nothing accepts, so the translator leaves the
SGLang flag as it is and reports it (rule ``flag.not_in_vllm``) instead of writing it.

A rule with ``target = "vime"`` maps onto one of vime's own flags (``--vllm-router-ip``): those are
not vLLM's, and ``vime-sync rules check`` checks them against vime's sources instead.
"""

from __future__ import annotations

from collections.abc import Collection

PASS_THROUGH = "--vllm-"
NEGATED_PASS_THROUGH = "--no-vllm-"
VIME_TARGET = "vime"


def installed_serve_options() -> frozenset[str] | None:
    """Every option string of the installed vLLM's ``vllm serve`` parser (cached on disk per vLLM
    version); None when vLLM cannot be imported here, and the targets go unchecked."""
    from sync.vllm_serve import VllmNotInstalled, vllm_server_options

    try:
        return vllm_server_options()
    except VllmNotInstalled:
        return None


def serve_option(flag: str) -> str | None:
    """The ``vllm serve`` option behind a pass-through flag (``--vllm-block-size`` -> ``--block-size``,
    ``--no-vllm-enforce-eager`` -> ``--no-enforce-eager``); None for any other flag."""
    if flag.startswith(NEGATED_PASS_THROUGH):
        return "--no-" + flag[len(NEGATED_PASS_THROUGH) :]
    if flag.startswith(PASS_THROUGH):
        return "--" + flag[len(PASS_THROUGH) :]
    return None


def passes_through(flag: str, options: frozenset[str], managed: Collection[str] = ()) -> bool:
    """Does vime pass ``flag`` to a ``vllm serve`` that has it? Flags that are not pass-through
    flags are not vLLM's to judge (True)."""
    option = serve_option(flag)
    if option is None:
        return True
    return option in options and option not in managed and option.replace("--no-", "--", 1) not in managed
