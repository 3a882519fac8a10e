"""The rollout flags the generate path reads, as one typed view of ``args``.

The rollout functions keep slime's signatures (``generate_rollout(args, rollout_id, data_source)``,
``generate(args, sample, sampling_params)``, ...), so a plugin may hand them its own namespace; the
view takes a missing flag's default from vime's parser. It is built where a rollout, a group or a
sample starts, never per token; the RolloutManager may still set the router's address on ``args``
after the first rollout starts, so no view outlives the call that made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vime.utils.args.defaults import config_from_args


def engines_started(args: Any) -> int:
    """The engines serving behind the router: what the RolloutManager recorded once they ran (at
    least one; one before that)."""
    # not a flag: the RolloutManager sets it on args once its engines run, so it may be absent
    return max(1, int(getattr(args, "rollout_num_engines_total", None) or 1))


@dataclass(frozen=True)
class RolloutConfig:
    """slime's rollout flags, under their dest names; ``engines`` from :func:`engines_started`."""

    rollout_batch_size: int | None = None
    n_samples_per_prompt: int = 1
    over_sampling_batch_size: int | None = None
    vllm_router_ip: str | None = None
    vllm_router_port: int | None = None
    rollout_routing: str = "direct"
    rollout_request_retry_timeout: float = 900.0
    vllm_server_concurrency: int = 512
    update_weights_interval: int = 1
    partial_rollout: bool = False
    mask_offpolicy_in_partial_rollout: bool = False
    group_rm: bool = False
    custom_generate_function_path: str | None = None
    dynamic_sampling_filter_path: str | None = None
    rollout_sample_filter_path: str | None = None
    rollout_all_samples_process_path: str | None = None
    rollout_sample_hook_path: tuple[str, ...] = ()
    custom_reward_post_process_path: str | None = None
    max_policy_version_lag: int | None = None
    stale_sample_action: str | None = None
    engines: int = 1

    @classmethod
    def from_args(cls, args: Any) -> RolloutConfig:
        return config_from_args(
            cls,
            args,
            dests={"rollout_sample_hook_path": ("rollout_sample_hook_path", lambda p: tuple(p or ()))},
            engines=engines_started(args),
        )

    @property
    def masks_offpolicy(self) -> bool:
        """Tokens of an older policy in a continued partial sample are kept but not trained on."""
        return bool(self.partial_rollout and self.mask_offpolicy_in_partial_rollout)

    @property
    def request_slots(self) -> int:
        """Requests in flight at once over every engine (``--vllm-server-concurrency`` each)."""
        return int(self.vllm_server_concurrency) * self.engines
