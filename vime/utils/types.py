"""The data every customization hook exchanges: a ``Sample`` and the outputs of a rollout function.

Field names follow slime's ``slime/utils/types.py`` wherever the meaning is the same, so that
code translated from slime by vime-sync keeps working. Nothing here imports torch: plugins and
the contract tests load these types on a bare CPU in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any

from vime.utils.weight_versions import record_spans

# vLLM's ``finish_reason`` strings (``choices[0].finish_reason``) and what they mean for a sample.
_FINISH_REASON_STATUS = {
    "stop": "completed",
    "length": "truncated",
    "abort": "aborted",
}


@dataclass
class SpecInfo:
    """Speculative-decoding counters, summed over the turns of one sample."""

    spec_accept_token_num: int = 0
    spec_draft_token_num: int = 0
    spec_verify_ct: int = 0
    completion_token_num: int = 0

    @property
    def spec_accept_rate(self) -> float:
        return (
            self.spec_accept_token_num / self.spec_draft_token_num if self.spec_draft_token_num > 0 else 0.0
        )

    @property
    def spec_accept_length(self) -> float:
        return self.completion_token_num / self.spec_verify_ct if self.spec_verify_ct > 0 else 0.0

    def add(self, meta_info: dict) -> None:
        self.spec_accept_token_num += meta_info.get("spec_accept_token_num", 0)
        self.spec_draft_token_num += meta_info.get("spec_draft_token_num", 0)
        self.spec_verify_ct += meta_info.get("spec_verify_ct", 0)
        self.completion_token_num += meta_info.get("completion_tokens", 0)

    def to_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @staticmethod
    def from_dict(data: dict | None) -> SpecInfo:
        data = data or {}
        return SpecInfo(**{f.name: data.get(f.name, 0) for f in fields(SpecInfo)})


@dataclass
class PrefixCacheInfo:
    """Prefix-cache hits, summed over the turns of one sample (vLLM: ``usage.prompt_tokens_details``)."""

    cached_tokens: int = 0
    total_prompt_tokens: int = 0

    @property
    def prefix_cache_hit_rate(self) -> float:
        return self.cached_tokens / self.total_prompt_tokens if self.total_prompt_tokens > 0 else 0.0

    def add(self, meta_info: dict) -> None:
        self.cached_tokens += meta_info.get("cached_tokens", 0) or 0
        self.total_prompt_tokens += meta_info.get("prompt_tokens", 0) or 0

    def to_dict(self) -> dict[str, int]:
        return {"cached_tokens": self.cached_tokens, "total_prompt_tokens": self.total_prompt_tokens}

    @staticmethod
    def from_dict(data: dict | None) -> PrefixCacheInfo:
        data = data or {}
        return PrefixCacheInfo(data.get("cached_tokens", 0), data.get("total_prompt_tokens", 0))


@dataclass
class Sample:
    """One prompt and one generated response, with everything training needs from it.

    ``tokens`` holds prompt and response token ids together; the last ``response_length`` of
    them are the response. ``loss_mask`` and ``rollout_log_probs``, when set, have exactly
    ``response_length`` entries.
    """

    class Status(Enum):
        PENDING = "pending"  # created, not generated yet (also: recycled by a partial rollout)
        COMPLETED = "completed"  # the engine stopped on a stop token / string
        TRUNCATED = "truncated"  # the engine hit max_tokens
        ABORTED = "aborted"  # the request was aborted (partial rollout, pause, engine restart)
        # A recoverable failure (tool call, external API, parsing): unlike ABORTED the sample may
        # still hold valid partial output that a plugin can keep or retry.
        FAILED = "failed"

    group_index: int | None = None
    index: int | None = None
    # The rollout this sample belongs to; None means "its own" (downstream falls back to index).
    rollout_id: int | None = None
    # prompt
    prompt: str | list[dict[str, Any]] = ""
    tokens: list[int] = field(default_factory=list)
    multimodal_inputs: dict[str, Any] | None = None  # raw multimodal data: images, videos, ...
    multimodal_train_inputs: dict[str, Any] | None = None  # processed for the trainer: pixel_values, ...
    apply_chat_template_kwargs: dict = field(default_factory=dict)
    # response
    response: str = ""
    response_length: int = 0
    label: str | dict[str, Any] | None = None
    reward: float | dict[str, Any] | None = None
    loss_mask: list[int] | None = None
    weight_versions: list[str] = field(default_factory=list)
    rollout_log_probs: list[float] | None = None  # log probabilities from the rollout engine
    rollout_routed_experts: Any = None  # MoE routing replay, when the engine returns it
    remove_sample: bool = False  # kept for advantage normalization, excluded from the loss
    teacher_log_probs: list[float] | None = None
    status: Status = Status.PENDING
    metadata: dict = field(default_factory=dict)
    # per-sample overrides of --custom-generate-function-path / --custom-rm-path
    generate_function_path: str | None = None
    custom_rm_path: str | None = None
    train_metadata: dict | None = None
    session_id: str | None = None  # routing key for vllm-router's consistent hashing
    non_generation_time: float = 0.0
    spec_info: SpecInfo = field(default_factory=SpecInfo)
    prefix_cache_info: PrefixCacheInfo = field(default_factory=PrefixCacheInfo)

    # slime spells these as nested classes; keep both spellings working.
    SpecInfo = SpecInfo
    PrefixCacheInfo = PrefixCacheInfo

    def __post_init__(self) -> None:
        # a status given by its value ("completed", as slime's tau-bench plugin builds its samples)
        # is that status; any other value is refused here rather than deep in training
        if isinstance(self.status, str):
            try:
                self.status = Sample.Status(self.status)
            except ValueError:
                names = ", ".join(s.value for s in Sample.Status)
                raise ValueError(f"Sample status {self.status!r} is not one of {names}") from None

    # ----- serialization -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A plain dict (JSON-able when the payload fields are); extra attributes are kept."""
        value = dict(self.__dict__)
        value["status"] = self.status.value
        value["spec_info"] = self.spec_info.to_dict()
        value["prefix_cache_info"] = self.prefix_cache_info.to_dict()
        return value

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Sample:
        """Inverse of ``to_dict``; keys that are not fields become attributes, as in slime."""
        data = dict(data)
        data["status"] = Sample.Status(data.get("status", Sample.Status.PENDING.value))
        data["spec_info"] = SpecInfo.from_dict(data.get("spec_info"))
        data["prefix_cache_info"] = PrefixCacheInfo.from_dict(data.get("prefix_cache_info"))
        names = {f.name for f in fields(Sample)}
        sample = Sample(**{k: v for k, v in data.items() if k in names})
        for key, value in data.items():
            if key not in names:
                setattr(sample, key, value)
        return sample

    # ----- reading -------------------------------------------------------------------------
    def get_reward_value(self, args: Any) -> float:
        """The scalar reward; with ``args.reward_key`` set, that key of a dict reward.

        A reward of 0 is a reward: only ``None`` means "not scored yet".
        """
        # slime's API: any namespace a plugin passes (it may lack the flag); vime.utils sits below
        # the rollout's RewardConfig, and reading one attribute needs no view
        key = getattr(args, "reward_key", None)
        if key is None:
            return self.reward
        if not isinstance(self.reward, dict):
            raise TypeError(
                f"--reward-key {key!r} is set but sample {self.index} has a non-dict reward {self.reward!r}"
            )
        return self.reward[key]

    def get_label(self, key: str = "ground_truth") -> Any:
        """The label as a plain value: a string label as is, a dict label's ``key`` (or the dict)."""
        if isinstance(self.label, dict):
            return self.label.get(key, self.label)
        return self.label

    @property
    def effective_response_length(self) -> int:
        return sum(self.loss_mask) if self.loss_mask is not None else self.response_length

    @property
    def prompt_length(self) -> int:
        return len(self.tokens) - self.response_length

    # ----- writing -------------------------------------------------------------------------
    def append_response_tokens(
        self,
        args_or_tokens: Any = None,
        log_probs: list[float] | None = None,
        *,
        tokens: list[int] | None = None,
        trainable: bool = True,
        meta_info: dict | None = None,
        text: str | None = None,
        update_terminal_info: bool = True,
    ) -> None:
        """Append response-side tokens keeping ``loss_mask`` and ``rollout_log_probs`` aligned.

        Model tokens pass ``trainable=True`` with their log probabilities; tool or environment
        tokens pass ``trainable=False`` and get loss-mask zeros and log probability 0.

        Two spellings: vime's ``append_response_tokens(tokens, log_probs, ...)`` and slime's
        ``append_response_tokens(args, tokens=..., log_probs=..., meta_info=...)`` (the keyword
        ``tokens`` tells them apart), so plugins translated from slime call it unchanged.
        ``meta_info`` is the engine's answer for these tokens: SGLang's ``meta_info`` (through
        ``vime.compat``) or vLLM's ``choices[0]``; its finish reason sets ``status`` unless
        ``update_terminal_info`` is False, and its weight version is recorded.
        """
        if tokens is None:
            tokens = args_or_tokens if args_or_tokens is not None else []
        tokens = [int(t) for t in tokens]
        if log_probs is not None:
            log_probs = [float(x) for x in log_probs]
        if log_probs is not None and len(log_probs) != len(tokens):
            raise ValueError(f"log_probs length {len(log_probs)} != tokens length {len(tokens)}")
        if not trainable:
            if log_probs is not None:
                raise ValueError("non-trainable response tokens take no log probabilities")
            log_probs = [0.0] * len(tokens)
        previous = self.response_length
        if text is not None:
            self.response += text
        self.tokens += tokens
        self.response_length += len(tokens)
        if self.loss_mask is None and (not trainable or previous):
            self.loss_mask = [1] * previous
        if self.loss_mask is not None:
            self.loss_mask += [1 if trainable else 0] * len(tokens)
        if log_probs is not None:
            if self.rollout_log_probs is None:
                if previous and trainable:
                    raise ValueError("cannot append log probabilities to a response that has none")
                self.rollout_log_probs = [0.0] * previous
            self.rollout_log_probs += log_probs
        if meta_info is not None:
            self._apply_meta_info(meta_info, update_terminal_info=update_terminal_info, offset=previous)
        self.validate_lengths()

    def _apply_meta_info(self, meta_info: dict, *, update_terminal_info: bool, offset: int = 0) -> None:
        """Weight version, prefix-cache counts and finish reason of one engine answer (either shape);
        ``offset``: the response position of the answer's first token."""
        versions = meta_info.get("weight_versions")  # vLLM: spans over the output tokens
        if versions:
            self.weight_versions.extend(str(span.get("version")) for span in versions)
            record_spans(self, versions, offset)
        elif meta_info.get("weight_version") is not None:  # SGLang: one version
            self.weight_versions.append(str(meta_info["weight_version"]))
            whole = {"version": meta_info["weight_version"], "start": 0, "end": self.response_length - offset}
            record_spans(self, [whole], offset)
        if "prompt_tokens" in meta_info:
            self.prefix_cache_info.add(meta_info)
        reason = meta_info.get("finish_reason")
        if update_terminal_info and reason is not None:
            self.apply_finish_reason(reason["type"] if isinstance(reason, dict) else reason)

    def apply_finish_reason(self, finish_reason: str | None) -> None:
        """Set ``status`` from vLLM's ``finish_reason`` (stop / length / abort); None leaves it."""
        if finish_reason is None:
            return
        status = _FINISH_REASON_STATUS.get(finish_reason)
        if status is None:
            raise ValueError(
                f"unknown finish_reason {finish_reason!r}; expected one of {sorted(_FINISH_REASON_STATUS)}"
            )
        self.status = Sample.Status(status)

    def finalize_status(self) -> None:
        """Mark a sample whose generation ended without a finish reason as COMPLETED.

        A new Sample starts PENDING (not None), so both count as "not finalized".
        """
        if self.status in (None, Sample.Status.PENDING):
            self.status = Sample.Status.COMPLETED

    def merge_multimodal_inputs(self, new_inputs: dict[str, Any] | None) -> None:
        """Fold the multimodal inputs of a later turn in: lists extend, new keys are added."""
        if not new_inputs:
            return
        if self.multimodal_inputs is None:
            self.multimodal_inputs = {}
        for key, value in new_inputs.items():
            current = self.multimodal_inputs.get(key)
            if isinstance(current, list) and isinstance(value, list):
                current.extend(value)
            elif key not in self.multimodal_inputs or current is None:
                self.multimodal_inputs[key] = list(value) if isinstance(value, list) else value
            else:
                self.multimodal_inputs[key] = value

    def validate_lengths(self) -> None:
        """Raise if per-token response fields disagree with ``response_length``."""
        if self.response_length < 0 or self.response_length > len(self.tokens):
            raise ValueError(
                f"response_length {self.response_length} outside 0..len(tokens)={len(self.tokens)}"
            )
        if self.loss_mask is not None and len(self.loss_mask) != self.response_length:
            raise ValueError(
                f"loss_mask length {len(self.loss_mask)} != response_length {self.response_length}"
            )
        if self.rollout_log_probs is not None and len(self.rollout_log_probs) != self.response_length:
            raise ValueError(
                f"rollout_log_probs length {len(self.rollout_log_probs)} != response_length {self.response_length}"
            )


@dataclass
class RolloutFnTrainOutput:
    """What a rollout function returns for training: groups of ``n_samples_per_prompt`` samples."""

    samples: list[list[Sample]]
    metrics: dict[str, Any] | None = None


@dataclass
class RolloutFnEvalOutput:
    """What a rollout function returns for evaluation.

    ``data[dataset_name] = {"rewards": [...], "truncated": [...], "samples": [...]}``, the three
    lists of equal length.
    """

    data: dict[str, dict[str, Any]]
    metrics: dict[str, Any] | None = None


def call_rollout_fn(
    fn, *args: Any, evaluation: bool, **kwargs: Any
) -> RolloutFnTrainOutput | RolloutFnEvalOutput:
    """Call a rollout function and wrap a legacy bare return (list of groups / eval dict)."""
    output = fn(*args, **kwargs, evaluation=evaluation)
    if isinstance(output, RolloutFnTrainOutput | RolloutFnEvalOutput):
        return output
    return RolloutFnEvalOutput(data=output) if evaluation else RolloutFnTrainOutput(samples=output)
