"""Criteria bank format: one prompt per JSONL line (or a YAML list), validated with pydantic.

One entry::

    {"id": "dist-0001", "prompt": "7 km per h for 8 h plus 5 km in m",
     "reference": "7*8=56 km;56+5=61 km;61*1000=61000 m",
     "criteria": [
       {"id": "dist", "text": "distance = rate x time = 56 km", "weight": 1.0, "axis": "arithmetic",
        "kind": "numeric_unit", "locate": "step:1", "spec": {"value": 56, "unit": "km"}},
       {"id": "wrong_unit", "text": "a quantity is stated in a time unit", "weight": -1.0, "axis": "units",
        "kind": "rule", "locate": "all", "spec": {"mode": "regex", "pattern": "\\\\d ?(s|min|h)(;|$)"}}],
     "meta": {"source": "world:criteria"}}

Fields: ``weight`` > 0 is a reward criterion, < 0 a penalty (its verdict is 1 when the
penalised fault is present: the criteria scores of VG-OPD and CASA subtract it), never 0.
``axis``: the capability axis (free text: ``arithmetic``, ``units``, ``final`` ...).
``locate``: what part of the answer the check reads (``coevo.criteria.verifier.locate``):
``all``, ``final`` (value of the last step), ``step:K`` (value of step K, 1-based),
``expr:K`` (left-hand side of step K); steps are ``;``-separated ``LHS=value unit``.
``kind`` and ``spec`` (``SPEC_FIELDS``):

============  =====================================================================
numeric_unit  ``value`` (number), ``unit`` (pint unit, "" for none), ``rel_tol``?
sympy_equiv   ``expr`` (plain-text expression)
sandbox_py    ``code`` (prints the expected value: ``mode`` recompute, the default; or a
              check program reading ``ANSWER`` / ``REFERENCE`` printing PASS / FAIL)
rule          ``pattern``; ``mode`` regex | contains | exact; ``negate``?
integer       ``value`` (int)
llm_judge     ``rubric`` (the criterion text shown to the judge; endpoint from the run)
sim_judge     ``rubric`` + ``proxy`` (a deterministic criterion spec ``{kind, spec}`` the
              SIMULATED judge decides with; it says unknown at a set rate)
============  =====================================================================

``load_bank(path)`` returns ``[BankEntry]``; any problem raises ``BankError`` with one
line: ``FILE:LINE: FIELD: message`` (JSONL) or ``FILE: entries[i].FIELD: message`` (YAML).
``coevo criteria validate BANK`` prints a summary or that line (exit 2).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

LOCATE_HELP = "all | final | step:K | expr:K (K >= 1)"
SPEC_FIELDS = {  # kind -> (required spec fields, optional spec fields)
    "numeric_unit": ({"value", "unit"}, {"rel_tol", "abs_tol"}),
    "sympy_equiv": ({"expr"}, set()),
    "sandbox_py": ({"code"}, {"mode", "reference", "timeout_s", "rel_tol"}),
    "rule": ({"pattern"}, {"mode", "negate", "case_sensitive", "normalize"}),
    "integer": ({"value"}, set()),
    "llm_judge": ({"rubric"}, set()),
    "sim_judge": ({"rubric", "proxy"}, set()),
}
KINDS = tuple(SPEC_FIELDS)


class BankError(ValueError):
    """A bank that does not validate: the message is one line naming file, line/path, field."""


def valid_locate(where: str) -> bool:
    if where in ("all", "final"):
        return True
    head, _, k = where.partition(":")
    return head in ("step", "expr") and k.isdigit() and int(k) >= 1


class Criterion(BaseModel):
    """One criterion of a prompt (see the module docstring for ``kind`` / ``spec``)."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    weight: float
    axis: str = Field(min_length=1)
    kind: str
    spec: dict[str, Any]
    locate: str = "all"

    @field_validator("weight")
    @classmethod
    def _nonzero(cls, v):
        if v == 0 or v != v:
            raise ValueError("must be > 0 (reward) or < 0 (penalty), never 0")
        return v

    @field_validator("kind")
    @classmethod
    def _kind(cls, v):
        if v not in SPEC_FIELDS:
            raise ValueError(f"unknown kind {v!r}; one of {', '.join(KINDS)}")
        return v

    @field_validator("locate")
    @classmethod
    def _locate(cls, v):
        if not valid_locate(v):
            raise ValueError(f"{v!r} is not {LOCATE_HELP}")
        return v

    @model_validator(mode="after")
    def _spec(self):
        check_spec(self.kind, self.spec)
        return self

    @property
    def penalty(self) -> bool:
        return self.weight < 0


