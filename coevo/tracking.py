"""Experiment tracking: every committed step's numbers also go to TensorBoard (and, optionally, W&B
offline). The ledger stays the record; a tracker only copies from it.

After each step's transaction commits, the runner calls ``Tracker.sync(led, run_id)``, which logs
every committed step not logged yet, read back from the ledger (``views.step_metrics``):

* the step's ``metrics_json`` numbers, flattened with ``/`` (an estimate ``{value, se, ...}`` is
  logged as ``name`` = value, ``name/se``, ``name/ci_low`` ...; non-finite numbers, booleans and
  lists are left out). Eval steps hold ``eval/<mode>/overall`` and ``eval/<mode>/by_difficulty/<L>``;
* ``run/step_seconds`` (the ``steps.seconds`` column);
* ``coevo/logged_step`` = the step, written last and flushed: the mark of a step fully on disk.

In ``RUN/tensorboard/audit`` (a second TensorBoard run): ``audit/<instrument>`` and ``.../se``, the
per-step series of the audit (``coevo.audit.run_audit.assemble_run``: the series the report plots),
written when a round's eval step commits (one audit per round, not per step: it reads the whole
ledger), with its own mark.

Resume: ``open_tracker`` reads the event files already in each directory (``read_scalars``),
takes the last step with its mark as done, starts a new event file with a restart at that + 1
(TensorBoard hides the partial events of an interrupted step) and replays the committed steps
after it from the ledger. So a kill at any point neither loses nor duplicates a point.

A tracker that fails (missing package, full disk) prints one warning line and stops tracking;
the run goes on. W&B runs only with ``mode="offline"`` (``WANDB_MODE=offline``), files under
``RUN/wandb``; on resume it logs the steps after the ledger's last one at open.
"""
from __future__ import annotations

import math
import os
import struct
import sys
import time
from pathlib import Path

from coevo.ledger import views

__all__ = ["Tracker", "open_tracker", "flatten_metrics", "step_scalars", "read_scalars", "TB_DIR", "MARK"]

TB_DIR = "tensorboard"
MARK = "coevo/logged_step"


def flatten_metrics(m: dict, prefix: str = "") -> dict[str, float]:
    """The numbers of a step's ``metrics_json``: nested keys joined by ``/``; ``{"value": v, ...}``
    gives ``prefix`` = v. Booleans, strings, lists and non-finite numbers are left out."""
    out: dict[str, float] = {}
    for k, v in m.items():
        name = prefix if k == "value" and prefix else (f"{prefix}/{k}" if prefix else str(k))
        if isinstance(v, dict):
            out.update(flatten_metrics(v, name))
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out[name] = float(v)
    return out


def step_scalars(row: dict) -> dict[str, float]:
    """All scalars logged for one ``views.step_metrics`` row (except the audit series)."""
    out = flatten_metrics(row["metrics"])
    if row.get("seconds") is not None:
        out["run/step_seconds"] = float(row["seconds"])
    return out


def audit_series(run_dir: Path, led, run_id: str) -> dict[int, dict[str, float]]:
    """{step: {"audit/<instrument>": value, ".../se": se}} from the audit's per-step series."""
    from coevo.audit.run_audit import assemble_run

    run = assemble_run(run_dir, led, run_id)
    out: dict[int, dict[str, float]] = {}
    for key, ins in run["instruments"].items():
        if ins.get("status") != "ok":
            continue
        for p in (ins.get("extra") or {}).get("per_step") or []:
            d = out.setdefault(int(p["step"]), {})
            for name, v in ((f"audit/{key}", p.get("value")), (f"audit/{key}/se", p.get("se"))):
                if isinstance(v, (int, float)) and math.isfinite(v):
                    d[name] = float(v)
    return out


# ---------------------------------------------------------------------- reading event files
def _records(path: Path):
    """The records of a TFRecord file; a truncated last record (a killed writer) ends the file."""
    data = path.read_bytes()
    i = 0
    while i + 12 <= len(data):
        (n,) = struct.unpack("<Q", data[i:i + 8])
        if i + 12 + n + 4 > len(data):
            return
        yield data[i + 12:i + 12 + n]
        i += 12 + n + 4


def read_scalars(logdir: Path) -> dict[str, list[tuple[int, float]]]:
    """{tag: [(step, value), ...]} of the event files in ``logdir`` in name order, with
    TensorBoard's rule for restarts: a ``SessionLog.START`` at step s (``purge_step``) hides every
    earlier point with step >= s. Values are float32 (TensorBoard's ``simple_value``)."""
    from tensorboardX.proto.event_pb2 import Event, SessionLog

    files = []
    for f in Path(logdir).glob("events.out.tfevents.*"):
        evs = []
        for rec in _records(f):
            ev = Event()
            ev.ParseFromString(rec)
            evs.append(ev)
        files.append((f.name, evs))
    out: dict[str, list[tuple[int, float]]] = {}
    for _, evs in sorted(files, key=lambda t: t[0]):  # by name, as TensorBoard reads them (name = second first)
        for ev in evs:
            if ev.HasField("session_log") and ev.session_log.status == SessionLog.START:
                out = {t: [(s, v) for s, v in pts if s < ev.step] for t, pts in out.items()}
            elif ev.HasField("summary"):
                for val in ev.summary.value:
                    if val.HasField("simple_value"):
                        out.setdefault(val.tag, []).append((int(ev.step), float(val.simple_value)))
    return out


