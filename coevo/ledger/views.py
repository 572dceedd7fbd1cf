"""Read-only views over a run's ledger: the numbers summaries, reports and audits use."""
from __future__ import annotations

import json

from coevo.ledger.store import Ledger


def eval_accuracy(led: Ledger, run_id: str, round_: int, mode: str = "greedy") -> dict | None:
    rows = led.query("SELECT difficulty, avg(correct) AS acc, count(*) AS n FROM evals "
                     "WHERE run_id = ? AND round = ? AND mode = ? GROUP BY difficulty ORDER BY difficulty",
                     [run_id, round_, mode])
    if not rows:
        return None
    overall = led.query("SELECT avg(correct) AS acc FROM evals WHERE run_id = ? AND round = ? AND mode = ?",
                        [run_id, round_, mode])[0]["acc"]
    return {"overall": float(overall), "by_difficulty": {r["difficulty"]: float(r["acc"]) for r in rows}}


def eval_counts(led: Ledger, run_id: str, round_: int = 0, mode: str = "greedy") -> dict:
    rows = led.query("SELECT difficulty, count(*) AS n FROM evals WHERE run_id = ? AND round = ? AND mode = ? "
                     "GROUP BY difficulty ORDER BY difficulty", [run_id, round_, mode])
    return {r["difficulty"]: int(r["n"]) for r in rows}


def eval_modes(led: Ledger, run_id: str) -> list[str]:
    return [r["mode"] for r in led.query("SELECT DISTINCT mode FROM evals WHERE run_id = ? ORDER BY mode", [run_id])]


def rounds_completed(led: Ledger, run_id: str) -> list[int]:
    rows = led.query("SELECT DISTINCT round FROM evals WHERE run_id = ? AND round > 0 ORDER BY round", [run_id])
    return [int(r["round"]) for r in rows]


def round_row(led: Ledger, run_id: str, r: int, solver_role: str = "solver") -> dict:
    """The core of one entry of summary.json's ``rounds`` list, from ledger rows only: the solver
    role's held-out accuracy (greedy and any other eval mode) and its rollout count.  A recipe adds
    its own columns (``RecipeInfo.round_columns`` and ``summary_columns``)."""
    nr = led.query("SELECT count(*) AS n FROM rollouts WHERE run_id = ? AND round = ? AND role = ?",
                   [run_id, r, solver_role])[0]
    out = {"round": r, "solver_eval_accuracy": eval_accuracy(led, run_id, r), "n_rollouts": int(nr["n"])}
    for mode in eval_modes(led, run_id):
        if mode != "greedy":
            out[f"solver_eval_accuracy_{mode}"] = eval_accuracy(led, run_id, r, mode)
    return out


def step_metrics(led: Ledger, run_id: str) -> list[dict]:
    rows = led.query("SELECT step, round, phase, phase_step, seconds, metrics_json FROM steps WHERE run_id = ? "
                     "ORDER BY step", [run_id])
    for r in rows:
        r["metrics"] = json.loads(r.pop("metrics_json") or "{}")
    return rows


def run_seconds(led: Ledger, run_id: str) -> float:
    """The seconds of every committed step of the run, summed (0 without steps)."""
    return float(led.query("SELECT coalesce(sum(seconds), 0) AS s FROM steps WHERE run_id = ?", [run_id])[0]["s"])


def stage_seconds_totals(led: Ledger) -> dict[str, float]:
    """Per-stage seconds summed over every step in the file (``steps.stage_seconds_json``; steps without
    timings add nothing)."""
    tot: dict[str, float] = {}
    for r in led.query("SELECT stage_seconds_json FROM steps"):
        for k, v in json.loads(r["stage_seconds_json"] or "{}").items():
            tot[k] = tot.get(k, 0.0) + float(v)
    return tot


def rollout_answers(led: Ledger, run_id: str, purpose: str, role: str | None = None) -> list[dict]:
    """rollout_id, task_id, answer and step of the run's rollouts of one purpose (and role), in the file's order."""
    if role is None:
        return led.query("SELECT rollout_id, task_id, answer, step FROM rollouts WHERE run_id = ? AND purpose = ?",
                         [run_id, purpose])
    return led.query("SELECT rollout_id, task_id, answer, step FROM rollouts WHERE run_id = ? AND purpose = ? "
                     "AND role = ?", [run_id, purpose, role])


