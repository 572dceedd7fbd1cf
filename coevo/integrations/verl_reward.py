"""Reward functions verl loads through ``custom_reward_function.path`` / ``.name`` (docs/verl.md).

verl (``verl/trainer/ppo/reward.py``, ``get_custom_reward_fn``) imports ``name`` from the file at
``path`` and calls it with ``custom_reward_function.reward_kwargs`` merged into the call's keyword
arguments. Two call shapes:

* per sample (``reward_model.reward_manager=naive``, ``verl/workers/reward_manager/naive.py``, and
  the reward loop ``verl/experimental/reward_loop/reward_manager/naive.py``):
  ``compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)``
  -> ``compute_score`` here (the Solver: answer vs ground truth / pseudo-label);
* batched (``reward_model.reward_manager=batch``, ``verl/workers/reward_manager/batch.py``):
  ``fn(data_sources=..., solution_strs=..., ground_truths=..., extra_infos=...)`` -> a list ->
  ``compute_challenger_scores`` (R-Zero Challenger: uncertainty - repetition over the batch) and
  ``compute_teachability_scores`` (SynCo / RGBC Synthesizer: teachability of a solver group).

Each returns a float-valued dict with ``"score"`` (verl's reward) plus extra fields that verl
logs and dumps. The formulas are coevo's (``coevo.rewards``), every answer check goes through
coevo's verifier pool (``coevo.integrations.common.build_verifier``), and each call appends its
rows to this process's ledger part under ``ledger=`` / ``$COEVO_LEDGER`` (none: no rows), buffered
(``flush_rows=``, ``flush_s=``; see coevo/integrations/common.py).
"""
from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Any, Callable, Optional, Sequence


from coevo.integrations.common import (
    LEDGER_ENV, as_reference, build_verifier, extract_answer, import_function, part_writer, rollout_row_of,
    task_row_of,
)
from coevo.integrations.scoring import (
    Framework, SolverItem, challenger_rows, challenger_scores, installed_version, solver_rows, solver_verdicts, tri_state,
)
from coevo.ledger.store import dumps, reward_row, verdict_row_of
from coevo.recipes.rgbc import SYNCO, SYNTHESIZER

__all__ = ["compute_score", "compute_challenger_scores", "compute_teachability_scores", "STEP_ENV", "framework"]

STEP_ENV = "COEVO_STEP"
_CALLS = {"batch": 0}
_FW: dict = {}


def framework() -> Framework:
    """verl and its installed version ("" where verl is not installed, as in coevo's own test venv)."""
    if "fw" not in _FW:
        _FW["fw"] = Framework("verl", installed_version("verl"))
    return _FW["fw"]


# ---------------------------------------------------------------------- small shared pieces
def _writer(ledger: Optional[str], kw: dict):
    root = ledger or os.environ.get(LEDGER_ENV)
    if not root:
        return None
    fw = framework()
    return part_writer(Path(root), fw.name, fw.version, int(kw.get("flush_rows", 1)), float(kw.get("flush_s", 30.0)))


STEP_KEYS = ("global_steps", "global_step", "step", "max_global_steps", "min_global_steps")


def step_of(extra: Optional[dict], step: Optional[int], fallback: int) -> tuple[int, str]:
    """The training step of a row and where it came from: the ``step`` kwarg; ``extra_info``'s
    ``global_steps`` (coevo's verl reward manager copies it there from the reward loop's input,
    where verl's v1 agent loop puts the batch's step), ``global_step``, ``step``, then
    ``max_global_steps`` / ``min_global_steps`` (the policy versions verl's tool agent loop
    records in the sample's extra fields, which the naive manager merges into ``extra_info``);
    ``$COEVO_STEP``; else ``fallback`` (0 per sample, the batched functions' call number),
    with the source ``"none"`` written on the row."""
    cands = [("kwarg", step)] + [(f"extra_info.{k}", (extra or {}).get(k)) for k in STEP_KEYS] + \
        [(f"${STEP_ENV}", os.environ.get(STEP_ENV))]
    for src, v in cands:
        if v is not None:
            try:
                return int(v), src
            except (TypeError, ValueError):
                continue
    return fallback, "none"


