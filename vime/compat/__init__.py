"""What code translated from slime calls where slime's idiom has no vLLM spelling (see docs/translation.md),
and what checks a translated slime launch without starting it (``launch_capture``, ``launch_verdict``)."""
