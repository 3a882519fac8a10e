"""Training-step throughput of the Megatron actor on a randomly initialised Qwen2-0.5B-shaped model.

    torchrun --standalone --nproc-per-node 2 benchmarks/bench_megatron_train.py --tp 2
    torchrun --standalone --nproc-per-node 2 benchmarks/bench_megatron_train.py --tp 1   # DP=2

One step = the full vime policy-loss step (forward, vocab-parallel log-probs + entropy, actor_loss,
backward, DP gradient sum, distributed Adam). Prints the median step time, tokens/s and MFU
(model FLOPs: 6 * matmul params * tokens + attention 12 * layers * heads * head_dim * seq * tokens,
against the H200's dense bf16 datasheet peak of 989 TFLOP/s per GPU).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vime.backends.megatron_utils.hf_config import QWEN2_0_5B, ModelShape

PEAK_BF16 = 989e12


def flops_per_token(s: ModelShape, seq: int) -> float:
    matmul_params = s.num_params() - s.vocab_size * s.hidden_size  # no FLOPs in the embedding lookup
    matmul_params += s.vocab_size * s.hidden_size  # ... but the (tied) output layer is a matmul
    attention = 12 * s.num_layers * s.num_attention_heads * s.head_dim * seq
    return 6 * matmul_params + attention


def main() -> None:
    from megatron.core import parallel_state as ps

    from vime.backends.megatron_utils.actor import MegatronActor, MegatronActorConfig
    from vime.backends.megatron_utils.batch import PaddedBatch
    from vime.backends.megatron_utils.model_builder import ParallelSizes
    from vime.backends.megatron_utils.optimizer import OptimizerSettings
    from vime.backends.megatron_utils.parallel import destroy_megatron_parallel, init_megatron_parallel

    ap = argparse.ArgumentParser()
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--global-batch", type=int, default=16, help="sequences per step, all ranks together")
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    a = ap.parse_args()
    sizes = ParallelSizes(tp=a.tp)
    dp = init_megatron_parallel(sizes)
    actor = MegatronActor(
        MegatronActorConfig(
            shape=QWEN2_0_5B,
            sizes=sizes,
            dtype=torch.bfloat16,
            micro_batch_size=a.micro_batch,
            optimizer=OptimizerSettings(lr=1e-6),
        )
    )
    per_rank = a.global_batch // dp
    g = torch.Generator().manual_seed(ps.get_data_parallel_rank())
    ids = torch.randint(0, QWEN2_0_5B.vocab_size, (per_rank, a.seq_len), generator=g)
    mask = torch.zeros(per_rank, a.seq_len)
    mask[:, a.seq_len // 4 :] = 1
    batch = PaddedBatch(
        ids,
        mask,
        advantages=torch.randn(per_rank, 1).expand_as(mask) * mask,
        old_log_probs=torch.full((per_rank, a.seq_len), -10.0),
    )
    times = []
    for step in range(a.warmup + a.steps):
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        metrics = actor.train_step(batch)
        torch.cuda.synchronize()
        if step >= a.warmup:
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    tokens = a.global_batch * a.seq_len
    world = dist.get_world_size()
    tflops = flops_per_token(QWEN2_0_5B, a.seq_len) * tokens / med / 1e12
    if dist.get_rank() == 0:
        print(
            "RESULT "
            + json.dumps(
                {
                    "config": f"tp{a.tp}_dp{dp}",
                    "params_M": round(QWEN2_0_5B.num_params() / 1e6, 1),
                    "global_batch": a.global_batch,
                    "seq_len": a.seq_len,
                    "micro_batch": a.micro_batch,
                    "step_s_median": round(med, 4),
                    "step_s_all": [round(t, 4) for t in times],
                    "tokens_per_s": round(tokens / med),
                    "model_tflops_per_gpu": round(tflops / world, 1),
                    "mfu": round(tflops * 1e12 / world / PEAK_BF16, 4),
                    "loss_finite": all(torch.isfinite(torch.tensor(v)).item() for v in metrics.values()),
                    "max_mem_GiB": round(torch.cuda.max_memory_allocated() / 2**30, 1),
                }
            ),
            flush=True,
        )
    destroy_megatron_parallel()


if __name__ == "__main__":
    main()
