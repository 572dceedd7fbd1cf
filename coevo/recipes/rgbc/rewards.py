"""The Synthesizer rewards of SynCo and RGBC: pure functions (RGBC proposal; SynCo appendix B.2).

Each accepts a Python scalar or a numpy array and returns the same shape (a Python ``float`` for
scalar input). They build on the core's ``teachability`` T(mu) and ``quality_gate`` G(v)
(``coevo.rewards.formulas``); only this folder uses them. docs/formulas.md lists them with the
hand-computed values of tests/test_formulas_rgbc.py.
"""
from __future__ import annotations

import numpy as np

from coevo.rewards.formulas import quality_gate, teachability

__all__ = ["synco_reward", "rgbc_reward"]


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
