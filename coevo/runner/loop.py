"""The public step loop (``Loop``) and the state files it writes for resume.

Crash safety: for step s the loop (1) runs it, collecting rows in memory, (2) writes
``state/step-s.pt`` (policies, optimizers, generators, recipe state) atomically, and
(3) commits the step's rows and its ``steps`` marker in one DuckDB transaction. The
ledger's last completed step is the resume point; a state file without its commit is
simply overwritten when the step is re-run. Same seed ⇒ same numbers, resumed or not.
"""
from __future__ import annotations

import gc
import os
import shutil
from contextlib import ExitStack
from pathlib import Path

from coevo.checkpoint import CheckpointError, atomic_dir, is_stale_temp, load_legacy_pickle, load_tree, save_tree
from coevo.core.errors import CannotRun
from coevo.core.policy import BackendError
from coevo.interrupt import Interrupted, check, held, interruption
from coevo.ledger.store import Ledger
from coevo.runlock import disk_trouble
from coevo.runner.summary import metric_value


class RunError(CannotRun):
    """A run cannot start or continue (one line for the user; exit status 2)."""


class stamped:
    """``with stamped(run_dir):`` an ``Interrupted`` leaving the block names ``run_dir`` and the step a resume starts
    from (the first one not committed); a new run stopped before its config.yaml was written leaves no directory
    behind (when empty)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)

    def __enter__(self) -> "stamped":
        return self

    def __exit__(self, typ, e, tb) -> bool:
        stop = interruption(e)  # an error a signal caused is the interruption too (coevo.interrupt.interruption)
        if stop is None:
            return False
        if not (self.run_dir / "config.yaml").exists():
            try:
                self.run_dir.rmdir()  # nothing to resume
            except OSError:
                pass
        else:
            del tb  # the frames may hold a half-opened ledger: freed, so that next_step can open it
            e.__traceback__ = None  # one line is printed, never the frames
            gc.collect()
            stop.run_dir, stop.step = self.run_dir, next_step(self.run_dir)
        if stop is not e:
            raise stop from None
        return False


def next_step(run_dir: Path) -> int | None:
    """The first step the ledger has not committed (0 without a ledger); None if the ledger cannot be read."""
    path = Path(run_dir) / "ledger.duckdb"
    if not path.exists():
        return 0
    try:
        led = Ledger(path, read_only=True)
    except Exception:  # noqa: BLE001 - LedgerError, or a file cut short at creation
        return None
    try:
        return led.last_committed() + 1
    except Exception:  # noqa: BLE001 - a ledger created but never given its tables
        return 0
    finally:
        led.close()


def distinct_policies(policies: dict) -> list:
    """Each policy object once (roles may share one: ``backend.roles=shared``)."""
    return list({id(p): p for p in policies.values()}.values())


def _save_state(run_dir: Path, step: int, policies: dict, recipe) -> None:
    sd = run_dir / "state"
    sd.mkdir(exist_ok=True)
    uniq = {}
    for role, p in policies.items():
        uniq.setdefault(id(p), (role, p))
    st = {"step": step, "policies": {role: p.state() for role, p in uniq.values()},
          "aliases": {role: uniq[id(p)][0] for role, p in policies.items()}, "recipe": recipe.state_dict()}
    # a directory of data (state.json + state.safetensors), swapped in atomically; the name
    # keeps the .pt suffix of the pickle files it replaces (scripts glob state/step-*.pt)
    atomic_dir(sd / f"step-{step}.pt", lambda d: save_tree(d, st))


def _load_state(run_dir: Path, step: int, policies: dict, recipe) -> None:
    path = run_dir / "state" / f"step-{step}.pt"
    if not path.exists():
        raise RunError(f"cannot resume: state file for completed step {step} is missing ({path})")
    try:  # a file: the pickle of an older coevo, in the run directory the user named (--resume)
        st = load_legacy_pickle(path) if path.is_file() else load_tree(path)
    except CheckpointError as e:
        raise RunError(f"cannot resume: {e}") from None
    for role, p in policies.items():
        p.load_state(st["policies"][st["aliases"][role]])
    recipe.load_state_dict(st["recipe"])


def _prune_states(run_dir: Path, keep_from: int) -> None:
    for f in (run_dir / "state").glob("step-*"):
        if is_stale_temp(f):  # left by a write a crash interrupted
            shutil.rmtree(f, ignore_errors=True)
            continue
        try:
            if f.suffix == ".pt" and int(f.stem.split("-")[1]) < keep_from:
                if f.is_dir():  # renamed first: a kill mid-delete leaves a stale temp, not a broken state
                    gone = f.with_name(f"{f.name}.old-{os.getpid()}")
                    os.replace(f, gone)
                    shutil.rmtree(gone)
                else:
                    f.unlink()
        except (ValueError, IndexError):
            pass


class Loop:
    """The one step loop: runs a recipe's plan one step transaction at a time.

    For each step: the step function (``spec.run``) collects rows in memory; with a ``run_dir`` the
    step's state (policies, optimizers, RNG streams, recipe state) is written atomically to
    ``state/step-N.pt``; then the rows and the ``steps`` marker commit in one ledger
    transaction.  After each round's evaluation the policies are checkpointed
    (``checkpoints/round-N``).  ``resume()`` loads the state of the last committed step, so a run
    killed at any point continues to the same ledger.  Without a ``run_dir`` (tests, scripts)
    nothing but the ledger is written.  The runner, the tests and ``scripts/gpu_check.py`` all run
    recipes through it.
    """

    def __init__(self, led: Ledger, run_id: str, recipe, policies: dict, run_dir: Path | None = None,
                 tracker=None, quiet: bool = True, note_columns=()) -> None:
        self.led, self.run_id, self.recipe, self.policies = led, run_id, recipe, policies
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.tracker, self.quiet, self.note_columns = tracker, quiet, tuple(note_columns)
        self.plan = recipe.plan()

    def resume(self) -> int:
        """Load the state of the last committed step (needs ``run_dir``); -1 when none."""
        last = self.led.last_completed_step(self.run_id)
        if last >= 0:
            if self.run_dir is None:
                raise RunError("cannot resume without a run directory (the state files live there)")
            _load_state(self.run_dir, last, self.policies, self.recipe)
        return last

    def todo(self) -> list:
        last = self.led.last_completed_step(self.run_id)
        return [s for s in self.plan if s.step > last]

    def run(self, steps=None, on_step=None) -> list[tuple]:
        """Run ``steps`` (default: every planned step not yet committed); ``on_step(spec, metrics)``
        after each commit.  Returns [(spec, metrics)] of the steps run."""
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        todo = self.todo() if steps is None else list(steps)
        done: list[tuple] = []
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TextColumn("{task.fields[info]}"), disable=self.quiet,
                      transient=False, console=Console(stderr=True)) as bar:  # progress on stderr, results on stdout
            task = bar.add_task("coevo", total=len(self.plan), completed=len(self.plan) - len(todo), info="")
            for spec in todo:
                check()  # a signal whose Interrupted a library swallowed stops the run here, between two steps
                bar.update(task, description=f"round {spec.round} {spec.phase} {spec.phase_step + 1}")
                metrics = self.step(spec)
                done.append((spec, metrics))
                if on_step is not None:
                    on_step(spec, metrics)
                bar.update(task, advance=1, info=_short(metrics, self.note_columns))
        return done

    def step(self, spec) -> dict:
        """One step: run, save state, commit; checkpoints after a round's evaluation."""
        from coevo import timing  # per-stage seconds of each step (steps.stage_seconds_json)

        uniq = distinct_policies(self.policies)
        seen = [len(getattr(p, "errors", None) or []) for p in uniq]
        before = [_calls(p) for p in uniq]
        where = f"step {spec.step} (round {spec.round} {spec.phase})"
        if spec.run is None:
            raise TypeError(f"{where} holds no step function: build the plan with "
                            f"round_plan(rounds, [(phase, function, steps), ...], evaluate)")
        resume = f"`coevo run --resume {self.run_dir}`" if self.run_dir else "a rerun"
        # SIGINT / SIGTERM (coevo.interrupt) drop the step while it runs; from its state file on it completes
        # (commit, pruning, checkpoints) and the signal waits for its end
        with ExitStack() as completing:
            try:
                with timing.record(), self.led.step(self.run_id, spec.step, spec.round, spec.phase,
                                                    spec.phase_step) as w:
                    with timing.stage("reward"):  # the recipe's own work, less the shared stages inside it
                        metrics = spec.run(spec, w)  # the recipe's step function (coevo.core.plan.StepSpec)
                    errs = [e for p, n in zip(uniq, seen) for e in (getattr(p, "errors", None) or [])[n:]]
                    tally = _tally(uniq, before)
                    if tally["calls"]:  # the step's calls to an inference server (openai backend)
                        metrics["backend_calls"] = tally["calls"]
                    if errs:  # inference-server failures of this step, with their reasons (openai backend)
                        metrics["backend_errors"] = {"n": len(errs), "first": errs[:5], **tally}
                        _check_endpoint(metrics["backend_errors"], where)
                    _check_judges(w.rows.get("verdicts", []), where)
                    w.metrics = metrics
                    w.versions = {role: p.version for role, p in self.policies.items()}
                    completing.enter_context(held())
                    if self.run_dir is not None:
                        with timing.stage("state"):
                            _save_state(self.run_dir, spec.step, self.policies, self.recipe)
            except BackendError as e:
                raise RunError(f"{where} failed: {e}. Nothing of this step was written; the steps before it are "
                               f"saved: fix the cause, then {resume}") from None
            except Exception as e:  # noqa: BLE001 - disk trouble becomes one line, the rest is re-raised
                msg = disk_trouble(e, self.run_dir) if self.run_dir is not None else None
                if msg is None:
                    raise
                raise RunError(f"{where} not saved: {msg}; the steps before it are saved: free space, then "
                               f"{resume}") from None
            self._after_commit(spec)
        return metrics

    def _after_commit(self, spec) -> None:
        if self.run_dir is not None:
            _prune_states(self.run_dir, spec.step)
        if self.tracker is not None:  # after the commit: never raises, the ledger stays the record
            self.tracker.sync(self.led, self.run_id)
        if spec.phase == "eval" and spec.round > 0 and self.run_dir is not None:
            ck = self.run_dir / "checkpoints" / f"round-{spec.round}"
            ck.mkdir(parents=True, exist_ok=True)
            for role, p in self.policies.items():
                p.save(ck / f"{role}.pt")  # a checkpoint directory (see docs/real-models.md)