def check_spec(kind: str, spec: dict) -> None:
    """Raise ValueError naming the spec field that is missing, unknown or of the wrong type."""
    need, opt = SPEC_FIELDS[kind]
    missing, extra = need - set(spec), set(spec) - need - opt
    if missing:
        raise ValueError(f"spec.{sorted(missing)[0]}: required for kind {kind}")
    if extra:
        raise ValueError(f"spec.{sorted(extra)[0]}: not a field of kind {kind} (fields: {sorted(need | opt)})")
    if kind in ("numeric_unit", "integer") and (isinstance(spec["value"], bool)
                                                or not isinstance(spec["value"], (int, float))):
        raise ValueError(f"spec.value: must be a number, got {spec['value']!r}")
    if kind == "integer" and not float(spec["value"]).is_integer():
        raise ValueError(f"spec.value: must be an integer, got {spec['value']!r}")
    for key in ("unit", "expr", "code", "pattern", "rubric"):
        if key in spec and not isinstance(spec[key], str):
            raise ValueError(f"spec.{key}: must be a string")
    if kind == "rule" and spec.get("mode", "regex") not in ("regex", "contains", "exact"):
        raise ValueError(f"spec.mode: must be regex | contains | exact, got {spec['mode']!r}")
    if kind == "rule" and spec.get("mode", "regex") == "regex":
        import re
        try:
            re.compile(spec["pattern"])
        except re.error as e:
            raise ValueError(f"spec.pattern: invalid regex ({e})") from None
    if kind == "sandbox_py" and spec.get("mode", "recompute") not in ("recompute", "check"):
        raise ValueError(f"spec.mode: must be recompute | check, got {spec['mode']!r}")
    if kind == "sim_judge":
        proxy = spec["proxy"]
        if not isinstance(proxy, dict) or proxy.get("kind") not in ("numeric_unit", "sympy_equiv", "rule", "integer"):
            raise ValueError("spec.proxy: must be {kind: numeric_unit|sympy_equiv|rule|integer, spec: {...}}")
        try:
            check_spec(proxy["kind"], proxy.get("spec") or {})
        except ValueError as e:
            raise ValueError(f"spec.proxy.{e}") from None


class BankEntry(BaseModel):
    """One prompt of a bank: id, prompt text, reference answer, criteria, free meta."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    reference: str
    criteria: list[Criterion] = Field(min_length=1)
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _unique_and_positive(self):
        seen = set()
        for c in self.criteria:
            if c.id in seen:
                raise ValueError(f"criteria: duplicate criterion id {c.id!r}")
            seen.add(c.id)
        if not any(c.weight > 0 for c in self.criteria):
            raise ValueError("criteria: at least one criterion needs a positive weight")
        return self

    def criterion(self, cid: str) -> Criterion:
        for c in self.criteria:
            if c.id == cid:
                return c
        raise KeyError(f"entry {self.id!r} has no criterion {cid!r}")


_FIELD_PREFIX = re.compile(r"^([A-Za-z_][\w.]*): (.*)$", re.S)


def _first_error(e: ValidationError) -> str:
    """``LOC.FIELD: message`` of the first pydantic error (a model-level check names its own
    field as a ``field: message`` prefix, which is joined to the location)."""
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    m = _FIELD_PREFIX.match(msg)
    if m:
        loc, msg = (f"{loc}.{m.group(1)}" if loc else m.group(1)), m.group(2)
    return f"{loc or 'entry'}: {' '.join(msg.split())}"


def parse_entry(obj: Any, where: str) -> BankEntry:
    """One entry from a parsed JSON/YAML object; ``where`` prefixes the error (file:line)."""
    if not isinstance(obj, dict):
        raise BankError(f"{where}: entry: must be an object, got {type(obj).__name__}")
    try:
        return BankEntry.model_validate(obj)
    except ValidationError as e:
        raise BankError(f"{where}: {_first_error(e)}") from None


def load_bank(path: str | Path) -> list[BankEntry]:
    """All entries of a JSONL (``.jsonl``) or YAML (``.yaml`` / ``.yml``) bank; duplicate
    entry ids are an error.  Raises ``BankError`` (one line) on the first problem."""
    path = Path(path)
    if not path.is_file():
        raise BankError(f"{path}: no such bank file")
    entries: list[BankEntry] = []
    if path.suffix in (".yaml", ".yml"):
        import yaml
        try:
            doc = yaml.safe_load(path.read_text())
        except yaml.YAMLError as e:
            raise BankError(f"{path}: not valid YAML ({' '.join(str(e).split())[:200]})") from None
        items = doc.get("entries") if isinstance(doc, dict) else doc
        if not isinstance(items, list):
            raise BankError(f"{path}: entries: a YAML bank is a list of entries (or {{entries: [...]}})")
        entries = [parse_entry(o, f"{path}: entries[{i}]") for i, o in enumerate(items)]
        wheres = [f"{path}: entries[{i}]" for i in range(len(items))]
    else:
        wheres = []
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise BankError(f"{path}:{n}: entry: not valid JSON ({e.msg}, column {e.colno})") from None
            entries.append(parse_entry(obj, f"{path}:{n}"))
            wheres.append(f"{path}:{n}")
    seen: dict[str, str] = {}
    for e, w in zip(entries, wheres):
        if e.id in seen:
            raise BankError(f"{w}: id: duplicate entry id {e.id!r} (first at {seen[e.id]})")
        seen[e.id] = w
    if not entries:
        raise BankError(f"{path}: entries: the bank is empty")
    return entries


def write_bank(entries, path: str | Path) -> Path:
    """Write entries (``BankEntry`` or dicts) as JSONL, one per line, in order."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for e in entries:
            d = e.model_dump() if isinstance(e, BaseModel) else e
            f.write(json.dumps(d, ensure_ascii=False, sort_keys=False) + "\n")
    return path


def bank_summary(entries: list[BankEntry]) -> dict:
    """Counts: entries, criteria, by kind, by axis, penalties."""
    kinds: dict[str, int] = {}
    axes: dict[str, int] = {}
    n = pen = 0
    for e in entries:
        for c in e.criteria:
            n += 1
            pen += c.weight < 0
            kinds[c.kind] = kinds.get(c.kind, 0) + 1
            axes[c.axis] = axes.get(c.axis, 0) + 1
    return {"entries": len(entries), "criteria": n, "penalties": pen, "by_kind": dict(sorted(kinds.items())),
            "by_axis": dict(sorted(axes.items()))}
