"""Read a prompt file (JSONL or Parquet) into Samples: chat template, keys, length filter, shuffle.

Every way a dataset can be wrong for the configured keys (missing file, bad JSON line, absent
``--input-key``/``--label-key``) fails at load time with one line that names the file, the row
and the fix, rather than as a KeyError in the middle of a rollout.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.progress import track

from vime.utils.types import Sample

logger = logging.getLogger(__name__)

_PROGRESS_MIN_ROWS = 20_000  # below this, reading takes well under a few seconds
_SLICE = re.compile(r"^(?P<path>.*)@\[(?P<start>-?\d*):(?P<stop>-?\d*)\]$")


class PromptDataError(ValueError):
    """A prompt file that cannot be read with the given settings; the message is one line."""


def split_path_slice(spec: str) -> tuple[str, slice | None]:
    """``"data.jsonl@[10:20]"`` → ``("data.jsonl", slice(10, 20))``; a plain path has no slice."""
    match = _SLICE.match(spec)
    if match is None:
        return spec, None
    bounds = [int(v) if v else None for v in (match.group("start"), match.group("stop"))]
    return match.group("path"), slice(*bounds)


def _jsonl_rows(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise PromptDataError(
                    f"prompt data {path} line {line_number} is not valid JSON ({exc.msg}): fix or remove that line"
                ) from None
            if not isinstance(row, dict):
                raise PromptDataError(
                    f"prompt data {path} line {line_number} is a JSON {type(row).__name__}, not an object: "
                    f"each line must be one object with the --input-key field"
                )
            yield row


def _parquet_rows(path: Path) -> Iterator[dict]:
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches():
        yield from batch.to_pylist()


def read_rows(spec: str) -> list[dict]:
    """All rows of a ``.jsonl`` / ``.parquet`` file, optionally sliced with ``@[start:stop]``."""
    raw_path, row_slice = split_path_slice(str(spec))
    path = Path(raw_path)
    if not path.is_file():
        raise PromptDataError(f"prompt data {raw_path!r} not found: check --prompt-data")
    if path.suffix == ".jsonl":
        rows = list(_jsonl_rows(path))
    elif path.suffix == ".parquet":
        rows = list(_parquet_rows(path))
    else:
        raise PromptDataError(
            f"prompt data {raw_path!r} has an unsupported format: use a .jsonl or .parquet file"
        )
    return rows[row_slice] if row_slice is not None else rows


def _require_key(row: dict, key: str, flag: str, path: str, row_number: int) -> Any:
    if key not in row:
        raise PromptDataError(
            f"prompt data {path} row {row_number} has no key {key!r} (keys: {sorted(row)}): "
            f"set {flag} to one of them"
        )
    return row[key]


def _as_messages(prompt: Any, as_chat: bool) -> Any:
    if isinstance(prompt, str) and as_chat:
        return [{"role": "user", "content": prompt}]
    return prompt


def _json_or_value(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def load_tokenizer(path: str | None, purpose: str):
    """The HF tokenizer at ``path`` (a local directory: nothing is downloaded)."""
    if not path:
        raise PromptDataError(f"{purpose} needs a tokenizer: pass --hf-checkpoint with the model directory")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, trust_remote_code=True)


class PromptDataset:
    """The prompts of one file as Samples, in file order (``origin_samples``) and epoch order."""

    def __init__(
        self,
        path: str,
        *,
        tokenizer: Any = None,
        input_key: str = "input",
        label_key: str | None = None,
        metadata_key: str | None = "metadata",
        tool_key: str | None = "tools",
        apply_chat_template: bool = False,
        apply_chat_template_kwargs: dict | None = None,
        max_prompt_len: int | None = None,
        seed: int = 42,
    ) -> None:
        if (apply_chat_template or max_prompt_len is not None) and tokenizer is None:
            raise PromptDataError(
                "--apply-chat-template / --rollout-max-prompt-len need a tokenizer: pass --hf-checkpoint"
            )
        self.path, self.seed = str(path), seed
        samples = []
        rows = read_rows(self.path)
        progress = track(
            rows, description=f"reading {Path(self.path).name}", disable=len(rows) < _PROGRESS_MIN_ROWS
        )
        for number, row in enumerate(progress):
            prompt = _as_messages(
                _require_key(row, input_key, "--input-key", self.path, number), apply_chat_template
            )
            label = _require_key(row, label_key, "--label-key", self.path, number) if label_key else None
            metadata = _json_or_value(row.get(metadata_key)) if metadata_key else None
            metadata = dict(metadata) if isinstance(metadata, dict) else {}
            tools = _json_or_value(row.get(tool_key)) if tool_key else None
            if tools is not None:
                if not isinstance(tools, list):
                    raise PromptDataError(
                        f"prompt data {self.path} row {number}: {tool_key!r} must be a list of tool specs, "
                        f"got {type(tools).__name__}"
                    )
                metadata["tools"] = tools
            if apply_chat_template:
                prompt = tokenizer.apply_chat_template(
                    prompt,
                    tools=tools,
                    tokenize=False,
                    add_generation_prompt=True,
                    **(apply_chat_template_kwargs or {}),
                )
            samples.append(Sample(prompt=prompt, label=label, metadata=metadata))
        if max_prompt_len is not None:
            samples = self._drop_long(samples, tokenizer, max_prompt_len)
        if not samples:
            raise PromptDataError(
                f"prompt data {self.path} holds no usable prompts: check the file and --rollout-max-prompt-len"
            )
        self.origin_samples: list[Sample] = samples
        self.samples: list[Sample] = list(samples)
        self.epoch_id: int | None = None

    @staticmethod
    def _drop_long(samples: list[Sample], tokenizer: Any, max_len: int) -> list[Sample]:
        texts = [s.prompt for s in samples if isinstance(s.prompt, str)]
        if len(texts) != len(samples):
            logger.warning(
                "prompt length filter skipped: prompts are message lists; use --apply-chat-template"
            )
            return samples
        lengths = [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]
        kept = [s for s, n in zip(samples, lengths, strict=True) if n <= max_len]
        logger.info(
            "dropped %d of %d prompts longer than %d tokens", len(samples) - len(kept), len(samples), max_len
        )
        return kept

    def shuffle(self, epoch_id: int) -> None:
        """Order the prompts for ``epoch_id``: the same seed and epoch always give the same order."""
        if self.epoch_id == epoch_id:
            return
        order = list(range(len(self.origin_samples)))
        random.Random(self.seed + epoch_id).shuffle(order)
        self.samples = [self.origin_samples[i] for i in order]
        self.epoch_id = epoch_id

    def take(self, position: int) -> Sample:
        """The prompt at ``position`` of the current epoch order (callers copy before changing it)."""
        return self.samples[position]

    def __len__(self) -> int:
        return len(self.samples)
