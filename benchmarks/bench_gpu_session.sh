#!/usr/bin/env bash
# The GPU measurements of docs/benchmarks.md, as run on the lent H200 after the vLLM 0.26
# bundle was installed to /tmp/site (shared/device/ship-vllm.md). Each step writes JSON and logs to $OUT.
#   bash benchmarks/bench_gpu_session.sh weight-sync   # bench_gpu_weight_sync.py (~7 min)
#   bash benchmarks/bench_gpu_session.sh train         # colocated GRPO through train.py, then bench_gpu_rollout.py
#   bash benchmarks/bench_gpu_session.sh tests         # the gpu-marked tests
#   bash benchmarks/bench_gpu_session.sh lora-prepare  # then `lora`: colocated LoRA on a Qwen3-4B shape
#   bash benchmarks/bench_gpu_session.sh async-prepare # then `async` (ONLY=... per call): bench_async.py --gpu
#   bash benchmarks/bench_gpu_session.sh q4b-after     # bench_qwen3_4b_gpu.py: the fast path, learning task (STEPS)
#   bash benchmarks/bench_gpu_session.sh q4b-before    # the same model and batch with the 2026-12-01 flags
#   bash benchmarks/bench_gpu_session.sh q4b-rollout   # the "after" engine alone (fits an 80 GB H100)
#   bash benchmarks/bench_gpu_session.sh q4b-rollout-old  # the same with the request of 2026-12-02
#   bash benchmarks/bench_gpu_session.sh moe           # bench_moe_gpu.py prepare + train (cut Qwen3-30B-A3B)
set -uo pipefail
OUT=${OUT:-/tmp/vime-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 VLLM_USE_FLASHINFER_SAMPLER=0 VLLM_SERVER_DEV_MODE=1 \
  VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
  NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 RAY_USAGE_STATS_ENABLED=0 \
  VIME_CACHE_DIR=${VIME_CACHE_DIR:-$PWD/.vime-cache} VIME_TEST_CACHE=/tmp/vime-test-cache
nvidia-smi --query-gpu=name,memory.used,memory.total,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
case ${1:-} in
  weight-sync)
    timeout 560 python3 benchmarks/bench_gpu_weight_sync.py --out "$OUT" --budget "${BUDGET:-380}" 2>&1 | tee "$OUT/weight_sync.log" ;;
  train)
    timeout 330 python3 train.py --preset tiny-cpu --colocate --train-backend megatron --bf16 \
      --rollout-num-gpus 1 --rollout-num-engines 1 --num-rollout "${STEPS:-6}" \
      --vllm-enforce-eager --vllm-gpu-memory-utilization 0.25 --vllm-max-model-len 512 \
      --metrics-jsonl "$OUT/grpo.jsonl" 2>&1 | tail -c 400000 > "$OUT/grpo.log"
    echo "train.py rc=$?"; tail -5 "$OUT/grpo.log"; python3 -c "
import json,sys
for line in open('$OUT/grpo.jsonl'):
    r=json.loads(line); print({k: round(v,4) if isinstance(v,float) else v for k,v in r.items() if k.startswith(('time/','train/train_rollout','train/ppo_kl','rollout/raw','weight_sync/','step'))})
