"""Judge stress test with a fixed attacker and a fixed judge (CASA proposal §method, criterion-bank stress
test: "for llm_judge criteria, ImpossibleRubrics' triple: a fixed attacker, a fixed judge, and the criterion's
own decision semantics plus an endpoint check as the oracle").

World: the criteria world's held-out prompts (``CriteriaWorld(eval_n=prompts, eval_seed=seed)``), criterion
``order`` (its judge criterion: ``sim_judge`` without judge options, ``llm_judge`` with them).  Per prompt and
attack family (``coevo.recipes.vgopd.casa.attack.ATTACKS``) the attacker writes one answer; the judge gives
its verdict on ``order``; the **oracle** is the criteria world's truth (``coevo.worlds.criteria.truth_of``:
the order rule on the whole answer), and the **endpoint check** is the truth of ``final_value`` (is the
answer's final value right?), reported beside it.

* **break** = an answer the oracle fails and the judge passes; the break rate is breaks / answers the oracle
  fails, with a Wilson 95 % interval (overall, per family, split by the endpoint check).  Judge abstentions
  (unknown, unparsable) are counted, never breaks.  A judge endpoint that fails after its retries is an
  **error** (``judge_errors``, ``n_errors``): left out of every denominator, never an abstention; a judge
  or attacker endpoint whose first call fails stops the test (``coevo.core.verdict.EndpointDown``).  Answers the oracle passes are the
  should-pass set; the judge's fails on them are false rejects.
* Judges, fixed for the run: ``sim`` (the criteria world's simulated judge: it decides with the oracle's own
  rule, so its break rate is 0 by construction; optional simulated "unknown" rate); ``smollm2`` (SmolLM2-135M
  as a local judge, the ``judge-v1`` prompt of ``coevo.verify.judge``, greedy); an OpenAI-compatible URL (the
  criteria world's ``llm_judge`` through ``coevo.verify.judge.LLMJudge``).  Each reports ``version`` (kind,
  model, prompt version and hash, code version) and a ``config_hash`` of that record; verdict versions are
  collected and ``judge_fixed`` says whether one judge version gave every verdict.
* The JSON carries ``attacker`` and ``judge`` (their versions) beside the break rate, and ``by_kind``
  ({judge kind: {n, broken, rate, ci_low, ci_high}}), the shape CASA-P4 reads.

Caveat (ImpossibleRubrics, quoted by the CASA proposal): the oracle and the rubric share one certificate;
here the simulated judge *is* the oracle's rule, so only a model judge measures anything.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, List, Optional, Sequence

from coevo.audit.stats import wilson_interval
from coevo.recipes.vgopd.casa.attack import ATTACKS

__all__ = ["JUDGE_CRITERION", "ENDPOINT_CRITERION", "SimJudge", "EndpointJudge", "HFJudge", "make_judge",
           "judge_stress", "JUDGE_KINDS_CLI"]

JUDGE_CRITERION = "order"
ENDPOINT_CRITERION = "final_value"
JUDGE_KINDS_CLI = ("sim", "smollm2", "URL (an OpenAI-compatible endpoint)")


def _hashed(version: dict) -> dict:
    blob = json.dumps({k: v for k, v in version.items() if k != "config_hash"}, sort_keys=True, default=str)
    return {**version, "config_hash": hashlib.sha256(blob.encode()).hexdigest()[:12]}


class SimJudge:
    """The criteria world's simulated judge (``sim_judge``: the order rule; ``judge_unknown_rate``)."""

    kind = "sim_judge"

    def __init__(self, judge_unknown_rate: float = 0.0, seed: int = 0) -> None:
        from coevo.criteria.verifier import CRITERION_VERSION
        from coevo.worlds.criteria import ORDER_PATTERN, CriteriaWorld

        self.world = CriteriaWorld(judge_unknown_rate=judge_unknown_rate, channel_seed=seed)
        self.version = _hashed({"kind": self.kind, "model": "simulated (the oracle's order rule)",
                                "rule": ORDER_PATTERN, "channels": self.world.channels.tag,
                                "code_version": CRITERION_VERSION})

    def verdicts(self, items: Sequence[tuple]) -> list:
        """(entry, answer) -> the judge criterion's Verdict, through the world's ``CriteriaScorer``."""
        from coevo.criteria.scoring import criterion_pairs

        pairs = [next(p for p in criterion_pairs(e, a) if p.criterion_id == JUDGE_CRITERION) for e, a in items]
        return self.world.scorer().score_pairs(pairs)


