"""Light LaTeX answer helpers shared by the math world and the ``math`` verifier kind.

Pure string functions (``re`` only, no sympy / math-verify), so importing them is cheap
in the main process; they never evaluate anything.
"""
from __future__ import annotations

import re


def last_boxed(text: str | None) -> str | None:
    """Content of the last brace-balanced ``\\boxed{...}`` (or ``\\fbox{...}``); None if absent/unclosed."""
    if not text:
        return None
    starts = [m.end() for m in re.finditer(r"\\(?:boxed|fbox)\s*\{", text)]
    for s in reversed(starts):
        depth = 1
        for i in range(s, len(text)):
            ch = text[i]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[s:i].strip()
        # unclosed: try the previous one
    return None


def boxed(s: str) -> str:
    """Re-wrap an extracted answer so math-verify parses it as LaTeX (bare ``\\frac12`` or
    ``(1,2)`` are otherwise missed by its default extraction)."""
    return f"\\boxed{{{s}}}"


def normalize_math(s: str) -> str:
    """Light normalisation for the fast equality path (the verifier decides the rest)."""
    s = s.strip().rstrip(".").strip().strip("$").strip()
    for a, b in (("\\left", ""), ("\\right", ""), ("\\!", ""), ("\\,", ""), ("\\;", ""), ("\\dfrac", "\\frac"),
                 ("\\tfrac", "\\frac"), ("^\\circ", ""), ("^{\\circ}", ""), ("\\%", ""), ("%", "")):
        s = s.replace(a, b)
    s = re.sub(r"\\text\{\s*([^{}]*)\}", r"\1", s)
    s = re.sub(r"\s+", "", s)
    return s.rstrip(".")
