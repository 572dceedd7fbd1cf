"""Deterministic checkers that parse untrusted text: math, sympy_equiv, numeric_unit.

These functions run *inside pool workers* (``coevo.verify.pool``), which enforce the
hard timeout and the memory cap; never call them in the main process on model output.
Each ``check_*`` returns a ``Verdict`` and never raises (exceptions are turned into
``verifier-error`` / ``resource-limit`` abstentions by ``guarded``).

This module is pre-imported by the pool's fork server, so it imports math-verify,
sympy and pint at module level on purpose.
"""
from __future__ import annotations

import logging
import math
import re
from functools import lru_cache
from typing import Optional

import sympy
from sympy.parsing.sympy_parser import (convert_xor, implicit_multiplication_application, parse_expr,
                                        standard_transformations)

from coevo.verify.latex import boxed, normalize_math
from coevo.core.verdict import Verdict, abstain, guarded

try:  # math-verify logs a warning every time its own timeouts are disabled; we disable them on purpose
    import math_verify
    from math_verify import parse as mv_parse, verify as mv_verify
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    for _name in ("math_verify.parser", "math_verify.grader", "math_verify.utils"):
        logging.getLogger(_name).setLevel(logging.ERROR)
    from importlib.metadata import version as _pkg_version
    MATH_VERIFY_VERSION = _pkg_version("math-verify")
except Exception:  # noqa: BLE001
    mv_parse = mv_verify = None
    MATH_VERIFY_VERSION = "missing"

MATH_VERSION = f"math-1+mv{MATH_VERIFY_VERSION}"          # check_math: raw strings
MATH_ANSWER_VERSION = f"math-2+mv{MATH_VERIFY_VERSION}"   # check_math_answer: the ``math`` kind
SYMPY_VERSION = f"sympy_equiv-1+sympy{sympy.__version__}"
NUMERIC_VERSION = "numeric_unit-1"
MAX_CHARS = 20_000      # longer inputs are refused (resource-limit) before any parsing


# ---------------------------------------------------------------- math ----------
def check_math(answer: str, reference: str, float_rounding: int = 6, strict: bool = True) -> Verdict:
    """math-verify ``parse`` + ``verify`` with its SIGALRM timeouts disabled
    (``parsing_timeout=None``, ``timeout_seconds=None``); the pool kills a hung call.
    Falls back to the safe sympy parser when math-verify extracts nothing."""
    return guarded(_check_math, "math", MATH_VERSION, answer, reference, float_rounding, strict)


def _check_math(answer, reference, float_rounding, strict) -> Verdict:
    answer, reference = str(answer or ""), str(reference or "")
    if len(answer) > MAX_CHARS or len(reference) > MAX_CHARS:
        return abstain("resource-limit", note="input longer than MAX_CHARS", max_chars=MAX_CHARS)
    if not answer.strip():
        return abstain("unparsable", side="answer", note="empty")
    if mv_parse is not None:
        gold = mv_parse(reference, parsing_timeout=None)
        pred = mv_parse(answer, parsing_timeout=None)
        if gold and pred:
            ok = mv_verify(gold, pred, float_rounding=float_rounding, strict=strict, timeout_seconds=None)
            return Verdict(int(bool(ok)), detail={"via": "math-verify"})
    # sympy fallback on the raw strings
    a, r = safe_sympify(_strip_latex(answer)), safe_sympify(_strip_latex(reference))
    if r is None:
        return abstain("unparsable", side="reference")
    if a is None:
        return abstain("unparsable", side="answer")
    v = _sympy_equal(a, r)
    v.detail["via"] = "sympy-fallback"
    return v


def check_math_answer(answer, reference, float_rounding: int = 6, strict: bool = True) -> Verdict:
    """The ``math`` verifier kind and ``MathWorld.equivalent`` (one definition).

    Answers and references are *extracted* answers: bare LaTeX (``(1,2)``,
    ``\\frac{1}{2}``), ``$...$`` or ``\\boxed{...}``.  Equal after ``normalize_math``
    -> 1 (``via: normalized-equal``); otherwise math-verify on both sides wrapped in
    ``\\boxed{}`` (``check_math(boxed(a), boxed(r))``, sympy fallback included).
    ``None`` on either side abstains ``unparsable``.
    """
    return guarded(_check_math_answer, "math", MATH_ANSWER_VERSION, answer, reference, float_rounding, strict)


