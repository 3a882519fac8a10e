"""What code translated from slime calls where slime's idiom has no vLLM spelling (see docs/translation.md)."""
