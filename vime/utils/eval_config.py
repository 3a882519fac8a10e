"""Evaluation datasets as one typed list: slime's ``--eval-config`` YAML, or ``--eval-prompt-data`` pairs.

slime's file (``slime/utils/eval_config.py``)::

    eval:                      # optional: the root may be this mapping itself
      defaults: {n_samples_per_eval_prompt: 4, max_response_len: 1024}
      datasets:                # a list of entries with a name, or a mapping keyed by name
        - {name: aime, path: /data/aime.jsonl, rm_type: math, temperature: 0.6}

A dataset's setting comes from its entry, else ``defaults``, else the flags (``--eval-*``, then the
rollout's). Validation builds the list once (``args.eval_datasets``); the eval rollout reads it.
Keys for slime features vime lacks are refused by name, unknown keys too: nothing is dropped silently.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

# dataset field -> the flags it falls back to, first set one wins (slime's DATASET_*_SPECS)
FLAG_FALLBACKS: dict[str, tuple[str, ...]] = {
    "n_samples_per_eval_prompt": ("n_samples_per_eval_prompt", "n_samples_per_prompt"),
    "temperature": ("eval_temperature", "rollout_temperature"),
    "top_p": ("eval_top_p", "rollout_top_p"),
    "top_k": ("eval_top_k", "rollout_top_k"),
    "max_response_len": ("eval_max_response_len", "rollout_max_response_len"),
    "stop": ("rollout_stop",),
    "stop_token_ids": ("rollout_stop_token_ids",),
    "min_new_tokens": ("eval_min_new_tokens",),
    "skip_special_tokens": ("rollout_skip_special_tokens",),
    "input_key": ("eval_input_key", "input_key"),
    "label_key": ("eval_label_key", "label_key"),
    "tool_key": ("eval_tool_key", "tool_key"),
    "metadata_key": ("metadata_key",),
    "apply_chat_template": ("apply_chat_template",),
    "apply_chat_template_kwargs": ("apply_chat_template_kwargs",),
    "custom_rm_path": ("custom_rm_path",),
    "custom_generate_function_path": ("custom_generate_function_path",),
}

# slime's keys for features vime does not have: refused with the reason
REFUSED_KEYS: dict[str, str] = {
    "multimodal_keys": "vime has no vision-language rollout (no processor, no image inputs to vLLM)",
    "app_service": "slime's AppServer generation proxy has no vime counterpart",
    "message_processor": "slime's per-source message processors have no vime counterpart",
    "reward_model": "slime's per-source reward-model config has no vime counterpart (use rm_type or custom_rm_path)",
    "remote_environment": "slime's remote environments have no vime counterpart",
    "eval_task_timeout": "vime's eval has no per-sample timeout",
    "min_eval_samples": "vime's eval always runs every sample (no early stop)",
    "eval_early_stop_remaining": "vime's eval always runs every sample (no early stop)",
    "eval_early_stop_idle_timeout": "vime's eval always runs every sample (no early stop)",
}


class EvalConfigError(ValueError):
    """A bad ``--eval-config``; the message is one line naming the file, the dataset and the key."""


@dataclass(frozen=True)
class EvalDatasetConfig:
    """One evaluation dataset with every setting resolved (no None left where a flag has a default)."""

    name: str
    path: str
    rm_type: str | None = None
    custom_rm_path: str | None = None
    input_key: str | None = None
    label_key: str | None = None
    tool_key: str | None = None
    metadata_key: str | None = None
    apply_chat_template: bool = False
    apply_chat_template_kwargs: dict[str, Any] | None = None
    n_samples_per_eval_prompt: int = 1
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_response_len: int | None = None
    stop: list[str] | None = None
    stop_token_ids: list[int] | None = None
    min_new_tokens: int | None = None
    repetition_penalty: float | None = None
    skip_special_tokens: bool = False
    no_stop_trim: bool = True  # slime's default: the stop string stays in the response
    custom_generate_function_path: str | None = None
    metadata_overrides: dict[str, Any] = field(default_factory=dict)
    max_prompt_len: int | None = None  # --eval-max-prompt-len (no YAML key in slime)

    def sampling_params(self) -> dict[str, Any]:
        """vLLM sampling params of this dataset (slime's max_new_tokens / no_stop_trim spelled vLLM's way)."""
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "max_tokens": self.max_response_len,
            "skip_special_tokens": self.skip_special_tokens,
            "include_stop_str_in_output": self.no_stop_trim,
            "spaces_between_special_tokens": False,
            "logprobs": 0,
        }
        if self.stop:
            params["stop"] = list(self.stop)
        if self.stop_token_ids:
            params["stop_token_ids"] = list(self.stop_token_ids)
        if self.min_new_tokens:
            params["min_tokens"] = self.min_new_tokens
        if self.repetition_penalty is not None:
            params["repetition_penalty"] = self.repetition_penalty
        return params

    def inject_metadata(self, metadata: Any) -> dict[str, Any]:
        """A sample's metadata with this dataset's ``rm_type`` and ``metadata_overrides`` applied."""
        merged = dict(metadata) if isinstance(metadata, dict) else {}
        if self.rm_type is not None:
            merged["rm_type"] = self.rm_type
        merged.update(self.metadata_overrides)
        return merged


DATASET_KEYS = frozenset(f.name for f in fields(EvalDatasetConfig)) - {"max_prompt_len"}


@dataclass(frozen=True)
class EvalFlags:
    """The flags the eval datasets fall back on (:data:`FLAG_FALLBACKS`), read once per resolve."""

    n_samples_per_eval_prompt: int | None = 1
    n_samples_per_prompt: int | None = 1
    eval_temperature: float | None = None
    rollout_temperature: float | None = 1.0
    eval_top_p: float | None = None
    rollout_top_p: float | None = 1.0
    eval_top_k: int | None = None
    rollout_top_k: int | None = -1
    eval_max_response_len: int | None = None
    rollout_max_response_len: int | None = 1024
    rollout_stop: list[str] | None = None
    rollout_stop_token_ids: list[int] | None = None
    eval_min_new_tokens: int | None = None
    rollout_skip_special_tokens: bool | None = False
    eval_input_key: str | None = None
    input_key: str | None = "input"
    eval_label_key: str | None = None
    label_key: str | None = None
    eval_tool_key: str | None = None
    tool_key: str | None = "tools"
    metadata_key: str | None = "metadata"
    apply_chat_template: bool | None = False
    apply_chat_template_kwargs: dict[str, Any] | None = field(default_factory=dict)
    custom_rm_path: str | None = None
    custom_generate_function_path: str | None = None
    eval_max_prompt_len: int | None = None
    eval_config: str | None = None
    eval_prompt_data: list[str] | None = None
    eval_datasets: list[EvalDatasetConfig] | None = None  # validation's resolution of the above

    @classmethod
    def from_args(cls, args: Any) -> EvalFlags:
        from vime.utils.args.defaults import config_from_args

        return config_from_args(cls, args)

    def first_set(self, names: tuple[str, ...]) -> Any:
        """The first of ``names`` (a :data:`FLAG_FALLBACKS` row) that is not None."""
        for name in names:
            value = getattr(self, name)
            if value is not None:
                return value
        return None


def _check_keys(where: str, entry: dict[str, Any]) -> None:
    for key, value in entry.items():
        if key in REFUSED_KEYS:
            raise EvalConfigError(f"{where}: key {key!r} is refused: {REFUSED_KEYS[key]}; remove it")
        if key not in DATASET_KEYS:
            raise EvalConfigError(
                f"{where}: unknown key {key!r}; known keys: {', '.join(sorted(DATASET_KEYS))}"
            )
        if isinstance(value, str) and "${" in value:
            raise EvalConfigError(
                f"{where}: {key} {value!r} is an OmegaConf interpolation; vime reads plain YAML: write the value out"
            )


def build_eval_datasets(
    args: Any, entries: list[dict[str, Any]], defaults: dict[str, Any], source: str
) -> list[EvalDatasetConfig]:
    """Resolve each entry (entry, then ``defaults``, then the flags) into an :class:`EvalDatasetConfig`."""
    flags = EvalFlags.from_args(args)
    _check_keys(f"{source} eval.defaults", defaults)
    datasets = []
    for entry in entries:
        where = f"{source} dataset {entry.get('name')!r}"
        _check_keys(where, entry)
        if not entry.get("path"):
            raise EvalConfigError(f"{where} has no path: add `path: FILE.jsonl`")
        values = {**defaults, **entry}
        for key, names in FLAG_FALLBACKS.items():
            if values.get(key) is None:
                values[key] = flags.first_set(names)
        values["path"] = os.path.abspath(os.path.expanduser(str(values["path"])))
        values["max_prompt_len"] = flags.eval_max_prompt_len
        values["metadata_overrides"] = values.get("metadata_overrides") or {}
        if not isinstance(values["metadata_overrides"], dict):
            raise EvalConfigError(f"{where}: metadata_overrides must be a mapping")
        values = {k: v for k, v in values.items() if v is not None}
        try:
            dataset = EvalDatasetConfig(**values)
        except TypeError as exc:  # a required field missing
            raise EvalConfigError(f"{where}: {exc}") from None
        if dataset.n_samples_per_eval_prompt < 1:
            raise EvalConfigError(f"{where}: n_samples_per_eval_prompt must be >= 1")
        datasets.append(dataset)
    names = [d.name for d in datasets]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise EvalConfigError(f"{source}: dataset names {duplicates} appear twice: give each a unique name")
    return datasets


def _dataset_entries(raw: Any, source: str) -> list[dict[str, Any]]:
    """slime's ``ensure_dataset_list``: a list of entries with ``name``, or a mapping keyed by name."""
    if isinstance(raw, dict):
        return [{**dict(cfg or {}), "name": dict(cfg or {}).get("name", name)} for name, cfg in raw.items()]
    if isinstance(raw, list):
        entries = []
        for number, item in enumerate(raw):
            if not isinstance(item, dict) or "name" not in item:
                raise EvalConfigError(f"{source}: eval.datasets entry {number} needs a `name` field")
            entries.append(dict(item))
        return entries
    raise EvalConfigError(f"{source}: eval.datasets must be a list or a mapping, got {type(raw).__name__}")


