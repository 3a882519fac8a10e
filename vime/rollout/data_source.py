"""Where a rollout gets its prompts: the dataset cursor (epoch, offset) and a buffer of groups.

The interface is slime's (``get_samples`` / ``add_samples`` / ``save`` / ``load`` / ``len``),
so a ``--data-source-path`` plugin written for slime fits. The state a checkpoint keeps is a
small JSON file per rollout id; buffered groups (partial rollouts waiting to be continued) are
saved with it, so a resumed run neither skips nor repeats a prompt.
"""

from __future__ import annotations

import abc
import copy
import json
import logging
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vime.rollout.filter_hub.buffer_filters import pop_first
from vime.rollout.prompt_dataset import PromptDataError, PromptDataset, load_tokenizer
from vime.utils.args.defaults import config_from_args
from vime.utils.misc import load_function
from vime.utils.types import Sample

__all__ = [
    "DataSource",
    "DataSourceConfig",
    "RolloutDataSource",
    "RolloutDataSourceWithBuffer",
    "make_data_source",
    "pop_first",
]

logger = logging.getLogger(__name__)


class DataSource(abc.ABC):
    """What a rollout function needs from its prompt supply."""

    @abc.abstractmethod
    def get_samples(self, num_samples: int) -> list[list[Sample]]:
        """``num_samples`` groups, each of ``n_samples_per_prompt`` samples of one prompt."""

    @abc.abstractmethod
    def add_samples(self, samples: list[list[Sample]]) -> None:
        """Take groups back (e.g. partial rollouts to continue next step)."""

    @abc.abstractmethod
    def save(self, rollout_id: int) -> None:
        """Write the state a resumed run needs, under ``--save``."""

    @abc.abstractmethod
    def load(self, rollout_id: int | None = None) -> None:
        """Restore the state saved for ``rollout_id`` from ``--load`` (the latest when None)."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """Number of prompts (may change as samples are added or taken)."""


@dataclass(frozen=True)
class DataSourceConfig:
    """The flags the data source reads, typed, built once from ``args`` (missing ones: parser defaults)."""

    n_samples_per_prompt: int
    rollout_shuffle: bool
    rollout_seed: int
    prompt_data: str | None
    rollout_global_dataset: bool
    hf_checkpoint: str | None
    input_key: str
    label_key: str | None
    metadata_key: str
    tool_key: str
    apply_chat_template: bool
    apply_chat_template_kwargs: dict[str, Any] | None
    rollout_max_prompt_len: int | None
    buffer_filter_path: str | None

    @classmethod
    def from_args(cls, args: Any) -> DataSourceConfig:
        return config_from_args(cls, args)


@dataclass(frozen=True)
class DataSourcePaths:
    """Where the data source's class and state live, read at each save/load: ``--save``/``--load``
    may be set on ``args`` after the data source is made (a warm start)."""

    data_source_path: str | None = "vime.rollout.data_source.RolloutDataSourceWithBuffer"
    save: str | None = None
    load: str | None = None

    @classmethod
    def from_args(cls, args: Any) -> DataSourcePaths:
        return config_from_args(cls, args)


def _state_path(root: str, rollout_id: int) -> Path:
    return Path(root) / "rollout" / f"data_source_state_{rollout_id}.json"


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


class RolloutDataSource(DataSource):
    """Prompts from ``--prompt-data``, epoch after epoch, shuffled per epoch with ``--rollout-seed``.

    Without ``--prompt-data`` (or with ``--rollout-global-dataset`` off) it hands out empty
    Samples, for rollout functions that make their own prompts.
    """

    def __init__(self, args: Any) -> None:
        self.args = args
        self.config = config = DataSourceConfig.from_args(args)
        self.n_samples_per_prompt = int(config.n_samples_per_prompt or 1)
        self.shuffle = bool(config.rollout_shuffle)
        self.seed = int(config.rollout_seed)
        self.epoch_id = 0
        self.sample_offset = 0
        self.sample_group_index = 0
        self.sample_index = 0
        self.metadata: dict = {}
        self.dataset: PromptDataset | None = None
        if config.rollout_global_dataset and config.prompt_data is not None:
            needs_tokenizer = config.apply_chat_template or config.rollout_max_prompt_len is not None
            tokenizer = (
                load_tokenizer(config.hf_checkpoint, "--apply-chat-template") if needs_tokenizer else None
            )
            self.dataset = PromptDataset(
                config.prompt_data,
                tokenizer=tokenizer,
                input_key=config.input_key,
                label_key=config.label_key,
                metadata_key=config.metadata_key,
                tool_key=config.tool_key,
                apply_chat_template=bool(config.apply_chat_template),
                apply_chat_template_kwargs=config.apply_chat_template_kwargs,
                max_prompt_len=config.rollout_max_prompt_len,
                seed=self.seed,
            )
            if self.shuffle:
                self.dataset.shuffle(self.epoch_id)

    # ----- handing out prompts ---------------------------------------------------------------
    def _next_prompts(self, count: int) -> list[Sample]:
        if self.dataset is None:
            return [Sample() for _ in range(count)]
        prompts = []
        while len(prompts) < count:
            if self.sample_offset >= len(self.dataset):
                self.epoch_id += 1
                self.sample_offset = 0
                if self.shuffle:
                    self.dataset.shuffle(self.epoch_id)
            prompts.append(self.dataset.take(self.sample_offset))
            self.sample_offset += 1
        return prompts

    def get_samples(self, num_samples: int) -> list[list[Sample]]:
        groups = []
        for prompt in self._next_prompts(num_samples):
            group = []
            for _ in range(self.n_samples_per_prompt):
                sample = copy.deepcopy(prompt)
                sample.group_index = self.sample_group_index
                sample.index = self.sample_index
                self.sample_index += 1
                group.append(sample)
            self.sample_group_index += 1
            groups.append(group)
        return groups

    def add_samples(self, samples: list[list[Sample]]) -> None:
        raise RuntimeError(
            f"{type(self).__name__} is read-only: use RolloutDataSourceWithBuffer to take samples back"
        )

    # ----- checkpoint state ------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "epoch_id": self.epoch_id,
            "sample_offset": self.sample_offset,
            "sample_group_index": self.sample_group_index,
            "sample_index": self.sample_index,
            "seed": self.seed,
            "num_prompts": len(self),
            "metadata": self.metadata,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.dataset is not None and state.get("num_prompts") not in (None, len(self.dataset)):
            logger.warning(
                "data source state was saved with %s prompts, the dataset now has %d: the offset may point elsewhere",
                state.get("num_prompts"),
                len(self.dataset),
            )
        self.epoch_id = int(state.get("epoch_id", 0))
        self.sample_offset = int(state.get("sample_offset", 0))
        self.sample_group_index = int(state.get("sample_group_index", 0))
        self.sample_index = int(state.get("sample_index", 0))
        self.metadata = dict(state.get("metadata") or {})
        if state.get("seed") is not None and int(state["seed"]) != self.seed:
            logger.warning(
                "data source state has seed %s, args say %d: keeping the saved seed", state["seed"], self.seed
            )
            self.seed = int(state["seed"])
            if self.dataset is not None:
                self.dataset.seed, self.dataset.epoch_id = self.seed, None
        if self.dataset is not None and self.shuffle:
            self.dataset.shuffle(self.epoch_id)

    def save(self, rollout_id: int) -> None:
        root = DataSourcePaths.from_args(self.args).save
        if root is None:
            return
        path = _state_path(root, rollout_id)
        _atomic_write(path, json.dumps(self.state_dict(), indent=1).encode())
        logger.info("saved data source state to %s", path)

    def load(self, rollout_id: int | None = None) -> None:
        root = DataSourcePaths.from_args(self.args).load
        if root is None:
            return
        if rollout_id is None:
            saved = sorted(
                int(p.stem.rsplit("_", 1)[1])
                for p in (Path(root) / "rollout").glob("data_source_state_*.json")
            )
            if not saved:
                logger.info("no data source state under %s: starting from the first prompt", root)
                return
            rollout_id = saved[-1]
        path = _state_path(root, rollout_id)
        if not path.is_file():
            logger.info("no data source state at %s: starting from the first prompt", path)
            return
        try:
            state = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise PromptDataError(
                f"data source state {path} is corrupt ({exc.msg}): restore it or delete it"
            ) from None
        self.load_state_dict(state)
        logger.info("resumed data source at epoch %d offset %d", self.epoch_id, self.sample_offset)

    def __len__(self) -> int:
        return 0 if self.dataset is None else len(self.dataset)


class RolloutDataSourceWithBuffer(RolloutDataSource):
    """A :class:`RolloutDataSource` that first hands out groups given back with ``add_samples``.

    Which buffered groups go first is ``--buffer-filter-path`` (default :func:`pop_first`).
    """

    def __init__(self, args: Any) -> None:
        super().__init__(args)
        self.buffer: list[list[Sample]] = []
        path = self.config.buffer_filter_path
        self.buffer_filter = load_function(path) if path else pop_first

    def get_samples(self, num_samples: int) -> list[list[Sample]]:
        groups = (
            self.buffer_filter(self.args, None, self.buffer, num_samples)
            if self.buffer and num_samples
            else []
        )
        groups = list(groups)
        if len(groups) > num_samples:
            raise ValueError(
                f"buffer filter returned {len(groups)} groups for a request of {num_samples}: return at most num_samples"
            )
        return groups + (super().get_samples(num_samples - len(groups)) if len(groups) < num_samples else [])

    def add_samples(self, samples: list[list[Sample]]) -> None:
        if not samples:
            return
        if not isinstance(samples, list) or not all(isinstance(g, list) for g in samples):
            raise TypeError(
                "add_samples takes a list of groups (list[list[Sample]]), got a flat or non-list value"
            )
        for group in samples:
            if len(group) != self.n_samples_per_prompt:
                raise ValueError(
                    f"add_samples got a group of {len(group)} samples, expected n_samples_per_prompt="
                    f"{self.n_samples_per_prompt}: give back whole groups"
                )
        self.buffer.extend(samples)

    def get_buffer_length(self) -> int:
        return len(self.buffer)

    def update_metadata(self, metadata: dict) -> None:
        self.metadata.update(metadata)

    def get_metadata(self) -> dict:
        return self.metadata

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["buffer"] = [[s.to_dict() for s in group] for group in self.buffer]
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.buffer = [[Sample.from_dict(s) for s in group] for group in state.get("buffer") or []]

    def save(self, rollout_id: int) -> None:
        root = DataSourcePaths.from_args(self.args).save
        if root is None:
            return
        try:
            super().save(rollout_id)
        except TypeError:  # a buffered sample holds a non-JSON payload (e.g. an image object)
            path = _state_path(root, rollout_id).with_suffix(".pkl")
            _atomic_write(path, pickle.dumps(self.state_dict()))
            logger.info("saved data source state (with non-JSON samples) to %s", path)

    def load(self, rollout_id: int | None = None) -> None:
        root = DataSourcePaths.from_args(self.args).load
        if root is not None and rollout_id is not None:
            pickled = _state_path(root, rollout_id).with_suffix(".pkl")
            if pickled.is_file() and not _state_path(root, rollout_id).is_file():
                self.load_state_dict(pickle.loads(pickled.read_bytes()))
                return
        super().load(rollout_id)


def make_data_source(args: Any) -> DataSource:
    """The data source ``--data-source-path`` names, or :class:`RolloutDataSourceWithBuffer`."""
    path = DataSourcePaths.from_args(args).data_source_path
    cls = load_function(path) if path else RolloutDataSourceWithBuffer
    return cls(args)
