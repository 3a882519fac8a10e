"""Reading prompt files: JSONL and Parquet, keys, chat templates with a real tokenizer, errors."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vime.rollout.data_source import RolloutDataSource
from vime.rollout.prompt_dataset import PromptDataError, PromptDataset, read_rows, split_path_slice

ROWS = [
    {"question": "What is 1+1?", "answer": "2", "meta": {"source": "toy", "rm_type": "math"}},
    {"question": "What is 2+3?", "answer": {"ground_truth": "5"}, "meta": {"source": "toy"}},
    {"question": "Name a colour.", "answer": "red", "meta": {}},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_parquet(path: Path, rows: list[dict]) -> Path:
    # Parquet columns need one type: keep labels as strings and metadata as JSON text,
    # which is how such files usually come.
    table = pa.table(
        {
            "question": [r["question"] for r in rows],
            "answer": [
                json.dumps(r["answer"]) if isinstance(r["answer"], dict) else r["answer"] for r in rows
            ],
            "meta": [json.dumps(r["meta"]) for r in rows],
        }
    )
    pq.write_table(table, path)
    return path


def make_args(prompt_data: Path, **overrides) -> SimpleNamespace:
    values = {
        "prompt_data": str(prompt_data),
        "input_key": "question",
        "label_key": "answer",
        "metadata_key": "meta",
        "n_samples_per_prompt": 1,
    }
    values.update(overrides)
    return SimpleNamespace(**values)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_jsonl_and_parquet_give_the_same_samples(tmp_path: Path, fmt: str) -> None:
    writer = write_jsonl if fmt == "jsonl" else write_parquet
    path = writer(tmp_path / f"data.{fmt}", ROWS)
    groups = RolloutDataSource(make_args(path)).get_samples(3)
    samples = [g[0] for g in groups]
    assert [s.prompt for s in samples] == [r["question"] for r in ROWS]
    assert samples[0].label == "2"
    assert samples[0].metadata == {"source": "toy", "rm_type": "math"}
    # a label is never JSON-decoded (an interval "[1, 2]" must stay text); dict labels come from
    # JSON objects or Parquet struct columns
    expected_second_label = {"ground_truth": "5"} if fmt == "jsonl" else json.dumps({"ground_truth": "5"})
    assert samples[1].label == expected_second_label


def test_parquet_struct_labels_are_dicts(tmp_path: Path) -> None:
    table = pa.table({"input": ["a", "b"], "label": [{"ground_truth": "1"}, {"ground_truth": "2"}]})
    pq.write_table(table, tmp_path / "s.parquet")
    source = RolloutDataSource(SimpleNamespace(prompt_data=str(tmp_path / "s.parquet"), label_key="label"))
    assert [g[0].get_label() for g in source.get_samples(2)] == ["1", "2"]


def test_row_slice_in_path(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", ROWS)
    assert split_path_slice(f"{path}@[1:]") == (str(path), slice(1, None))
    assert [r["answer"] for r in read_rows(f"{path}@[-1:]")] == ["red"]
    assert len(read_rows(f"{path}@[0:2]")) == 2


def test_tools_column_goes_to_metadata(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": "calc", "parameters": {}}}]
    path = write_jsonl(tmp_path / "t.jsonl", [{"input": "hi", "tools": json.dumps(tools)}])
    dataset = PromptDataset(str(path))
    assert dataset.origin_samples[0].metadata == {"tools": tools}


def test_chat_template_with_the_tiny_tokenizer(tmp_path: Path, tiny_model_dir: Path) -> None:
    path = write_jsonl(tmp_path / "data.jsonl", ROWS)
    args = make_args(path, apply_chat_template=True, hf_checkpoint=str(tiny_model_dir))
    sample = RolloutDataSource(args).get_samples(1)[0][0]
    assert sample.prompt == "<|im_start|>user\nWhat is 1+1?<|im_end|>\n<|im_start|>assistant\n"


def test_message_list_prompts_get_the_template(tmp_path: Path, tiny_model_dir: Path) -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]
    path = write_jsonl(tmp_path / "chat.jsonl", [{"input": messages}])
    args = SimpleNamespace(prompt_data=str(path), apply_chat_template=True, hf_checkpoint=str(tiny_model_dir))
    prompt = RolloutDataSource(args).get_samples(1)[0][0].prompt
    assert prompt.startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?")
    assert prompt.endswith("<|im_start|>assistant\n")


def test_prompt_length_filter(tmp_path: Path, tiny_model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    rows = [{"input": "1+1"}, {"input": " ".join(["what is the answer"] * 40)}]
    lengths = [len(tokenizer(r["input"], add_special_tokens=False)["input_ids"]) for r in rows]
    limit = lengths[0] + 1
    assert lengths[1] > limit
    path = write_jsonl(tmp_path / "long.jsonl", rows)
    args = SimpleNamespace(
        prompt_data=str(path), rollout_max_prompt_len=limit, hf_checkpoint=str(tiny_model_dir)
    )
    source = RolloutDataSource(args)
    assert len(source) == 1
    assert source.dataset.origin_samples[0].prompt == "1+1"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PromptDataError, match=r"prompt data '.*absent.jsonl' not found: check --prompt-data"):
        RolloutDataSource(make_args(tmp_path / "absent.jsonl"))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"input_key": "prompt"},
            r"row 0 has no key 'prompt' \(keys: \['answer', 'meta', 'question'\]\): set --input-key",
        ),
        ({"label_key": "label"}, r"row 0 has no key 'label' .*: set --label-key"),
    ],
)
def test_wrong_keys(tmp_path: Path, overrides: dict, message: str) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", ROWS)
    with pytest.raises(PromptDataError, match=message) as info:
        RolloutDataSource(make_args(path, **overrides))
    assert "\n" not in str(info.value)


def test_bad_lines_and_formats(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"input": "ok"}\n{"input": \n')
    with pytest.raises(PromptDataError, match=r"broken.jsonl line 2 is not valid JSON"):
        read_rows(str(broken))
    listed = tmp_path / "list.jsonl"
    listed.write_text("[1, 2]\n")
    with pytest.raises(PromptDataError, match=r"line 1 is a JSON list, not an object"):
        read_rows(str(listed))
    csv = tmp_path / "data.csv"
    csv.write_text("input\nx\n")
    with pytest.raises(PromptDataError, match=r"unsupported format: use a .jsonl or .parquet file"):
        read_rows(str(csv))


def test_chat_template_without_tokenizer(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", ROWS)
    with pytest.raises(PromptDataError, match=r"needs a tokenizer: pass --hf-checkpoint"):
        RolloutDataSource(make_args(path, apply_chat_template=True, hf_checkpoint=None))


def test_no_prompt_data_gives_empty_samples() -> None:
    source = RolloutDataSource(SimpleNamespace(n_samples_per_prompt=2))
    groups = source.get_samples(2)
    assert [[s.index for s in g] for g in groups] == [[0, 1], [2, 3]]
    assert all(s.prompt == "" for g in groups for s in g)
    assert len(source) == 0
