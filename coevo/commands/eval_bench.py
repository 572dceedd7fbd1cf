"""``coevo eval``: accuracy (greedy), mean@k and Cover-EM of a model on a local JSONL benchmark
(logic: coevo/evaluate.py; model options shared with certify and eval-qa: model_options.py)."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import UserError, check_errors, fail, max_error_rate_option
from coevo.commands import model_options as mo
from coevo.commands.output import emit, json_option


def _world(name: str, opts):
    if name == "math":  # built before the model: a bad option fails fast
        return opts.math_world()
    if name == "arithmetic":
        from coevo.worlds.arithmetic import ArithmeticWorld

        return ArithmeticWorld()
    raise UserError(f"--world {name!r}: expected math | arithmetic")


def _print(res: dict, k: int) -> None:
    for key in ("accuracy_greedy", "cover_em_greedy", f"mean@{k}", f"cover_em@{k}"):
        if key in res:
            print(f"{key}: " + ("-" if res[key] is None else f"{res[key]:.3f}"))
    for tag in ("greedy", f"@{k}"):
        if f"errors_{tag}" in res:  # failed server calls: errors, left out of the accuracy above
            print(f"errors_{tag}: {res[f'errors_{tag}']} of {res[f'calls_{tag}']}")


def _errors(res: dict) -> tuple[int, int, str]:
    tags = [key[len("errors_"):] for key in res if key.startswith("errors_")]
    first = next((res[f"error_first_{t}"] for t in tags if f"error_first_{t}" in res), "")
    return sum(res[f"errors_{t}"] for t in tags), sum(res[f"calls_{t}"] for t in tags), first.split(" | ")[-1]


def _check_file(path: Path, greedy: bool, k: int) -> None:
    """The questions read before the model loads: a bad file is one line at once."""
    from coevo.worlds.math import load_jsonl_tasks

    try:
        if not load_jsonl_tasks(path):
            raise UserError(f"{path}: no questions")
    except ValueError as e:
        raise UserError(str(e)) from None
    if not greedy and k <= 0:
        raise UserError("nothing to do: --no-greedy and --k 0")


def eval_cmd(
    file: Optional[Path] = typer.Option(None, "--file", "-f", help="JSONL with question + answer(s) (default: shipped "
                                                                    "20-question math sample)."),
    world: str = typer.Option("math", "--world", help="math | arithmetic (prompt + answer extraction)."),
    k: int = typer.Option(0, "--k", min=0, help="Also report mean@k and Cover-EM@k with k samples per question."),
    greedy: bool = typer.Option(True, "--greedy/--no-greedy", help="Greedy accuracy (one completion per question)."),
    max_new_tokens: int = typer.Option(512, min=1, help="Completion length limit."),
    limit: Optional[int] = typer.Option(None, min=1, help="Only the first N questions."),
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
    """Accuracy (greedy), mean@k and Cover-EM of a model on a local JSONL benchmark; never downloads."""
    from coevo.core.policy import BackendError
    from coevo.evaluate import EvalError, evaluate_jsonl
    from coevo.worlds.math import SAMPLE_EVAL

    try:
        opts = mo.from_cli(model=model, checkpoint=checkpoint, device=device, server=server, api_key_env=api_key_env,
                           server_timeout=server_timeout, temperature=temperature, top_p=top_p, prompt_style=prompt_style,
                           answer_extraction=answer_extraction)
        path = file or SAMPLE_EVAL
        if not path.is_file():
            raise UserError(f"eval file not found: {path}")
        _check_file(path, greedy, k)
        w = _world(world, opts)
        pol = opts.policy("coevo eval", w.name)
        res = evaluate_jsonl(pol, w, path, k=k, greedy=greedy, temperature=opts.temperature, top_p=opts.top_p,
                             max_new_tokens=max_new_tokens, limit=limit)
    except (EvalError, UserError, BackendError) as e:  # EndpointDown: every call failed (one line)
        fail(str(e))
    except Exception as e:  # noqa: BLE001 - model loading errors etc. become one line
        fail(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    emit(res, as_json, lambda r: _print(r, k))
    n_err, n_calls, cause = _errors(res)
    check_errors(n_err, n_calls, "model server", max_error_rate, cause)


def register(apps: dict) -> None:
    apps["main"].command("eval")(eval_cmd)
