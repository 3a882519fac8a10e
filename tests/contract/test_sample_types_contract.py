"""Contract: the types every hook exchanges (``vime.utils.types``), which plugins construct and read.

Nothing to provide: this pins what plugin code may rely on. A Sample starts PENDING; vLLM's
finish reasons map stop → COMPLETED, length → TRUNCATED, abort → ABORTED; a reward of 0 is a
reward; labels are strings or dicts; multimodal inputs of a later turn add new keys; a Sample
survives ``to_dict``/``from_dict`` (the debug-rollout files and the data-source checkpoint).
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from contract_support import check_sample, make_generated_sample, sample_mismatches

from vime.rollout.base_types import RolloutFnEvalOutput as EvalFromBaseTypes
from vime.utils.types import RolloutFnEvalOutput, RolloutFnTrainOutput, Sample, call_rollout_fn

SLIME_FIELDS = {
    "group_index", "index", "rollout_id", "prompt", "tokens", "multimodal_inputs", "multimodal_train_inputs",
    "response", "response_length", "label", "reward", "loss_mask", "weight_versions", "rollout_log_probs",
    "remove_sample", "status", "metadata", "generate_function_path", "custom_rm_path", "train_metadata",
    "session_id", "non_generation_time", "spec_info", "prefix_cache_info",
}  # fmt: skip


def test_sample_keeps_slimes_field_names_and_statuses():
    assert set(Sample.__dataclass_fields__) >= SLIME_FIELDS
    assert [s.name for s in Sample.Status] == ["PENDING", "COMPLETED", "TRUNCATED", "ABORTED", "FAILED"]
    assert Sample().status is Sample.Status.PENDING


@pytest.mark.parametrize(
    ("reason", "status"),
    [
        ("stop", Sample.Status.COMPLETED),
        ("length", Sample.Status.TRUNCATED),
        ("abort", Sample.Status.ABORTED),
    ],
)
def test_finish_reasons_map_to_statuses(reason, status):
    sample = Sample()
    sample.apply_finish_reason(reason)
    assert sample.status is status


def test_unknown_finish_reason_is_an_error_and_none_keeps_status():
    sample = Sample(status=Sample.Status.TRUNCATED)
    sample.apply_finish_reason(None)
    assert sample.status is Sample.Status.TRUNCATED
    with pytest.raises(ValueError, match="unknown finish_reason 'eos'"):
        sample.apply_finish_reason("eos")


def test_finalize_status_only_touches_unfinished_samples():
    pending, aborted = Sample(), Sample(status=Sample.Status.ABORTED)
    pending.finalize_status()
    aborted.finalize_status()
    assert (pending.status, aborted.status) == (Sample.Status.COMPLETED, Sample.Status.ABORTED)


def test_zero_reward_is_a_reward_and_reward_key_reads_dicts():
    args = SimpleNamespace(reward_key=None)
    assert Sample(reward=0).get_reward_value(args) == 0
    assert sample_mismatches(make_generated_sample(0, reward=0.0)) == []
    assert Sample(reward={"score": 0.0}).get_reward_value(SimpleNamespace(reward_key="score")) == 0.0
    with pytest.raises(TypeError, match="non-dict reward"):
        Sample(reward=1.0).get_reward_value(SimpleNamespace(reward_key="score"))


def test_labels_may_be_strings_or_dicts():
    assert Sample(label="42").get_label() == "42"
    assert Sample(label={"ground_truth": "42", "kind": "math"}).get_label() == "42"
    assert Sample(label={"answer": "42"}).get_label("answer") == "42"


def test_multimodal_inputs_of_a_later_turn_add_new_keys():
    sample = Sample(multimodal_inputs={"images": ["a"]})
    sample.merge_multimodal_inputs({"images": ["b"], "videos": ["v"]})
    assert sample.multimodal_inputs == {"images": ["a", "b"], "videos": ["v"]}


def test_append_response_tokens_keeps_masks_and_log_probs_aligned():
    sample = Sample(tokens=[1, 2])
    sample.append_response_tokens([3, 4], [-0.1, -0.2], text="ab")
    sample.append_response_tokens([5], trainable=False, text="<tool>")
    assert (sample.response, sample.response_length, sample.loss_mask) == ("ab<tool>", 3, [1, 1, 0])
    assert sample.rollout_log_probs == [-0.1, -0.2, 0.0]
    check_sample(
        sample.__class__(**{**sample.__dict__, "status": Sample.Status.COMPLETED, "reward": 1}), "appended"
    )
    with pytest.raises(ValueError, match="log_probs length 1 != tokens length 2"):
        sample.append_response_tokens([6, 7], [-0.3])


def test_round_trip_through_json_keeps_everything():
    sample = make_generated_sample(3, reward={"score": 1.0})
    sample.label = {"ground_truth": "2"}
    sample.weight_versions = ["1"]
    sample.spec_info.spec_accept_token_num = 4
    sample.extra_attribute = "kept"
    restored = Sample.from_dict(json.loads(json.dumps(sample.to_dict())))
    assert restored == sample and restored.extra_attribute == "kept"
    assert restored.status is Sample.Status.COMPLETED and restored.spec_info.spec_accept_token_num == 4


def test_rollout_outputs_and_legacy_returns():
    assert EvalFromBaseTypes is RolloutFnEvalOutput
    wrapped = call_rollout_fn(lambda *a, evaluation: [[Sample()]], None, 0, None, evaluation=False)
    assert isinstance(wrapped, RolloutFnTrainOutput) and len(wrapped.samples) == 1
    wrapped = call_rollout_fn(lambda *a, evaluation: {"d": {}}, None, 0, None, evaluation=True)
    assert isinstance(wrapped, RolloutFnEvalOutput) and wrapped.data == {"d": {}}


if __name__ == "__main__":
    from contract_support import run_this_file

    run_this_file(__file__)