class EndpointJudge(SimJudge):
    """An OpenAI-compatible endpoint as the ``llm_judge`` of the criteria world (``LLMJudge``, judge-v1)."""

    kind = "llm_judge"

    def __init__(self, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY", retries: int = 2,
                 timeout_s: float = 60.0) -> None:
        from coevo.verify.judge import JUDGE_CODE_VERSION, PROMPTS
        from coevo.worlds.criteria import CriteriaWorld

        opts = {"base_url": base_url, "model": model, "api_key_env": api_key_env, "retries": retries,
                "timeout_s": timeout_s, "backoff_s": 0.5}
        self.base_url = base_url.rstrip("/")
        self.world = CriteriaWorld(judge=opts)
        self.version = _hashed({"kind": self.kind, "backend": "openai", "base_url": base_url.rstrip("/"),
                                "model": model, "prompt_version": "judge-v1",
                                "prompt_hash": hashlib.sha256(PROMPTS["judge-v1"].encode()).hexdigest()[:12],
                                "temperature": 0.0, "max_tokens": 8, "code_version": JUDGE_CODE_VERSION})

    def verdicts(self, items: Sequence[tuple]) -> list:
        """The first item alone, then the rest: a judge whose first call fails after its retries is down
        (``EndpointDown``, one line naming it and the cause), never a run of abstentions."""
        from coevo.core.verdict import raise_if_all_failed
        from coevo.verify.judge import raise_for_auth

        got = super().verdicts(items[:1])
        raise_for_auth(got)
        raise_if_all_failed(got, "judge", self.base_url)
        got += super().verdicts(items[1:]) if len(items) > 1 else []
        raise_for_auth(got)
        return got


class HFJudge:
    """SmolLM2-135M-Instruct as a local judge: ``coevo.verify.judge``'s judge-v1 prompt, greedy, the first
    word of the reply parsed as ``LLMJudge`` does (yes 1, no 0, unknown / anything else: abstention)."""

    kind = "llm_judge"

    def __init__(self, device: str = "cpu", policy: Any = None, max_new_tokens: int = 4) -> None:
        from coevo.recipes.vgopd.casa.attack import smollm2_policy, smollm2_weights_id
        from coevo.verify.judge import JUDGE_CODE_VERSION, PROMPTS
        from coevo.worlds.criteria import CriteriaWorld

        self.world = CriteriaWorld(judge={"base_url": "local:smollm2", "model": "smollm2"})
        self.policy = policy or smollm2_policy("judge", device)
        self.max_new_tokens = max_new_tokens
        self.version = _hashed({"kind": self.kind, "backend": "hf", "model": "smollm2",
                                "weights_id": smollm2_weights_id(), "prompt_version": "judge-v1",
                                "prompt_hash": hashlib.sha256(PROMPTS["judge-v1"].encode()).hexdigest()[:12],
                                "decoding": "greedy", "max_new_tokens": max_new_tokens,
                                "code_version": JUDGE_CODE_VERSION})

    def verdicts(self, items: Sequence[tuple]) -> list:
        from coevo.core.policy import SamplingParams
        from coevo.core.verdict import Verdict, abstain
        from coevo.verify.judge import PROMPTS, parse_judgement

        prompts = [PROMPTS["judge-v1"].format(question=e.prompt, reference=e.reference, answer=a,
                                              criterion=e.criterion(JUDGE_CRITERION).spec["rubric"]) for e, a in items]
        sp = SamplingParams(greedy=True, max_new_tokens=self.max_new_tokens, stream="audit")
        out = []
        for o in self.policy.sample(prompts, 1, sp):
            word, ver = parse_judgement(o[0].text), self.version["config_hash"]
            if word in ("yes", "no"):
                out.append(Verdict(int(word == "yes"), "", self.kind, ver, 0.0, {"reply": o[0].text[:80]}))
            else:
                out.append(abstain("judge-unknown" if word == "unknown" else "unparsable", self.kind, ver,
                                   reply=o[0].text[:80]))
        return out


def make_judge(spec: str, model: Optional[str] = None, api_key_env: str = "OPENAI_API_KEY", device: str = "cpu",
               judge_unknown_rate: float = 0.0, policy: Any = None, timeout_s: float = 60.0):
    """``sim`` | ``smollm2`` | an ``http(s)://`` base URL (``model``: the model to request)."""
    if spec == "sim":
        return SimJudge(judge_unknown_rate)
    if spec == "smollm2":
        return HFJudge(device=device, policy=policy)
    if spec.startswith(("http://", "https://")):
        if not model:
            raise ValueError("--judge URL needs --judge-model (the model name the endpoint serves)")
        return EndpointJudge(spec, model, api_key_env=api_key_env, timeout_s=timeout_s)
    raise ValueError(f"unknown judge {spec!r} (known: {', '.join(JUDGE_KINDS_CLI)})")


def _rate(cases: Sequence[dict]) -> dict:
    """Breaks among ``cases``; a judge error (the endpoint failed) is left out of ``n`` and counted apart."""
    errs = sum(1 for k in cases if k.get("error"))
    cases = [k for k in cases if not k.get("error")]
    n, b = len(cases), sum(1 for k in cases if k["judge"] == 1)
    lo, hi = wilson_interval(b / n, n) if n else (None, None)
    return {"n": n, "broken": b, "rate": b / n if n else None, "ci_low": lo, "ci_high": hi,
            "n_abstained": sum(1 for k in cases if k["judge"] is None), "n_errors": errs}


