"""`coevo certify`: the zero-training certificate of a frozen model on a task pool (RGBC proposal §method step 1)."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import UserError, check_errors, check_out_file, console, fail, max_error_rate_option
from coevo.commands import model_options as mo
from coevo.commands.output import emit, json_option


def _arithmetic_tasks(n: int, seed: int, levels: str):
    import random

    from coevo.worlds.arithmetic import LEVELS, evaluate, generate, task_id_for
    from coevo.core.world import Task

    want = [lv.strip() for lv in levels.split(",") if lv.strip()]
    bad = [lv for lv in want if lv not in LEVELS]
    if bad or not want:
        raise UserError(f"--levels must name arithmetic levels ({', '.join(LEVELS)}), got {levels!r}")
    rng = random.Random(seed)
    tasks = []
    for i in range(n):
        lv = want[i % len(want)]
        q = generate(lv, rng)
        tasks.append(Task(task_id=task_id_for(q, f"certify{i}"), question=q, reference=str(evaluate(q)),
                          meta={"difficulty": lv}))
    return tasks


def _world(name: str, opts):
    if name == "arithmetic":
        from coevo.worlds.arithmetic import ArithmeticWorld

        return ArithmeticWorld()
    if name == "math":
        return opts.math_world()
    raise UserError(f"--world {name!r}: expected math | arithmetic")


def register(apps: dict) -> None:
    @apps["main"].command("certify")
    def certify_cmd(
        tasks_file: Optional[Path] = typer.Argument(None, help="JSONL with question + answer per line (omit with --arithmetic N)."),
        world: str = typer.Option("arithmetic", "--world", help="arithmetic | math (prompts, answer extraction, verifier)."),
        arithmetic: int = typer.Option(0, "--arithmetic", help="Generate N arithmetic tasks instead of a file."),
        levels: str = typer.Option("L3", "--levels", help="Arithmetic levels of generated tasks, comma-separated."),
        k: int = typer.Option(4, "--k", min=2, help="Rollouts per group (screen and confirm)."),
        batch: int = typer.Option(32, "--batch", min=1, help="Tasks per batch for the batch bootstrap."),
        truth_samples: int = typer.Option(0, "--truth-samples", min=0, help="Also estimate each task's pass rate from N extra samples."),
        max_new_tokens: int = typer.Option(64, min=1, help="Completion length limit."),
        limit: Optional[int] = typer.Option(None, min=1, help="Only the first N tasks of the file."),
        seed: int = typer.Option(0),
        html_out: Optional[Path] = typer.Option(None, "--html", help="Also write the certificate as HTML."),
        model: str = mo.option("model"),
        checkpoint: Optional[Path] = mo.option("checkpoint"),
        prompt_style: str = mo.option("prompt_style"),
        answer_extraction: str = mo.option("answer_extraction"),
        temperature: float = mo.option("temperature"),
        top_p: float = mo.option("top_p"),
        device: str = mo.option("device"),
        server: List[str] = mo.option("server"),
        api_key_env: str = mo.option("api_key_env"),
        server_timeout: float = mo.option("server_timeout"),
        max_error_rate: float = max_error_rate_option(),
        as_json: bool = json_option(),
    ):
        """Zero-training certificate: screen/confirm groups with a frozen model, kappa-bar with intervals,
        the null-model fit error, nu-bar and P1's verdict."""
        from coevo.audit.certify import CertifyError
        from coevo.stages.certify import certify, pass_rates
        from coevo.stages.step import StepContext
        from coevo.core.policy import BackendError, SamplingParams
        from coevo.verify.run import make_run_verifier
        from coevo.verify.pool import default_pool

        try:
            opts = mo.from_cli(model=model, checkpoint=checkpoint, device=device, server=server,
                               api_key_env=api_key_env, server_timeout=server_timeout, temperature=temperature, top_p=top_p,
                               prompt_style=prompt_style, answer_extraction=answer_extraction)
            if (tasks_file is None) == (arithmetic <= 0):
                raise UserError("give a TASKS.jsonl file or --arithmetic N (one of the two)")
            if arithmetic and world != "arithmetic":
                raise UserError(f"--world {world!r} with --arithmetic N: generated tasks are arithmetic")
            check_out_file(html_out, "--html")
            w = _world("arithmetic" if arithmetic else world, opts)
            if arithmetic:
                tasks = _arithmetic_tasks(arithmetic, seed, levels)
            else:
                from coevo.worlds.math import load_jsonl_tasks

                if not tasks_file.is_file():
                    raise UserError(f"tasks file not found: {tasks_file}")
                try:
                    tasks = load_jsonl_tasks(tasks_file)[:limit] if limit else load_jsonl_tasks(tasks_file)
                except ValueError as e:
                    raise UserError(str(e)) from None
            pol = opts.policy("coevo certify", w.name, seed=seed)
            verifier = make_run_verifier(None, None, w, pool=default_pool())
            sp = SamplingParams(temperature=opts.temperature, top_p=opts.top_p, max_new_tokens=max_new_tokens, stream="audit")
            ctx = StepContext.of(w, verifier, sp)
            truth = pass_rates(ctx, pol, tasks, truth_samples) if truth_samples > 0 else None
            cert = certify(ctx, pol, tasks, k=k, batch=batch, truth_p=truth, seed=seed, progress=console.print)
        except (UserError, CertifyError, BackendError) as e:  # EndpointDown: every call failed (one line)
            fail(str(e))
        except Exception as e:  # noqa: BLE001 - model loading etc. become one line
            fail(f"{type(e).__name__}: {e}")
        if truth is not None:
            cert["truth"]["estimated_from_samples"] = truth_samples
        if html_out is not None:
            from coevo.report.certify import certificate_html

            html_out.write_text(certificate_html(cert))
        emit(cert, as_json, _print_certificate)
        e = cert["errors"]
        check_errors(e["failed"], e["calls"], "model server", max_error_rate, e["first"])


def _print_certificate(cert: dict) -> None:
    kb = cert["kappa_bar"]
    print(f"kappa-bar {kb['value']:.3f} [{kb['ci_low']:.3f}, {kb['ci_high']:.3f}] n={kb['n']}; "
          f"null-model fit error {cert['null_model']['fit_error']:.4f}; P1: {cert['p1']['verdict']}")
    e = cert.get("errors") or {}
    if e.get("calls"):  # model-server calls (--server) that failed after retries: errors, not wrong answers
        print(f"errors: {e['failed']} of {e['calls']} sampling calls failed after retries; "
              f"{e.get('excluded_tasks', 0)} tasks left out of every number")
