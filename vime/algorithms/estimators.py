"""What each ``--advantage-estimator`` means to the rest of vime, in one table.

The reward post-process (group baseline, std division), the advantage computation (which formula,
whether ``--normalize-advantages`` whitens), the loss (which policy loss) and the checks (a critic
or not) all read their estimator's row here instead of keeping their own name lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Advantage = Literal["reward", "reinforce", "gae"]


@dataclass(frozen=True)
class Estimator:
    """One estimator's properties.

    ``advantage``: "reward" gives every response token the sample's (post-processed) reward,
    "reinforce" KL-shaped discounted returns whitened over the batch (REINFORCE++), "gae" PPO's
    generalized advantage estimation with a critic.
    """

    name: str
    advantage: Advantage
    group_baseline: bool  # the reward post-process subtracts each prompt group's mean reward
    std_normalized: bool  # ... and divides by the group's std (with --grpo-std-normalization)
    whitened: bool  # --normalize-advantages whitens the advantages (reinforce ones already are)
    policy_loss: str  # ppo | gspo | cispo (vime.algorithms.policy_loss)

    @property
    def needs_critic(self) -> bool:
        return self.advantage == "gae"


_ROWS = (
    Estimator("grpo", "reward", True, True, True, "ppo"),
    Estimator("gspo", "reward", True, True, True, "gspo"),
    Estimator("cispo", "reward", True, True, True, "cispo"),
    Estimator("reinforce_plus_plus", "reinforce", False, False, False, "ppo"),
    Estimator("reinforce_plus_plus_baseline", "reinforce", True, False, False, "ppo"),
    Estimator("ppo", "gae", False, False, True, "ppo"),
)
ESTIMATOR_TABLE: dict[str, Estimator] = {row.name: row for row in _ROWS}
ESTIMATORS = tuple(ESTIMATOR_TABLE)


def estimator(name: str) -> Estimator:
    """The row of ``--advantage-estimator name``; one clear error for a name not in the table."""
    try:
        return ESTIMATOR_TABLE[name]
    except KeyError:
        raise ValueError(
            f"unknown --advantage-estimator {name!r}: choose one of {', '.join(ESTIMATORS)}"
        ) from None
