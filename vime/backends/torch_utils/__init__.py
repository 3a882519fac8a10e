"""The torch training backend: Hugging Face models, FSDP2 or DDP on gloo, runs on the CPU."""