def _calls(p) -> tuple[int, int]:
    """(calls, failed calls) a policy made so far: sampling calls and weight syncs (openai backend; else 0)."""
    st = getattr(p, "stats", None) or {}
    return (int(st.get("calls", 0)) + int(st.get("syncs", 0)), int(st.get("failed", 0)) + int(st.get("sync_failures", 0)))


def _tally(uniq: list, before: list) -> dict:
    now = [_calls(p) for p in uniq]
    return {"calls": sum(c - b[0] for (c, _), b in zip(now, before)),
            "failed": sum(f - b[1] for (_, f), b in zip(now, before))}


def _check_endpoint(be: dict, where: str) -> None:
    """Every model-server call of the step failed: ``EndpointDown`` (the step is not committed; one line).
    Some failed: a warning on stderr with the count (the step's ``backend_errors`` keeps it, the summary
    sums it)."""
    import sys

    from coevo.core.verdict import EndpointDown, partial_warning

    first = next((e for e in be["first"] if e.get("kind") == "sample"), be["first"][0])
    cause = str(first.get("reason", "")).split(" | ")[-1]
    if first.get("kind") == "sync":
        cause = f"{first.get('server')}: weight sync {cause}"
    if be["calls"] and be["failed"] >= be["calls"]:
        raise EndpointDown(f"model server {cause} ({be['failed']} of {be['calls']} calls failed after retries)")
    print(partial_warning(be["failed"], be["calls"], "model server", cause, where), file=sys.stderr)