def target_verdicts(led: Ledger, run_id: str, target: str) -> list[dict]:
    """rollout_id, task_id, criterion_id, value and reason of the run's verdicts on one target, in the file's order."""
    return led.query("SELECT rollout_id, task_id, criterion_id, value, reason FROM verdicts WHERE run_id = ? "
                     "AND target = ?", [run_id, target])


def run_info(led: Ledger) -> dict:
    rows = led.query("SELECT * FROM runs")
    if not rows:
        raise ValueError("ledger holds no run")
    return rows[0]


# ---------------------------------------------------------------------- audit views (coevo.audit.run_audit)
# a verdict that is no endpoint error (coevo.core.verdict.ERROR_REASONS: judge-unavailable)
_NOT_ERROR = "coalesce(reason, '') <> 'judge-unavailable'"
def oracle_groups(led: Ledger, run_id: str, purposes: tuple[str, ...] = ("p_hat", "candidate")) -> dict[str, list]:
    """One row per group of solver answers to one task (task, step, purpose): the number of
    answers, how many the oracle verdict (target 'oracle') judged correct, how many it abstained on, and
    how many it could not judge because its endpoint failed (``n_errors``: errors, not abstentions)."""
    marks = ", ".join("?" for _ in purposes)
    return led.columns(
        "SELECT r.task_id, r.step, r.purpose, count(*) AS n, "
        "sum(CASE WHEN v.value = 1 THEN 1 ELSE 0 END) AS n_correct, "
        f"sum(CASE WHEN v.value IS NULL AND {_NOT_ERROR} THEN 1 ELSE 0 END) AS n_abstained, "
        f"sum(CASE WHEN v.value IS NULL AND NOT {_NOT_ERROR} THEN 1 ELSE 0 END) AS n_errors "
        "FROM rollouts r JOIN verdicts v ON v.run_id = r.run_id AND v.rollout_id = r.rollout_id "
        "AND v.target = 'oracle' "
        f"WHERE r.run_id = ? AND r.role = 'solver' AND r.purpose IN ({marks}) "
        "GROUP BY r.task_id, r.step, r.purpose ORDER BY r.step, r.task_id, r.purpose",
        [run_id, *purposes])


def kept_label_rows(led: Ledger, run_id: str, round_: int | None = None) -> dict[str, list]:
    """Kept candidate tasks (R-Zero solver dataset; one round's, or all): pseudo-label, oracle answer,
    and ``label_verdict``, the oracle verdict on the pseudo-label = the verdict (target 'oracle') on a
    candidate rollout whose answer is the label (the label is one of them; NULL if abstained)."""
    where = "" if round_ is None else " AND t.round = ?"
    return led.columns(
        "SELECT t.task_id, t.round, t.step, t.pseudo_label, t.oracle_answer, "
        "(SELECT max(v.value) FROM rollouts r JOIN verdicts v ON v.run_id = r.run_id "
        " AND v.rollout_id = r.rollout_id AND v.target = 'oracle' "
        " WHERE r.run_id = t.run_id AND r.task_id = t.task_id AND r.purpose = 'candidate' "
        " AND r.answer = t.pseudo_label) AS label_verdict "
        f"FROM tasks t WHERE t.run_id = ? AND t.source = 'candidate' AND t.kept{where} ORDER BY t.step, t.task_id",
        [run_id] if round_ is None else [run_id, round_])


def task_stats_rows(led: Ledger, run_id: str) -> dict[str, list]:
    """All task_stats rows of a run (screen/confirm recipes), with the task's oracle answer."""
    return led.columns(
        "SELECT s.*, (SELECT max(t.oracle_answer) FROM tasks t WHERE t.run_id = s.run_id "
        "AND t.task_id = s.task_id) AS oracle_answer FROM task_stats s WHERE s.run_id = ? "
        "ORDER BY s.step, s.task_id", [run_id])


def verdict_groups(led: Ledger, run_id: str) -> dict[str, list]:
    """Verdicts grouped by (task, target, verifier kind, criterion): total, abstained (value NULL), passed;
    a verdict whose endpoint failed (``ERROR_REASONS``) is in none of them but in ``n_errors``."""
    return led.columns(
        "SELECT task_id, target, verifier_kind, coalesce(criterion_id, '') AS criterion_id, "
        f"sum(CASE WHEN value IS NOT NULL OR {_NOT_ERROR} THEN 1 ELSE 0 END) AS n, "
        f"sum(CASE WHEN value IS NULL AND {_NOT_ERROR} THEN 1 ELSE 0 END) AS n_abstained, "
        "sum(CASE WHEN value = 1 THEN 1 ELSE 0 END) AS n_pass, "
        f"sum(CASE WHEN value IS NULL AND NOT {_NOT_ERROR} THEN 1 ELSE 0 END) AS n_errors "
        "FROM verdicts WHERE run_id = ? GROUP BY ALL ORDER BY task_id, target, verifier_kind, criterion_id",
        [run_id])