def _step(extra: Optional[dict], step: Optional[int], fallback: int) -> int:
    return step_of(extra, step, fallback)[0]


def _task_id(data_source: Any, extra: dict, ground_truth: Any) -> str:
    """``data_source:split:index`` (verl's preprocessing writes ``extra_info.split`` and ``.index``:
    train row 0 and test row 0 are two tasks; without a split, ``data_source:index``), else a
    hash of the question, else of the ground truth (the samples of one prompt share it)."""
    split = f"{extra['split']}:" if extra.get("split") not in (None, "") else ""
    if extra.get("index") is not None:
        return f"{data_source}:{split}{extra['index']}"
    key = extra.get("question") or ground_truth or ""
    return f"{data_source}:{split}q{hashlib.sha1(str(key).encode()).hexdigest()[:12]}"


def _verifier(kw: dict):
    return build_verifier(kw.get("verifier", "math"), kw.get("verifier_options"), kw.get("verify_workers"),
                          kw.get("timeout_s"))


def _answers(extra: dict, key: str, extract: str) -> Optional[list]:
    """Solver answers of one item: ``extra[key]`` (already extracted answers) or ``extra[key
    with 'answers' -> 'outputs']`` (raw solver texts, extracted here); None when absent."""
    if isinstance(extra.get(key), (list, tuple)):
        return [None if a is None else str(a) for a in extra[key]]
    raw = extra.get(key.replace("answers", "outputs"))
    if isinstance(raw, (list, tuple)):
        return [extract_answer(t, extract) for t in raw]
    return None


def _solver_fn(ref: Optional[str], kw: Optional[dict] = None) -> Optional[Callable]:
    """``"package.module:function"`` -> function(questions) -> one list of raw solver outputs each. The
    ``solver_<name>`` kwargs (``solver_base_url``, ``solver_n`` ...) go to it as ``<name>=`` (the shipped
    ``coevo.integrations.solver_client:solve`` reads them; a function without them is called as is)."""
    if not ref:
        return None
    fn = import_function(ref)
    opts = {k[len("solver_"):]: v for k, v in (kw or {}).items() if k.startswith("solver_")}
    return functools.partial(fn, **opts) if opts else fn


# ---------------------------------------------------------------------- per sample: the Solver
def compute_score(data_source, solution_str, ground_truth, extra_info=None, *, ledger: Optional[str] = None,
                  target: str = "oracle", extract: str = "auto", abstain_score: float = 0.0,
                  step: Optional[int] = None, **kwargs) -> dict:
    """R-Zero Solver reward (R-Zero §2.4): 1 if the answer in ``solution_str`` matches ``ground_truth``
    under coevo's verifier (``verifier=`` kind, ``math`` by default), else 0; an abstention (timeout,
    unparsable ...) scores ``abstain_score``. ``target``: ``oracle`` (ground_truth is a trusted
    reference: the rollout joins an oracle-judged group) or ``pseudo_label`` (a majority-vote label,
    as R-Zero's Solver data; ``extra_info['oracle_answer']`` then adds an oracle verdict).
    Returns ``{"score", "acc", "coevo_verdict"}`` (verdict 1 / 0 / -1 = abstained)."""
    if target not in ("oracle", "pseudo_label"):
        raise ValueError(f"target must be oracle or pseudo_label, got {target!r}")
    extra = dict(extra_info or {})
    rv = _verifier(kwargs)
    ref = as_reference(ground_truth)
    it = SolverItem(_task_id(data_source, extra, ref), solution_str, ref, extra.get("question"),
                    as_reference(extra.get("oracle_answer")) if target == "pseudo_label" else None)
    solver_verdicts(rv, [it], extract)
    v = it.verdicts[0]
    score = float(v.value) if v.value is not None else float(abstain_score)
    w = _writer(ledger, kwargs)
    if w is not None:
        s, s_from = step_of(extra, step, 0)
        it.meta = {"data_source": str(data_source), "step_from": s_from, "split": extra.get("split")}
        w.write(solver_rows(w.part, w.next_id, framework(), s, [it], [score], target))
    return {"score": score, "acc": score, "coevo_verdict": tri_state(v)}


