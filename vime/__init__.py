"""vime: LLM RL post-training in slime's architecture with vLLM as the rollout engine."""

from vime.utils.cpu_wheels import hide_unusable_torch_extensions

# first, so that no later import of transformers or vLLM in this process trips over them
hide_unusable_torch_extensions()
