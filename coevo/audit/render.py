"""Output of `coevo audit`: the rich table on the terminal (``rows_for`` is shared with the report's
audit section, coevo/report/audit.py).

The numbers come from coevo.audit.run_audit; nothing here computes an instrument.
"""
from __future__ import annotations

from collections import defaultdict
from typing import List

__all__ = ["print_audit", "rows_for", "per_step_line"]


def _fmt(x, pct: bool = False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.1f}%" if pct else f"{x:.3f}"


_PCT = {"bearing_rate", "productive_rate_replicated", "kappa_bar", "nu_bar", "doubt_share", "pseudo_label_accuracy",
        "false_agreement_mass", "abstention_share", "eval_accuracy"}


def rows_for(run: dict) -> tuple[List[List[str]], List[str]]:
    """Table rows (instrument, value, SE, 95% interval, n, interval method) of the computable
    instruments, and one line per reason for those that cannot be computed."""
    rows, why = [], defaultdict(list)
    for key, ins in run["instruments"].items():
        if ins["status"] != "ok":
            why[ins["reason"]].append(ins["label"])
            continue
        pct = key in _PCT
        val = _fmt(ins["value"], pct)
        if key == "null_model":
            val = f"{100 * ins['value']:.2f} pt"
        if key == "lag":
            mci = ins["extra"].get("median_abs_ci", [None, None])
            val += f"; median |l| {_fmt(ins['extra'].get('median_abs'))} [{_fmt(mci[0])}, {_fmt(mci[1])}]"
        if key == "kappa_bar":
            t = ins["extra"].get("ci_task_clustered", [None, None])
            val += f"; task-clustered [{_fmt(t[0], True)}, {_fmt(t[1], True)}]"
        ci = f"[{_fmt(ins['ci_low'], pct)}, {_fmt(ins['ci_high'], pct)}]" if ins["ci_low"] is not None else "-"
        rows.append([ins["label"], val, _fmt(ins["se"], pct), ci, str(ins["n"]), ins["interval"]])
    return rows, [f"{', '.join(labels)}: {reason}" for reason, labels in why.items()]


def per_step_line(ins: dict | None, most: int = 12) -> str:
    """``bearing rate per step: 0: 50.0% (n=4), 1: ...`` from the instrument's ``per_step`` (the first
    ``most`` steps; --json has all); "" when the instrument is not computed."""
    if not ins or ins.get("status") != "ok" or not ins.get("extra", {}).get("per_step"):
        return ""
    ps = ins["extra"]["per_step"]
    cells = [f"{p['step']}: {_fmt(p['value'], True)} (n={p['n']})" for p in ps[:most]]
    more = f", ... ({len(ps)} steps; --json has all)" if len(ps) > most else ""
    return f"  bearing rate per step: {', '.join(cells)}{more}"


def print_audit(result: dict) -> None:
    from rich.markup import escape
    from rich.table import Table

    from coevo.termwidth import out_console

    c = out_console()  # the terminal's width, COLUMNS, else 160 (a pipe)
    for run in result["runs"]:
        t = Table(title=f"audit · {run['recipe']} · arm {run['arm']} · seed {run['seed']} · {run['run_dir']}")
        for col, j in (("instrument", "left"), ("value", "right"), ("SE", "right"), ("95% interval", "right"),
                       ("n", "right"), ("interval", "left")):
            t.add_column(col, justify=j, overflow="fold")
        rows, why = rows_for(run)
        for r in rows:
            t.add_row(*[escape(x) for x in r])
        c.print(t)
        for line in why:
            c.print(f"  [bold]cannot compute[/] {escape(line)}", highlight=False)
        line = per_step_line(run["instruments"].get("bearing_rate"))
        if line:
            c.print(escape(line), highlight=False)
        for part, e in (run.get("errors") or {}).items():  # failed endpoint calls: not wrong, not abstained
            c.print(escape(f"  errors: {e['failed']} of {e['calls']} {part.replace('_', ' ')} calls failed after "
                           f"retries (first: {e['first']}); left out of the instruments, never abstentions"),
                    highlight=False)
        nm = run["instruments"].get("null_model")
        if nm and nm["status"] == "ok":
            for name, b in nm["extra"]["buckets"].items():
                o, p = b["observed"], b["predicted"]
                c.print(f"  null model, {name} bucket (steps {b['steps']}, n={b['n']}, K={nm['extra']['k']}): observed "
                        f"{'/'.join(f'{100 * x:.1f}' for x in o)}% (all-correct/bearing/all-wrong); best two-point pool "
                        f"w={b['fit']['w']:.3f} p={b['fit']['p_hi']:.4f}/{b['fit']['p_lo']:.4f} predicts "
                        f"{'/'.join(f'{100 * x:.1f}' for x in p)}% (max error {100 * b['fit']['error']:.2f} pt)",
                        highlight=False)
    for sr in result["seed_range"]:
        if sr["status"] != "ok":
            c.print(escape(f"seed-to-seed range, {sr['recipe']}/{sr['arm']}: cannot compute: {sr['reason']}"),
                    highlight=False)
            continue
        t = Table(title=f"seed-to-seed range · {sr['recipe']} · arm {sr['arm']} · seeds {sr['seeds']}")
        for col in ("metric", "range", "min", "max", "mean", "per seed"):
            t.add_column(col)
        for k, m in sr["metrics"].items():
            t.add_row(k, _fmt(m["range"]), _fmt(m["min"]), _fmt(m["max"]), _fmt(m["mean"]),
                      ", ".join(f"{s}: {_fmt(v)}" for s, v in m["per_seed"].items()))
        c.print(t)
    if "predictions" in result:
        from coevo.audit.predictions import print_predictions

        print_predictions(result["predictions"], c)
