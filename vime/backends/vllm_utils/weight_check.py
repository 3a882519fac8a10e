"""``--check-weight-update-equal``: prove that a weight update writes every tensor of every engine.

slime's check: before the first update, take each engine's per-tensor digests (the checkpoint it
booted from) and zero its weights; after the trainer's first update (the same checkpoint, loaded by
the trainer and sent through vime's weight path) every digest must be back. A tensor the update
missed stays zero, one it mangled (a wrong name mapping, a transposed or truncated copy) hashes
differently: either stops the run in one line. The digests and the zeroing run in the engine's
workers (``worker_extension.vime_weight_digests`` / ``vime_zero_weights``), so they also see the
linear layers that vLLM's CPU backend keeps in packed kernels, which its ``/weight_checker`` skips.
"""

from __future__ import annotations

from dataclasses import dataclass

from vime.backends.vllm_utils.engine_client import EngineClient, EngineControlError

SHOWN_NAMES = 3


class WeightUpdateMismatch(RuntimeError):
    """The first update left some engine tensors different from the checkpoint; the message is one line."""


def _on_workers(url: str, method: str) -> list:
    try:
        return EngineClient(url).collective_rpc(method) or []
    except EngineControlError as exc:
        raise WeightUpdateMismatch(
            f"--check-weight-update-equal: engine {url} could not run {method} (it needs vime's worker "
            f"extension, which vime's own engines load): {str(exc).splitlines()[0][:200]}"
        ) from None


def weight_digests(url: str) -> dict[str, str]:
    """Per-tensor sha256 of the engine's weights, keyed by worker and parameter name."""
    digests: dict[str, str] = {}
    for worker, answer in enumerate(_on_workers(url, "vime_weight_digests")):
        digests |= {f"worker{worker}:{name}": digest for name, digest in answer.items()}
    return digests


def zero_weights(url: str) -> int:
    """Zero every weight of the engine; returns how many (``/collective_rpc`` sends numbers as text)."""
    return sum(int(count) for count in _on_workers(url, "vime_zero_weights"))


@dataclass(frozen=True)
class WeightUpdateCheck:
    """The engines' digests taken at start; :meth:`compare` after the first update."""

    baselines: dict[str, dict[str, str]]

    @classmethod
    def start(cls, urls: list[str]) -> WeightUpdateCheck:
        """Digest every engine's booted weights, then zero them (the update must bring each one back)."""
        baselines = {url: weight_digests(url) for url in urls}
        for url in urls:
            zero_weights(url)
        return cls(baselines)

    def compare(self) -> int:
        """The number of tensors found equal on every engine; raises :class:`WeightUpdateMismatch`."""
        for url, baseline in self.baselines.items():
            now = weight_digests(url)
            differ = sorted(k for k in baseline.keys() | now.keys() if baseline.get(k) != now.get(k))
            if differ:
                names = [k.split(":", 1)[1] for k in differ]
                shown = ", ".join(names[:SHOWN_NAMES]) + (", ..." if len(names) > SHOWN_NAMES else "")
                raise WeightUpdateMismatch(
                    f"--check-weight-update-equal: after the first weight update, {len(differ)} of "
                    f"{len(baseline)} tensors of engine {url} differ from the checkpoint it started from "
                    f"({shown}): the trainer's weights or their names do not reach the engine as they should"
                )
        return sum(len(b) for b in self.baselines.values())