def _check_math_answer(answer, reference, float_rounding, strict) -> Verdict:
    if answer is None or reference is None:
        return abstain("unparsable", side="answer" if answer is None else "reference", note="none")
    answer, reference = str(answer), str(reference)
    if normalize_math(answer) == normalize_math(reference):
        return Verdict(1, detail={"via": "normalized-equal"})
    if not answer.strip():
        return abstain("unparsable", side="answer", note="empty")
    v = _check_math(boxed(answer), boxed(reference), float_rounding, strict)
    v.version = MATH_ANSWER_VERSION
    return v


def _strip_latex(s: str) -> str:
    s = s.strip()
    m = re.findall(r"\\boxed\{([^{}]*)\}", s)
    if m:
        s = m[-1]
    s = s.strip("$ ").replace("\\left", "").replace("\\right", "").replace("\\cdot", "*").replace("\\times", "*")
    s = re.sub(r"\\d?frac\{([^{}]*)\}\{([^{}]*)\}", r"((\1)/(\2))", s)
    s = re.sub(r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)", s)
    return s.replace("{", "(").replace("}", ")").replace("\\pi", "pi").replace("\\", "")


# ---------------------------------------------------------------- sympy ---------
_FUNCS = {name: getattr(sympy, name) for name in (
    "sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "exp", "log", "ln", "sqrt", "Abs", "factorial", "binomial", "floor", "ceiling", "gamma",
    "pi", "E", "I", "oo", "Rational", "Integer", "Float", "Symbol", "root", "Min", "Max")
    if hasattr(sympy, name)}
