"""Drives one SGLang server over HTTP: health, cache, memory and weight control."""

import logging

import requests
from sglang.srt.server_args import ServerArgs
from sglang.srt.utils import kill_process_tree

logger = logging.getLogger(__name__)


def launch_server_process(server_args: ServerArgs):
    """Start the SGLang HTTP server in a child process."""
    from sglang.srt.entrypoints.http_server import launch_server

    import multiprocessing

    process = multiprocessing.Process(target=launch_server, args=(server_args,))
    process.start()
    return process


class SGLangEngine:
    def __init__(self, args, rank: int):
        self.args = args
        self.rank = rank
        self.server_host = args.sglang_server_host
        self.server_port = args.sglang_server_port
        self.process = None

    def _make_request(self, endpoint: str, payload: dict | None = None):
        url = f"http://{self.server_host}:{self.server_port}/{endpoint}"
        response = requests.post(url, json=payload or {})
        response.raise_for_status()
        return response.json()

    def health_generate(self, timeout: float = 5.0) -> bool:
        response = requests.get(f"http://{self.server_host}:{self.server_port}/health_generate", timeout=timeout)
        return response.status_code == 200

    def flush_cache(self):
        # flush_cache answers non-200 while requests are pending
        response = requests.get(f"http://{self.server_host}:{self.server_port}/flush_cache")
        response.raise_for_status()

    def release_memory_occupation(self):
        return self._make_request("release_memory_occupation")

    def resume_memory_occupation(self, tags: list[str] | None = None):
        return self._make_request("resume_memory_occupation", {"tags": tags})

    def update_weights_from_disk(self, model_path: str):
        return self._make_request("update_weights_from_disk", {"model_path": model_path})

    def pause_generation(self):
        return self._make_request("pause_generation")

    def continue_generation(self):
        return self._make_request("continue_generation")

    def shutdown(self):
        if self.process is not None:
            kill_process_tree(self.process.pid)