def read_eval_config(args: Any, path: str) -> list[EvalDatasetConfig]:
    """The datasets of an ``--eval-config`` file (YAML or JSON)."""
    import yaml

    source = f"--eval-config {path}"
    file = Path(path)
    if not file.is_file():
        raise EvalConfigError(f"{source} does not exist: give a YAML file with eval.datasets")
    try:
        loaded = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise EvalConfigError(f"{source}{line} is not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(loaded, dict):
        raise EvalConfigError(f"{source} must hold a mapping at the root (eval: {{datasets: ...}})")
    section = loaded.get("eval", loaded)
    if not isinstance(section, dict):
        raise EvalConfigError(f"{source}: `eval` must be a mapping")
    defaults = section.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise EvalConfigError(f"{source}: eval.defaults must be a mapping")
    entries = _dataset_entries(section.get("datasets"), source) if section.get("datasets") else []
    if not entries:
        raise EvalConfigError(f"{source} defines no datasets under eval.datasets")
    return build_eval_datasets(args, entries, dict(defaults), source)


def resolve_eval_datasets(args: Any) -> list[EvalDatasetConfig]:
    """``--eval-config`` (it overrides ``--eval-prompt-data``, as in slime), else the name/path pairs."""
    flags = EvalFlags.from_args(args)
    if flags.eval_config:
        return read_eval_config(args, flags.eval_config)
    pairs = list(flags.eval_prompt_data or [])
    entries = [{"name": name, "path": p} for name, p in zip(pairs[0::2], pairs[1::2], strict=False)]
    return build_eval_datasets(args, entries, {}, "--eval-prompt-data")


def fill_eval_datasets(args: Any) -> None:
    """Validation's step: ``args.eval_datasets`` built once, ``args.eval_prompt_data`` kept in step."""
    args.eval_datasets = resolve_eval_datasets(args)
    if args.eval_config:
        args.eval_prompt_data = [item for d in args.eval_datasets for item in (d.name, d.path)] or None
