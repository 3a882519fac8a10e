"""Convert an HF checkpoint (Qwen2 / Qwen3 / Llama, Qwen3-MoE / GLM-4.x-MoE) into a Megatron distributed
checkpoint (torch_dist).

    torchrun --nproc-per-node N tools/convert_hf_to_torch_dist.py --hf-checkpoint HF_DIR --save OUT \\
        [--tensor-model-parallel-size T] [--pipeline-model-parallel-size P] \\
        [--expert-model-parallel-size E] [--expert-tensor-parallel-size ET] [--bf16]

The result is a model-only ``OUT/iter_0000000`` that ``--load OUT`` (train backend megatron) resumes
from; a distributed checkpoint can be loaded under other TP/PP sizes than it was written with.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def convert(
    hf_dir: str | Path,
    save: str | Path,
    tp: int = 1,
    pp: int = 1,
    dtype=torch.float32,
    ep: int = 1,
    etp: int | None = None,
) -> Path:
    """Collective over all ranks of the (already initialised or env://) process group."""
    from vime.backends.megatron_utils.checkpoint import save_checkpoint
    from vime.backends.megatron_utils.hf_config import load_shape
    from vime.backends.megatron_utils.hf_io import load_hf_into_megatron
    from vime.backends.megatron_utils.model_builder import ParallelSizes, build_gpt_model
    from vime.backends.megatron_utils.parallel import init_megatron_parallel

    sizes = ParallelSizes(tp=tp, pp=pp, ep=ep, etp=etp)
    init_megatron_parallel(sizes)
    shape = load_shape(hf_dir)
    model = build_gpt_model(shape, sizes, dtype=dtype, use_cpu_init=not torch.cuda.is_available())
    if torch.cuda.is_available():
        model.cuda()
    load_hf_into_megatron(model, hf_dir, shape)
    return save_checkpoint(model, None, 0, save)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hf-checkpoint", required=True)
    ap.add_argument("--save", required=True)
    ap.add_argument("--tensor-model-parallel-size", type=int, default=1)
    ap.add_argument("--pipeline-model-parallel-size", type=int, default=1)
    ap.add_argument("--expert-model-parallel-size", type=int, default=1)
    ap.add_argument("--expert-tensor-parallel-size", type=int, default=None)
    ap.add_argument("--bf16", action="store_true")
    a = ap.parse_args()
    from vime.backends.megatron_utils import MegatronUnavailableError, check_available

    try:
        check_available()
    except MegatronUnavailableError as exc:
        sys.exit(f"convert_hf_to_torch_dist: {exc}")
    dtype = torch.bfloat16 if a.bf16 else torch.float32
    out = convert(
        a.hf_checkpoint,
        a.save,
        a.tensor_model_parallel_size,
        a.pipeline_model_parallel_size,
        dtype,
        a.expert_model_parallel_size,
        a.expert_tensor_parallel_size,
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
