"""KL estimators and KL-coefficient controllers.

The estimators follow J. Schulman, "Approximating KL divergence" (2020): with
``log_ratio = log p(x) - log q(x)`` for x sampled from p,
k1 = log_ratio (unbiased, high variance, can be negative),
k2 = log_ratio**2 / 2 (biased, low variance, >= 0),
k3 = exp(-log_ratio) - 1 + log_ratio (unbiased, low variance, >= 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

KL_ESTIMATORS = ("k1", "k2", "k3", "low_var_kl")


def approx_kl(log_probs: torch.Tensor, ref_log_probs: torch.Tensor, kind: str = "k3") -> torch.Tensor:
    """Per-token estimate of KL(pi || ref) from log-probs of tokens sampled from pi.

    ``low_var_kl`` is k3 clamped to [-10, 10], kept as a separate name because slime users know it.
    """
    log_ratio = log_probs.float() - ref_log_probs.float()
    if kind == "k1":
        return log_ratio
    if kind == "k2":
        return log_ratio.pow(2) / 2
    if kind in ("k3", "low_var_kl"):
        kl = torch.expm1(-log_ratio) + log_ratio
        return kl.clamp(-10.0, 10.0) if kind == "low_var_kl" else kl
    raise ValueError(f"unknown KL estimator {kind!r}: choose one of {', '.join(KL_ESTIMATORS)}")


@dataclass
class FixedKLController:
    """A KL coefficient that never changes."""

    value: float

    def update(self, current_kl: float, n_steps: int) -> None:  # same interface as the adaptive controller
        return None


@dataclass
class AdaptiveKLController:
    """Proportional controller of Ziegler et al. (2019), "Fine-Tuning LMs from Human Preferences".

    The coefficient moves towards keeping the measured KL near ``target``: the error
    ``clip(kl / target - 1, -0.2, 0.2)`` scales it by ``1 + error * n_steps / horizon``.
    """

    value: float
    target: float
    horizon: int

    def update(self, current_kl: float, n_steps: int) -> None:
        error = min(max(current_kl / self.target - 1.0, -0.2), 0.2)
        self.value *= 1.0 + error * n_steps / self.horizon


def make_kl_controller(kind: str, init_coef: float, target: float | None = None, horizon: int | None = None):
    """Build the controller named by ``--kl-ctl`` (fixed | adaptive)."""
    if kind == "fixed":
        return FixedKLController(init_coef)
    if kind == "adaptive":
        if target is None or horizon is None:
            raise ValueError("--kl-ctl adaptive needs --kl-target and --kl-horizon")
        return AdaptiveKLController(init_coef, target, horizon)
    raise ValueError(f"unknown KL controller {kind!r}: choose fixed or adaptive")
