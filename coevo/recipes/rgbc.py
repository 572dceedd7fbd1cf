"""SynCo and RGBC (seed 000, SPEC §2): a Synthesizer writes tasks with reference solutions, a
Reasoner solves them; one recipe class serves ``--recipe synco`` and ``--recipe rgbc``.

One joint step (phase ``train``):

1. the Synthesizer writes ``tasks_per_step`` tasks (question, reference solution, final answer);
2. validator rho_t (``coevo.stages.validate``): five rule checks, verdicts and reasons to the ledger;
3. consensus check: ``consensus_n`` independent solves; a task whose solves do not support its
   reference never reaches the Reasoner and returns negative feedback to the Synthesizer;
4. screen group: K rollouts per accepted task -> mu_1 (correct = matches the reference);
5. confirm group: K more rollouts, only for 0 < mu_1 < 1, before (arm mu_tilde) or after (arm
   full: the *post* group) the Reasoner update -> kappa, mu~ over 2K, the mode and nu, lag;
6. Reasoner GRPO update on the screen (pre) group: 1.0 / 0.9 (format recovery) / 0;
7. Synthesizer GRPO update: r_S = G_q G_r T(.) by arm (docs/rgbc.md).

Arms (``rgbc.arm``): ``synco`` T(mu_1); ``mu_tilde`` T(mu~), no kappa discount; ``full``
T(mu~) omega(kappa) with the confirm group drawn after the update. Where an arm has no confirm
or post group, ``synco.instrument`` draws audit-only ones (separate random stream, no reward
effect) so kappa, nu and lag are reported for every arm. The oracle audit (true pass rates from
``audit_samples`` extra samples per task) is an audit-only cost, flagged as such.
"""
from __future__ import annotations

import random
from contextlib import contextmanager
from typing import Literal

import numpy as np
import torch
from pydantic import Field, model_validator

from coevo.audit.instruments import bearing_rate, kappa_bar, lag_bar, nu_bar
from coevo.audit.nullmodel import bearing_probability
from coevo.backends.base import full_text, sampler_info
from coevo.config import RunConfig, Strict
from coevo.ledger.store import StepWriter
from coevo.recipes.registry import RecipeInfo, RoleSpec
from coevo.recipes.base import StepSpec, dumps, evaluate_solver, loss_config, round_plan, sampling_params
from coevo.rewards.formulas import advantage_magnitude, quality_gate, rgbc_reward, synco_reward, teachability
from coevo.rl.grpo import group_advantages
from coevo.stages.core import Proposal, grpo_update, solve, to_groups
from coevo.stages.validate import VALIDATOR_KIND, consensus_check, reasoner_answer, reasoner_rewards, validate_outputs
from coevo.worlds.arithmetic import SYNTH_PROMPT
from coevo.worlds.base import World


class SynCoConfig(Strict):
    """SynCo loop counts and validator/consensus settings (seed 000; shared by recipes synco and rgbc).

    Defaults are CPU-sized; the paper constants (32 tasks per step, K = 4) are in presets/paper.yaml.
    """
    rounds: int = Field(2, ge=1, description="rounds; each = steps_per_round joint steps, then an eval")
    steps_per_round: int = Field(5, ge=1, description="joint Synthesizer+Reasoner steps per round")
    tasks_per_step: int = Field(32, ge=1, description="tasks the Synthesizer writes per step (paper: 32)")
    synth_group: int = Field(4, ge=1, description="tasks per Synthesizer prompt (its GRPO group); divides tasks_per_step")
    k: int = Field(4, ge=1, description="Reasoner rollouts per task and group (paper: K = 4)")
    synth_max_tokens: int = Field(80, ge=8, description="max new tokens of a Synthesizer output")
    consensus: bool = Field(True, description="run the independent consensus check before any rollout")
    consensus_n: int = Field(4, ge=1, description="independent solves per task in the consensus check")
    consensus_min_agree: int = Field(1, ge=1, description="reject a task when fewer solves than this match its reference")
    redundancy_window: int = Field(256, ge=0, description="N: redundancy is checked against the last N validated tasks")
    hard_checks: list[Literal["schema", "well_posed", "consistency", "legality", "redundancy"]] = Field(
        default_factory=lambda: ["schema", "well_posed", "consistency", "legality", "redundancy"],
        description="validator checks whose failure rejects the task before any rollout")
    quality_weights: dict[str, float] = Field(
        default_factory=lambda: {"schema": 1.0, "well_posed": 1.0, "legality": 1.0, "novelty": 1.0},
        description="quality score v_q = weighted mean of these components (feeds G_q); see docs/rgbc.md")
    reliability_weights: dict[str, float] = Field(
        default_factory=lambda: {"steps_parse": 1.0, "chain": 1.0, "operands": 1.0, "final": 1.0},
        description="reliability score v_r = weighted mean of rule-based consistency checks (feeds G_r)")
    reward_formatted: float = Field(1.0, description="Reasoner reward: correct and well formatted")
    reward_recovered: float = Field(0.9, description="Reasoner reward: correct after format recovery")
    invalid_reward: float = Field(-1.0, description="Synthesizer reward of an output the validator rejects")
    consensus_reject_reward: float = Field(-0.5, description="Synthesizer reward of a task the consensus check rejects")
    instrument: bool = Field(True, description="audit-only confirm/post groups where the arm has none (kappa, nu, lag of SynCo)")
    audit_samples: int = Field(48, ge=0, description="oracle audit: extra samples per task for its true pass rate (audit-only cost)")
    mid_band: list[float] = Field(default_factory=lambda: [0.25, 0.75], min_length=2, max_length=2,
                                  description="true-p band reported as the mid band (m_4(p) >= 0.68 inside it)")

    @model_validator(mode="after")
    def _groups_divide(self):
        if self.tasks_per_step % self.synth_group:
            raise ValueError(f"tasks_per_step ({self.tasks_per_step}) must be a multiple of synth_group "
                             f"({self.synth_group})")
        return self


