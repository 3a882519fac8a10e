"""Each contract rejects a deliberately broken plugin (tests/contract/fixtures/) with a message that
names the mismatch, and accepts a good one. Runs tools/run_contract.py in a subprocess, as a
plugin author would."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FX = "tests.contract.fixtures"


def run_contract(file: str, *args: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        str(ROOT / "tools" / "run_contract.py"),
        f"tests/contract/{file}",
        *args,
        "-q",
        "-x",  # the first mismatch is the one reported; the rest of the file need not run
        "-p",
        "no:cacheprovider",
    ]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)


BROKEN = [
    (
        "test_reward_contract.py",
        ["--custom-rm-path", f"{FX}.broken_reward.returns_dict"],
        "reward is a dict {'score': 1.0} but --reward-key is not set",
    ),
    ("test_reward_contract.py", ["--custom-rm-path", f"{FX}.broken_reward.returns_none"], "reward is None"),
    (
        "test_reward_contract.py",
        ["--custom-rm-path", f"{FX}.broken_reward.missing_sample_argument"],
        "but vime calls it as [await] fn(args, sample)",
    ),
    (
        "test_reward_contract.py",
        ["--custom-rm-path", f"{FX}.broken_reward.crashes_on_dict_label"],
        "(label {'ground_truth': '2'}) raised AttributeError",
    ),
    (
        "test_reward_contract.py",
        ["--custom-rm-path", f"{FX}.broken_reward.group_wrong_length", "--group-rm"],
        "returned 1 rewards for 4 samples",
    ),
    (
        "test_reward_contract.py",
        ["--custom-rm-path", f"{FX}.reference_plugins.dict_reward", "--reward-key", "correct"],
        "--reward-key is 'correct', so a reward must be a dict with that key",
    ),
    (
        "test_dynamic_sampling_filter_contract.py",
        ["--dynamic-sampling-filter-path", f"{FX}.broken_filters.dynamic_returns_string"],
        "returned str; expected DynamicFilterOutput",
    ),
    (
        "test_dynamic_sampling_filter_contract.py",
        ["--dynamic-sampling-filter-path", f"{FX}.broken_filters.dynamic_edits_rewards"],
        "changed the samples",
    ),
    (
        "test_buffer_filter_contract.py",
        ["--buffer-filter-path", f"{FX}.broken_filters.buffer_copies_without_removing"],
        "remove what you return from the buffer",
    ),
    (
        "test_buffer_filter_contract.py",
        ["--buffer-filter-path", f"{FX}.broken_filters.buffer_too_many"],
        "returned 3 groups for num_samples=0",
    ),
    (
        "test_rollout_sample_filter_contract.py",
        ["--rollout-sample-filter-path", f"{FX}.broken_filters.sample_filter_drops_samples"],
        "changed more than remove_sample",
    ),
    (
        "test_rollout_sample_filter_contract.py",
        ["--rollout-sample-filter-path", f"{FX}.broken_filters.sample_filter_returns_list"],
        "returned list; it must return None",
    ),
    (
        "test_data_source_contract.py",
        ["--data-source-path", f"{FX}.broken_data_source.OneSamplePerGroup"],
        "has 1 samples; expected n_samples_per_prompt=2",
    ),
    (
        "test_data_source_contract.py",
        ["--data-source-path", f"{FX}.broken_data_source.ForgetsItsPlace"],
        "after load(4) it hands out",
    ),
    (
        "test_reward_post_process_contract.py",
        ["--custom-reward-post-process-path", f"{FX}.broken_hooks.post_process_one_list"],
        "must return (raw_rewards, rewards)",
    ),
    (
        "test_reward_post_process_contract.py",
        ["--custom-reward-post-process-path", f"{FX}.broken_hooks.post_process_drops_a_sample"],
        "rewards has 7 entries for 8 samples",
    ),
    (
        "test_convert_samples_contract.py",
        ["--custom-convert-samples-to-train-data-path", f"{FX}.broken_hooks.convert_without_loss_masks"],
        "train data lacks ['loss_masks']",
    ),
    (
        "test_convert_samples_contract.py",
        ["--custom-convert-samples-to-train-data-path", f"{FX}.broken_hooks.convert_ignores_remove_sample"],
        "a remove_sample sample kept a non-zero loss mask",
    ),
    (
        "test_rollout_data_postprocess_contract.py",
        ["--rollout-data-postprocess-path", f"{FX}.broken_hooks.postprocess_truncates_rewards"],
        "left 'rewards' missing or not one entry per sample",
    ),
    (
        "test_rollout_data_postprocess_contract.py",
        ["--rollout-data-postprocess-path", f"{FX}.broken_hooks.postprocess_returns_new_dict"],
        "returned dict; edit in place",
    ),
    (
        "test_rollout_log_contract.py",
        ["--custom-rollout-log-function-path", f"{FX}.broken_hooks.log_returns_none"],
        "returned NoneType; return True",
    ),
    (
        "test_rollout_log_contract.py",
        ["--custom-rollout-log-function-path", f"{FX}.broken_hooks.log_clears_rewards"],
        "changed the samples",
    ),
    (
        "test_rollout_log_contract.py",
        ["--custom-eval-rollout-log-function-path", f"{FX}.broken_hooks.log_eval_old_signature"],
        "vime calls it as fn(rollout_id, args, data, extra_metrics)",
    ),
    (
        "test_rollout_function_contract.py",
        ["--rollout-function-path", f"{FX}.broken_rollout.no_data_source"],
        "but vime calls it as fn(args, rollout_id, data_source, evaluation=False)",
    ),
    (
        "test_rollout_function_contract.py",
        ["--rollout-function-path", f"{FX}.broken_rollout.flat_groups"],
        "group 0 has 1 samples; expected n_samples_per_prompt=2",
    ),
    (
        "test_rollout_function_contract.py",
        ["--rollout-function-path", f"{FX}.broken_rollout.pending_samples"],
        "status is still PENDING after generation",
    ),
    (
        "test_eval_function_contract.py",
        ["--eval-function-path", f"{FX}.broken_rollout.eval_lengths_differ"],
        "dataset 'toy' has lists of different lengths",
    ),
    (
        "test_generate_function_contract.py",
        ["--custom-generate-function-path", f"{FX}.broken_generate.leaves_pending"],
        "is still PENDING; set COMPLETED",
    ),
    (
        "test_generate_function_contract.py",
        ["--custom-generate-function-path", f"{FX}.broken_generate.misaligned_log_probs"],
        "rollout_log_probs has 1 entries but response_length is 3",
    ),
    (
        "test_generate_function_contract.py",
        ["--custom-generate-function-path", f"{FX}.broken_generate.ignores_max_tokens"],
        "over sampling_params['max_tokens']=64",
    ),
    (
        "test_generate_function_contract.py",
        ["--custom-generate-function-path", f"{FX}.broken_generate.not_async"],
        "must be 'async def'",
    ),
    (
        "test_generate_function_contract.py",
        ["--custom-generate-function-path", f"{FX}.broken_generate.never_calls_engine"],
        "returned without one answered generate request to the engine its args name",
    ),
    (
        "test_generate_function_contract.py",
        ["--custom-generate-function-path", f"{FX}.broken_generate.tokens_without_the_prompt"],
        "tokens do not start with a prompt it sent to the engine",
    ),
    (
        "test_generate_function_contract.py",
        ["--custom-generate-function-path", f"{FX}.broken_generate.aborted_without_an_abort"],
        "is ABORTED but the engine aborted none of its 1 request(s)",
    ),
    (
        "test_generate_function_contract.py",
        ["--custom-generate-function-path", f"{FX}.broken_generate.no_log_probs"],
        "is COMPLETED without rollout_log_probs",
    ),
    (
        "test_generate_function_contract.py",
        ["--custom-generate-function-path", f"{FX}.broken_generate.completed_whatever_happened"],
        "the engine aborted all 1 request(s) but returned sample 0 is COMPLETED",
    ),
]


GOOD = [
    ("test_reward_contract.py", ["--custom-rm-path", f"{FX}.reference_plugins.boxed_reward"]),
    ("test_reward_contract.py", ["--custom-rm-path", f"{FX}.reference_plugins.sync_boxed_reward"]),
    (
        "test_reward_contract.py",
        ["--custom-rm-path", f"{FX}.reference_plugins.dict_reward", "--reward-key", "score"],
    ),
    (
        "test_reward_contract.py",
        ["--custom-rm-path", f"{FX}.reference_plugins.group_rank_reward", "--group-rm"],
    ),
    (
        "test_dynamic_sampling_filter_contract.py",
        ["--dynamic-sampling-filter-path", f"{FX}.reference_plugins.keep_everything"],
    ),
    (
        "test_rollout_log_contract.py",
        ["--custom-rollout-log-function-path", f"{FX}.reference_plugins.log_and_keep_default"],
    ),
    (
        "test_generate_function_contract.py",
        ["--custom-generate-function-path", f"{FX}.reference_plugins.engine_generate"],
    ),
    (
        "test_rollout_function_contract.py",
        [
            "--rollout-function-path",
            "vime.rollout.fully_async_rollout.generate_rollout_fully_async",
            "--eval-function-path",
            "vime.rollout.vllm_rollout.generate_rollout",
        ],
    ),
]


@pytest.fixture(scope="module")
def outcomes() -> dict[tuple, subprocess.CompletedProcess]:
    """Every case's run, started together (each is mostly interpreter start-up and imports)."""
    cases = [(file, tuple(args)) for file, args, _ in BROKEN] + [(file, tuple(args)) for file, args in GOOD]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return dict(zip(cases, pool.map(lambda case: run_contract(case[0], *case[1]), cases), strict=True))


@pytest.mark.parametrize(
    ("file", "args", "expected"), BROKEN, ids=[a[1].rsplit(".", 1)[1] for _, a, _ in BROKEN]
)
def test_broken_plugin_is_rejected_with_the_mismatch_named(outcomes, file, args, expected):
    done = outcomes[(file, tuple(args))]
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert expected in done.stdout, f"expected {expected!r} in:\n{done.stdout[-3000:]}"


@pytest.mark.parametrize(("file", "args"), GOOD, ids=[a[1].rsplit(".", 1)[1] for _, a in GOOD])
def test_good_plugin_passes(outcomes, file, args):
    done = outcomes[(file, tuple(args))]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
