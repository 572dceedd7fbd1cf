"""Criterion-bank stress test (CASA proposal §method, "the certificate-style stress test of the criterion bank").

For every positive-weight criterion of a bank, adversarial answers are built from the entry's reference by
corrupting the part the criterion reads (``coevo.criteria.verifier.locate``):

============== ======== ==================================================================
family         corrupts example on ``...;106*10=1060 mm``
============== ======== ==================================================================
jump_to_end    structure the answer is the end value alone: ``1060 mm`` (no intermediate steps)
wrong_unit     unit      right number, wrong unit of the same dimension: ``1060 cm``
wrong_sign     value     right magnitude, wrong sign: ``-1060 mm`` (on intermediate steps too)
off_by_factor  value     a conversion slip: ``10600 mm``
unitless       unit      the number without its unit: ``1060``
hedge          value     extra trailing text offering a wrong alternative: ``1060 mm or 10600 mm``
wrong_sci      value     a wrong value in scientific notation: ``1.06e4 mm``
vacuous        structure a content-free template (``coevo.recipes.vgopd.casa.probes.VACUOUS_TEMPLATE``)
value_as_expr  structure (``expr:K`` criteria) the step's value written where its expression belongs:
                         ``56=56 km`` instead of ``7*8=56 km`` (the method is skipped, the number is right)
sci_notation   (control) the right value in scientific notation: ``1.06e3 mm`` (should pass)
no_space       (control) ``1060mm`` (should pass)
============== ======== ==================================================================

Labels.  An answer *should fail* criterion j when its family corrupts something j checks: numeric_unit
checks value, unit and structure; integer, sympy_equiv and sandbox_py value and structure; a rule on the
``units`` axis unit and structure, any other rule and the judges structure only; ``jump_to_end`` keeps the
end value, so it should fail only criteria that do not read ``final``.  For the deterministic kinds with a
defined recomputation (numeric_unit, integer, sympy_equiv, sandbox_py in recompute mode) the label is then
replaced by an **independent recomputation in the sandbox** (``coevo.verify.sandbox``: its own unit table,
exact fractions, no pint / sympy), and disagreements with the construction label are counted.
``value_as_expr`` keeps its construction label: its fault (no set-up) is one a value recomputation cannot
see, which is the point of the family (CASA proposal: rubric and oracle sharing one certificate).

Each answer is scored by the criterion's own verifier (``coevo.criteria.scoring.CriteriaScorer``, no
abstention channels).  A **break** is an answer whose truth is "fail" but which the verifier passes; the
break rate per verifier kind has a Wilson 95 % interval.  Should-pass answers the verifier fails are
reported as false rejects; abstentions are counted, never breaks.  Penalty criteria (weight < 0) are
skipped (their verdict 1 means "fault present"; counted in ``skipped_penalties``).
The JSON (``by_kind``: kind -> {n, broken, rate, ci_low, ci_high, ...}) is what CASA-P4 reads
(``coevo.recipes.vgopd.predictions.stress_break_rates``).
"""
from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any, Dict, List, Optional, Sequence

from coevo.audit.stats import wilson_interval
from coevo.recipes.vgopd.casa.probes import VACUOUS_TEMPLATE

__all__ = ["FAMILIES", "CONTROLS", "adversarial_answers", "should_fail", "recompute_truths", "stress_bank",
           "summarize", "DETERMINISTIC_KINDS", "JUDGE_KINDS"]

FAMILIES = {"jump_to_end": "structure", "wrong_unit": "unit", "wrong_sign": "value", "off_by_factor": "value",
            "unitless": "unit", "hedge": "value", "wrong_sci": "value", "vacuous": "structure",
            "value_as_expr": "structure",
            "sci_notation": "control", "no_space": "control"}