# ---------------------------------------------------------------------- batched: the R-Zero Challenger
def compute_challenger_scores(data_sources: Sequence, solution_strs: Sequence[str], ground_truths: Sequence,
                              extra_infos: Sequence[dict], *, ledger: Optional[str] = None,
                              uncertainty_variant: str = "paper", rep_lambda: float = 1.0,
                              rep_threshold: float = 0.5, rep_linkage: str = "average",
                              bleu_direction: str = "symmetric", format_failure_reward: float = 0.0,
                              answers_key: str = "solver_answers", solver_fn: Optional[str] = None,
                              extract: str = "auto", step: Optional[int] = None, **kwargs) -> list[dict]:
    """R-Zero Challenger reward (R-Zero §2.2, with the repository's reference variants) of a batch of Challenger outputs:
    r = max(0, r_unc(p_hat) - r_rep) with p_hat the majority-vote share of the question's solver
    answers (``extra_info[answers_key]`` or ``[... 'outputs']``, else ``solver_fn(questions)``)
    and r_rep = lambda |C|/B over the batch's BLEU clusters (B = the whole batch, as R-Zero's
    code); a question that fails to parse gets ``format_failure_reward`` (paper 0, R-Zero code -1).
    Same formulas and options as ``coevo.recipes.rzero`` (``uncertainty_variant``, ``rep_*``,
    ``bleu_direction``)."""
    _CALLS["batch"] += 1
    extras = [dict(e or {}) for e in extra_infos]
    rv = _verifier(kwargs)
    given = {i: _answers(e, answers_key, extract) for i, e in enumerate(extras)}
    b = challenger_scores(solution_strs, rv, {i: a for i, a in given.items() if a is not None},
                          _solver_fn(solver_fn, kwargs),
                          extract, uncertainty_variant, rep_lambda, rep_threshold, rep_linkage, bleu_direction,
                          format_failure_reward)
    w = _writer(ledger, kwargs)
    if w is not None:
        s = _step(extras[0] if extras else None, step, _CALLS["batch"])
        meta = [{"data_source": str(d)} for d in data_sources]
        w.write(challenger_rows(w.part, w.next_id(), framework(), s, b, rv, meta), flush=True)
    return b.out


