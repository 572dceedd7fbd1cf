"""Write coevo/data/easy_word_problems.jsonl: 96 one-step word problems with whole-number answers.

A certificate needs tasks a small model solves *sometimes*: the shipped 20-question sample gave
SmolLM2-135M only 3 bearing tasks (screen triple 0 / 0.15 / 0.85) and GSM8K gave 0 of 32 correct
samples. These are one operation each (8 templates x 12, numbers from a seeded RNG), in the
format ``coevo certify`` and the math world read: ``{"question", "answer", "source"}``.
Deterministic: ``python scripts/make_easy_word_problems.py`` rewrites the same file.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "coevo" / "data" / "easy_word_problems.jsonl"
NAMES = ("Tom", "Anna", "Lily", "Sam", "Maya", "Ben", "Zoe", "Omar")


def _add(r, n):
    a, b = r.randint(3, 40), r.randint(2, 30)
    return f"{n} has {a} apples and buys {b} more. How many apples does {n} have now?", a + b


def _sub(r, n):
    a = r.randint(10, 60)
    b = r.randint(2, a - 1)
    return f"A baker makes {a} muffins and sells {b} of them. How many muffins are left?", a - b


def _boxes(r, n):
    a, b = r.randint(2, 9), r.randint(2, 12)
    return f"There are {a} boxes with {b} pencils in each box. How many pencils are there in total?", a * b


def _teams(r, n):
    b, c = r.randint(2, 8), r.randint(2, 10)
    return f"{b * c} students are split equally into {b} teams. How many students are in each team?", c


def _change(r, n):
    a = r.randint(3, 45)
    b = r.choice([x for x in (10, 20, 50, 100) if x > a])
    return f"A book costs {a} dollars. {n} pays with {b} dollars. How much change does {n} get?", b - a


def _saves(r, n):
    a, b = r.randint(2, 15), r.randint(2, 9)
    return f"{n} saves {a} dollars every week. How much has {n} saved after {b} weeks?", a * b


def _bus(r, n):
    a, b = r.randint(5, 50), r.randint(2, 20)
    return f"A bus has {a} passengers. At a stop, {b} more people get on. How many passengers are on the bus now?", a + b


def _rows(r, n):
    a, b = r.randint(2, 9), r.randint(2, 9)
    return f"A garden has {a} rows with {b} flowers in each row. How many flowers are in the garden?", a * b


TEMPLATES = (_add, _sub, _boxes, _teams, _change, _saves, _bus, _rows)


def problems(per_template: int = 12, seed: int = 0) -> list[dict]:
    r = random.Random(seed)
    out, seen = [], set()
    for i in range(per_template):
        for t in TEMPLATES:
            while True:
                q, a = t(r, NAMES[len(out) % len(NAMES)])
                if q not in seen:
                    break
            seen.add(q)
            out.append({"question": q, "answer": str(a), "source": f"coevo-easy:{t.__name__[1:]}"})
    return out


if __name__ == "__main__":
    rows = problems()
    OUT.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"wrote {len(rows)} problems to {OUT}")
