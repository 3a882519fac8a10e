"""vime: LLM RL post-training in slime's architecture with vLLM as the rollout engine."""
