"""The ``casa`` config section (CASA proposal §method, three arms): arm, thresholds, discount convention.

``discount`` has NO default: with ``arm: C`` a config without it fails with one line naming
the field (``casa.discount: ...``), because the two readings of "discount by (1 - precision)"
differ 4-7x (CASA proposal §prediction P3).  A recipe registers :class:`CasaConfig` as its ``casa``
section; :func:`casa_config` validates a plain mapping with the same one-line error.
"""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

__all__ = ["CasaConfig", "CasaConfigError", "casa_config", "ARMS", "DISCOUNTS"]

ARMS = ("A", "B", "C")
DISCOUNTS = ("one_minus_precision", "precision")


class CasaConfigError(ValueError):
    """A bad ``casa`` section (one line, naming the field)."""


class CasaConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    arm: Literal["A", "B", "C"] = Field("A", description="A original (abstentions out of numerator and "
                                        "denominator); B fixed denominator, unknown -> 0; C = B + abstained "
                                        "criteria gate through the low-confidence channel")
    delta: float = Field(0.5, ge=0.0, lt=1.0, description="licensing threshold: Delta' = V(x,y_k) - V(x,y) > delta")
    delta_abstain: float = Field(0.75, ge=0.0, lt=1.0, description="arm C: threshold delta_A > delta for "
                                 "abstained criteria (inert with 0/1 verdicts: Delta' is 0 or 1, so any delta_A "
                                 "< 1 licenses as delta does; docs/casa.md)")
    discount: Optional[Literal["one_minus_precision", "precision"]] = Field(
        None, validate_default=True, description="arm C: abstention-channel weight x (1 - precision_axis) or "
        "x precision_axis; required when arm = C (no default)")
    precision: dict[str, float] = Field(default_factory=dict, description="verifier precision per axis "
                                        "(CASA proposal: mechanism 0.877, evidence 0.782)")
    default_precision: Optional[float] = Field(None, ge=0.0, le=1.0, description="precision of an axis "
                                               "missing from ``precision``; None: such an axis is an error in C")
    kl_coef: float = Field(0.1, ge=0.0, description="lambda: scale of the gated-KL token advantage")
    kl_tau: float = Field(0.6931471805599453, ge=0.0, description="localisation: a token is taught when "
                          "|log p_student - log p_expert| >= tau (log 2: the two disagree by a factor >= 2)")
    kl_clip: float = Field(10.0, gt=0.0, description="per-token log-ratio clipped to [-kl_clip, kl_clip]")
    rank_delta: float = Field(0.05, gt=0.0, description="Delta of the rank-reversal count (true gap r~1 - r~2)")
    self_check: bool = Field(True, description="run the zero-abstention self-check every step")

    @field_validator("discount")
    @classmethod
    def _discount_required_for_c(cls, v, info: ValidationInfo):
        if v is None and info.data.get("arm") == "C":
            raise ValueError("required when casa.arm = C: one_minus_precision | precision (no default)")
        return v

    @field_validator("delta_abstain")
    @classmethod
    def _delta_a_above_delta(cls, v, info: ValidationInfo):
        d = info.data.get("delta")
        if d is not None and v <= d:
            raise ValueError(f"must exceed casa.delta = {d:g} (delta_A > delta)")
        return v

    @field_validator("precision")
    @classmethod
    def _precision_range(cls, v):
        bad = {k: p for k, p in v.items() if not 0.0 <= float(p) <= 1.0}
        if bad:
            raise ValueError(f"precision must lie in [0, 1]: {bad}")
        return v

    def axis_precision(self, axis: str) -> float:
        if axis in self.precision:
            return float(self.precision[axis])
        if self.default_precision is None:
            raise CasaConfigError(f"casa.precision: no precision for axis {axis!r} and no casa.default_precision")
        return float(self.default_precision)


def casa_config(data: Optional[dict] = None) -> CasaConfig:
    """Validate a ``casa`` mapping; :class:`CasaConfigError` with one line ``casa.FIELD: message``."""
    try:
        return CasaConfig.model_validate(data or {})
    except ValidationError as e:
        parts = []
        for err in e.errors():
            loc = ".".join(str(x) for x in err["loc"])
            msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
            parts.append(f"casa.{loc}: {msg}")
        raise CasaConfigError("; ".join(parts)) from None
