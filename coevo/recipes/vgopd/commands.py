"""The VG-OPD folder's commands (registered through ``RecipeInfo.commands``).

``coevo casa predictions RUN... [--stress FILE]``: the CASA proposal's CASA-P1..P4 alone, with the stress JSON
of ``coevo stress`` for P4 (``coevo audit --predictions`` evaluates the same rows next to the RGBC proposal's,
reading a run directory's stress.json for P4).

``coevo stress [BANK] [--attacker A] [--judge J] [--json] [--out FILE]``: the criterion-bank stress test (CASA
proposal §method, criterion-bank stress test), and the judge stress test with a fixed attacker and a fixed judge.
Adversarial answers per criterion, scored by each verifier kind, deterministic kinds recomputed
independently in the sandbox; break rate per verifier kind with Wilson 95 % intervals.  The JSON written
by ``--out`` is what ``coevo audit --predictions --stress FILE`` / ``coevo casa predictions --stress FILE``
read for CASA-P4.  Logic: coevo/recipes/vgopd/casa/stress.py; docs/vgopd.md.  Judge stress (no BANK, or
``--attacker``): coevo/recipes/vgopd/casa/attack.py (the attacker) and judge_stress.py (judges, break rate);
without BANK and without ``--attacker`` the tiny attacker runs against the simulated judge; docs/casa.md."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import check_errors, console, emit, fail, json_option, max_error_rate_option


def register(apps: dict) -> None:
    """``coevo casa predictions`` and ``coevo stress``."""
    casa_app = typer.Typer(help="CASA (CASA proposal): criterion-set accounting of criteria runs.", no_args_is_help=True)
    apps["main"].add_typer(casa_app, name="casa")

    @casa_app.command("predictions")
    def predictions_cmd(
        run_dirs: List[Path] = typer.Argument(..., help="Run directories whose ledgers hold criterion_scores."),
        stress: Optional[Path] = typer.Option(None, "--stress", help="JSON written by `coevo stress` (CASA-P4)."),
        as_json: bool = json_option(),
    ):
        """Evaluate CASA-P1..P4 (docs/casa.md) on the runs given."""
        from coevo.recipes.vgopd.predictions import evaluate_casa_predictions
        from coevo.audit.data import AuditError
        from coevo.audit.predictions import print_predictions

        for d in run_dirs:
            if not d.is_dir():
                fail(f"run directory not found: {d}")
        if stress is not None and not stress.is_file():
            fail(f"stress results not found: {stress}")
        try:
            preds = evaluate_casa_predictions(run_dirs, stress)
        except AuditError as e:
            fail(str(e))
        if not preds:
            fail("no run given has criterion_scores rows (not a CASA run)")
        emit(preds, as_json, print_predictions)

    apps["main"].command("stress")(stress)


def _fmt(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def print_stress(res: dict) -> None:
    from rich.table import Table

    t = Table(title=f"coevo stress: {res['n_entries']} entries, {res['n_answers']} adversarial answers "
                    f"(sandbox: {res['sandbox'].get('reason')}, {res['sandbox'].get('isolation', '-')})")
    for col in ("kind", "should fail", "broken", "break rate", "95% CI", "abstained", "should pass",
                "false rejects", "recomputed"):
        t.add_column(col, justify="right" if col != "kind" else "left", overflow="fold")
    for kind, v in res["by_kind"].items():
        ci = "-" if v["ci_low"] is None else f"[{_fmt(v['ci_low'])}, {_fmt(v['ci_high'])}]"
        t.add_row(kind, str(v["n"]), str(v["broken"]), _fmt(v["rate"]), ci, str(v["n_abstained"]),
                  str(v["n_should_pass"]), str(v["false_rejects"]), str(v["n_recomputed"]))
    for name in ("deterministic", "judge"):
        v = res.get(name)
        if v:
            t.add_row(f"[b]{name} (pooled)[/b]", str(v["n"]), str(v["broken"]), _fmt(v["rate"]),
                      f"[{_fmt(v['ci_low'])}, {_fmt(v['ci_high'])}]", "", "", "", "")
    from coevo.termwidth import out_console

    out_console(wide=140).print(t)  # the terminal's width or COLUMNS; 140 in a pipe
    print(f"reference (ImpossibleRubrics, CASA proposal §prediction P4): {_fmt(res['reference'][0])}-{_fmt(res['reference'][1])}; "
          f"skipped penalty criteria: {res['skipped_penalties']}")
    for b in res["break_examples"]:
        print(f"  break: {b['entry']}/{b['criterion']} ({b['kind']}, {b['family']}): {b['answer']!r}")


def print_judge_stress(res: dict) -> None:
    """The judge stress test's lines: versions, break rate with its interval, per family and endpoint."""
    a, j, b = res["attacker"], res["judge"], res["break"]

    def row(name: str, v: dict) -> str:
        ci = "-" if v["ci_low"] is None else f"[{_fmt(v['ci_low'])}, {_fmt(v['ci_high'])}]"
        return (f"  {name:<20} {v['broken']:>4}/{v['n']:<4} {_fmt(v['rate']):>7} {ci:<17} abstained {v['n_abstained']}"
                + (f", errors {v['n_errors']}" if v.get("n_errors") else ""))

    print(f"judge stress: {res['prompts']} criteria-world prompts (eval seed {res['seed']}), criterion "
          f"{res['criterion']!r}, {res['n_answers']} adversarial answers ({res['attacker_failures']} attacker failures)")
    print(f"attacker: {a.get('backend')} {a.get('model')} ({', '.join(f'{k}={v}' for k, v in a.items() if k not in ('backend', 'model'))})")
    print(f"judge:    {j.get('kind')} {j.get('model')} (config_hash={j.get('config_hash')}, "
          f"fixed={res['judge_fixed']}, versions={','.join(j.get('verdict_versions', []))})")
    print(f"break rate (judge passes, oracle fails): {b['broken']}/{b['n']} = {_fmt(b['rate'])} "
          f"[{_fmt(b['ci_low'])}, {_fmt(b['ci_high'])}] (Wilson 95%); abstained {b['n_abstained']}")
    if res.get("endpoint_calls"):  # a judge or attacker URL: its failed calls are errors, in no rate
        print(f"errors (endpoint failed after retries, left out of every rate): judge {res['judge_errors']}, "
              f"attacker {res['attacker_errors']} of {res['endpoint_calls']} endpoint calls")
    for f, v in res["by_family"].items():
        print(row(f, v))
    for f, v in res["by_endpoint"].items():
        print(row(f, v))
    sp = res["should_pass"]
    print(f"should pass (oracle passes): {sp['n']}, false rejects {sp['false_rejects']}, abstained {sp['n_abstained']}")
    for e in res["break_examples"]:
        print(f"  break: {e['entry']} ({e['family']}): {e['answer']!r}")


