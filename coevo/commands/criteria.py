"""``coevo criteria validate BANK`` and ``coevo criteria derive``: the criteria bank format
and derive-then-verify construction (coevo/criteria, docs/criteria.md)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import UserError, check_out_file, fail
from coevo.commands.output import emit, json_option

app = typer.Typer(help="Criteria banks: validate a bank file, derive a bank with an annotator policy.",
                  no_args_is_help=True)


@app.command()
def validate(bank: Path = typer.Argument(..., help="Bank file (.jsonl, or .yaml / .yml)."), as_json: bool = json_option()):
    """Validate a criteria bank; print counts by kind and axis, or one error line (exit 2)."""
    from coevo.criteria.bank import BankError, bank_summary, load_bank

    try:
        entries = load_bank(bank)
    except BankError as e:
        fail(str(e))
    emit({"bank": str(bank), "ok": True, **bank_summary(entries)}, as_json)


def derive_world(world: str, options: List[str]):
    """The world of ``--world`` with ``--option key=value`` (JSON values) set."""
    from coevo.worlds import WorldNotFound, world_class

    if world != "criteria":
        raise UserError(f"--world {world!r}: derive supports the criteria world only")
    opts = {}
    for kv in options:
        k, eq, v = kv.partition("=")
        if not eq:
            raise UserError(f"--option {kv!r}: expected key=value")
        try:
            opts[k] = json.loads(v)
        except json.JSONDecodeError:
            opts[k] = v
    try:
        return world_class(world)(**opts)
    except (WorldNotFound, TypeError, ValueError) as e:
        raise UserError(f"--world {world}: {e}") from None


@app.command()
def derive(
    world: str = typer.Option("criteria", help="World whose prompts are annotated (criteria)."),
    annotator: str = typer.Option(..., help="oracle | a shipped asset (criteria_expert_units ...) | checkpoint dir"),
    n: int = typer.Option(24, min=1, help="Number of prompts."),
    split: str = typer.Option("eval", help="eval (the held-out prompts) | train"),
    seed: int = typer.Option(0),
    out: Path = typer.Option(..., help="Bank JSONL to write."),
    rejections: Optional[Path] = typer.Option(None, help="Rejections JSONL (default: OUT with .rejections.jsonl)."),
    include: Optional[Path] = typer.Option(None, help="A bank whose entries are written first (hand-written)."),
    option: List[str] = typer.Option([], "--option", help="World option key=value (repeatable)."),
    as_json: bool = json_option(),
):
    """Derive-then-verify: the annotator solves; only answers passing the endpoint check
    give criteria (their intermediate steps); rejected candidates are kept with reasons."""
    from coevo.criteria.bank import BankError, load_bank, write_bank
    from coevo.commands.criteria_derive import annotate, derive_bank

    try:
        if split not in ("eval", "train"):
            raise UserError(f"--split {split!r}: expected eval or train")
        check_out_file(out)
        check_out_file(rejections, "--rejections")
        w = derive_world(world, option)
        w.eval_n = max(w.eval_n, n)
        tasks = list(w.eval_set())[:n] if split == "eval" else w.sample_tasks(n, seed)
        head = load_bank(include) if include else []
        try:
            answers = annotate(w, tasks, annotator)
        except ValueError as e:
            raise UserError(str(e)) from None
        entries, rejected = derive_bank(w, tasks, answers, annotator=annotator)
    except (UserError, BankError) as e:
        fail(str(e))
    rej_path = rejections or out.with_name(out.name.replace(".jsonl", "") + ".rejections.jsonl")
    write_bank(list(head) + entries, out)
    with Path(rej_path).open("w") as f:
        for r in rejected:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    reasons: dict = {}
    for r in rejected:
        reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    emit({"out": str(out), "rejections": str(rej_path), "prompts": len(tasks), "accepted": len(entries),
               "included": len(head), "rejected_candidates": len(rejected), "by_reason": reasons,
               "derived_checkpoints_true": _truth_share(entries)}, as_json)


def _truth_share(entries) -> Optional[float]:
    vals = [v for e in entries for v in (e.meta.get("truth") or {}).values()]
    return round(sum(vals) / len(vals), 4) if vals else None


def register(apps: dict) -> None:
    apps["main"].add_typer(app, name="criteria")
