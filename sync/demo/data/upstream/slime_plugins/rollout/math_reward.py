"""A custom reward for --custom-rm-path: 1.0 when the boxed answer equals the label."""

import re

_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


async def reward_func(args, sample, **kwargs) -> float:
    match = _BOXED.search(sample.response or "")
    if match is None:
        return 0.0
    label = sample.label if isinstance(sample.label, str) else sample.label.get("ground_truth", "")
    return 1.0 if match.group(1).strip() == str(label).strip() else 0.0
