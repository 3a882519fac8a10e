"""Convert a Megatron distributed checkpoint (torch_dist, from training or the other tool) back to HF.

    torchrun --nproc-per-node N tools/convert_torch_dist_to_hf.py --load CKPT_DIR --hf-config HF_DIR \\
        --output OUT [--step K] [--tensor-model-parallel-size T] [--pipeline-model-parallel-size P] \\
        [--expert-model-parallel-size E] [--expert-tensor-parallel-size ET]

``--hf-config`` is the original HF directory: its config and tokenizer are copied next to the weights.
Vocabulary padding is removed; tied embeddings are written once. Any TP/PP works for reading.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def convert(
    load: str | Path,
    hf_config_dir: str | Path,
    output: str | Path,
    step: int | None = None,
    tp: int = 1,
    pp: int = 1,
    ep: int = 1,
    etp: int | None = None,
) -> Path:
    """Collective over all ranks of the (already initialised or env://) process group."""
    from vime.backends.megatron_utils.checkpoint import load_checkpoint
    from vime.backends.megatron_utils.hf_config import load_shape
    from vime.backends.megatron_utils.model_builder import ParallelSizes, build_gpt_model
    from vime.backends.megatron_utils.parallel import init_megatron_parallel
    from vime.backends.megatron_utils.weight_export import WeightExporter, export_model_to_hf_dir

    output = Path(output)
    if output.exists() and any(output.glob("*.safetensors")):
        raise FileExistsError(f"{output} already holds safetensors files; choose an empty --output")
    sizes = ParallelSizes(tp=tp, pp=pp, ep=ep, etp=etp)
    init_megatron_parallel(sizes)
    shape = load_shape(hf_config_dir)
    model = build_gpt_model(shape, sizes, dtype=torch.float32, use_cpu_init=not torch.cuda.is_available())
    if torch.cuda.is_available():
        model.cuda()
    load_checkpoint(model, None, load, step)
    return export_model_to_hf_dir(WeightExporter(model, shape), output, hf_config_dir, progress=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--load", required=True)
    ap.add_argument("--hf-config", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--step", type=int, default=None, help="default: the latest step in --load")
    ap.add_argument("--tensor-model-parallel-size", type=int, default=1)
    ap.add_argument("--pipeline-model-parallel-size", type=int, default=1)
    ap.add_argument("--expert-model-parallel-size", type=int, default=1)
    ap.add_argument("--expert-tensor-parallel-size", type=int, default=None)
    a = ap.parse_args()
    from vime.backends.megatron_utils import MegatronUnavailableError, check_available

    try:
        check_available()
        out = convert(
            a.load,
            a.hf_config,
            a.output,
            a.step,
            a.tensor_model_parallel_size,
            a.pipeline_model_parallel_size,
            a.expert_model_parallel_size,
            a.expert_tensor_parallel_size,
        )
    except (MegatronUnavailableError, FileExistsError, FileNotFoundError) as exc:
        sys.exit(f"convert_torch_dist_to_hf: {exc}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
