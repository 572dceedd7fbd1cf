"""Problem generator of the criteria world: multi-step distance problems with units.

A problem is ``rate × time = distance``, then ``± extra``, then a unit conversion::

    question  "7 km per h for 8 h plus 5 km in m"
    solution  "7*8=56 km;56+5=61 km;61*1000=61000 m"

The generator knows every true value (``Problem.dist``, ``.total``, ``.final``), so each
criterion verdict has a truth (``coevo.worlds.criteria.CriteriaWorld.oracle_verdict``).
All characters are in the tiny policies' 61-token vocabulary (digits, ``+-*=;``, space,
lower-case letters).  Train / held-out split: a question belongs to the held-out split
when ``split_of(question) == "eval"`` (a hash of the text: 1 in 5), so held-out
questions are never pretraining questions.

``perturbed_solution(p, errors)`` writes a solution with named mistakes (``ERRORS``): the
tiny policies are pretrained on such solutions (coevo/pretrain/criteria.py) and
the tests use them as scripted answers.
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import asdict, dataclass

# length units in metres (exact powers of ten) and time units; the conversions asked for
LENGTH_UNITS = {"mm": (1, 1000), "cm": (1, 100), "dm": (1, 10), "m": (1, 1), "km": (1000, 1)}  # num/den metres
TIME_UNITS = ("s", "min", "h")
CONVERSIONS = (("km", "m", 1000), ("m", "cm", 100), ("cm", "mm", 10), ("m", "mm", 1000))
TIME_OF = {"km": ("h",), "m": ("min", "s"), "cm": ("s", "min")}
EXTRAS = tuple(range(10, 100, 10))  # whole tens: the +- step is a tens-digit table, learnable by a tiny model
ERRORS = ("product", "sum", "factor", "no_convert", "time_unit", "malformed", "skip")
_Q = re.compile(r"^(\d) ([a-z]+) per ([a-z]+) for (\d) ([a-z]+) (plus|minus) (\d+) ([a-z]+) in ([a-z]+)$")


@dataclass(frozen=True)
class Problem:
    rate: int
    time: int
    extra: int
    op: str          # "+" or "-"
    src: str         # length unit of rate and extra
    dst: str         # unit the answer is asked in
    tunit: str       # time unit

    @property
    def factor(self) -> int:
        return dict(((a, b), f) for a, b, f in CONVERSIONS)[(self.src, self.dst)]

    @property
    def dist(self) -> int:
        return self.rate * self.time

    @property
    def total(self) -> int:
        return self.dist + self.extra if self.op == "+" else self.dist - self.extra

    @property
    def final(self) -> int:
        return self.total * self.factor

    @property
    def question(self) -> str:
        word = "plus" if self.op == "+" else "minus"
        return (f"{self.rate} {self.src} per {self.tunit} for {self.time} {self.tunit} "
                f"{word} {self.extra} {self.src} in {self.dst}")

    @property
    def conversion(self) -> str:
        return f"{self.src}-{self.dst}"

    def steps(self) -> list[str]:
        """The reference solution's three steps (each ``LHS=value unit``)."""
        return [f"{self.rate}*{self.time}={self.dist} {self.src}",
                f"{self.dist}{self.op}{self.extra}={self.total} {self.src}",
                f"{self.total}*{self.factor}={self.final} {self.dst}"]

    @property
    def solution(self) -> str:
        return ";".join(self.steps())

    def to_dict(self) -> dict:
        return asdict(self)


def parse_question(text: str) -> Problem | None:
    """The Problem a question string states, or None if it is not one."""
    m = _Q.match((text or "").strip())
    if not m:
        return None
    r, src, tu, t, tu2, word, e, src2, dst = m.groups()
    if tu != tu2 or src != src2 or tu not in TIME_UNITS or (src, dst) not in {(a, b) for a, b, _ in CONVERSIONS}:
        return None
    p = Problem(int(r), int(t), int(e), "+" if word == "plus" else "-", src, dst, tu)
    return p if valid(p) else None


def valid(p: Problem) -> bool:
    return 2 <= p.rate <= 9 and 2 <= p.time <= 9 and p.extra in EXTRAS and p.total > 0


def split_of(question: str) -> str:
    """``eval`` for 1 in 5 questions (by a hash of the text), else ``train``."""
    return "eval" if int(hashlib.sha1(question.encode()).hexdigest(), 16) % 5 == 0 else "train"


def random_problem(rng: random.Random) -> Problem:
    while True:
        src, dst, _ = rng.choice(CONVERSIONS)
        p = Problem(rng.randint(2, 9), rng.randint(2, 9), rng.choice(EXTRAS), rng.choice("+-"), src, dst,
                    rng.choice(TIME_OF[src]))
        if valid(p):
            return p


def sample_problems(n: int, seed: int, split: str = "train", exclude: tuple = ()) -> list[Problem]:
    """n problems of one split (repeats allowed: the space holds a few thousand), none of whose
    conversion (``Problem.conversion``) is in ``exclude``."""
    rng = random.Random(f"criteria-{split}-{seed}")
    out: list[Problem] = []
    while len(out) < n:
        p = random_problem(rng)
        if split_of(p.question) == split and p.conversion not in exclude:
            out.append(p)
    return out


def distinct_problems(n: int, seed: int, split: str = "eval") -> list[Problem]:
    """n distinct problems of one split, in a fixed order."""
    rng = random.Random(f"criteria-distinct-{split}-{seed}")
    seen: dict[str, Problem] = {}
    for _ in range(200 * n + 1000):
        if len(seen) >= n:
            break
        p = random_problem(rng)
        if split_of(p.question) == split:
            seen.setdefault(p.question, p)
    return list(seen.values())


def perturbed_solution(p: Problem, errors: tuple[str, ...] = ()) -> str:
    """A solution with the named mistakes (``ERRORS``); later steps carry earlier errors on.

    product: rate × time off by ten; sum: the ± step off by ten; factor: the conversion
    factor a power of ten too small; no_convert: the last step is skipped (answer left in
    the source unit); time_unit: the distance step is stated in the time unit; malformed:
    the first step loses its value (``7*8= km``); skip: only the final value is written.
    Deterministic: the direction of a slip is a function of the problem (learnable)."""
    bad = set(errors) - set(ERRORS)
    if bad:
        raise ValueError(f"unknown errors {sorted(bad)}; known: {ERRORS}")
    d = p.dist + (10 if p.dist < 20 or (p.rate + p.time) % 2 else -10) if "product" in errors else p.dist
    tot = (d + p.extra if p.op == "+" else d - p.extra) + ((10 if (p.extra // 10) % 2 else -10) if "sum" in errors else 0)
    f = p.factor // 10 if "factor" in errors else p.factor
    u1 = p.tunit if "time_unit" in errors else p.src
    s1 = f"{p.rate}*{p.time}= {u1}" if "malformed" in errors else f"{p.rate}*{p.time}={d} {u1}"
    steps = [s1, f"{d}{p.op}{p.extra}={tot} {p.src}"]
    if "no_convert" not in errors:
        steps.append(f"{tot}*{f}={tot * f} {p.dst}")
    if "skip" in errors:
        return steps[-1].split("=")[-1]
    return ";".join(steps)
