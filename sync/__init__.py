"""vime-sync: keeps vime in step with slime (translate SGLang code to vLLM, 3-way merge, review, gate)."""
