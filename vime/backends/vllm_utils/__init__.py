"""vllm_utils."""
