"""What an experiment declares: a grid of runs (arms x seeds), the resources of each run, the
claims its analysis tests, and optional extra tables.

An experiment never runs anything itself: ``coevo.experiments.engine`` turns the grid into run
directories (each a normal, deterministic ``coevo run``), then hands the finished runs to the
claims (``coevo.experiments.claims``).  Nothing here knows a recipe or a role: an arm is a
preset plus ``--set`` overrides, exactly what a user would type.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

__all__ = ["Arm", "Calibration", "Resources", "RunSpec", "Runs", "Experiment", "resources_for", "GPU_BACKENDS"]

GPU_BACKENDS = ("hf", "openai")  # presets on these backends get a GPU per run on a Ray cluster


@dataclass(frozen=True)
class Resources:
    """What one run asks the scheduler for (a Ray task's ``num_cpus`` / ``num_gpus``)."""

    cpus: float = 1.0
    gpus: float = 0.0


@dataclass(frozen=True)
class Arm:
    """One arm: a preset (name or YAML path) and ``--set`` overrides (``key=value``)."""

    name: str
    preset: str = "cpu"
    overrides: Tuple[str, ...] = ()
    resources: Optional[Resources] = None  # None: resources_for(preset)
    max_seeds: Optional[int] = None  # None: every seed of the grid; n: only the first n (a secondary arm)


@dataclass(frozen=True)
class Calibration:
    """A setting chosen to reach a magnitude (a world parameter, a budget scale), and the seeds it was
    chosen on: ``seeds`` maps each config key (``seed``, ``world.options.seed``, ``crossfit.fold_seed``)
    to the values the calibration runs used.  ``Experiment.grid`` refuses an evaluation run whose
    resolved config takes any of those values under any of those keys (held-out calibration)."""

    setting: str  # what was chosen, as a --set: "world.options.misread_rate=0.8"
    target: str  # the magnitude it was chosen to reach, in words
    seeds: Tuple[Tuple[str, Tuple[int, ...]], ...]
    record: str = ""  # where the calibration is written up (docs/..., a commit)

    @classmethod
    def on(cls, setting: str, target: str, seeds: Dict[str, Sequence[int]], record: str = "") -> "Calibration":
        return cls(setting, target, tuple((k, tuple(int(v) for v in vals)) for k, vals in seeds.items()), record)

    def as_dict(self) -> dict:
        return {"setting": self.setting, "target": self.target, "seeds": {k: list(v) for k, v in self.seeds},
                "record": self.record}


@dataclass(frozen=True)
class RunSpec:
    """One cell of the grid: an arm at a seed, with the budget's overrides applied."""

    arm: str
    seed: int
    preset: str
    overrides: Tuple[str, ...]
    resources: Resources

    @property
    def name(self) -> str:
        return f"{self.arm}-s{self.seed}"

    def run_args(self) -> List[str]:
        """``coevo run`` arguments after ``--out DIR -q`` (seed last: it wins)."""
        args = ["--preset", self.preset]
        for o in self.overrides:
            args += ["--set", o]
        return args + ["--set", f"seed={self.seed}"]


def _preset_backend(preset: str) -> tuple:
    """``(backend.kind, backend.options.device)`` of a preset (``("tiny", "cpu")`` when it cannot be
    read): through ``coevo.config.load_config`` (wherever presets live), else the YAML file itself."""
    try:
        from coevo.config import load_config

        b = load_config(preset, None, []).backend
        return str(b.kind), str((b.options or {}).get("device") or "cpu")  # the hf roles default: cpu
    except Exception:  # noqa: BLE001 - a preset the loader refuses here still gets its YAML read
        pass
    import yaml

    path = Path(preset)
    if not path.suffix:
        from coevo.config import PRESET_DIR

        path = Path(PRESET_DIR) / f"{preset}.yaml"
    try:
        b = (yaml.safe_load(path.read_text()) or {}).get("backend") or {}
    except (OSError, yaml.YAMLError, AttributeError):
        return "tiny", "cpu"
    return str(b.get("kind", "tiny")), str((b.get("options") or {}).get("device") or "cpu")


def resources_for(preset: str, overrides: Sequence[str] = ()) -> Resources:
    """One CPU per run; one GPU as well when the run's backend is hf or openai on a CUDA device
    (from the preset, or ``backend.kind=`` / ``backend.options.device=`` overrides)."""
    kind, device = _preset_backend(preset)
    for o in overrides:
        key, _, val = o.partition("=")
        val = val.strip().strip("'\"")
        if key == "backend.kind":
            kind = val
        elif key == "backend.options.device":
            device = val
    gpu = kind in GPU_BACKENDS and device.startswith("cuda")
    return Resources(cpus=1.0, gpus=1.0 if gpu else 0.0)


class Runs:
    """The finished runs handed to the claims: ``summary(arm, seed)`` (summary.json, wall times
    dropped) and ``run_dir(arm, seed)`` (for a claim that reads the ledger)."""

    def __init__(self, summaries: Dict[Tuple[str, int], dict], dirs: Dict[Tuple[str, int], Path]):
        self._s, self._d = summaries, dirs

    @property
    def arms(self) -> List[str]:
        return sorted({a for a, _ in self._s})

    def seeds(self, arm: str) -> List[int]:
        return sorted(s for a, s in self._s if a == arm)

    def summary(self, arm: str, seed: int) -> dict:
        return self._s[(arm, seed)]

    def run_dir(self, arm: str, seed: int) -> Path:
        return self._d[(arm, seed)]

    def per_seed(self, arm: str, metric: Callable[[dict], Optional[float]]) -> Dict[int, float]:
        """``{seed: metric(summary)}`` over the arm's finished runs (None / missing values left out)."""
        out = {}
        for s in self.seeds(arm):
            try:
                v = metric(self.summary(arm, s))
            except (KeyError, IndexError, TypeError):
                v = None
            if v is not None:
                out[s] = float(v)
        return out


@dataclass
class Experiment:
    """An experiment: ``arms`` x seeds ``first_seed .. first_seed + seeds - 1``, run at a budget
    (``budgets[name]``: overrides added to every arm; ``"default"`` must exist), then ``claims``
    (``coevo.experiments.claims.Claim``) evaluated on the finished runs, and ``tables``
    (optional: ``fn(runs) -> {title: {"head": [...], "rows": [[...]]}}``) for the report.
    ``seeds_for``: the default seed count per budget (else ``seeds``).  An arm with ``max_seeds`` runs
    only the first ``min(seeds, max_seeds)`` of them: a headline pair can get many seeds while
    secondary arms keep a few (claims pair arms on the seeds both ran)."""

    name: str
    description: str
    arms: List[Arm]
    claims: List[Any]
    seeds: int = 3
    first_seed: int = 0
    budgets: Dict[str, Tuple[str, ...]] = field(default_factory=lambda: {"default": ()})
    seeds_for: Dict[str, int] = field(default_factory=dict)
    tables: Optional[Callable[[Runs], Dict[str, dict]]] = None
    notes: Dict[str, str] = field(default_factory=dict)  # per budget: what it changes, in words
    smoke: Tuple[str, ...] = ("ci",)  # budgets that exercise the grid, not the science: no verdicts
    calibration: List[Calibration] = field(default_factory=list)  # what was tuned on which seeds
    seeded: Dict[str, int] = field(default_factory=dict)  # config key -> offset: set to run seed + offset per run

    def check(self) -> None:
        names = [a.name for a in self.arms]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"experiment {self.name}: arm names must be unique and non-empty: {names}")
        bad = [a.name for a in self.arms if a.max_seeds is not None and a.max_seeds < 1]
        if bad:
            raise ValueError(f"experiment {self.name}: max_seeds must be >= 1 (arms {', '.join(bad)})")
        if "default" not in self.budgets:
            raise ValueError(f"experiment {self.name}: needs a 'default' budget")
        self.check_claims()

    def check_claims(self) -> None:
        """Refuse an incomplete pre-registration: every claim complete (``Claim.problems``), names unique,
        at least one primary claim (co-primaries are Holm-adjusted among themselves; an experiment without claims is
        a bare grid), the arms a claim reads declared."""
        names = [c.name for c in self.claims]
        if len(set(names)) != len(names):
            raise ValueError(f"experiment {self.name}: claim names must be unique: {names}")
        bad = [f"{c.name}: lacks {'; '.join(c.problems())}" for c in self.claims if c.problems()]
        arms = {a.name for a in self.arms}
        bad += [f"{c.name}: reads unknown arm(s) {sorted(set(c.arms) - arms)}" for c in self.claims
                if set(c.arms) - arms]
        primary = [c.name for c in self.claims if c.role == "primary"]
        if self.claims and not primary:
            bad.append("a primary claim (has none)")
        if bad:
            raise ValueError(f"experiment {self.name}: incomplete pre-registration: " + " | ".join(bad))

    def grid(self, budget: str = "default", seeds: Optional[int] = None, preset: Optional[str] = None,
             extra: Sequence[str] = ()) -> List[RunSpec]:
        """The runs, seed-major (every arm of seed 0, then of seed 1, ...): a partial experiment
        already pairs arms by seed.  ``preset`` replaces every arm's preset and ``extra`` overrides
        go after the budget's (the same experiment on another backend, e.g. ``qwen-1gpu``)."""
        self.check()
        if budget not in self.budgets:
            raise ValueError(f"unknown budget {budget!r} for {self.name}; known: {', '.join(self.budgets)}")
        n = self.seeds_for.get(budget, self.seeds) if seeds is None else int(seeds)
        if n < 1:
            raise ValueError("--seeds must be >= 1")
        out = []
        for seed in range(self.first_seed, self.first_seed + n):
            for a in self.arms:
                if a.max_seeds is not None and seed - self.first_seed >= a.max_seeds:
                    continue
                ov = (tuple(a.overrides) + tuple(f"{k}={seed + off}" for k, off in self.seeded.items())
                      + tuple(self.budgets[budget]) + tuple(extra))
                pre = preset or a.preset
                res = a.resources or resources_for(pre, ov)
                if not any(o.startswith("backend.threads=") for o in ov):  # torch threads = the CPUs asked
                    ov += (f"backend.threads={max(1, int(res.cpus))}",)  # for: same in every executor
                out.append(RunSpec(a.name, seed, pre, ov, res))
        self.check_held_out(out)
        return out

    def check_held_out(self, grid: Sequence[RunSpec]) -> None:
        """Refuse (ValueError, one line) a run whose resolved config uses a calibration seed: each run's
        config is resolved as ``coevo run`` would (preset < overrides < seed) and every key a calibration
        names is compared with the values it was chosen on."""
        if not self.calibration:
            return
        from coevo.config import load_config
        from coevo.knobs import dotted

        bad = []
        for r in grid:
            cfg = load_config(r.preset, None, list(r.overrides) + [f"seed={r.seed}"]).model_dump(mode="json")
            for cal in self.calibration:
                for key, used in cal.seeds:
                    val = dotted(cfg, key)
                    if val is not None and int(val) in used:
                        bad.append(f"{r.name} has {key}={val}, a calibration seed of {cal.setting}")
        if bad:
            raise ValueError(f"experiment {self.name}: evaluation runs must not use calibration seeds: "
                             f"{'; '.join(bad[:3])}" + (f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""))

    def manifest(self, budget: str, grid: List[RunSpec]) -> dict:
        """What the output directory records, so a rerun with another grid is refused."""
        return {"experiment": self.name, "budget": budget,
                "runs": {r.name: r.run_args() for r in grid}}


def manifest_conflict(old: dict, new: dict) -> Optional[str]:
    """Why a directory's manifest forbids reusing its runs for ``new`` (None: compatible)."""
    if old.get("experiment") != new["experiment"]:
        return f"it holds experiment {old.get('experiment')!r}"
    for name, args in new["runs"].items():
        if name in old.get("runs", {}) and old["runs"][name] != args:
            return f"its run {name} was made with other arguments ({' '.join(old['runs'][name])})"
    return None


def read_manifest(path: Path) -> Optional[dict]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