class RGBCConfig(Strict):
    """RGBC options (seed 000 §核心思路); counts come from the synco section."""
    arm: Literal["synco", "mu_tilde", "full"] = Field("full", description="synco = T(mu_1); mu_tilde = T(mu~) no "
                                                      "kappa discount; full = T(mu~) omega(kappa), confirm after update")
    omega0: float = Field(0.2, ge=0, le=1, description="omega(kappa = 0)")
    confirm: bool = Field(True, description="draw the confirm group (off + omega0 = 1 reduces to SynCo)")
    confirm_timing: Literal["auto", "pre", "post"] = Field(
        "auto", description="confirm group before or after the Reasoner update; auto: full = post, others = pre")
    reward_mu: Literal["tilde", "post"] = Field("tilde", description="argument of T in arm full: mu~ over 2K, or mu_post alone")
    doubt_policy: Literal["drop", "anchor"] = Field(
        "drop", description="reference-in-doubt tasks: drop, or use the mode answer as provisional anchor")
    doubt_stable: float = Field(0.75, gt=0, le=1, description="mode share that makes a nu = 0 task 'in doubt'")
    doubt_reward: float = Field(0.0, description="Synthesizer reward of a dropped in-doubt task")
    budget: Literal["matched", "none"] = Field(
        "matched", description="matched: arm synco spends the confirm budget an RGBC arm would (its observed "
                               "bearing rate) on extra tasks; none: no matching")
    budget_prior: float = Field(0.17, ge=0, le=1, description="bearing rate assumed before the first step (seed: ~17%)")
    doubt_gate_precision: float = Field(0.80, ge=0, le=1, description="human-check gate: precision of the mode anchor")
    doubt_gate_recall: float = Field(0.75, ge=0, le=1, description="human-check gate: recall of the mode anchor")


_ROLES = (RoleSpec("solver", asset="solver", seed_offset=0, lr="lr_solver"),
          RoleSpec("synthesizer", asset="synthesizer", seed_offset=1, lr="lr_challenger"))
_COLS = ("synthesizer_reward_mean", "solver_reward_mean", "bearing_rate", "kappa_bar", "nu_bar", "lag_bar")
RECIPES = {
    "synco": RecipeInfo(name="synco", factory="coevo.recipes.rgbc:RGBCRecipe", roles=_ROLES,
                        sections={"synco": SynCoConfig, "rgbc": RGBCConfig}, worlds=("arithmetic",),
                        summary_columns=_COLS, report_sections=("coevo.report.teachable:section",),
                        description="SynCo: Synthesizer + Reasoner, validator, consensus, T(mu_1)"),
    "rgbc": RecipeInfo(name="rgbc", factory="coevo.recipes.rgbc:RGBCRecipe", roles=_ROLES,
                       sections={"synco": SynCoConfig, "rgbc": RGBCConfig}, worlds=("arithmetic",),
                       summary_columns=_COLS, report_sections=("coevo.report.teachable:section",),
                       description="SynCo + RGBC: screen/confirm, kappa discount, nu, lag; arms synco|mu_tilde|full"),
}


def _est(e) -> dict:
    return {"value": e.value, "se": e.se, "ci_low": e.ci_low, "ci_high": e.ci_high, "n": e.n}


