#!/bin/bash
# Deprecated: kept for the 0.1 recipes (SGLang 0.4).
python train.py --sglang-mem-fraction-static 0.5
