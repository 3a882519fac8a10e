"""GPU checks of the Megatron actor, one torchrun process per GPU (run by tests/test_megatron_gpu.py).

    torchrun --nproc-per-node 2 tests/megatron_gpu_checks.py --tp 2 --pp 1 --workdir /tmp/x

Checks, on a small random Qwen2 model in fp32 (so differences are real, not bf16 rounding):
log-probs equal HF's; the exported HF directory equals the HF weights; a train step moves log-probs
the way the advantages say; save -> step -> load -> same step gives the same weights; offload frees
the GPU memory and onload restores the same log-probs. Prints "CHECK <name> ok" per check and exits
non-zero on the first failure.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vime.algorithms import LossConfig
from vime.backends.megatron_utils.actor import MegatronActor, MegatronActorConfig
from vime.backends.megatron_utils.batch import PaddedBatch
from vime.backends.megatron_utils.hf_config import load_shape
from vime.backends.megatron_utils.model_builder import ParallelSizes
from vime.backends.megatron_utils.optimizer import OptimizerSettings
from vime.backends.megatron_utils.parallel import destroy_megatron_parallel, init_megatron_parallel
from vime.backends.megatron_utils.weight_export import export_to_hf_dir


def ok(name: str, detail: str = "") -> None:
    """Report a passed check (from the first tensor- and data-parallel rank of the stage that ran it)."""
    from megatron.core import parallel_state as ps

    if ps.get_tensor_model_parallel_rank() == 0 and ps.get_data_parallel_rank() == 0:
        print(f"CHECK {name} ok {detail}", flush=True)


def make_hf_model(dest: Path) -> None:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen2Config(
        vocab_size=1000,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=512,
        tie_word_embeddings=False,
    )
    Qwen2ForCausalLM(cfg).float().save_pretrained(str(dest))


def hf_logprobs(hf_dir: Path, ids: torch.Tensor) -> torch.Tensor:
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(str(hf_dir), dtype=torch.float32).cuda().eval()
    with torch.no_grad():
        logits = hf(input_ids=ids.cuda()).logits.float()
    lp = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None].cuda()).squeeze(-1)
    return torch.cat([lp.new_zeros(lp.shape[0], 1), lp], dim=1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--pp", type=int, default=1)
    ap.add_argument("--workdir", type=Path, required=True)
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sizes = ParallelSizes(tp=a.tp, pp=a.pp)
    dp = init_megatron_parallel(sizes)
    from megatron.core import parallel_state as ps

    hf_dir = a.workdir / "hf"
    if dist.get_rank() == 0:
        make_hf_model(hf_dir)
    dist.barrier()
    shape = load_shape(hf_dir)
    cfg = MegatronActorConfig(
        shape=shape,
        sizes=sizes,
        dtype=torch.float32,
        micro_batch_size=2,
        optimizer=OptimizerSettings(lr=1e-3, clip_grad=1e9),
        loss=LossConfig(),
        hf_checkpoint=str(hf_dir),
    )
    actor = MegatronActor(cfg)
    last_stage = ps.is_pipeline_last_stage()

    # every DP rank gets its own shard of a global batch of 4 * dp sequences
    g = torch.Generator().manual_seed(7)
    ids_all = torch.randint(0, shape.vocab_size, (4 * dp, 64), generator=g)
    dp_rank = ps.get_data_parallel_rank()
    ids = ids_all[4 * dp_rank : 4 * dp_rank + 4]
    mask = torch.zeros_like(ids, dtype=torch.float32)
    mask[:, 32:] = 1

    lp = actor.compute_log_probs(PaddedBatch(ids, mask))
    if last_stage:
        diff = (lp - hf_logprobs(hf_dir, ids))[:, 1:].abs().max().item()
        assert diff < 1e-4, f"log-probs differ from HF by {diff}"
        ok("logprobs_match_hf", f"max_abs_diff={diff:.2e}")

    out = export_to_hf_dir(actor, a.workdir / "export", hf_source_dir=hf_dir, progress=False)
    if dist.get_rank() == 0:
        from safetensors.torch import load_file

        ref = load_file(str(hf_dir / "model.safetensors"))
        got = {k: v for f in out.glob("model-pp*.safetensors") for k, v in load_file(str(f)).items()}
        assert set(got) == set(ref), set(got) ^ set(ref)
        bad = [k for k in ref if not torch.equal(got[k], ref[k])]
        assert not bad, f"exported tensors differ: {bad[:5]}"
        ok("export_equals_hf", f"{len(got)} tensors")
    dist.barrier()

    adv = torch.where(torch.arange(4)[:, None] < 2, 1.0, -1.0).expand_as(mask) * mask
    batch = PaddedBatch(
        ids, mask, advantages=adv, old_log_probs=lp if lp is not None else torch.zeros_like(mask)
    )
    if ps.get_pipeline_model_parallel_world_size() > 1:  # old log-probs live on the last stage: share them
        src = ps.get_pipeline_model_parallel_last_rank()
        old = lp if lp is not None else torch.empty(ids.shape, device="cuda")
        dist.broadcast(old.cuda(), src, group=ps.get_pipeline_model_parallel_group())
        batch.old_log_probs = old.cpu()
    metrics = actor.train_step(batch)
    new = actor.compute_log_probs(PaddedBatch(ids, mask))
    if last_stage:
        assert abs(metrics["ppo_kl"]) < 1e-5, metrics
        delta = ((new - batch.old_log_probs.cuda()) * mask.cuda()).sum(-1)
        assert (delta[:2] > 0).all() and (delta[2:] < 0).all(), delta
        ok(
            "train_step_follows_advantages",
            f"pg_loss={metrics['pg_loss']:.4f} grad_norm={metrics['grad_norm']:.3f}",
        )

    ckpt = a.workdir / "ckpt"
    actor.save(ckpt)
    at_save = actor.compute_log_probs(PaddedBatch(ids, mask))
    actor.train_step(batch)
    after_save_step = actor.compute_log_probs(PaddedBatch(ids, mask))
    assert actor.load(ckpt) == 1
    restored = actor.compute_log_probs(PaddedBatch(ids, mask))
    if last_stage:
        d = (restored - at_save).abs().max().item()
        assert d < 1e-6, f"loaded weights differ from the saved ones: {d}"
        ok("load_restores_weights", f"max_abs_diff={d:.2e}")
    actor.train_step(batch)
    replay = actor.compute_log_probs(PaddedBatch(ids, mask))
    if last_stage:
        d = (replay - after_save_step).abs().max().item()
        assert d < 1e-4, f"resumed step differs by {d}"
        ok("resume_replays_same_step", f"max_abs_diff={d:.2e}")

    before = torch.cuda.memory_allocated()
    freed = actor.offload()
    after = torch.cuda.memory_allocated()
    actor.onload()
    again = actor.compute_log_probs(PaddedBatch(ids, mask))
    if last_stage:
        assert torch.equal(again, replay), "onload changed the weights"
    assert after < before - 0.5 * freed, (before, after, freed)
    ok(
        "offload_frees_and_restores",
        f"freed={freed / 2**20:.1f}MiB allocated {before / 2**20:.1f}->{after / 2**20:.1f}MiB",
    )
    destroy_megatron_parallel()
    if int(os.environ.get("RANK", "0")) == 0:
        print("ALL CHECKS PASSED", flush=True)


if __name__ == "__main__":
    main()
