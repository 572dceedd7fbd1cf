"""`coevo compare RUN...`: runs side by side (arms, seeds), grouped into arms.

Per run: the summary numbers of ``summary.json`` (final and initial eval accuracy, frontier gain, the
recipe's summary columns of the last round) and the audit's instruments with their intervals, exactly
as ``coevo audit --json`` gives them (``coevo.audit.run_audit.audit_runs``; nothing is recomputed).
Runs whose ``config.yaml`` differ only in ``seed`` (and in keys that do not change results:
``NOT_ARM_KEYS``) form one arm; a key that some runs of the same recipe lack (a config section
added by a later coevo version) does not split an arm; per arm and metric, the mean and the seed-to-seed
range come from ``coevo.audit.instruments.seed_range``. Rendering: ``print_compare`` (terminal) here,
``coevo.report.compare.write_compare_html`` (HTML with plots).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import yaml

from coevo.audit.data import AuditError, finite
from coevo.audit.instruments import seed_range
from coevo.audit.run_audit import HEADLINE, audit_runs

__all__ = ["compare_runs", "print_compare", "run_value", "run_rows", "arm_rows", "NOT_ARM_KEYS", "SUMMARY_KEYS", "TABLE_INSTRUMENTS"]

# config keys (dotted prefixes) that do not make another arm: bookkeeping, where the work runs
NOT_ARM_KEYS = ("seed", "out_root", "note", "tracking", "executor", "verify.workers", "backend.threads")
SUMMARY_KEYS = ("final_eval", "initial_eval", "frontier_gain")
TABLE_INSTRUMENTS = tuple(k for k in HEADLINE if k != "eval_accuracy")  # eval: the final_eval column


def _read(run_dir: Path) -> tuple[dict, dict]:
    """(config, summary) of a run directory; AuditError naming the file when one is unreadable."""
    cfg_path = run_dir / "config.yaml"
    if not cfg_path.is_file():
        raise AuditError(f"{run_dir} is not a coevo run directory (no config.yaml)")
    try:
        cfg = yaml.safe_load(cfg_path.read_text()) or {}
    except yaml.YAMLError as e:
        raise AuditError(f"{cfg_path}: not valid YAML ({str(e).splitlines()[0]})") from None
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
    except FileNotFoundError:
        summary = {}  # a run still going or killed: the instruments still come from its ledger
    except (OSError, ValueError) as e:
        raise AuditError(f"{run_dir / 'summary.json'}: unreadable ({e})") from None
    return cfg, summary


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix: d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def arm_config(cfg: dict) -> dict[str, Any]:
    """The dotted config keys that define an arm (everything but ``NOT_ARM_KEYS``)."""
    return {k: v for k, v in _flat(cfg).items()
            if not any(k == n or k.startswith(n + ".") for n in NOT_ARM_KEYS)}


def summary_metrics(summary: dict) -> dict[str, float | None]:
    """Final / initial eval accuracy, frontier gain and the recipe's summary columns (last round)."""
    last = (summary.get("rounds") or [{}])[-1]
    acc = last.get("solver_eval_accuracy") or {}
    init = summary.get("initial_solver_eval_accuracy") or {}
    out = {"final_eval": finite(acc.get("overall")), "initial_eval": finite(init.get("overall")),
           "frontier_gain": finite((summary.get("frontier") or {}).get("gain"))}
    for col in summary.get("summary_columns") or []:
        v = last.get(col)
        out[col] = finite(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    return out


def eval_by_round(summary: dict) -> list[dict]:
    """[{round, eval}] from summary.json: round 0 = the initial evaluation, then each round's."""
    init = summary.get("initial_solver_eval_accuracy")
    out = [{"round": 0, "eval": finite(init.get("overall"))}] if init else []
    return out + [{"round": r["round"], "eval": finite((r.get("solver_eval_accuracy") or {}).get("overall"))}
                  for r in summary.get("rounds") or []]


def _labels(groups: list[dict]) -> None:
    """Each arm's label: recipe/arm of the audit, with the config keys that tell apart arms sharing it."""
    differ = sorted({k for g in groups for k in g["config"]  # among the arms that have the key
                     if len({json.dumps(h["config"][k], sort_keys=True) for h in groups if k in h["config"]}) > 1})
    base = [g["runs"][0]["recipe"] if g["runs"][0]["arm"] == g["runs"][0]["recipe"]
            else f"{g['runs'][0]['recipe']}/{g['runs'][0]['arm']}" for g in groups]
    for g, b in zip(groups, base):
        same = [h for h, c in zip(groups, base) if c == b]  # arms sharing the label: what tells them apart
        extra = [f"{k}={g['config'][k]}" for k in differ if len(same) > 1 and k in g["config"]
                 and len({json.dumps(h["config"].get(k), sort_keys=True) for h in same}) > 1]
        g["label"] = b + (f" ({', '.join(extra)})" if extra else "")
        g["differs"] = {k: g["config"][k] for k in differ if k in g["config"]}


def run_value(run: dict, source: str, key: str) -> float | None:
    """A run's number: ``source`` "summary" (summary.json) or "instruments" (the audit's value, None
    when unavailable). Summary columns and instruments share names (bearing_rate, kappa_bar, nu_bar)."""
    if source == "summary":
        return run["summary"].get(key)
    ins = run["instruments"].get(key) or {}
    return ins.get("value") if ins.get("status") == "ok" else None


def _arm_stats(runs: list[dict], source: str, keys: Sequence[str]) -> dict[str, dict]:
    """Per metric: mean and seed-to-seed range over the arm's runs that have it (seed_range)."""
    out = {}
    for key in keys:
        vals, seeds = [], []
        for r in runs:
            v = run_value(r, source, key)
            if v is not None:
                vals.append(v)
                seeds.append(r["seed"])
        if not vals:
            out[key] = {"n_runs": 0}
            continue
        est = seed_range(vals, labels=seeds)
        out[key] = {"n_runs": len(vals), "mean": finite(est.value), "min": est.extra["min"], "max": est.extra["max"],
                    "range": est.extra["range"], "se_across_seeds": finite(est.se),
                    "per_run": [{"seed": s, "value": v} for s, v in zip(seeds, est.extra["per_run"])]}
    return out


def compare_runs(run_dirs: Sequence[Path]) -> dict:
    """Runs side by side and grouped into arms (see the module docstring). AuditError on bad input."""
    if not run_dirs:
        raise AuditError("no run directory given")
    dirs = [Path(d) for d in run_dirs]
    for d in dirs:
        if not d.is_dir():
            raise AuditError(f"run directory not found: {d}")
    read = [_read(d) for d in dirs]
    audit = audit_runs(dirs)
    runs = []
    for (cfg, summary), a in zip(read, audit["runs"]):
        runs.append({**{k: a[k] for k in ("run_dir", "run_id", "recipe", "arm", "seed", "world")},
                     "summary": summary_metrics(summary), "summary_columns": list(summary.get("summary_columns") or []),
                     "rounds": eval_by_round(summary),
                     "instruments": a["instruments"], "_config": arm_config(cfg)})
    common = {}  # per recipe: the keys every run of it has
    for r in runs:
        common[r["recipe"]] = common.get(r["recipe"], set(r["_config"])) & set(r["_config"])
    groups: dict[str, dict] = {}
    for r in runs:
        r["_config"] = {k: v for k, v in r["_config"].items() if k in common[r["recipe"]]}
        key = json.dumps(r["_config"], sort_keys=True, default=str)
        groups.setdefault(key, {"config": r["_config"], "runs": []})["runs"].append(r)
    arms = list(groups.values())
    _labels(arms)
    columns = list(dict.fromkeys(c for r in runs for c in r["summary_columns"]))
    out_arms = []
    for g in arms:
        for r in g["runs"]:
            r["arm_label"] = g["label"]
        out_arms.append({"label": g["label"], "recipe": g["runs"][0]["recipe"], "differs": g["differs"],
                         "seeds": [r["seed"] for r in g["runs"]], "runs": [r["run_dir"] for r in g["runs"]],
                         "summary": _arm_stats(g["runs"], "summary", [*SUMMARY_KEYS, *columns]),
                         "instruments": _arm_stats(g["runs"], "instruments", list(runs[0]["instruments"]))})
    for r in runs:
        del r["_config"]
    return {"runs": runs, "arms": out_arms, "summary_columns": columns,
            "differs": sorted({k for a in out_arms for k in a["differs"]})}


# ---------------------------------------------------------------------- terminal
def _f(x, nd: int = 3) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def _ins_cell(ins: dict | None) -> str:
    if not ins or ins.get("status") != "ok" or ins.get("value") is None:
        return "-"
    ci = f" [{_f(ins['ci_low'], 2)}, {_f(ins['ci_high'], 2)}]" if ins.get("ci_low") is not None else ""
    return _f(ins["value"]) + ci


def run_rows(result: dict) -> tuple[list[str], list[list[str]]]:
    """Header and one row per run: arm, seed, summary numbers, instruments with 95% intervals. A recipe
    summary column that is also an instrument (bearing_rate, kappa_bar, nu_bar, lag_bar) is shown once,
    as the audit's pooled value with its interval (the JSON has both)."""
    cols = [c for c in result["summary_columns"] if c not in TABLE_INSTRUMENTS and c != "lag_bar"]
    head = ["arm", "seed", "final eval", "init eval", "frontier gain", *[c.replace("_", " ") for c in cols],
            *[k.replace("_", " ") for k in TABLE_INSTRUMENTS]]
    rows = []
    for r in result["runs"]:
        s = r["summary"]
        rows.append([r["arm_label"], str(r["seed"]), _f(s["final_eval"]), _f(s["initial_eval"]),
                     "-" if s["frontier_gain"] is None else f"{s['frontier_gain']:+.3f}", *[_f(s.get(c)) for c in cols],
                     *[_ins_cell(r["instruments"].get(k)) for k in TABLE_INSTRUMENTS]])
    return head, rows


def arm_rows(result: dict) -> tuple[list[str], list[list[str]]]:
    """Header and one row per arm: runs, then mean and seed-to-seed range of each headline number."""
    keys = [("summary", "final_eval"), ("summary", "frontier_gain"), *[("instruments", k) for k in TABLE_INSTRUMENTS]]
    head = ["arm", "runs (seeds)", *[k.replace("_", " ") for _, k in keys]]
    rows = []
    for a in result["arms"]:
        cells = []
        for src, k in keys:
            m = a[src].get(k, {})
            cells.append("-" if not m.get("n_runs") else f"{_f(m['mean'])} ({_f(m['range'])}, n={m['n_runs']})")
        rows.append([a["label"], f"{len(a['runs'])} ({', '.join(str(s) for s in a['seeds'])})", *cells])
    return head, rows


def _table(title: str, head: list[str], rows: list[list[str]], caption: str | None = None):
    from rich.markup import escape
    from rich.table import Table

    t = Table(title=title, caption=caption)
    for h in head:  # headers wrap at their spaces; cells never wrap (one line per run)
        t.add_column(escape(h), justify="left" if h == "arm" else "right", no_wrap=True,
                     min_width=min(len(h), 6))
    for r in rows:
        t.add_row(*[escape(x) for x in r])
    width = sum(max([len(h), *[len(r[i]) for r in rows]]) + 3 for i, h in enumerate(head)) + 1
    return t, width


def print_compare(result: dict) -> None:
    """The runs table; the arms table (mean and seed-to-seed range) when an arm has several runs."""
    from rich.console import Console
    from rich.markup import escape

    n = f"coevo compare · {len(result['runs'])} runs · {len(result['arms'])} arms"
    tables = [_table(n, *run_rows(result), caption="instruments: value [95% interval] as `coevo audit` computes "
                     "them over the whole run (docs/audit.md); - = unavailable")]
    if any(len(a["runs"]) > 1 for a in result["arms"]):
        tables.append(_table("per arm: mean over seeds (seed-to-seed range max - min, n runs)", *arm_rows(result)))
    c = Console()
    if not c.is_terminal:  # a pipe or a file: wide enough for one line per run
        c = Console(width=max(100, *[w for _, w in tables]))
    for t, _ in tables:
        c.print(t)
    if result["differs"]:
        c.print(escape(f"arms differ in: {', '.join(result['differs'])}"), highlight=False)
