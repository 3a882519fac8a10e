"""One rank of a two-process Megatron MoE run on the CPU (gloo), for test_megatron_moe_cpu.py.

    RANK=r WORLD_SIZE=2 MASTER_ADDR=... MASTER_PORT=... python tests/moe_parallel_worker.py HF_DIR OUT TP EP ETP

Builds the model under the given tensor / expert / expert-tensor parallel sizes, loads HF_DIR, saves
its logits for a fixed input (OUT/logits{rank}.pt) and exports the weights to OUT/export (every rank
takes part: experts are gathered across expert parallel). ``torch.cuda.current_device`` and
``torch.cuda.synchronize`` are patched in this process, as megatron-core needs on the CPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(hf_dir: str, out: str, tp: int, ep: int, etp: int) -> None:
    torch.cuda.current_device = lambda: "cpu"
    torch.cuda.synchronize = lambda *args, **kwargs: None
    from megatron.core import parallel_state

    from vime.backends.megatron_utils.hf_config import load_shape
    from vime.backends.megatron_utils.hf_io import load_hf_into_megatron
    from vime.backends.megatron_utils.model_builder import ParallelSizes, build_gpt_model
    from vime.backends.megatron_utils.parallel import destroy_megatron_parallel, init_megatron_parallel
    from vime.backends.megatron_utils.weight_export import WeightExporter, export_model_to_hf_dir

    sizes = ParallelSizes(tp=tp, ep=ep, etp=etp)
    init_megatron_parallel(sizes)
    shape = load_shape(hf_dir)
    model = build_gpt_model(shape, sizes, dtype=torch.float32, use_cpu_init=True).eval()
    load_hf_into_megatron(model, hf_dir, shape)
    # each data-parallel rank its own tokens: the dispatcher must bring them to the other rank's experts
    dp_rank = parallel_state.get_data_parallel_rank()
    ids = torch.randint(0, shape.vocab_size, (2, 11), generator=torch.Generator().manual_seed(dp_rank))
    with torch.no_grad():
        logits = model(input_ids=ids, position_ids=torch.arange(11).expand(2, 11), attention_mask=None)
    rank = torch.distributed.get_rank()
    torch.save({"ids": ids, "logits": logits, "tp_rank": parallel_state.get_tensor_model_parallel_rank()},
               Path(out) / f"logits{rank}.pt")  # fmt: skip
    export_model_to_hf_dir(WeightExporter(model, shape, 64_000), Path(out) / "export", hf_dir, progress=False)
    destroy_megatron_parallel()


if __name__ == "__main__":
    hf_dir, out, tp, ep, etp = sys.argv[1:6]
    main(hf_dir, out, int(tp), int(ep), int(etp))