# ---------------------------------------------------------------------- writers
class _TensorBoard:
    """One TensorBoard run directory, written synchronously (tensorboardX's ``EventsWriter``: the
    ``SummaryWriter`` writes from a thread, whose errors would print tracebacks and whose full queue
    would block the run). ``done`` = the last step whose mark is on disk."""

    def __init__(self, logdir: Path):
        from tensorboardX.event_file_writer import EventsWriter
        from tensorboardX.proto.event_pb2 import Event, SessionLog

        self.dir, self.Event = logdir, Event
        marks = read_scalars(self.dir).get(MARK, []) if self.dir.exists() else []
        self.done = max((s for s, _ in marks), default=-1)
        self.dir.mkdir(parents=True, exist_ok=True)
        while any(self.dir.glob(f"events.out.tfevents.{int(time.time())}.*")):
            time.sleep(0.05)  # TensorBoard reads files in name order: the new one must sort after the old ones
        # a file name of its own (tensorboardX names files by the second: a quick reopen would truncate one)
        self.w = EventsWriter(str(self.dir / "events"), f".{os.getpid()}.{time.time_ns()}")
        if marks:  # TensorBoard's restart rule: hide the points at steps >= purge of the earlier files
            self.w.write_event(Event(wall_time=time.time(), step=self.done + 1,
                                     session_log=SessionLog(status=SessionLog.START)))
        self.w.flush()

    def log(self, items: list[tuple[int, dict[str, float]]]) -> None:
        """The scalars of steps in increasing order, then the mark at the last step, flushed."""
        from tensorboardX.summary import scalar

        last = items[-1][0]
        for step, scalars in [*items, (last, {MARK: float(last)})]:
            for tag, v in scalars.items():
                self.w.write_event(self.Event(wall_time=time.time(), step=step, summary=scalar(tag, v)))
        self.w.flush()
        self.done = last

    def close(self) -> None:
        self.w.close()


class _WandB:
    def __init__(self, run_dir: Path, run_id: str, project: str, config: dict, done: int):
        os.environ["WANDB_MODE"] = "offline"  # before the import: never the network
        import wandb

        (run_dir / "wandb").mkdir(exist_ok=True)
        safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in run_id)
        self.run = wandb.init(project=project, dir=str(run_dir), id=safe, resume="allow", mode="offline",
                              config=config)
        self.done = done

    def log(self, items: list[tuple[int, dict[str, float]]]) -> None:
        for step, scalars in items:
            self.run.log(dict(scalars), step=step)
        self.done = items[-1][0]

    def close(self) -> None:
        self.run.finish()


class Tracker:
    """Copies committed steps from the ledger to the enabled writers; never raises. ``audit``: the
    writer of the audit's per-step series (``RUN/tensorboard/audit``), synced when a round's eval
    step commits (every recipe's plan ends with one) and at open."""

    def __init__(self, run_dir: Path, writers: dict, audit=None):
        self.run_dir, self.writers = Path(run_dir), dict(writers)
        if audit is not None:
            self.writers["audit"] = audit

    def _drop(self, name: str, e: BaseException) -> None:
        print(f"warning: tracking ({name}) stopped, the ledger keeps every number: {e!r}", file=sys.stderr)
        w = self.writers.pop(name)
        try:
            w.close()
        except Exception:  # noqa: BLE001 - already failing
            pass

    def sync(self, led, run_id: str, opening: bool = False) -> None:
        """Log every committed step after each writer's last logged one."""
        try:
            lo = min((w.done for w in self.writers.values()), default=None)
            rows = [] if lo is None else [r for r in views.step_metrics(led, run_id) if r["step"] > lo]
        except Exception as e:  # noqa: BLE001 - tracking must not kill the run
            for name in list(self.writers):
                self._drop(name, e)
            return
        for name, w in list(self.writers.items()):
            new = [r for r in rows if r["step"] > w.done]
            try:
                if name != "audit":
                    for r in new:
                        w.log([(int(r["step"]), step_scalars(r))])
                elif new and (opening or any(r["phase"] == "eval" for r in new)):
                    series = audit_series(self.run_dir, led, run_id)
                    w.log([(int(r["step"]), series.get(int(r["step"]), {})) for r in new])
            except Exception as e:  # noqa: BLE001
                self._drop(name, e)

    def close(self) -> None:
        for name, w in list(self.writers.items()):
            try:
                w.close()
            except Exception as e:  # noqa: BLE001
                print(f"warning: tracking ({name}) not closed cleanly: {e!r}", file=sys.stderr)
        self.writers = {}


def _start(name: str, make):
    try:
        return make()
    except Exception as e:  # noqa: BLE001 (ImportError, OSError, a corrupt file...)
        hint = f" (pip install {'wandb' if name == 'wandb' else 'tensorboardX'})" if isinstance(e, ImportError) else ""
        print(f"warning: tracking ({name}) off, the ledger keeps every number: {e!r}{hint}", file=sys.stderr)
        return None


def open_tracker(cfg, run_dir: Path, led, run_id: str) -> Tracker:
    """The run's tracker (``cfg.tracking``), with the committed steps not logged yet already logged
    (a resume). A writer that cannot start prints one warning line and is left out."""
    t = cfg.tracking
    run_dir = Path(run_dir)
    writers = {}
    if t.tensorboard:
        writers["tensorboard"] = _start("tensorboard", lambda: _TensorBoard(run_dir / TB_DIR))
    if t.wandb:
        writers["wandb"] = _start("wandb", lambda: _WandB(run_dir, run_id, t.wandb_project,
                                                          cfg.model_dump(mode="json"), led.last_completed_step(run_id)))
    audit = None
    if t.tensorboard and t.audit_instruments and writers["tensorboard"] is not None:
        audit = _start("tensorboard audit", lambda: _TensorBoard(run_dir / TB_DIR / "audit"))
    tr = Tracker(run_dir, {k: w for k, w in writers.items() if w is not None}, audit)
    tr.sync(led, run_id, opening=True)
    return tr
