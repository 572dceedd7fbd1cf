"""Per-step probes (CASA proposal §method: "the three probe answers — own reference, a mismatched reference from another prompt, a vacuous template — can be rerun every step").

Each step the recipe re-scores, with the run's own verifiers, three fixed answers per probed prompt:

* ``own_reference``: the prompt's own reference solution (should pass, should not abstain);
* ``mismatched_reference``: the reference of ANOTHER prompt (the next one in the list; should fail);
* ``vacuous``: a content-free template (should fail or abstain).

Since the answers never change, any drift of their pass / abstention rates over steps is verifier drift,
not student change (CASA proposal §method, technical challenge 2).  Rows go to the ``probes`` table, one per (probe, criterion).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence

from coevo.recipes.vgopd.casa.rows import probe_row
from coevo.recipes.vgopd.casa.scoring import Check, is_abstention

__all__ = ["ProbePrompt", "PROBE_KINDS", "VACUOUS_TEMPLATE", "probe_answers", "run_probes", "probe_summary"]

PROBE_KINDS = ("own_reference", "mismatched_reference", "vacuous")
VACUOUS_TEMPLATE = "We compute each quantity step by step from the given values; the final answer follows."


@dataclass(frozen=True)
class ProbePrompt:
    task_id: str
    reference: str


def probe_answers(prompts: Sequence[ProbePrompt], vacuous: str = VACUOUS_TEMPLATE) -> List[tuple]:
    """(task_id, kind, probe_id, answer) for every probe; the mismatched reference of prompt i is prompt
    (i + 1)'s (none when only one prompt is probed)."""
    out = []
    n = len(prompts)
    for i, p in enumerate(prompts):
        out.append((p.task_id, "own_reference", f"{p.task_id}:own", p.reference))
        if n > 1:
            o = prompts[(i + 1) % n]
            out.append((p.task_id, "mismatched_reference", f"{p.task_id}:ref_of:{o.task_id}", o.reference))
        out.append((p.task_id, "vacuous", f"{p.task_id}:vacuous", vacuous))
    return out


def run_probes(run_id: str, step: int, prompts: Sequence[ProbePrompt],
               score: Callable[[str, str], Sequence[Check]], vacuous: str = VACUOUS_TEMPLATE) -> List[dict]:
    """Score every probe answer with ``score(task_id, answer) -> [Check]`` (the run's verifiers for that
    prompt's criteria) and return the ``probes`` rows (probe_id ``<probe>:<criterion>``)."""
    rows = []
    for task_id, kind, pid, answer in probe_answers(prompts, vacuous):
        for c in score(task_id, answer):
            value = None if is_abstention(c.value) else int(c.value)
            rows.append(probe_row(run_id, step, f"{pid}:{c.criterion_id}", kind, c.kind, value,
                                  c.reason or ("unknown" if value is None else "")))
    return rows


def probe_summary(rows: Sequence[dict]) -> Dict[str, Dict[str, float]]:
    """Per probe kind: n, pass rate (share of verdicts = 1 among all) and abstention rate (NULL share)."""
    out: Dict[str, Dict[str, float]] = {}
    for k in PROBE_KINDS:
        sel = [r for r in rows if r["kind"] == k]
        if not sel:
            continue
        n = len(sel)
        out[k] = {"n": n, "pass_rate": sum(1 for r in sel if r["value"] == 1) / n,
                  "abstention_rate": sum(1 for r in sel if r["value"] is None) / n}
    return out
