"""The weight sink a rank feeds for --weight-sync ipc / nccl, chosen from typed options.

The engines are small real HTTP servers that answer the two questions the choice asks (which routes
``/openapi.json`` lists, whether ``/vime/info`` names vime's route): a vLLM server needs a GPU for
the transfers themselves, which these tests do not run.
"""

import json
import threading
from argparse import Namespace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.net_helpers import free_port
from vime.backends.vllm_utils.engine_client import EngineClient
from vime.backends.vllm_utils.ipc_views import VimeIpcSink
from vime.backends.vllm_utils.sink_choice import EngineSinks, WeightPushOptions, ipc_api
from vime.backends.vllm_utils.weight_transfer import IpcBucketSink


def _server(routes: list[str], vime: bool):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/openapi.json":
                body = {"paths": {r: {} for r in routes}}
            elif self.path == "/vime/info" and vime:
                body = {"routes": ["/vime/update_weights"]}
            else:
                self.send_response(404)
                self.end_headers()
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def engines():
    servers = {
        "vime": _server(["/health"], vime=True),
        "transfer": _server(["/start_weight_update", "/update_weights", "/finish_weight_update"], vime=False),
        "plain": _server(["/collective_rpc"], vime=False),
    }
    yield {name: f"http://127.0.0.1:{s.server_address[1]}" for name, s in servers.items()}
    for s in servers.values():
        s.shutdown()
        s.server_close()


def test_auto_prefers_vimes_route_then_weight_transfer_then_collective_rpc(engines):
    assert ipc_api("auto", [EngineClient(engines["vime"])]) == "vime"
    assert ipc_api("auto", [EngineClient(engines["transfer"])]) == "weight-transfer"
    assert ipc_api("auto", [EngineClient(engines["plain"])]) == "collective-rpc"
    # vime's route only when every engine has it
    assert ipc_api("auto", [EngineClient(engines["vime"]), EngineClient(engines["transfer"])]) != "vime"
    assert ipc_api("collective-rpc", [EngineClient(engines["vime"])]) == "collective-rpc"


def test_the_ipc_sink_follows_the_api(engines):
    sinks = EngineSinks()
    options = WeightPushOptions(mode="ipc")
    assert isinstance(sinks.choose(options, sinks.clients([engines["vime"]]), _no_group), VimeIpcSink)
    chosen = sinks.choose(options, sinks.clients([engines["transfer"]]), _no_group)
    assert isinstance(chosen, IpcBucketSink) and chosen.api == "weight-transfer"
    forced = WeightPushOptions(mode="ipc", api="collective-rpc")
    assert sinks.choose(forced, sinks.clients([engines["vime"]]), _no_group).api == "collective-rpc"


def test_clients_are_kept_between_updates(engines):
    sinks = EngineSinks()
    (first,) = sinks.clients([engines["vime"]])
    assert sinks.clients([engines["vime"]])[0] is first
    assert sinks.clients([engines["plain"]])[0] is not first


def test_options_come_from_the_flags():
    flags = dict(weight_sync="nccl", update_weight_buffer_size=None, weight_sync_api="auto",
                 rollout_num_gpus_per_engine=2)  # fmt: skip
    options = WeightPushOptions.from_args(Namespace(**flags), pause_mode="keep")
    assert options == WeightPushOptions(mode="nccl", engine_world_size=2, pause_mode="keep")
    assert options.bucket_bytes == 512 << 20  # no --update-weight-buffer-size
    sized = WeightPushOptions.from_args(Namespace(**flags | {"update_weight_buffer_size": 1 << 20}))
    assert sized.bucket_bytes == 1 << 20
    with pytest.raises(ValueError, match="--weight-sync disk does not push into engines"):
        WeightPushOptions.from_args(Namespace(**flags | {"weight_sync": "disk"}))
    with pytest.raises(ValueError, match="no engine weight sink for --weight-sync disk"):
        EngineSinks().choose(WeightPushOptions(mode="disk"), [], _no_group)


def _no_group() -> tuple[str, int]:
    raise AssertionError("an IPC sink needs no NCCL rendezvous")
