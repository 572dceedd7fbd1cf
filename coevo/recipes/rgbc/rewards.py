"""The Synthesizer rewards of SynCo and RGBC and their parts: pure functions (RGBC proposal; SynCo appendix B.2).

Teachability T(mu), the gate G(v), SynCo's reward G(q) G(r) T(mu), RGBC's T(mu~) omega(kappa) and the
advantage magnitude n/(n-1) mu~(1-mu~). Each accepts a Python scalar or a numpy array and returns the
same shape (a Python ``float`` for scalar input); only this folder uses them. docs/formulas.md lists them
with the hand-computed values of tests/test_formulas.py and tests/test_formulas_rgbc.py.
"""
from __future__ import annotations

import numpy as np

__all__ = ["teachability", "quality_gate", "advantage_magnitude", "synco_reward", "rgbc_reward"]


def _out(x: np.ndarray, scalar: bool):
    """A formula's result in the input's shape: a float for a scalar input."""
    return float(x) if scalar else x


def _arr(x) -> tuple[np.ndarray, bool]:
    """The input as a float array, and whether it was a scalar."""
    a = np.asarray(x, dtype=float)
    return a, a.ndim == 0


def _check_unit(a: np.ndarray, name: str) -> None:
    """ValueError unless every value lies in [0, 1]."""
    if np.any((a < 0) | (a > 1)):
        raise ValueError(f"{name} must lie in [0, 1]")


def teachability(mu):
    """SynCo teachability T(mu) = 2 mu if mu <= 0.5 else 2 (1 - mu).

    RGBC proposal §background (SynCo appendix B.2, eq. 25). With K = 4 rollouts mu is in
    {0, .25, .5, .75, 1}, so T takes only the three values {0, .5, 1}.
    """
    a, s = _arr(mu)
    _check_unit(a, "mu")
    return _out(np.where(a <= 0.5, 2.0 * a, 2.0 * (1.0 - a)), s)


def quality_gate(v):
    """SynCo gate G(v) = clip((v - 0.5) / 0.5, 0, 1).

    RGBC proposal §background (SynCo appendix B.2, eq. 24): scores below 0.5 are zeroed.
    """
    a, s = _arr(v)
    return _out(np.clip((a - 0.5) / 0.5, 0.0, 1.0), s)


def advantage_magnitude(mu_tilde, n: int):
    """Continuous advantage magnitude adv = n / (n - 1) * mu~ (1 - mu~), n = 2K rollouts.

    RGBC proposal §core idea: the unbiased within-group variance of a Bernoulli group, to which
    the GRPO advantage magnitude is proportional.
    """
    if n < 2:
        raise ValueError("n must be >= 2")
    a, s = _arr(mu_tilde)
    _check_unit(a, "mu_tilde")
    return _out(n / (n - 1.0) * a * (1.0 - a), s)


def synco_reward(quality, reliability, mu):
    """SynCo synthesizer reward r_S = G(quality) * G(reliability) * T(mu).

    RGBC proposal §background (SynCo appendix B.2, eq. 23).
    """
    return quality_gate(quality) * quality_gate(reliability) * teachability(mu)


def rgbc_reward(mu_tilde, kappa, omega0: float = 0.2):
    """RGBC reward T~ = T(mu~) * omega(kappa), omega(1) = 1, omega(0) = omega0.

    RGBC proposal §core idea (merged estimate and continuous advantage magnitude). ``mu_tilde`` is the pass rate merged over
    the screen and confirm groups (2K rollouts); ``kappa`` = 1[0 < mu_confirm < 1].
    ``kappa=None`` means "no confirm group" and applies no discount, so with
    ``omega0 = 1`` (or no confirm group) the reward reduces exactly to SynCo's T(mu).
    """
    if not 0.0 <= omega0 <= 1.0:
        raise ValueError("omega0 must lie in [0, 1]")
    t = teachability(mu_tilde)
    if kappa is None:
        return t
    k = np.asarray(kappa, dtype=float)
    omega = np.where(k > 0, 1.0, float(omega0))
    out = np.asarray(t) * omega
    return float(out) if out.ndim == 0 else out