def abstention_reasons(led: Ledger, run_id: str) -> dict[str, int]:
    """Abstentions by reason; an endpoint error (``ERROR_REASONS``) is no abstention (``endpoint_errors``)."""
    from coevo.core.verdict import ERROR_REASONS

    rows = led.query("SELECT coalesce(reason, '') AS reason, count(*) AS n FROM verdicts "
                     "WHERE run_id = ? AND value IS NULL GROUP BY ALL ORDER BY n DESC", [run_id])
    return {r["reason"]: int(r["n"]) for r in rows if r["reason"] not in ERROR_REASONS}


def endpoint_errors(led: Ledger, run_id: str) -> dict:
    """Calls to a model server or a judge that failed after their retries (coevo.core.verdict), counted
    apart from wrong answers and abstentions: ``model_server`` from the steps' ``backend_errors`` and
    ``backend_calls`` (openai backend), ``judge`` = verdicts whose reason is an endpoint error, of the
    verdicts of the verifier kinds that had one. Each: {failed, calls, first}; empty when no call."""
    from coevo.core.verdict import ERROR_REASONS

    out: dict = {}
    failed = calls = 0
    first = ""
    for st in step_metrics(led, run_id):
        m = st["metrics"]
        be = m.get("backend_errors") if isinstance(m.get("backend_errors"), dict) else {}
        failed += int(be.get("failed", be.get("n", 0)))
        calls += int(m.get("backend_calls", be.get("calls", 0)) or 0)
        if be and not first:
            e = next((x for x in be.get("first", []) if x.get("kind") == "sample"), (be.get("first") or [{}])[0])
            first = f"{e.get('server', '')}: {e.get('reason', '')}".split(" | ")[-1] if e.get("kind") == "sync" \
                else str(e.get("reason", "")).split(" | ")[-1]
    if calls or failed:
        out["model_server"] = {"failed": failed, "calls": max(calls, failed), "first": first}
    marks = ", ".join("?" for _ in ERROR_REASONS)
    rows = led.query(f"SELECT verifier_kind, count(*) AS n, sum(CASE WHEN value IS NULL AND reason IN ({marks}) "
                     f"THEN 1 ELSE 0 END) AS failed FROM verdicts WHERE run_id = ? GROUP BY ALL",
                     [*sorted(ERROR_REASONS), run_id])
    bad = [r for r in rows if r["failed"]]
    if bad:
        out["judge"] = {"failed": int(sum(r["failed"] for r in bad)), "calls": int(sum(r["n"] for r in bad)),
                        "first": "judge-unavailable (" + ", ".join(sorted(str(r["verifier_kind"]) for r in bad)) + ")"}
    return out


def proposer_role(led: Ledger, run_id: str) -> str | None:
    """The role that proposes tasks: the task source that is also a rewarded role (R-Zero's
    Challenger, SynCo's Synthesizer, a toy's proposer); None when no role rewards its own tasks."""
    rows = led.query("SELECT DISTINCT t.source FROM tasks t JOIN rewards w ON w.run_id = t.run_id "
                     "AND w.role = t.source WHERE t.run_id = ? ORDER BY t.source", [run_id])
    return rows[0]["source"] if rows else None


def proposer_scores(led: Ledger, run_id: str, role: str | None = None) -> dict[str, list]:
    """Parsed questions of the proposing role (default ``proposer_role``) with p_hat and their
    reward row (components_json holds r_unc, r_rep where the recipe writes them)."""
    role = role or proposer_role(led, run_id) or ""
    return led.columns(
        "SELECT t.task_id, t.step, t.p_hat, w.reward, w.components_json FROM tasks t "
        "LEFT JOIN rewards w ON w.run_id = t.run_id AND w.task_id = t.task_id AND w.step = t.step "
        "AND w.role = ? WHERE t.run_id = ? AND t.source = ? AND t.parse_ok "
        "ORDER BY t.step, t.task_id", [role, run_id, role])


# ---------------------------------------------------------------------- SynCo / RGBC (issue 5)
def task_stats_columns(led: Ledger, run_id: str) -> dict[str, list]:
    """All ``task_stats`` rows of a run as columns, ordered by step and task id."""
    return led.columns("SELECT * FROM task_stats WHERE run_id = ? ORDER BY step, task_id", [run_id])