def run_judge_stress(attacker: str, attacker_model: Optional[str], attacker_key_env: str, judge: str,
                     judge_model: Optional[str], judge_key_env: str, prompts: int, seed: int, attack: List[str],
                     judge_unknown_rate: float, device: str, judge_timeout: float = 60.0) -> dict:
    """Build the fixed attacker and judge and run the judge stress test (one-line errors)."""
    from coevo.core.policy import BackendError
    from coevo.recipes.vgopd.casa.attack import make_attacker
    from coevo.recipes.vgopd.casa.judge_stress import judge_stress, make_judge
    from coevo.worlds.criteria import CriteriaWorld

    try:
        j = make_judge(judge, judge_model, judge_key_env, device, judge_unknown_rate, timeout_s=judge_timeout)
        shared = getattr(j, "policy", None) if attacker == judge == "smollm2" else None
        a = make_attacker(attacker, CriteriaWorld(), attacker_model, attacker_key_env, device, policy=shared)
        return judge_stress(a, j, prompts=prompts, seed=seed, families=attack or None)
    except (ValueError, BackendError) as e:  # EndpointDown: the judge or attacker is down (one line)
        fail(str(e))


def stress(
    bank: Optional[Path] = typer.Argument(None, help="Criteria bank (JSONL / YAML, docs/criteria.md). Without it: "
                                                     "the judge stress test alone (--attacker, --judge)."),
    as_json: bool = json_option(),
    out: Optional[Path] = typer.Option(None, "--out", help="Also write the JSON here (CASA-P4 reads it)."),
    family: List[str] = typer.Option([], "--family", help="Only these adversarial families (repeatable)."),
    timeout_s: float = typer.Option(60.0, "--timeout", help="Wall-clock limit of the sandboxed recomputation."),
    attacker: Optional[str] = typer.Option(None, "--attacker", help="Judge stress: the fixed attacker: tiny "
                                           "(default without BANK) | scripted | smollm2 | an OpenAI-compatible URL."),
    attacker_model: Optional[str] = typer.Option(None, "--attacker-model", help="Model name for an attacker URL."),
    attacker_key_env: str = typer.Option("OPENAI_API_KEY", "--attacker-key-env",
                                         help="Variable holding the attacker endpoint's bearer token."),
    judge: str = typer.Option("sim", "--judge", help="Judge stress: the fixed judge: sim (simulated) | smollm2 | "
                                                     "an OpenAI-compatible URL."),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="Model name for a judge URL."),
    judge_key_env: str = typer.Option("OPENAI_API_KEY", "--judge-key-env",
                                      help="Variable holding the judge endpoint's bearer token."),
    judge_timeout: float = typer.Option(60.0, "--judge-timeout", min=0.001,
                                        help="Seconds a judge URL may take to answer one call (then retried)."),
    max_error_rate: float = max_error_rate_option(),
    prompts: int = typer.Option(40, "--prompts", help="Judge stress: held-out criteria-world prompts."),
    seed: int = typer.Option(0, "--seed", help="Judge stress: the held-out prompts' seed."),
    attack: List[str] = typer.Option([], "--attack", help="Judge stress: only these attack families (repeatable)."),
    judge_unknown_rate: float = typer.Option(0.0, "--judge-unknown-rate", help="--judge sim: simulated unknown rate."),
    device: str = typer.Option("cpu", "--device", help="smollm2 attacker / judge: cpu | cuda | cuda:N."),
):
    """Break rates of a criteria bank's verifiers under adversarial answers, per verifier kind (95% CIs); and
    the judge stress test: a fixed attacker against a fixed judge on the criteria world (docs/casa.md)."""
    import json

    from coevo.recipes.vgopd.casa.stress import stress_bank
    from coevo.criteria.bank import BankError, load_bank

    if bank is None and attacker is None:
        attacker = "tiny"
    js = None
    if attacker is not None:
        js = run_judge_stress(attacker, attacker_model, attacker_key_env, judge, judge_model, judge_key_env,
                              prompts, seed, attack, judge_unknown_rate, device, judge_timeout)
    if bank is None:
        res = js
    else:
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
        if js is not None:
            res["judge_stress"] = js
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(res, indent=2, default=float))
        except OSError as e:
            fail(f"cannot write {out}: {e.strerror}")
        console.print(f"wrote {out}")
    emit(res, as_json, _printer)
    if js is not None:
        check_errors(js["judge_errors"] + js["attacker_errors"], js["endpoint_calls"], "judge / attacker",
                     max_error_rate, js.get("error_first", ""))


def _printer(res: dict) -> None:
    if res.get("test") == "judge-stress":
        return print_judge_stress(res)
    print_stress(res)
    if res.get("judge_stress"):
        print()
        print_judge_stress(res["judge_stress"])