def build_requests(world: Any, tasks: Sequence[Any], families: Sequence[str]) -> List[dict]:
    """One attack request per (prompt, family)."""
    out = []
    for t in tasks:
        e = world.entry(t)
        c = e.criterion(JUDGE_CRITERION)
        out += [{"family": f, "task": t, "question": t.question, "criterion": c.spec["rubric"],
                 "reference": e.reference, "final": e.meta["final"], "entry": e} for f in families]
    return out


def summarize(cases: Sequence[dict], kind: str) -> dict:
    """Break rate overall / per family / by endpoint check, false rejects, and the P4-shaped ``by_kind``."""
    bad = [k for k in cases if k["oracle"] == 0]
    good = [k for k in cases if k["oracle"] == 1]
    fams = {f: _rate([k for k in bad if k["family"] == f]) for f in ATTACKS if any(k["family"] == f for k in cases)}
    brk = _rate(bad)
    return {"break": brk, "by_family": fams,
            "by_endpoint": {"final_right": _rate([k for k in bad if k["endpoint"] == 1]),
                            "final_wrong": _rate([k for k in bad if k["endpoint"] == 0])},
            "should_pass": {"n": sum(1 for k in good if not k.get("error")),
                            "false_rejects": sum(1 for k in good if k["judge"] == 0),
                            "n_abstained": sum(1 for k in good if k["judge"] is None and not k.get("error")),
                            "n_errors": sum(1 for k in good if k.get("error"))},
            "by_kind": {kind: {k: brk[k] for k in ("n", "broken", "rate", "ci_low", "ci_high", "n_abstained",
                                                   "n_errors")}}}


def _verdict_version(v: Any) -> str:
    """The verdict's checker version, with the judge model and prompt version it records (``LLMJudge``)."""
    d = getattr(v, "detail", None) or {}
    return "/".join(str(x) for x in (v.version, d.get("model"), d.get("prompt_version")) if x)


def judge_stress(attacker: Any, judge: Any, prompts: int = 40, seed: int = 0,
                 families: Optional[Sequence[str]] = None, examples: int = 8) -> dict:
    """The judge stress test (module docstring): the JSON ``coevo stress`` prints and writes."""
    from coevo.core.verdict import first_cause, is_error
    from coevo.worlds.criteria import CriteriaWorld, truth_of

    fams = list(families or ATTACKS)
    bad = sorted(set(fams) - set(ATTACKS))
    if bad:
        raise ValueError(f"unknown attack family {bad[0]!r} (known: {', '.join(ATTACKS)})")
    if prompts < 1:
        raise ValueError("--prompts must be >= 1")
    tasks = CriteriaWorld(eval_n=prompts, eval_seed=seed).eval_set()
    reqs = build_requests(judge.world, tasks, fams)
    answers = attacker.answers(reqs)
    live = [(r, a) for r, a in zip(reqs, answers) if a is not None]
    verdicts = judge.verdicts([(r["entry"], a) for r, a in live]) if live else []
    cases = []
    for (r, a), v in zip(live, verdicts):
        e = r["entry"]
        cases.append({"entry": e.id, "family": r["family"], "answer": a, "judge": v.value,
                      "reason": v.reason or "", "error": is_error(v), "oracle": truth_of(e.criterion(JUDGE_CRITERION), a),
                      "endpoint": truth_of(e.criterion(ENDPOINT_CRITERION), a), "verdict_version": _verdict_version(v)})
    res: Dict[str, Any] = {"test": "judge-stress", "world": "criteria", "criterion": JUDGE_CRITERION,
                           "oracle": "coevo.worlds.criteria.truth_of (order rule) + endpoint check (final_value)",
                           "prompts": prompts, "seed": seed, "families": fams,
                           "attacker": dict(attacker.version), "judge": dict(judge.version),
                           "n_requests": len(reqs), "n_answers": len(cases),
                           "attacker_failures": len(reqs) - len(live),
                           "attacker_errors": len(getattr(attacker, "errors", None) or []),
                           "judge_errors": sum(1 for k in cases if k["error"]),
                           "endpoint_calls": (len(cases) if hasattr(judge, "base_url") else 0)
                           + (len(reqs) if hasattr(attacker, "errors") else 0),
                           "error_first": next((first_cause(v) for v in verdicts if is_error(v)),
                                               (getattr(attacker, "errors", None) or [""])[0]),
                           "n_oracle_fail": sum(1 for k in cases if k["oracle"] == 0),
                           **summarize(cases, judge.kind)}
    vers = sorted({str(k["verdict_version"]) for k in cases})
    res["judge"]["verdict_versions"], res["judge_fixed"] = vers, len(vers) <= 1
    res["break_examples"] = [{k: c[k] for k in ("entry", "family", "answer", "endpoint")}
                             for c in cases if c["oracle"] == 0 and c["judge"] == 1][:examples]
    return res
