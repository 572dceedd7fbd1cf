"""K as an arm (RGBC proposal §limitation 6): the group size K = 4, 8, 16 with the continuous advantage
magnitude adv_hat as the Synthesizer's teachability term, budget-matched against K = 4.

* ``adv_hat_reward``: r_S = G(v_q) G(v_r) adv_hat(mu, n) omega(kappa), the RGBC reward with SynCo's
  T(mu) replaced by adv_hat = n / (n - 1) mu (1 - mu) (``advantage_magnitude``; n = the rollouts
  behind mu: K for mu_1 or mu_post, 2K for mu~). ``kappa=None`` = no discount (arm synco,
  mu_tilde).  adv_hat is in [0, n / (4 (n - 1))]: 0.2857 at n = 8, 0.2667 at n = 16.
* ``budget_matched_tasks``: the tasks per step at group size K that keep the Reasoner's screen
  rollouts per step (tasks x K) equal to those of the reference K (default 4): 32 tasks at
  K = 4 = 16 at K = 8 = 8 at K = 16 = 128 screen rollouts.  What is *not* matched: consensus
  rollouts (``consensus_n`` per validated task) fall with the task count, and confirm rollouts
  (K per bearing task) follow the bearing rate, which rises with K (m_K(p) = 1 - p^K - (1-p)^K).
"""
from __future__ import annotations

from coevo.recipes.rgbc.rewards import advantage_magnitude, quality_gate


def adv_hat_reward(quality: float, reliability: float, mu: float, n: int, kappa: int | None,
                   omega0: float = 0.2) -> float:
    """r_S = G(v_q) G(v_r) adv_hat(mu, n) omega(kappa), omega(1) = 1, omega(0) = omega0, omega(None) = 1.

    RGBC proposal §core idea (merged estimate and continuous advantage magnitude) and §limitation 6 (K as an arm with adv_hat)."""
    if not 0.0 <= omega0 <= 1.0:
        raise ValueError("omega0 must lie in [0, 1]")
    w = 1.0 if kappa is None or kappa == 1 else omega0
    return float(quality_gate(quality) * quality_gate(reliability) * advantage_magnitude(mu, n) * w)


def budget_matched_tasks(tasks_per_step: int, k: int, k_ref: int, synth_group: int) -> int:
    """Tasks per step at group size ``k`` with the screen rollouts of ``tasks_per_step`` tasks at
    ``k_ref``: floor(tasks_per_step * k_ref / k), down to a multiple of ``synth_group`` (at least one group)."""
    if k < 1 or k_ref < 1 or synth_group < 1:
        raise ValueError("k, k_ref and synth_group must be >= 1")
    n = (tasks_per_step * k_ref) // k
    return max(synth_group, (n // synth_group) * synth_group)