_FUNCS["abs"] = sympy.Abs
_FUNCS["e"] = sympy.E
_ALLOWED = re.compile(r"^[0-9A-Za-z_+\-*/^().,\s=]*$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def safe_sympify(text: str) -> Optional[sympy.Expr]:
    """Parse an arithmetic / algebraic expression without Python ``eval`` risks.

    sympy's ``parse_expr`` evaluates Python code, so the text is first restricted to a
    whitelist of characters, no dunder / attribute access, and identifiers that are
    either whitelisted functions or plain symbol names.  Returns None if refused.
    """
    text = str(text).strip()
    if not text or len(text) > MAX_CHARS or not _ALLOWED.match(text) or "__" in text:
        return None
    if re.search(r"[A-Za-z_)]\s*\.", text) or "lambda" in text:
        return None
    local = {}
    for ident in set(_IDENT.findall(text)):
        if ident in _FUNCS:
            local[ident] = _FUNCS[ident]
        elif ident.isidentifier() and len(ident) <= 12:
            local[ident] = sympy.Symbol(ident)
        else:
            return None
    if "=" in text:  # "x = 3" -> right-hand side
        text = text.split("=")[-1]
    try:
        expr = parse_expr(text, local_dict=local, global_dict={"Integer": sympy.Integer, "Float": sympy.Float,
                                                                "Rational": sympy.Rational, "Symbol": sympy.Symbol},
                          transformations=standard_transformations + (convert_xor, implicit_multiplication_application),
                          evaluate=True)
    except (MemoryError, RecursionError):
        raise
    except Exception:  # noqa: BLE001 - a parse failure is "unparsable", not an error
        return None
    return expr if isinstance(expr, sympy.Basic) else None


def _sympy_equal(a, b) -> Verdict:
    if a == b:
        return Verdict(1)
    try:
        d = sympy.simplify(a - b)
        if d == 0:
            return Verdict(1)
        eq = a.equals(b)
    except TypeError:
        return Verdict(0, detail={"note": "incomparable types"})
    if eq is None:
        return abstain("undecidable")
    return Verdict(int(bool(eq)))


def check_sympy_equiv(answer: str, reference: str) -> Verdict:
    """Symbolic equivalence of two plain-text expressions via sympy (safe parser)."""
    def run():
        if len(str(answer)) > MAX_CHARS:
            return abstain("resource-limit", max_chars=MAX_CHARS)
        r = safe_sympify(reference)
        if r is None:
            return abstain("unparsable", side="reference")
        a = safe_sympify(answer)
        if a is None:
            return abstain("unparsable", side="answer")
        return _sympy_equal(a, r)
    return guarded(run, "sympy_equiv", SYMPY_VERSION)


# ---------------------------------------------------------------- numeric_unit --
_NUM = re.compile(r"^\s*([-+−]?\s*(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$", re.S)
_SCI = re.compile(r"(?:\\times|\\cdot|×|x|\*)\s*10\s*\^\s*\{?\s*([-+−]?\d+)\s*\}?")


@lru_cache(maxsize=1)
def _ureg():
    import pint
    return pint.UnitRegistry()


def parse_quantity(text: str):
    """'3.0 m/s', '$3\\times10^{8}\\,\\text{m/s}$', '1,200 kg' -> (magnitude, unit string).

    Units are parsed with ``UnitRegistry.parse_units`` (no arithmetic evaluation)."""
    s = str(text).strip().strip("$").strip()
    s = re.sub(r"\\boxed\{(.*)\}", r"\1", s)
    s = re.sub(r"\\(?:text|mathrm|operatorname)\{([^{}]*)\}", r" \1", s)
    s = s.replace("\\,", " ").replace("\\ ", " ").replace("~", " ").replace("\\%", "%")
    exp10 = 0
    m = _SCI.search(s)
    if m:
        exp10 = int(m.group(1).replace("−", "-"))
        s = s[:m.start()] + " " + s[m.end():]
    m = _NUM.match(s)
    if not m:
        return None
    mag = float(m.group(1).replace(",", "").replace("−", "-").replace(" ", "")) * (10.0 ** exp10)
    unit = m.group(2).strip().rstrip(".").strip()
    unit = unit.replace("^", "**").replace("{", "").replace("}", "").replace("·", "*")
    if unit == "%":
        unit = "percent"
    return mag, unit


def check_numeric_unit(answer: str, reference: str, rel_tol: float = 1e-6, abs_tol: float = 0.0) -> Verdict:
    """Numeric value with a unit (pint): the right number in the wrong unit is 0;
    compatible units are converted (``1 km`` == ``1000 m``); tolerance is
    ``|a - r| <= max(rel_tol * |r|, abs_tol)`` in the reference's unit."""
    def run():
        if len(str(answer)) > MAX_CHARS:
            return abstain("resource-limit", max_chars=MAX_CHARS)
        ureg = _ureg()
        pr, pa = parse_quantity(reference), parse_quantity(answer)
        if pr is None:
            return abstain("unparsable", side="reference")
        if pa is None:
            return abstain("unparsable", side="answer")
        try:
            ur = ureg.parse_units(pr[1]) if pr[1] else ureg.dimensionless
        except Exception:  # noqa: BLE001
            return abstain("unparsable", side="reference", unit=pr[1])
        try:
            ua = ureg.parse_units(pa[1]) if pa[1] else ureg.dimensionless
        except Exception:  # noqa: BLE001
            return Verdict(0, detail={"note": "unknown unit", "unit": pa[1][:50]})
        qa, qr = ureg.Quantity(pa[0], ua), ureg.Quantity(pr[0], ur)
        if qa.dimensionality != qr.dimensionality:
            note = "missing-unit" if not pa[1] else "wrong-unit"
            return Verdict(0, detail={"note": note, "answer_unit": str(ua), "reference_unit": str(ur)})
        a = qa.to(ur).magnitude
        r = qr.magnitude
        if not (math.isfinite(a) and math.isfinite(r)):
            return abstain("unparsable", note="non-finite")
        ok = abs(a - r) <= max(rel_tol * abs(r), abs_tol)
        return Verdict(int(ok), detail={"answer_in_ref_unit": a, "reference": r})
    return guarded(run, "numeric_unit", NUMERIC_VERSION)


# ------------------------------------------------------- pool task functions ----
# Top-level, picklable: ``pool.map(math_task, [(answer, reference), ...])``.
def math_task(item) -> Verdict:
    answer, reference = item[0], item[1]
    kw = item[2] if len(item) > 2 else {}
    return check_math(answer, reference, **kw)


def sympy_task(item) -> Verdict:
    return check_sympy_equiv(item[0], item[1])


def numeric_unit_task(item) -> Verdict:
    kw = item[2] if len(item) > 2 else {}
    return check_numeric_unit(item[0], item[1], **kw)


def math_answer_task(item) -> Verdict:
    kw = item[2] if len(item) > 2 else {}
    return check_math_answer(item[0], item[1], **kw)


def verifier_task(item) -> Verdict:
    """Generic task: ``(verifier, answer, reference, kwargs)`` -> ``verifier.check(...)``."""
    verifier, answer, reference = item[0], item[1], item[2]
    kw = item[3] if len(item) > 3 else {}
    return verifier.check(answer, reference, **kw)