def _check_judges(rows: list, where: str) -> None:
    """A verifier kind whose every verdict of the step is an endpoint error (a judge that is down):
    ``EndpointDown``, one line; some: a warning with the count (the ledger keeps the reason)."""
    import sys

    from coevo.core.verdict import ERROR_REASONS, EndpointDown, partial_warning

    by_kind: dict = {}
    for r in rows:
        n = by_kind.setdefault(r.get("verifier_kind") or "?", [0, 0])
        n[0] += 1
        n[1] += r.get("value") is None and r.get("reason") in ERROR_REASONS
    for kind, (n, bad) in by_kind.items():
        if bad and bad == n:
            raise EndpointDown(f"judge ({kind}, verify.options.base_url): judge-unavailable after retries on "
                               f"{bad} of {n} verdicts")
        if bad:
            print(partial_warning(bad, n, f"judge ({kind})", "judge-unavailable", where), file=sys.stderr)


def _short(m: dict, columns=()) -> str:
    """The progress bar's note on a step: the first of the recipe's summary columns it measured."""
    for k in columns:
        if metric_value(m.get(k)) is not None:
            return f"{k}={metric_value(m[k]):.3f}"
    if "eval" in m:
        return f"eval={m['eval'].get('greedy', {}).get('overall', float('nan')):.3f}"
    return ""
