#!/bin/bash
# Launch GRPO on Qwen3-4B with SGLang rollout engines.
python train.py \
   --rollout-temperature 1.0 \
   --n-samples-per-prompt 8 \
   --sglang-mem-fraction-static 0.7 \
   --sglang-max-running-requests 128