" 2>&1 | tail -12
    timeout 330 python3 benchmarks/bench_gpu_rollout.py --out "$OUT" --prompts 32 --n 8 --tokens 128 --repeats 5 2>&1 | tail -c 200000 > "$OUT/rollout_gpu.log"; tail -12 "$OUT/rollout_gpu.log" ;;
  tests)
    timeout 500 python3 -m pytest -q -p no:cacheprovider tests/test_vllm_ipc_gpu.py tests/test_vllm_weight_transfer_gpu.py \
      -k "not real_engine and not resumed" 2>&1 | tail -c 300000 > "$OUT/pytest_gpu.log"; tail -15 "$OUT/pytest_gpu.log" ;;
  lora-prepare)  # the Qwen3-4B-shaped checkpoint for `lora` (its own device call)
    timeout 560 python3 benchmarks/bench_gpu_lora.py --out "$OUT" --work /tmp/lora4b --phase prepare 2>&1 | tail -5 ;;
  lora)  # colocated LoRA GRPO on a Qwen3-4B-shaped model: adapter push vs full push, same session
    timeout 560 python3 benchmarks/bench_gpu_lora.py --out "$OUT" --work /tmp/lora4b --steps "${STEPS:-4}" \
      --repeats 5 2>&1 | tail -c 400000 > "$OUT/lora_gpu.log"; echo "bench_gpu_lora rc=$?"; tail -40 "$OUT/lora_gpu.log" ;;
  async-prepare)  # the tiny-cpu preset's warm-started model and data, built before the timed runs
    timeout 500 python3 -c "from vime.utils.arguments import parse_args; print(parse_args(['--preset', 'tiny-cpu']).hf_checkpoint)" 2>&1 | tail -2 ;;
  async)  # sync / one-step-off / fully async on one GPU (bench_async.py --gpu); ONLY picks the runs of this
          # call, results merge across calls in /tmp/vime-async (kept while the machine stays warm)
    timeout 580 python3 benchmarks/bench_async.py --gpu --steps "${STEPS:-20}" --lags "${LAGS:-2}" --seeds "${SEEDS:-1}" \
      ${ONLY:+--only "$ONLY"} --out /tmp/vime-async 2>&1 | tail -c 300000 > "$OUT/async.log"
    echo "bench_async rc=${PIPESTATUS[0]}"; tail -25 "$OUT/async.log"
    cp /tmp/vime-async/results.json /tmp/vime-async/reward_vs_time.png /tmp/vime-async/*.log "$OUT"/ 2>/dev/null
    for run in /tmp/vime-async/*/; do cp "$run/metrics.jsonl" "$OUT/$(basename "$run").jsonl" 2>/dev/null; done
    python3 - "$OUT" <<'PY'
import json, statistics, sys
from pathlib import Path
for f in sorted(Path(sys.argv[1]).glob("*_seed*.jsonl")):  # each run's phase medians, steps 1..
    rows = [json.loads(line) for line in f.read_text().splitlines() if line][1:]
    keys = sorted({k for r in rows for k in r if k.startswith(("time/", "weight_sync/", "async/"))})
    print(f.stem, {k: round(statistics.median(r[k] for r in rows if k in r), 4) for k in keys})
PY
    ;;
  q4b-after|q4b-before|q4b-rollout|q4b-rollout-old)  # one train.py run each; the 4B checkpoint in /tmp/q4b is built once per machine
    variant=${1#q4b-}; task=math; [ "$variant" != before ] && task=${TASK:-known-tokens}
    timeout 590 python3 benchmarks/bench_qwen3_4b_gpu.py --variant "$variant" --task "$task" --steps "${STEPS:-5}" \
      --timeout "${TRAIN_TIMEOUT:-480}" --out /tmp/q4b-out 2>&1 | tail -c 200000 > "$OUT/q4b_$variant.txt"
    echo "bench_qwen3_4b_gpu rc=${PIPESTATUS[0]}"; tail -40 "$OUT/q4b_$variant.txt"
    cp /tmp/q4b-out/"$variant".json /tmp/q4b-out/"$variant".jsonl "$OUT"/ 2>/dev/null
    tail -c 4000000 /tmp/q4b-out/"$variant".log > "$OUT/q4b_${variant}_train.log"
    for f in /tmp/q4b-out/"$variant"_run/logs/*.log; do [ -f "$f" ] && tail -c 1500000 "$f" > "$OUT/q4b_${variant}_$(basename "$f")"; done ;;
  moe)  # prepare (checkpoints) and train in one call; the per-step pickles stay on the machine
    export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}  # as measured 2026-12-06
    timeout 200 python3 benchmarks/bench_moe_gpu.py --out /tmp/moe-out --phase prepare 2>&1 | tail -c 100000 > "$OUT/moe_prepare.txt"
    echo "prepare rc=${PIPESTATUS[0]}"; tail -5 "$OUT/moe_prepare.txt"
    timeout 400 python3 benchmarks/bench_moe_gpu.py --out /tmp/moe-out --phase train --steps "${STEPS:-5}" \
      --response-len "${RESPONSE_LEN:-256}" --timeout "${TRAIN_TIMEOUT:-370}" 2>&1 | tail -c 200000 > "$OUT/moe_train.txt"
    echo "train rc=${PIPESTATUS[0]}"; tail -40 "$OUT/moe_train.txt"
    cp /tmp/moe-out/*.json "$OUT"/ 2>/dev/null; tail -c 4000000 /tmp/moe-out/*.log > "$OUT/moe_train.log" 2>/dev/null ;;
  *) echo "usage: $0 weight-sync|train|tests|lora-prepare|lora|async-prepare|async|q4b-after|q4b-before|q4b-rollout|q4b-rollout-old|moe" >&2; exit 2 ;;
esac