# ---------------------------------------------------------------------- batched: SynCo / RGBC Synthesizer
def compute_teachability_scores(data_sources: Sequence, solution_strs: Sequence[str], ground_truths: Sequence,
                                extra_infos: Sequence[dict], *, ledger: Optional[str] = None, arm: str = SYNCO,
                                omega0: float = 0.2, answers_key: str = "solver_answers",
                                confirm_key: str = "confirm_answers", format_failure_reward: float = 0.0,
                                extract: str = "auto", step: Optional[int] = None, **kwargs) -> list[dict]:
    """SynCo / RGBC Synthesizer reward (SynCo's gated teachability reward; RGBC proposal §core idea (2), arms
    as RGBC proposal §method step 3) of a batch of Synthesizer outputs
    (``<question>…</question>`` then the reference ``\\boxed{}``): mu = share of the screen group's
    solver answers (``extra_info[answers_key]``) that the verifier matches to the reference (an
    abstention counts as not matching); the confirm group (``extra_info[confirm_key]``) gives
    mu_confirm; ``coevo.recipes.rgbc.arms.synthesizer_arm_reward(arm, ...)`` with the gates' scores from
    ``extra_info['quality' | 'reliability']`` (default 1). A question without a reference gets
    ``format_failure_reward``."""
    from coevo.recipes.rgbc.arms import ArmFacts, synthesizer_arm_reward
    from coevo.worlds.math import MathWorld

    _CALLS["batch"] += 1
    world, rv = MathWorld(), _verifier(kwargs)
    extras = [dict(e or {}) for e in extra_infos]
    parsed = [world.parse_task(t or "", f"q{i}") for i, t in enumerate(solution_strs)]
    groups = {}
    for i, p in enumerate(parsed):
        if p.ok and p.task.reference is not None:
            groups[i] = {g: _answers(extras[i], key, extract) for g, key in (("screen", answers_key),
                                                                            ("confirm", confirm_key))}
    pairs, where = [], []
    for i, gs in groups.items():
        for g, ans in gs.items():
            for k, a in enumerate(ans or []):
                pairs.append((a, parsed[i].task.reference))
                where.append((i, g, k))
    verdicts = rv.match_many(pairs)
    vals: dict = {}
    for (i, g, k), v in zip(where, verdicts):
        vals.setdefault((i, g), []).append(v)
    out, facts = [], {}
    for i in range(len(parsed)):
        scr = vals.get((i, "screen"))
        if i not in groups or not scr:
            out.append({"score": float(format_failure_reward), "mu": 0.0, "format_ok": 0.0})
            continue
        conf = vals.get((i, "confirm"))
        mu1 = sum(v.value == 1 for v in scr) / len(scr)
        mu2 = sum(v.value == 1 for v in conf) / len(conf) if conf else None
        f = ArmFacts(quality=float(extras[i].get("quality", 1.0)), reliability=float(extras[i].get("reliability", 1.0)),
                     mu_screen=mu1, mu_confirm=mu2, feeds=True)
        r, comp = synthesizer_arm_reward(arm, f, omega0)
        facts[i] = (f, comp)
        out.append({"score": float(r), "mu": float(mu1), "format_ok": 1.0})
    w = _writer(ledger, kwargs)
    if w is not None:
        s = _step(extras[0] if extras else None, step, _CALLS["batch"])
        w.write(_teach_rows(w, s, arm, solution_strs, parsed, groups, vals, facts, out), flush=True)
    return out


def _teach_rows(w, s: int, arm: str, texts, parsed, groups: dict, vals: dict, facts: dict, out: list) -> dict:
    rows: dict[str, list] = {"tasks": [], "rollouts": [], "verdicts": [], "rewards": [], "task_stats": []}
    call = w.next_id()
    for i, p in enumerate(parsed):
        tid = f"{call}-q{i}"
        t = p.task if p.ok else None
        rows["tasks"].append(task_row_of(w.part, 1, s, tid, SYNTHESIZER, t.question if t else None,
                                         t.reference if t else None, raw_text=texts[i], parse_reason=p.reason,
                                         parse_ok=p.ok, prompt_version=framework().label))
        comp = dict(facts[i][1]) if i in facts else {"rejected": "no question or no reference answer"}
        rows["rewards"].append(reward_row(w.part, s, SYNTHESIZER, tid, tid, out[i]["score"], 0.0, comp))
        rows["rewards"][-1]["advantage"] = None
        if i not in facts:
            continue
        for g, ans in groups[i].items():
            for k, (a, v) in enumerate(zip(ans or [], vals.get((i, g), []))):
                rid = f"{tid}-{g}-{k}"
                rows["rollouts"].append(rollout_row_of(w.part, 1, s, rid, tid, "solver", g, k, None, a, framework().label))
                rows["verdicts"].append(verdict_row_of(w.part, s, rid, tid, "reference", v))
        f = facts[i][0]
        k1, k2 = len(vals[(i, "screen")]), len(vals.get((i, "confirm")) or [])
        mt = f.mu_screen if f.mu_confirm is None else (f.mu_screen + f.mu_confirm) / 2.0
        rows["task_stats"].append({"run_id": w.part, "task_id": tid, "round": 1, "step": s, "arm": arm,
                                   "validator_ok": True, "k_screen": k1, "mu_screen": f.mu_screen,
                                   "k_confirm": k2 or None, "mu_confirm": f.mu_confirm,
                                   "kappa": None if f.mu_confirm is None else int(0 < f.mu_confirm < 1),
                                   "mu_tilde": mt, "reward": out[i]["score"], "proposer_answer": t.reference})
    return rows
