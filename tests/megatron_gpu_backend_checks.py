"""GPU checks of ``--train-backend megatron`` through the TrainBackend interface the training loop
calls (run by tests/test_megatron_gpu.py under torchrun, one process per GPU):

    torchrun --nproc-per-node 2 tests/megatron_gpu_backend_checks.py --tp 2 --workdir /tmp/x

init -> train (GRPO) moves log-probs the way the rewards say -> export_weights gives an HF directory
with the same log-probs -> save -> a second backend with --load starts at the next rollout and its
next train step equals the first backend's. Megatron's distributed optimizer, real NCCL.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# The arguments the backend reads, at train.py's defaults (the GPU machine has no vLLM, which
# vime's full parser needs; tests/test_megatron_backend_cpu.py checks these against parse_args).
BACKEND_ARGS = {
    "advantage_estimator": "grpo", "use_critic": False, "normalize_advantages": False, "gamma": 1.0,
    "lambd": 1.0, "seed": 1234, "bf16": False, "micro_batch_size": 2, "lr": 1e-3, "min_lr": 0.0,
    "weight_decay": 0.0, "adam_beta1": 0.9, "adam_beta2": 0.999, "adam_eps": 1e-8, "clip_grad": 1.0,
    "rollout_temperature": 1.0, "kl_coef": 0.0, "use_kl_loss": False, "kl_loss_coef": 0.0,
    "kl_loss_type": "k3", "ref_load": None, "kl_ctl": "fixed", "kl_target": None, "kl_horizon": None,
    "start_rollout_id": None, "load": None, "save": None, "no_save_optim": False,
    "use_rollout_logprobs": False, "rollout_data_postprocess_path": None, "eps_clip": 0.2,
    "eps_clip_high": 0.2, "eps_clip_c": None, "calculate_per_token_loss": False, "entropy_coef": 0.0,
    "use_tis": False, "tis_clip": 2.0, "tis_clip_low": 0.0, "update_weight_buffer_size": 512 * 1024**2,
}  # fmt: skip


def ok(name: str, detail: str = "") -> None:
    if dist.get_rank() == 0:
        print(f"CHECK {name} ok {detail}", flush=True)


def rollout_data(n: int, vocab: int) -> dict:
    g = torch.Generator().manual_seed(11)
    tokens, lengths = [], []
    for i in range(n):
        length = 6 + i % 5
        tokens.append(torch.randint(0, vocab, (12 + i % 7 + length,), generator=g).tolist())
        lengths.append(length)
    return {
        "tokens": tokens,
        "response_lengths": lengths,
        "rewards": [1.0 if i % 2 == 0 else -1.0 for i in range(n)],
        "loss_masks": [[1] * n_ for n_ in lengths],
    }


def main() -> None:
    from transformers import AutoModelForCausalLM, Qwen2Config, Qwen2ForCausalLM

    from vime.backends.megatron_utils.backend import MegatronTrainBackend
    from vime.backends.train_data import TrainBatch

    ap = argparse.ArgumentParser()
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--workdir", type=Path, required=True)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl")
    hf_dir, save = a.workdir / "hf", a.workdir / "ckpt"
    if dist.get_rank() == 0:
        torch.manual_seed(0)
        cfg = Qwen2Config(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                          num_attention_heads=8, num_key_value_heads=2, head_dim=32, tie_word_embeddings=True)  # fmt: skip
        Qwen2ForCausalLM(cfg).float().save_pretrained(str(hf_dir))
    dist.barrier()
    args = argparse.Namespace(**BACKEND_ARGS, hf_checkpoint=str(hf_dir), tensor_model_parallel_size=a.tp)
    args.save, args.global_batch_size = str(save), 8
    backend = MegatronTrainBackend(args, dist.get_rank(), dist.get_world_size())
    assert backend.init() == 0
    batch = TrainBatch.from_rollout_data(rollout_data(8, 1000))
    before = backend.compute_logprobs(batch)
    metrics = backend.train(0, batch)
    assert abs(metrics["ppo_kl"]) < 1e-5, metrics
    after = backend.compute_logprobs(batch)
    delta = [float((x - y).sum()) for x, y in zip(after, before, strict=True)]
    up = sum(d for d, r in zip(delta, batch.rewards, strict=True) if r > 0)
    down = sum(d for d, r in zip(delta, batch.rewards, strict=True) if r < 0)
    assert up > 0 > down, delta  # rewarded responses became likelier, punished ones less likely
    ok(
        "backend_train_follows_rewards",
        f"pg_loss={metrics['pg_loss']:.4f} grad_norm={metrics['grad_norm']:.3f}",
    )

    out = backend.export_weights(a.workdir / "export")
    if dist.get_rank() == 0:
        hf = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32).cuda().eval()
        worst = 0.0
        with torch.no_grad():
            for seq, length, lp in zip(batch.tokens, batch.response_lengths, after, strict=True):
                logits = hf(input_ids=torch.tensor([seq]).cuda()).logits[0].float()
                ref = torch.log_softmax(logits[:-1], -1).gather(-1, torch.tensor(seq[1:]).cuda()[:, None])[
                    -length:, 0
                ]
                worst = max(worst, (ref.cpu() - lp).abs().max().item())
        assert worst < 1e-4, worst
        ok("backend_export_matches", f"max_abs_diff={worst:.2e}")
    dist.barrier()

    backend.save(0)
    resumed = MegatronTrainBackend(argparse.Namespace(**{**vars(args), "load": str(save)}), dist.get_rank(),
                                   dist.get_world_size())  # fmt: skip
    assert resumed.init() == 1
    same = max(
        (x - y).abs().max().item() for x, y in zip(after, resumed.compute_logprobs(batch), strict=True)
    )
    assert same < 1e-6, same
    m1, m2 = backend.train(1, batch), resumed.train(1, batch)
    for key in ("pg_loss", "grad_norm", "ppo_kl", "entropy"):
        assert abs(m1[key] - m2[key]) <= 1e-5 * max(1.0, abs(m1[key])), (key, m1[key], m2[key])
    d = max((x - y).abs().max().item() for x, y in zip(backend.compute_logprobs(batch),
                                                       resumed.compute_logprobs(batch), strict=True))  # fmt: skip
    assert d < 1e-5, d
    ok("backend_resume_is_exact", f"next-step max_abs_diff={d:.2e}")
    dist.barrier()
    if dist.get_rank() == 0:
        print("ALL BACKEND CHECKS PASSED", flush=True)
    from vime.backends.megatron_utils.parallel import destroy_megatron_parallel

    destroy_megatron_parallel()


if __name__ == "__main__":
    main()