def source_tasks(led: Ledger, run_id: str, source: str) -> dict[str, dict]:
    """task_id -> question, reference, oracle answer, difficulty, meta (parsed) of the tasks of one source."""
    rows = led.query("SELECT task_id, step, question, reference, oracle_answer, difficulty, meta_json FROM tasks "
                     "WHERE run_id = ? AND source = ? ORDER BY step, task_id", [run_id, source])
    out = {}
    for r in rows:
        r["meta"] = json.loads(r.pop("meta_json") or "{}")
        out[r["task_id"]] = r
    return out


def doubt_pool(led: Ledger, run_id: str) -> list[dict]:
    """Tasks on which nu is defined (screen-bearing, mode known), with question, reference and mode.

    One row per task: task_id, step, question, reference, mode_answer, in_doubt, nu, oracle_answer.
    """
    return led.query("SELECT s.task_id, s.step, t.question, t.reference, s.mode_answer, s.in_doubt, s.nu, "
                     "t.oracle_answer FROM task_stats s JOIN tasks t ON s.run_id = t.run_id AND s.task_id = t.task_id "
                     "WHERE s.run_id = ? AND s.nu IS NOT NULL AND s.mode_answer IS NOT NULL "
                     "ORDER BY s.step, s.task_id", [run_id])


def rollout_counts(led: Ledger, run_id: str) -> dict[str, int]:
    """Solver rollouts per purpose (screen, confirm, consensus, instrument groups, ...)."""
    rows = led.query("SELECT purpose, count(*) AS n FROM rollouts WHERE run_id = ? AND role = 'solver' "
                     "GROUP BY purpose ORDER BY purpose", [run_id])
    return {r["purpose"]: int(r["n"]) for r in rows}


def rollout_segment_counts(led: Ledger, run_id: str) -> list[dict]:
    """Per step and role: rollouts, tool (env) segments and masked tokens (multi-turn rollouts).
    (No list lambda: its syntax changed in DuckDB 1.3 / 2.0; the kinds are unnested instead.)"""
    return led.query(
        "WITH r AS (SELECT rollout_id, step, role, n_masked_tokens, segments_json FROM rollouts WHERE run_id = ?), "
        "env AS (SELECT rollout_id, count(*) AS n FROM (SELECT rollout_id, "
        "unnest(json_extract_string(segments_json, '$[*].kind')) AS kind FROM r WHERE segments_json IS NOT NULL) "
        "WHERE kind = 'env' GROUP BY rollout_id) "
        "SELECT r.step, r.role, count(*) AS rollouts, coalesce(sum(env.n), 0) AS env_segments, "
        "coalesce(sum(r.n_masked_tokens), 0) AS masked_tokens FROM r LEFT JOIN env USING (rollout_id) "
        "GROUP BY r.step, r.role ORDER BY r.step, r.role", [run_id])


def step_versions(led: Ledger, run_id: str) -> dict[int, dict[str, str]]:
    """{step: {role: policy version after the step}} (older ledgers: the two legacy columns)."""
    out = {}
    for r in led.query("SELECT step, versions_json, proposer_version, solver_version FROM steps "
                       "WHERE run_id = ? ORDER BY step", [run_id]):
        if r["versions_json"]:
            out[int(r["step"])] = json.loads(r["versions_json"])
        else:
            out[int(r["step"])] = {c.removesuffix("_version"): r[c] for c in ("proposer_version", "solver_version")
                                   if r[c]}
    return out


def step_stage_seconds(led: Ledger, run_id: str | None = None) -> list[dict]:
    """``[{step, round, phase, stages: {stage: seconds}}]`` of the steps that carry per-stage
    timings (``steps.stage_seconds_json``, ``coevo.timing``); [] for a ledger written before
    they were recorded (a read-only ledger may lack the column)."""
    if "stage_seconds_json" not in {r["column_name"] for r in led.query("DESCRIBE steps")}:
        return []
    rows = led.query("SELECT step, round, phase, stage_seconds_json FROM steps WHERE stage_seconds_json IS NOT NULL "
                     "AND (? IS NULL OR run_id = ?) ORDER BY step", [run_id, run_id])
    return [{"step": int(r["step"]), "round": r["round"], "phase": r["phase"],
             "stages": json.loads(r["stage_seconds_json"])} for r in rows]