def _nanmean(xs) -> float | None:
    a = np.asarray([x for x in xs if x is not None], dtype=float)
    a = a[np.isfinite(a)]
    return float(a.mean()) if a.size else None


class RGBCRecipe:
    name = "rgbc"

    def __init__(self, cfg: RunConfig, world: World, policies: dict, run_id: str, verifier) -> None:
        self.cfg, self.world, self.run_id, self.verifier = cfg, world, run_id, verifier
        self.synth = policies["synthesizer"]
        self.solver = policies["solver"]
        sc, rc = cfg.synco, cfg.rgbc
        self.arm = "synco" if cfg.recipe == "synco" else rc.arm
        self.confirm_train = self.arm != "synco" and rc.confirm  # confirm group that feeds a reward
        timing = rc.confirm_timing if rc.confirm_timing != "auto" else ("post" if self.arm == "full" else "pre")
        self.timing = timing if self.confirm_train else "pre"
        self.omega0 = rc.omega0 if self.arm == "full" else 1.0
        self.matched = cfg.recipe == "rgbc" and self.arm == "synco" and rc.budget == "matched"
        self.loss = loss_config(cfg)
        self.sp = sampling_params(cfg)
        self.sp_synth = sampling_params(cfg, sc.synth_max_tokens)
        self.eval_tasks = list(world.eval_set())
        self.recent: list[str] = []
        self.last_bearing = rc.budget_prior
        self.audit_gen = torch.Generator().manual_seed(cfg.seed + 7919)
        self.rng = random.Random(cfg.seed)

    # ------------------------------------------------------------------ schedule
    def plan(self) -> list[StepSpec]:
        sc = self.cfg.synco
        return round_plan(sc.rounds, [("train", sc.steps_per_round)])

    def run_step(self, spec: StepSpec, w: StepWriter) -> dict:
        return getattr(self, f"_{spec.phase}")(spec, w)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        return {"recent": self.recent, "last_bearing": self.last_bearing, "audit_gen": self.audit_gen.get_state(),
                "rng": self.rng.getstate()}

    def load_state_dict(self, st: dict) -> None:
        self.recent, self.last_bearing = list(st["recent"]), st["last_bearing"]
        self.audit_gen.set_state(st["audit_gen"])
        self.rng.setstate(st["rng"])

    # ------------------------------------------------------------------ helpers
    @contextmanager
    def _audit_stream(self):
        """Audit-only sampling draws from its own generator, so it never shifts the training stream."""
        pol = self.solver
        if not hasattr(pol, "gen"):
            yield
            return
        saved = pol.gen
        pol.gen = self.audit_gen
        try:
            yield
        finally:
            pol.gen = saved

    def _sample(self, tasks, n: int, audit: bool):
        if not tasks:
            return [], [], []
        if audit:
            with self._audit_stream():
                outs = solve(self.solver, self.world, tasks, n, self.sp)
        else:
            outs = solve(self.solver, self.world, tasks, n, self.sp)
        ans, fmt = [], []
        for comps in outs:
            pairs = [reasoner_answer(self.world, c) for c in comps]
            ans.append([a for a, _ in pairs])
            fmt.append([f for _, f in pairs])
        return outs, ans, fmt

    def _match(self, answers: list[list], targets: list) -> list[list]:
        """Verdicts of every answer against its task's target, through the verifier."""
        flat = self.verifier.match_many([(a, t) for ans, t in zip(answers, targets) for a in ans])
        out, j = [], 0
        for ans in answers:
            out.append(flat[j:j + len(ans)])
            j += len(ans)
        return out

    @staticmethod
    def _mu(verdicts) -> float:
        return float(np.mean([v.value == 1 for v in verdicts])) if verdicts else float("nan")

    def _audit_p(self, tasks, truths) -> tuple[list, list]:
        """True pass rate (vs oracle) and reference-match rate per task from many extra samples."""
        n = self.cfg.synco.audit_samples
        if n == 0 or not tasks:
            return [None] * len(tasks), [None] * len(tasks)
        _, ans, _ = self._sample(tasks, n, audit=True)
        v_true = self._match(ans, truths)
        v_ref = self._match(ans, [t.reference for t in tasks])
        return [self._mu(v) for v in v_true], [self._mu(v) for v in v_ref]

    def _rollout_rows(self, spec, tasks, outs, ans, purpose, truths, refs_v, oracle_v, offset=0):
        roll, verd = [], []
        for t, comps, a_s, rv, ov in zip(tasks, outs, ans, refs_v, oracle_v):
            for k, (c, a) in enumerate(zip(comps, a_s)):
                rid = f"{t.task_id}-{purpose}-{k + offset}"
                roll.append({"run_id": self.run_id, "rollout_id": rid, "task_id": t.task_id, "round": spec.round,
                             "step": spec.step, "role": "solver", "purpose": purpose, "group_idx": k + offset,
                             "policy_version": c.policy_version, "text": c.text, "answer": a,
                             "n_tokens": len(c.token_ids), "finish_reason": c.finish_reason,
                             "sampler_json": sampler_info(c)})
                verd.append(self._verdict(spec, rid, t.task_id, "reference", rv[k]))
                if ov is not None:
                    verd.append(self._verdict(spec, rid, t.task_id, "oracle", ov[k]))
        return roll, verd

    def _verdict(self, spec, rid, task_id, target, v, kind=None, version=None) -> dict:
        return {"run_id": self.run_id, "rollout_id": rid, "task_id": task_id, "step": spec.step, "target": target,
                "verifier_kind": kind or self.verifier.kind, "verifier_version": version or self.verifier.version,
                "criterion_id": None, "value": v.value, "reason": v.reason, "elapsed_s": getattr(v, "elapsed_s", 0.0)}

    def _propose(self, n_prompts: int, spec: StepSpec) -> list[Proposal]:
        """Synthesizer outputs for ``n_prompts`` prompts x ``synth_group`` (the world's synthesizer prompt)."""
        prompts_fn = getattr(self.world, "synthesizer_prompts", None)
        prompts = prompts_fn(n_prompts, self.cfg.seed + spec.step) if prompts_fn else [SYNTH_PROMPT] * n_prompts
        outs = self.synth.sample(prompts, self.cfg.synco.synth_group, self.sp_synth)
        return [Proposal(c, self.world.parse_task(full_text(c), f"s{spec.step}-{g}-{k}"), g)
                for g, comps in enumerate(outs) for k, c in enumerate(comps)]

    # ------------------------------------------------------------------ phases
    def _eval(self, spec: StepSpec, w: StepWriter) -> dict:
        acc = evaluate_solver(self.solver, self.world, self.eval_tasks, self.run_id, spec.round, spec.step, w,
                              greedy=self.cfg.eval.greedy, samples=self.cfg.eval.samples, sampling=self.sp)
        return {"eval": acc}

    def _train(self, spec: StepSpec, w: StepWriter) -> dict:  # noqa: C901 (one readable pass of the loop)
        sc, rc, K = self.cfg.synco, self.cfg.rgbc, self.cfg.synco.k
        has_oracle = self.world.has_oracle
        n_groups = sc.tasks_per_step // sc.synth_group
        extra = int(round(self.last_bearing * n_groups)) if self.matched else 0
        props = self._propose(n_groups + extra, spec)
        ids = [f"s{spec.step}-{p.group}-{i % sc.synth_group}" for i, p in enumerate(props)]
        window = self.recent[-sc.redundancy_window:] if sc.redundancy_window else []
        vals = validate_outputs(self.world, [p.completion for p in props], ids, window, sc.hard_checks,
                                sc.quality_weights, sc.reliability_weights)
        valid = [i for i, v in enumerate(vals) if v.ok]
        self.recent = (self.recent + [vals[i].task.question for i in valid])[-max(sc.redundancy_window, 1):]
        verd_rows, roll_rows = [], []
        for i, v in enumerate(vals):
            for name, (ok, reason) in v.checks.items():
                verd_rows.append({"run_id": self.run_id, "rollout_id": ids[i], "task_id": ids[i], "step": spec.step,
                                  "target": f"validator:{name}", "verifier_kind": VALIDATOR_KIND,
                                  "verifier_version": "v1", "criterion_id": name, "value": int(ok),
                                  "reason": reason, "elapsed_s": 0.0})
        # oracle facts (audit only: never enter a reward)
        truth = {i: (self.world.oracle(vals[i].task) if has_oracle and vals[i].task is not None else None)
                 for i in range(len(vals))}
        ref_ok_v = self.verifier.match_many([(vals[i].task.reference, truth[i]) for i in valid]) if has_oracle else []
        ref_correct = {i: (None if not has_oracle or v.value is None else bool(v.value)) for i, v in zip(valid, ref_ok_v)}

        # ---- consensus check (before any Reasoner rollout)
        cons = {}
        if sc.consensus and valid:
            tasks_v = [vals[i].task for i in valid]
            outs, ans, _ = self._sample(tasks_v, sc.consensus_n, audit=False)
            res = consensus_check(self.verifier, ans, [t.reference for t in tasks_v], sc.consensus_min_agree)
            ov = self._match(ans, [truth[i] for i in valid]) if has_oracle else [None] * len(valid)
            r, v_ = self._rollout_rows(spec, tasks_v, outs, ans, "consensus", None, [c.verdicts for c in res], ov)
            roll_rows += r
            verd_rows += v_
            for i, c in zip(valid, res):
                cons[i] = c
                verd_rows.append({"run_id": self.run_id, "rollout_id": ids[i], "task_id": ids[i], "step": spec.step,
                                  "target": "consensus", "verifier_kind": self.verifier.kind,
                                  "verifier_version": self.verifier.version, "criterion_id": None,
                                  "value": int(c.ok), "reason": c.reason, "elapsed_s": 0.0})
        acc_idx = [i for i in valid if i not in cons or cons[i].ok]
        tasks = [vals[i].task for i in acc_idx]
        refs = [t.reference for t in tasks]
        truths = [truth[i] for i in acc_idx]
        n = len(tasks)

        # ---- oracle audit: true pass rates under the pre-update Reasoner
        true_p, p_ref = self._audit_p(tasks, truths) if has_oracle else ([None] * n, [None] * n)

        # ---- screen group (pre)
        s_outs, s_ans, s_fmt = self._sample(tasks, K, audit=False)
        s_v = self._match(s_ans, refs)
        s_ov = self._match(s_ans, truths) if has_oracle else [None] * n
        r, v_ = self._rollout_rows(spec, tasks, s_outs, s_ans, "screen", None, s_v, s_ov)
        roll_rows += r
        verd_rows += v_
        mu1 = [self._mu(v) for v in s_v]
        bear = [j for j in range(n) if 0 < mu1[j] < 1]
        self.last_bearing = len(bear) / n if n else self.last_bearing

        # ---- confirm group: training (arm mu_tilde pre / arm full post) or audit-only instrument
        conf = {}  # j -> (answers, verdicts vs reference, purpose, timing)

        def draw_confirm(purpose: str, audit: bool, timing: str) -> None:
            bt = [tasks[j] for j in bear]
            outs, ans, _ = self._sample(bt, K, audit=audit)
            cv = self._match(ans, [refs[j] for j in bear])
            cov = self._match(ans, [truths[j] for j in bear]) if has_oracle else [None] * len(bear)
            rr, vv = self._rollout_rows(spec, bt, outs, ans, purpose, None, cv, cov, offset=K)
            roll_rows.extend(rr)
            verd_rows.extend(vv)
            for j, a, v in zip(bear, ans, cv):
                conf[j] = (a, v, purpose, timing)

        if self.confirm_train and self.timing == "pre":
            draw_confirm("confirm", audit=False, timing="pre")
        elif not self.confirm_train and sc.instrument:
            draw_confirm("confirm-instrument", audit=True, timing="pre")

        # ---- mode, nu and the reference-in-doubt bucket (from the 2K answers, where known)
        def doubt_stats() -> dict:
            out = {}
            js = sorted(conf)
            if not js:
                return out
            all_ans = [s_ans[j] + conf[j][0] for j in js]
            votes = self.verifier.majority_votes(all_ans)
            agree = self.verifier.match_many([(v.label, refs[j]) for v, j in zip(votes, js)])
            for j, v, a in zip(js, votes, agree):
                nu = None if v.label is None or a.value is None else float(a.value)
                out[j] = {"mode": v.label, "share": v.p_hat, "nu": nu,
                          "doubt": bool(nu == 0.0 and v.p_hat >= rc.doubt_stable - 1e-12)}
            return out

        ds = doubt_stats() if conf else {}
        doubt_acts = self.confirm_train  # the bucket changes training only in arms with a training confirm group
        anchors = list(refs)
        dropped = set()
        if doubt_acts:
            for j, d in ds.items():
                if d["doubt"]:
                    if rc.doubt_policy == "anchor":
                        anchors[j] = d["mode"]
                    else:
                        dropped.add(j)

        # ---- Reasoner update on the screen (pre) group
        train_js = [j for j in range(n) if j not in dropped]
        s_anchor_v = s_v if anchors == refs else self._match(s_ans, anchors)
        rewards = np.concatenate([reasoner_rewards([v.value for v in s_anchor_v[j]], s_fmt[j], sc.reward_formatted,
                                                   sc.reward_recovered) for j in train_js]) if train_js else np.zeros(0)
        solver_before = self.solver.version
        reward_rows = []
        if train_js:
            adv = group_advantages(to_groups(rewards, K), self.cfg.loss.advantage_scale).flatten()
            comps = [c for j in train_js for c in s_outs[j]]
            s_metrics = grpo_update(self.solver, comps, adv.tolist(), self.loss)
            for q, j in enumerate(train_js):
                for k in range(K):
                    x = q * K + k
                    reward_rows.append({"run_id": self.run_id, "step": spec.step, "role": "solver",
                                        "item_id": f"{tasks[j].task_id}-screen-{k}", "task_id": tasks[j].task_id,
                                        "reward": float(rewards[x]), "advantage": float(adv[x]),
                                        "components_json": dumps({"formatted": s_fmt[j][k],
                                                                  "anchor": "mode" if anchors[j] != refs[j] else "reference"})})
        else:
            s_metrics = {"skipped": 1.0}

        # ---- post group: the training confirm group of arm full, else an audit-only instrument
        if self.confirm_train and self.timing == "post":
            draw_confirm("confirm", audit=False, timing="post")
            ds = doubt_stats()
            if doubt_acts:  # after the update the bucket can only change the Synthesizer reward
                for j, d in ds.items():
                    if d["doubt"] and rc.doubt_policy == "anchor":
                        anchors[j] = d["mode"]
                    elif d["doubt"]:
                        dropped.add(j)
        post = {j: (self._mu(c[1]), c[2]) for j, c in conf.items() if c[3] == "post"}
        if not post and sc.instrument and bear:
            bt = [tasks[j] for j in bear]
            outs, ans, _ = self._sample(bt, K, audit=True)
            pv = self._match(ans, [refs[j] for j in bear])
            pov = self._match(ans, [truths[j] for j in bear]) if has_oracle else [None] * len(bear)
            rr, vv = self._rollout_rows(spec, bt, outs, ans, "post-instrument", None, pv, pov, offset=2 * K)
            roll_rows += rr
            verd_rows += vv
            post = {j: (self._mu(v), "post-instrument") for j, v in zip(bear, pv)}
        p_post, p_ref_post = {}, {}
        if has_oracle and post:
            pj = sorted(post)
            a_, b_ = self._audit_p([tasks[j] for j in pj], [truths[j] for j in pj])
            p_post, p_ref_post = dict(zip(pj, a_)), dict(zip(pj, b_))

        # ---- Synthesizer rewards
        s_rewards = np.zeros(len(props))
        comp: list[dict] = [{} for _ in props]
        stats_rows, task_rows = [], []
        pos = {i: j for j, i in enumerate(acc_idx)}
        for i, p in enumerate(props):
            v = vals[i]
            gq, gr = quality_gate(v.quality), quality_gate(v.reliability)
            c = {"quality": v.quality, "reliability": v.reliability, "novelty": v.novelty, "G_q": float(gq),
                 "G_r": float(gr), "arm": self.arm}
            row = {"run_id": self.run_id, "task_id": ids[i], "round": spec.round, "step": spec.step, "arm": self.arm,
                   "validator_ok": v.ok, "consensus_ok": cons[i].ok if i in cons else None,
                   "proposer_answer": v.task.reference if v.task else None,
                   "reference_correct": ref_correct.get(i)}
            if not v.ok:
                failed = [h for h in sc.hard_checks if not v.checks[h][0]]
                s_rewards[i] = sc.invalid_reward
                c["rejected"] = f"validator:{failed[0] if failed else 'unknown'}"
            elif i not in pos:
                s_rewards[i] = sc.consensus_reject_reward
                c["rejected"] = "consensus"
            else:
                j = pos[i]
                m1 = mu1[j]
                row.update({"k_screen": K, "mu_screen": m1, "mu_pre": m1, "true_p": true_p[j],
                            "true_p_n": sc.audit_samples if true_p[j] is not None else None})
                mu_t, kap = m1, None
                if j in conf:
                    m2 = self._mu(conf[j][1])
                    mu_t = (m1 + m2) / 2.0
                    kap = int(0 < m2 < 1)
                    row.update({"k_confirm": K, "mu_confirm": m2, "kappa": kap, "mu_tilde": mu_t})
                if j in ds:
                    row.update({"mode_answer": ds[j]["mode"], "mode_share": ds[j]["share"], "nu": ds[j]["nu"],
                                "in_doubt": ds[j]["doubt"]})
                if j in post:
                    row.update({"mu_post": post[j][0], "lag": m1 - post[j][0]})
                # the reward of this arm
                feeds = conf.get(j, (None, None, "", ""))[2] == "confirm"  # a training confirm group exists
                if self.arm == "synco":
                    r_s = synco_reward(v.quality, v.reliability, m1)
                    c.update({"T": teachability(m1), "mu_used": m1})
                else:
                    mu_arg = mu_t if feeds else m1
                    if self.arm == "full" and rc.reward_mu == "post" and feeds:
                        mu_arg = self._mu(conf[j][1])
                    if j in dropped:
                        mu_arg = None
                    elif anchors[j] != refs[j] and feeds:
                        allv = self._match([s_ans[j] + conf[j][0]], [anchors[j]])[0]
                        mu_arg = self._mu(allv)
                    kk = kap if (feeds and self.arm == "full") else None
                    if mu_arg is None:
                        r_s = rc.doubt_reward
                        c["rejected"] = "reference-in-doubt (dropped)"
                    else:
                        r_s = float(gq * gr * rgbc_reward(mu_arg, kk, self.omega0))
                        c.update({"T": teachability(mu_arg), "mu_used": mu_arg, "kappa": kk, "omega0": self.omega0})
                n_adv = 2 * K if j in conf else K
                c["adv_hat"] = float(advantage_magnitude(mu_t, n_adv)) if n_adv >= 2 else None
                s_rewards[i] = r_s
                row["reward"] = float(r_s)
            if "reward" not in row:
                row["reward"] = float(s_rewards[i])
            stats_rows.append(row)
            t = v.task
            meta = {"checks": {k: {"ok": ok, "reason": rs} for k, (ok, rs) in v.checks.items()},
                    "scores": v.parts, "quality": v.quality, "reliability": v.reliability,
                    "solution": t.solution if t else None,
                    "consensus": ({"support": cons[i].support, "n": cons[i].n} if i in cons else None)}
            if i in pos:
                j = pos[i]
                meta.update({"p_ref": p_ref[j], "true_p_post": p_post.get(j), "p_ref_post": p_ref_post.get(j),
                             "confirm_timing": conf[j][3] if j in conf else None,
                             "confirm_purpose": conf[j][2] if j in conf else None,
                             "post_purpose": post[j][1] if j in post else None, "dropped": j in dropped})
            task_rows.append({"run_id": self.run_id, "task_id": ids[i], "round": spec.round, "step": spec.step,
                              "source": "synthesizer", "proposer_version": p.completion.policy_version,
                              "prompt_version": self.world.prompt_version, "raw_text": full_text(p.completion),
                              "question": t.question if t else None, "parse_ok": t is not None,
                              "parse_reason": v.checks["well_posed"][1], "difficulty": t.meta.get("difficulty") if t else None,
                              "reference": t.reference if t else None, "oracle_answer": truth.get(i),
                              "pseudo_label": None, "p_hat": None, "kept": i in pos, "meta_json": dumps(meta)})
            comp[i] = c
        s_adv = group_advantages(to_groups(s_rewards, sc.synth_group), self.cfg.loss.advantage_scale).flatten()
        synth_before = self.synth.version
        y_metrics = grpo_update(self.synth, [p.completion for p in props], s_adv.tolist(), self.loss)
        for i in range(len(props)):
            reward_rows.append({"run_id": self.run_id, "step": spec.step, "role": "synthesizer", "item_id": ids[i],
                                "task_id": ids[i], "reward": float(s_rewards[i]), "advantage": float(s_adv[i]),
                                "components_json": dumps(comp[i])})
        w.add("tasks", task_rows)
        w.add("task_stats", stats_rows)
        w.add("rollouts", roll_rows)
        w.add("verdicts", verd_rows)
        w.add("rewards", reward_rows)
        w.add("updates", [
            {"run_id": self.run_id, "step": spec.step, "role": "solver", "version_before": solver_before,
             "version_after": self.solver.version, "n_sequences": len(train_js) * K, "metrics_json": dumps(s_metrics)},
            {"run_id": self.run_id, "step": spec.step, "role": "synthesizer", "version_before": synth_before,
             "version_after": self.synth.version, "n_sequences": len(props), "metrics_json": dumps(y_metrics)}])
        return self._metrics(spec, props, vals, valid, cons, acc_idx, mu1, bear, conf, ds, post, true_p, p_ref,
                             p_post, p_ref_post, ref_correct, s_rewards, rewards, extra, dropped, y_metrics, s_metrics)

    # ------------------------------------------------------------------ per-step numbers
    def _metrics(self, spec, props, vals, valid, cons, acc_idx, mu1, bear, conf, ds, post, true_p, p_ref, p_post,
                 p_ref_post, ref_correct, s_rewards, rewards, extra, dropped, y_metrics, s_metrics) -> dict:
        sc, K = self.cfg.synco, self.cfg.synco.k
        n = len(acc_idx)
        n_conf_train = sum(1 for c in conf.values() if c[2] == "confirm")
        n_conf_instr = sum(1 for c in conf.values() if c[2] == "confirm-instrument")
        n_post_instr = sum(1 for p in post.values() if p[1] == "post-instrument")
        screen_r = n * K
        m = {"n_proposed": len(props), "n_extra_tasks": extra * sc.synth_group, "n_validated": len(valid),
             "validator_pass_rate": len(valid) / len(props) if props else None,
             "n_consensus_checked": len(cons), "n_consensus_rejected": sum(1 for c in cons.values() if not c.ok),
             "consensus_agreement": _nanmean([c.agreement for c in cons.values()]),
             "n_accepted": n, "n_bearing": len(bear),
             "rollouts": {"consensus": len(cons) * sc.consensus_n, "screen": screen_r,
                          "confirm_train": n_conf_train * K, "instrument": (n_conf_instr + n_post_instr) * K,
                          "audit_oracle": (n + len(p_post)) * sc.audit_samples if self.world.has_oracle else 0},
             "synthesizer_reward_mean": float(np.mean(s_rewards)) if len(s_rewards) else None,
             "solver_reward_mean": float(np.mean(rewards)) if len(rewards) else None,
             "n_dropped_in_doubt": len(dropped), "loss_synthesizer": y_metrics, "loss_solver": s_metrics}
        m["rollouts"]["train_total"] = screen_r + m["rollouts"]["confirm_train"] + m["rollouts"]["consensus"]
        br = bearing_rate(np.array(mu1)) if n else None
        m["bearing_rate"] = _est(br) if br else None
        conf_r = (n_conf_train + n_conf_instr) * K
        m["confirm_overhead"] = conf_r / screen_r if screen_r else None
        js = sorted(conf)
        if js:
            mu_s = np.array([mu1[j] for j in js])
            mu_c = np.array([self._mu(conf[j][1]) for j in js])
            m["kappa_bar"] = _est(kappa_bar(mu_s, mu_c))
        if ds:
            dj = sorted(ds)
            ok = [j for j in dj if ds[j]["nu"] is not None]
            if ok:
                mu_t = [(mu1[j] + self._mu(conf[j][1])) / 2 for j in ok]
                nb = nu_bar([ds[j]["nu"] == 1.0 for j in ok], [ds[j]["share"] for j in ok], mu_t, self.cfg.rgbc.doubt_stable)
                m["nu_bar"] = _est(nb["nu_bar"])
                m["doubt_share"] = _est(nb["doubt_share"])
        if post:
            pj = sorted(post)
            m["lag_bar"] = _est(lag_bar([mu1[j] for j in pj], [post[j][0] for j in pj]))
        if self.world.has_oracle:
            m["truth"] = self._truth(valid, acc_idx, mu1, bear, conf, ds, post, true_p, p_ref, p_post, p_ref_post,
                                     ref_correct, cons)
        return m

    def _truth(self, valid, acc_idx, mu1, bear, conf, ds, post, true_p, p_ref, p_post, p_ref_post, ref_correct,
               cons) -> dict:
        """Oracle truth beside each instrument (audit-only)."""
        K = self.cfg.synco.k
        lo, hi = self.cfg.synco.mid_band
        t: dict = {}
        tp = [x for x in true_p if x is not None]
        if tp:
            t["mid_band_share"] = float(np.mean([lo <= x <= hi for x in tp]))
            t["true_bearing_rate"] = float(np.mean(bearing_probability(np.array([x for x in p_ref if x is not None]), K)))
        if conf:
            ps = [(p_ref_post.get(j) if conf[j][3] == "post" else p_ref[j]) for j in sorted(conf)]
            ps = [x for x in ps if x is not None]
            if ps:
                t["kappa_bar"] = float(np.mean(bearing_probability(np.array(ps), K)))
        t["wrong_reference_rate_validated"] = _nanmean([0.0 if ref_correct.get(i) else 1.0 for i in valid
                                                       if ref_correct.get(i) is not None])
        t["wrong_reference_rate_accepted"] = _nanmean([0.0 if ref_correct.get(i) else 1.0 for i in acc_idx
                                                      if ref_correct.get(i) is not None])
        rej = [i for i, c in cons.items() if not c.ok and ref_correct.get(i) is not None]
        t["consensus_rejected_wrong_ref_share"] = _nanmean([0.0 if ref_correct[i] else 1.0 for i in rej])
        nu_def = [j for j in sorted(ds) if ds[j]["nu"] is not None]
        if nu_def:
            t["nu_bar"] = _nanmean([0.0 if ref_correct.get(acc_idx[j]) else 1.0 for j in nu_def])
        if post:
            lags = [p_ref[j] - p_ref_post[j] for j in sorted(post)
                    if p_ref[j] is not None and p_ref_post.get(j) is not None]
            t["lag_bar"] = _nanmean(lags)
        return t
