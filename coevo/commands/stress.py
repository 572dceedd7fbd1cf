"""``coevo stress BANK [--json] [--out FILE]``: the criterion-bank stress test (CASA proposal §method, criterion-bank stress test).

Adversarial answers per criterion, scored by each verifier kind, deterministic kinds recomputed
independently in the sandbox; break rate per verifier kind with Wilson 95 % intervals.  The JSON written
by ``--out`` is what ``coevo audit --predictions --stress FILE`` / ``coevo casa predictions --stress FILE``
read for CASA-P4.  Logic: coevo/casa/stress.py; docs/vgopd.md."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import console, fail
from coevo.commands.output import emit, json_option


def _fmt(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def print_stress(res: dict) -> None:
    from rich.table import Table

    t = Table(title=f"coevo stress: {res['n_entries']} entries, {res['n_answers']} adversarial answers "
                    f"(sandbox: {res['sandbox'].get('reason')}, {res['sandbox'].get('isolation', '-')})")
    for col in ("kind", "should fail", "broken", "break rate", "95% CI", "abstained", "should pass",
                "false rejects", "recomputed"):
        t.add_column(col, justify="right" if col != "kind" else "left")
    for kind, v in res["by_kind"].items():
        ci = "-" if v["ci_low"] is None else f"[{_fmt(v['ci_low'])}, {_fmt(v['ci_high'])}]"
        t.add_row(kind, str(v["n"]), str(v["broken"]), _fmt(v["rate"]), ci, str(v["n_abstained"]),
                  str(v["n_should_pass"]), str(v["false_rejects"]), str(v["n_recomputed"]))
    for name in ("deterministic", "judge"):
        v = res.get(name)
        if v:
            t.add_row(f"[b]{name} (pooled)[/b]", str(v["n"]), str(v["broken"]), _fmt(v["rate"]),
                      f"[{_fmt(v['ci_low'])}, {_fmt(v['ci_high'])}]", "", "", "", "")
    from rich.console import Console

    Console(width=140).print(t)
    print(f"reference (ImpossibleRubrics, CASA proposal §prediction P4): {_fmt(res['reference'][0])}-{_fmt(res['reference'][1])}; "
          f"skipped penalty criteria: {res['skipped_penalties']}")
    for b in res["break_examples"]:
        print(f"  break: {b['entry']}/{b['criterion']} ({b['kind']}, {b['family']}): {b['answer']!r}")


def stress(
    bank: Path = typer.Argument(..., help="Criteria bank (JSONL / YAML, docs/criteria.md)."),
    as_json: bool = json_option(),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the JSON here (CASA-P4 reads it)."),
    family: List[str] = typer.Option([], "--family", help="Only these adversarial families (repeatable)."),
    timeout_s: float = typer.Option(60.0, "--timeout", help="Wall-clock limit of the sandboxed recomputation."),
):
    """Break rates of a criteria bank's verifiers under adversarial answers, per verifier kind (95% CIs)."""
    import json

    from coevo.recipes.vgopd.casa.stress import stress_bank
    from coevo.criteria.bank import BankError, load_bank

    if not bank.is_file():
        fail(f"bank not found: {bank}")
    if timeout_s <= 0:
        fail("--timeout must be > 0")
    try:
        entries = load_bank(bank)
    except BankError as e:
        fail(str(e))
    if not entries:
        fail(f"{bank}: no entries")
    try:
        res = stress_bank(entries, families=family or None, timeout_s=timeout_s)
    except ValueError as e:
        fail(str(e))
    res["bank"] = str(bank)
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(res, indent=2, default=float))
        except OSError as e:
            fail(f"cannot write {out}: {e.strerror}")
        console.print(f"wrote {out}")
    emit(res, as_json, print_stress)


def register(apps: dict) -> None:
    apps["main"].command("stress")(stress)