CONTROLS = ("sci_notation", "no_space")
LABEL_ONLY = ("value_as_expr",)  # families whose label a value recomputation must not override
DETERMINISTIC_KINDS = ("numeric_unit", "sympy_equiv", "sandbox_py", "rule", "integer")
JUDGE_KINDS = ("llm_judge", "sim_judge")
REFERENCE = (0.08, 0.26)  # ImpossibleRubrics' break-rate range (CASA proposal §prediction P4)
SWAP_UNIT = {"mm": "cm", "cm": "mm", "m": "km", "km": "m", "s": "min", "min": "s", "h": "min", "g": "kg", "kg": "g"}
_PART = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def _num(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{float(x):g}"


def _sci(x: Fraction) -> str:
    m, e = f"{float(x):e}".split("e")
    return f"{m.rstrip('0').rstrip('.')}e{int(e)}"


def corrupt_value(part: str, family: str) -> Optional[str]:
    """The corrupted ``value unit`` text of one step (None when the family does not apply to it)."""
    m = _PART.match(part or "")
    if not m:
        return None
    v, unit = Fraction(m.group(1)), m.group(2)
    sp = f" {unit}" if unit else ""
    if family == "wrong_unit":
        return f"{m.group(1)} {SWAP_UNIT[unit]}" if unit in SWAP_UNIT else None
    if family == "unitless":
        return m.group(1) if unit else None
    if family == "wrong_sign":
        return f"{_num(-v)}{sp}" if v != 0 else None
    if family == "off_by_factor":
        return f"{_num(v * 10)}{sp}"
    if family == "hedge":
        return f"{m.group(1)}{sp} or {_num(v * 10)}{sp}"
    if family == "wrong_sci":
        return f"{_sci(v * 10)}{sp}" if v != 0 else None
    if family == "sci_notation":
        return f"{_sci(v)}{sp}" if v != 0 else None
    if family == "no_space":
        return f"{m.group(1)}{unit}" if unit else None
    raise ValueError(f"unknown family {family!r}")


def corrupt_expr(lhs: str, rhs: str, family: str) -> Optional[str]:
    """A corrupted left-hand side (criteria reading ``expr:K``): sign, factor and value-as-expression."""
    if family == "value_as_expr":
        m = _PART.match(rhs or "")
        return m.group(1) if m and m.group(1) != lhs.strip() else None
    if family == "wrong_sign":
        return f"-({lhs})"
    if family == "off_by_factor":
        return f"({lhs})*10"
    return None


def _target_step(steps: List[str], where: str) -> Optional[int]:
    if where in ("final", "all"):
        return len(steps) - 1
    head, _, k = where.partition(":")
    i = int(k) - 1
    return i if 0 <= i < len(steps) else None


def adversarial_answers(reference: str, where: str) -> Dict[str, str]:
    """family -> adversarial answer built from ``reference`` for a criterion reading ``where``."""
    steps = [s.strip() for s in str(reference).split(";") if s.strip()]
    out: Dict[str, str] = {"vacuous": VACUOUS_TEMPLATE}
    if not steps:
        return out
    out["jump_to_end"] = steps[-1].rpartition("=")[2].strip()
    i = _target_step(steps, where)
    if i is None:
        return out
    lhs, eq, val = steps[i].rpartition("=")
    for fam in FAMILIES:
        if fam in ("vacuous", "jump_to_end"):
            continue
        if where.startswith("expr:"):
            head, _, rhs = steps[i].partition("=")
            new_lhs = corrupt_expr(head, rhs, fam) if "=" in steps[i] else None
            new = None if new_lhs is None else f"{new_lhs}={steps[i].partition('=')[2]}"
        elif fam == "value_as_expr":
            new = None
        else:
            v = corrupt_value(val.strip(), fam)
            new = None if v is None else (f"{lhs}={v}" if eq else v)
        if new is not None:
            out[fam] = ";".join(steps[:i] + [new] + steps[i + 1:])
    return out


def checks_of(criterion: Any) -> set:
    """What a criterion checks: subsets of {value, unit, structure} (module docstring, "Labels")."""
    if criterion.kind == "numeric_unit":
        return {"value", "unit", "structure"}
    if criterion.kind in ("integer", "sympy_equiv", "sandbox_py"):
        return {"value", "structure"}
    if criterion.kind == "rule" and criterion.axis == "units":
        return {"unit", "structure"}
    return {"structure"}


def should_fail(criterion: Any, family: str) -> bool:
    """The construction label: does this family corrupt something the criterion checks?"""
    if family == "jump_to_end":
        return criterion.locate != "final"
    return FAMILIES[family] in checks_of(criterion)


RECOMPUTE = r'''
import ast, contextlib, io, json, re, sys
from fractions import Fraction
U = {"mm": ("L", Fraction(1, 1000)), "cm": ("L", Fraction(1, 100)), "m": ("L", Fraction(1)), "km": ("L", Fraction(1000)),
     "s": ("T", Fraction(1)), "min": ("T", Fraction(60)), "h": ("T", Fraction(3600)), "g": ("M", Fraction(1, 1000)),
     "kg": ("M", Fraction(1))}
Q = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")
def qty(s):
    m = Q.match(s or "")
    if not m:
        return None
    x, u = Fraction(m.group(1)), m.group(2)
    if not u:
        return ("", x)
    return (U[u][0], x * U[u][1]) if u in U else ("?" + u, x)
def close(a, b, tol):
    return abs(a - b) <= Fraction(tol) * abs(b) if tol else a == b
def arith(s):
    def ev(n):
        if isinstance(n, ast.Expression): return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)): return Fraction(str(n.value))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            return -ev(n.operand) if isinstance(n.op, ast.USub) else ev(n.operand)
        if isinstance(n, ast.BinOp) and type(n.op) in (ast.Add, ast.Sub, ast.Mult, ast.Div):
            a, b = ev(n.left), ev(n.right)
            return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b, ast.Div: a / b if b else None}[type(n.op)]
        raise ValueError("not arithmetic")
    try:
        return ev(ast.parse(s.strip(), mode="eval"))
    except Exception:
        return None
def truth(it):
    kind, spec, part = it["kind"], it["spec"], it["part"]
    if part is None:
        return 0
    tol = spec.get("rel_tol", 0) or 0
    if kind == "numeric_unit":
        want, got = qty(f"{spec['value']} {spec['unit']}".strip()), qty(part)
        if want is None or want[0].startswith("?"):
            return None
        return int(got is not None and got[0] == want[0] and close(got[1], want[1], tol))
    if kind == "integer":
        return int(bool(re.fullmatch(r"\s*[-+]?\d+\s*", part)) and int(part) == int(spec["value"]))
    if kind == "sympy_equiv":
        a, b = arith(part), arith(spec["expr"])
        return None if b is None else int(a is not None and a == b)
    if kind == "sandbox_py" and spec.get("mode", "recompute") == "recompute":
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(spec["code"], {})
        want, got = qty(buf.getvalue().strip()), qty(part)
        return int(want is not None and got is not None and got[0] == want[0] and close(got[1], want[1], tol))
    return None
out = []
for it in json.loads(sys.stdin.read()):
    try:
        out.append(truth(it))
    except Exception:
        out.append(None)
print(json.dumps(out))
'''


def recompute_truths(items: Sequence[dict], timeout_s: float = 60.0) -> tuple[List[Optional[int]], dict]:
    """Independent truths of ``items`` ({kind, spec, part}) computed in ONE sandboxed process
    (``run_sandboxed``); None where no recomputation is defined.  Returns (truths, sandbox info)."""
    from coevo.verify.sandbox import run_sandboxed

    if not items:
        return [], {"reason": "nothing to recompute"}
    res = run_sandboxed(RECOMPUTE, timeout_s, stdin=json.dumps(list(items)))
    info = {"reason": res.reason, "isolation": res.isolation, "elapsed_s": round(res.elapsed_s, 3)}
    if not res.ok:
        info["stderr"] = res.stderr[-300:]
        return [None] * len(items), info
    try:
        got = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        info["reason"] = "unreadable-output"
        return [None] * len(items), info
    return [None if g is None else int(g) for g in got], info


def build_cases(entries: Sequence[Any], families: Optional[Sequence[str]] = None) -> tuple[List[dict], int]:
    """One case per (entry, positive criterion, family that applies): the adversarial answer and its
    construction label.  Returns (cases, number of penalty criteria skipped)."""
    fams = set(families or FAMILIES)
    bad = sorted(fams - set(FAMILIES))
    if bad:
        raise ValueError(f"unknown adversarial family {bad[0]!r} (known: {', '.join(FAMILIES)})")
    cases, skipped = [], 0
    for e in entries:
        for c in e.criteria:
            if c.weight < 0:
                skipped += 1
                continue
            for fam, ans in adversarial_answers(e.reference, c.locate).items():
                if fam in fams:
                    cases.append({"entry": e, "criterion": c, "family": fam, "answer": ans,
                                  "label": 0 if should_fail(c, fam) else 1})
    return cases, skipped


def _recomputable(c: Any) -> bool:
    if c.kind == "sandbox_py":
        return c.spec.get("mode", "recompute") == "recompute"
    return c.kind in ("numeric_unit", "integer", "sympy_equiv")


def score_cases(cases: List[dict], scorer: Any = None, timeout_s: float = 60.0) -> dict:
    """Verifier verdicts (the criterion's own kind, no abstention channels) and sandbox truths for every
    case, written into the cases (``value``, ``reason``, ``truth``, ``recomputed``).  Returns sandbox info."""
    from coevo.criteria.scoring import CriteriaScorer, CriterionPair
    from coevo.criteria.verifier import locate, reference_of

    pairs = []
    for k in cases:
        e, c = k["entry"], k["criterion"]
        ref_len = (e.meta or {}).get("ref_len") or len(e.reference or "") or None
        pairs.append(CriterionPair(c.id, c.kind, c.locate, float(c.weight), c.axis, k["answer"],
                                   reference_of(c, e.prompt, e.reference, ref_len, key=e.id)))
    verdicts = (scorer or CriteriaScorer()).score_pairs(pairs)
    det = [i for i, k in enumerate(cases) if _recomputable(k["criterion"]) and k["family"] not in LABEL_ONLY]
    items = [{"kind": cases[i]["criterion"].kind, "spec": cases[i]["criterion"].spec,
              "part": locate(cases[i]["answer"], cases[i]["criterion"].locate)} for i in det]
    truths, info = recompute_truths(items, timeout_s)
    for k, v in zip(cases, verdicts):
        k["value"], k["reason"] = v.value, v.reason or ""
        k["truth"], k["recomputed"] = k["label"], False
    for i, t in zip(det, truths):
        if t is not None:
            cases[i]["truth"], cases[i]["recomputed"] = t, True
    return info


def _rate(k: int, n: int) -> dict:
    lo, hi = wilson_interval(k / n, n) if n else (None, None)
    return {"rate": k / n if n else None, "ci_low": lo, "ci_high": hi}


def summarize(cases: Sequence[dict]) -> Dict[str, dict]:
    """Per verifier kind: n (should-fail answers), broken (verifier passed them), the break rate with its
    Wilson 95 % interval, abstentions, false rejects of should-pass answers, recomputation counts, and the
    break counts per family."""
    out: Dict[str, dict] = {}
    for kind in sorted({k["criterion"].kind for k in cases}):
        ks = [k for k in cases if k["criterion"].kind == kind]
        bad = [k for k in ks if k["truth"] == 0]
        good = [k for k in ks if k["truth"] == 1]
        broken = sum(1 for k in bad if k["value"] == 1)
        rejects = sum(1 for k in good if k["value"] == 0)
        fams = {}
        for f in FAMILIES:
            fk = [k for k in bad if k["family"] == f]
            if fk:
                fams[f] = {"n": len(fk), "broken": sum(1 for k in fk if k["value"] == 1)}
        out[kind] = {"n": len(bad), "broken": broken, **_rate(broken, len(bad)),
                     "n_abstained": sum(1 for k in bad if k["value"] is None),
                     "n_should_pass": len(good), "false_rejects": rejects, "false_reject_rate":
                     _rate(rejects, len(good))["rate"], "n_recomputed": sum(1 for k in ks if k["recomputed"]),
                     "label_disagreements": sum(1 for k in ks if k["recomputed"] and k["truth"] != k["label"]),
                     "deterministic": kind in DETERMINISTIC_KINDS, "by_family": fams}
    return out


def _pooled(by_kind: dict, kinds: Sequence[str]) -> Optional[dict]:
    sel = [v for k, v in by_kind.items() if k in kinds]
    n, b = sum(v["n"] for v in sel), sum(v["broken"] for v in sel)
    return {"n": n, "broken": b, **_rate(b, n)} if n else None


def stress_bank(entries: Sequence[Any], families: Optional[Sequence[str]] = None, scorer: Any = None,
                timeout_s: float = 60.0, examples: int = 10) -> dict:
    """The stress test of a bank (module docstring); the JSON CASA-P4 reads."""
    cases, skipped = build_cases(entries, families)
    info = score_cases(cases, scorer, timeout_s)
    by_kind = summarize(cases)
    breaks = [{"entry": k["entry"].id, "criterion": k["criterion"].id, "kind": k["criterion"].kind,
               "family": k["family"], "answer": k["answer"], "recomputed": k["recomputed"]}
              for k in cases if k["truth"] == 0 and k["value"] == 1]
    return {"n_entries": len(entries), "n_criteria": sum(len(e.criteria) for e in entries),
            "skipped_penalties": skipped, "n_answers": len(cases), "families": list(families or FAMILIES),
            "by_kind": by_kind, "deterministic": _pooled(by_kind, DETERMINISTIC_KINDS),
            "judge": _pooled(by_kind, JUDGE_KINDS), "reference": list(REFERENCE), "sandbox": info,
            "break_examples": breaks[:examples]}
