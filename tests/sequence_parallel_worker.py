"""One rank of a two-process Megatron run on the CPU (gloo), for test_megatron_sequence_parallel_cpu.py.

    RANK=r WORLD_SIZE=2 MASTER_ADDR=... MASTER_PORT=... python tests/sequence_parallel_worker.py HF_DIR OUT SP LORA

Tensor parallel 2, sequence parallel on (SP=1) or off (SP=0), LoRA adapters (LORA=1) or none. Builds the model as vime's Megatron
backend does, wraps it in megatron-core's DDP, runs one forward and backward of a vocab-parallel
cross-entropy on fixed tokens and finalises the gradients with vime's ``finalize_grads_summed``
(megatron-core's ``finalize_model_grads``: the tensor-parallel sum of the norms' gradients under
sequence parallelism is its job). Saves this rank's logits and every trained parameter's gradient to
OUT/sp{SP}_lora{LORA}_rank{r}.pt. ``torch.cuda.current_device`` / ``synchronize`` and the CUDA RNG tracker's
``fork`` are patched in this process, as megatron-core needs on the CPU.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(hf_dir: str, out: str, sp: bool, lora: bool) -> None:
    torch.cuda.current_device = lambda: "cpu"
    torch.cuda.synchronize = lambda *args, **kwargs: None
    from megatron.core import tensor_parallel

    # the embedding forks the CUDA RNG tracker for its dropout (0 here) under sequence parallelism
    tensor_parallel.get_cuda_rng_tracker().fork = lambda *args, **kwargs: contextlib.nullcontext()

    from vime.backends.megatron_utils.hf_config import load_shape
    from vime.backends.megatron_utils.hf_io import load_hf_into_megatron
    from vime.backends.megatron_utils.model_builder import ParallelSizes, build_gpt_model
    from vime.backends.megatron_utils.optimizer import OptimizerSettings, finalize_grads_summed, wrap_ddp
    from vime.backends.megatron_utils.parallel import destroy_megatron_parallel, init_megatron_parallel
    from vime.utils.args.megatron_runtime import MegatronRuntime

    sizes = ParallelSizes(tp=2)
    init_megatron_parallel(sizes)
    shape = load_shape(hf_dir)
    runtime = MegatronRuntime(tensor_model_parallel_size=2, sequence_parallel=sp)
    model = build_gpt_model(shape, sizes, dtype=torch.float32, use_cpu_init=True, runtime=runtime)
    load_hf_into_megatron(model, hf_dir, shape)
    if lora:  # adapters on every linear layer, B made non-zero so that they change the logits
        from vime.backends.megatron_utils.lora import apply_lora, lora_parameters
        from vime.utils.lora_settings import LoraSettings

        apply_lora(model, LoraSettings(rank=4, alpha=8), shape)
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for param in lora_parameters(model):
                param.add_(torch.randn(param.shape, generator=generator) * 0.05)
    ddp = wrap_ddp(model, OptimizerSettings())
    ids = torch.randint(0, shape.vocab_size, (2, 12), generator=torch.Generator().manual_seed(0))
    logits = ddp(input_ids=ids, position_ids=torch.arange(12).expand(2, 12), attention_mask=None)
    labels = torch.roll(ids, -1, dims=1)
    # megatron's cross-entropy over the vocabulary split across the ranks ([b, s, v/tp] logits)
    loss = tensor_parallel.vocab_parallel_cross_entropy(logits.contiguous(), labels).sum()
    loss.backward()
    finalize_grads_summed([ddp])
    grads = {n: p.main_grad.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    marked = sorted(n for n, p in model.named_parameters() if getattr(p, "sequence_parallel", False))
    rank = torch.distributed.get_rank()
    torch.save(
        {"logits": logits.detach(), "loss": loss.detach(), "grads": grads, "marked": marked},
        Path(out) / f"sp{int(sp)}_lora{int(lora)}_rank{rank}.pt",
    )
    destroy_megatron_parallel()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4] == "1")
