"""Merge a LoRA adapter into its base model: a plain Hugging Face model directory any engine can serve.

    python tools/merge_lora_adapter.py --base BASE_HF_DIR --adapter ADAPTER_DIR --out MERGED_DIR

The adapter is what vime saves (``<save>/iter_N/adapter``) or any PEFT adapter for that base. PEFT
does the merge (``W + alpha/r * B A``); the result is written beside ``--out`` and moved in when
complete; an existing ``--out`` is refused.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
from pathlib import Path


def merge_adapter(base: str | Path, adapter: str | Path, out: str | Path) -> Path:
    """Write base + adapter merged to ``out``; returns ``out``."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base, adapter, out = Path(base), Path(adapter), Path(out)
    if not (adapter / "adapter_config.json").is_file():
        raise ValueError(
            f"--adapter {adapter} has no adapter_config.json: give a saved LoRA adapter directory"
        )
    if not (base / "config.json").is_file():
        raise ValueError(
            f"--base {base} has no config.json: give the Hugging Face model the adapter was trained on"
        )
    if out.exists():
        raise ValueError(f"--out {out} exists: give a new directory (nothing is overwritten)")
    model = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True, dtype=torch.float32)
    model.config.use_cache = True
    merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    merged.save_pretrained(str(tmp), safe_serialization=True)
    with contextlib.suppress(OSError, ValueError):  # a base without a tokenizer: the weights alone
        AutoTokenizer.from_pretrained(str(base), local_files_only=True).save_pretrained(str(tmp))
    tmp.rename(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="The base Hugging Face model directory.")
    parser.add_argument("--adapter", required=True, help="The LoRA adapter directory (PEFT format).")
    parser.add_argument("--out", required=True, help="Where to write the merged model (must not exist).")
    args = parser.parse_args(argv)
    try:
        out = merge_adapter(args.base, args.adapter, args.out)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"merged {args.adapter} into {args.base}: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
