"""The Synthesizer's reward under each RGBC arm (RGBC proposal §core idea), as one pure
function of the per-task facts the recipe measured.

Arms: ``synco`` r = G_q G_r T(mu_1) (SynCo); ``mu_tilde`` r = G_q G_r T(mu~) with mu~ over the
2K answers of screen + confirm groups, no kappa discount; ``full`` r = G_q G_r T(mu~) omega(kappa)
with the confirm group drawn after the Reasoner update.  A task in the reference-in-doubt
bucket is dropped (reward ``doubt_reward``) or re-anchored on the mode answer (``mu_anchor``).
"""
from __future__ import annotations

from dataclasses import dataclass

from coevo.recipes.rgbc.rewards import rgbc_reward, synco_reward
from coevo.recipes.rgbc.rewards import quality_gate, teachability


@dataclass(frozen=True)
class ArmFacts:
    """What one accepted task contributes to its Synthesizer reward."""

    quality: float  # v_q
    reliability: float  # v_r
    mu_screen: float  # mu_1 over the K screen answers
    mu_confirm: float | None = None  # confirm group (None = none drawn)
    feeds: bool = False  # the confirm group is a training group (not an audit-only instrument)
    dropped: bool = False  # in the doubt bucket, policy drop
    mu_anchor: float | None = None  # match rate of the 2K answers against the mode anchor (policy anchor)


def synthesizer_arm_reward(arm: str, f: ArmFacts, omega0: float, reward_mu: str = "tilde",
                           doubt_reward: float = 0.0) -> tuple[float, dict]:
    """(reward, components) of one accepted task under ``arm`` (synco | mu_tilde | full)."""
    gq, gr = quality_gate(f.quality), quality_gate(f.reliability)
    m1 = f.mu_screen
    if arm == "synco":
        return synco_reward(f.quality, f.reliability, m1), {"T": teachability(m1), "mu_used": m1}
    has_conf = f.mu_confirm is not None
    mu_t = (m1 + f.mu_confirm) / 2.0 if has_conf else m1
    mu_arg = mu_t if f.feeds else m1
    if arm == "full" and reward_mu == "post" and f.feeds:
        mu_arg = f.mu_confirm
    if f.dropped:
        mu_arg = None
    elif f.mu_anchor is not None and f.feeds:
        mu_arg = f.mu_anchor
    kappa = int(0 < f.mu_confirm < 1) if has_conf else None
    kk = kappa if (f.feeds and arm == "full") else None
    if mu_arg is None:
        return doubt_reward, {"rejected": "reference-in-doubt (dropped)"}
    r = float(gq * gr * rgbc_reward(mu_arg, kk, omega0))
    return r, {"T": teachability(mu_arg), "mu_used": mu_arg, "kappa": kk, "omega0": omega0}
