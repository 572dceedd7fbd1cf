"""SynCo and RGBC (SynCo; RGBC proposal): a Synthesizer writes tasks with reference solutions, a
Reasoner solves them; one recipe class serves ``--recipe synco`` and ``--recipe rgbc``.

One joint step (phase ``train``) is a sequence of named stages over typed per-task state
(``Candidate`` per Synthesizer output, ``TaskState`` per accepted task):

1. ``_synthesize``: the Synthesizer writes ``tasks_per_step`` tasks; validator rho_t
   (``coevo.recipes.rgbc.validate``), verdicts and reasons to the ledger;
2. ``_consensus``: ``consensus_n`` independent solves; a task whose solves do not support its
   reference never reaches the Reasoner and returns negative feedback to the Synthesizer;
3. ``_screen``: K rollouts per accepted task -> mu_1 (correct = matches the reference);
4. ``_confirm``: K more rollouts, only for 0 < mu_1 < 1, before (arm mu_tilde) or after (arm
   full: the *post* group) the Reasoner update -> kappa, mu~ over 2K, the mode and nu, lag;
5. ``_update_reasoner``: GRPO on the screen (pre) group: 1.0 / 0.9 (format recovery) / 0;
6. ``_reward_synthesizer``: r_S by arm (``coevo.recipes.rgbc.arms``), GRPO update.

Arms (``rgbc.arm``): ``synco`` T(mu_1); ``mu_tilde`` T(mu~), no kappa discount; ``full``
T(mu~) omega(kappa) with the confirm group drawn after the Reasoner update. Where an arm has no
confirm or post group, ``synco.instrument`` draws audit-only ones (the policy's ``audit`` RNG
stream, no reward effect) so kappa, nu and lag are reported for every arm. The oracle audit
(true pass rates from ``audit_samples`` extra samples per task) is an audit-only cost. The
instruments themselves are computed in ``coevo.audit.screen_confirm``.
"""
from __future__ import annotations

import random
import numpy as np

from coevo.audit.false_agreement import solver_majority_columns
from coevo.audit.data import finite
from coevo.audit.instruments import estimate_dict, lag_excess, lag_selection_bias, pseudo_label_accuracy
from coevo.audit.screen_confirm import finite_mean, screen_confirm_metrics, screen_confirm_truth
from coevo.audit.truth import truth_metrics
from coevo.ledger.store import StepWriter, dumps, task_row, verdict_row
from coevo.recipes.base import RecipeBase, StepSpec, round_plan, sampling_params
from coevo.recipes.rgbc.state import Candidate, TaskState, interim_tasks, match_share
from coevo.recipes.rgbc.arms import ArmFacts, synthesizer_arm_reward
from coevo.recipes.rgbc.rewards import advantage_magnitude, quality_gate
from coevo.recipes.rgbc.k_arm import adv_hat_reward, budget_matched_tasks
from coevo.stages.step import Draw, Scored, StepContext, draw_group, match_grouped, update_role
from coevo.recipes.rgbc.validate import (VALIDATOR_KIND, consensus_from_verdicts, reasoner_answer, reasoner_rewards,
                                   validate_outputs)
from coevo.core.world import SYNTHESIS, Task, role_sampling


class RGBCRecipe(RecipeBase):
    name = "rgbc"

    def __init__(self, cfg, world, policies: dict, run_id: str, verifier) -> None:
        self._check_world(cfg, world)
        super().__init__(cfg, world, policies, run_id, verifier)
        self.synth = policies["synthesizer"]
        sc, rc = cfg.synco, cfg.rgbc
        self.arm = "synco" if cfg.recipe == "synco" else rc.arm
        self.confirm_train = self.arm != "synco" and rc.confirm  # confirm group that feeds a reward
        timing = rc.confirm_timing if rc.confirm_timing != "auto" else ("post" if self.arm == "full" else "pre")
        self.timing = timing if self.confirm_train else "pre"
        self.omega0 = rc.omega0 if self.arm == "full" else 1.0
        self.matched = cfg.recipe == "rgbc" and self.arm == "synco" and rc.budget == "matched"
        self.sp_synth = sampling_params(cfg, sc.synth_max_tokens)
        self.recent: list[str] = []
        self.last_bearing = rc.budget_prior
        self.budget_owed = 0.0  # rgbc.budget_carry: extra groups owed from the previous steps' rounding
        self.rng = random.Random(cfg.seed)

    @staticmethod
    def _check_world(cfg, world) -> None:
        """Refuse, in one line, a world/backend the Synthesizer cannot write tasks in (every output
        would be rejected): no Synthesizer format on the world, or the tiny backend's arithmetic-only
        pretrained Synthesizer on a free-form world."""
        from coevo.core.errors import CannotRun

        missing = [m for m in ("synthesizer_prompts", "parse_synthesis") if not hasattr(world, m)]
        if missing:
            raise CannotRun(f"recipe {cfg.recipe!r} needs a world with a Synthesizer format "
                              f"({', '.join(missing)} missing on world {getattr(world, 'name', world)!r})")
        if getattr(world, "scripted", False) and cfg.synco.reasoner_updates:  # coevo.worlds.arithmetic_law
            raise CannotRun(f"world {world.name!r} scripts the Reasoner's answers (no tokens to train on): set "
                            f"synco.reasoner_updates=false")
        style = getattr(world, "synthesis_style", "steps")
        if cfg.backend.kind == "tiny" and style != "steps":
            raise CannotRun(f"recipe {cfg.recipe!r} on world {world.name!r} needs a real model "
                              f"(backend.kind hf or openai, e.g. --preset smollm2-cpu); the tiny backend's "
                              f"Synthesizer writes arithmetic only")

    def plan(self) -> list[StepSpec]:
        sc = self.cfg.synco
        return round_plan(sc.rounds, [("train", self._train, sc.steps_per_round)], self._eval)

    def _eval(self, spec: StepSpec, w: StepWriter) -> dict:
        """The held-out evaluation; ``synco.eval_interim_per_level``: the evaluations before the last round's on
        the first n items of each level only (greedy: no RNG moves, the training is the same)."""
        n = self.cfg.synco.eval_interim_per_level
        if n is None or spec.round >= self.cfg.synco.rounds:
            return super()._eval(spec, w)
        full, self.eval_tasks = self.eval_tasks, interim_tasks(self.eval_tasks, n)
        try:
            return super()._eval(spec, w)
        finally:
            self.eval_tasks = full

    def state_dict(self) -> dict:
        return {"recent": self.recent, "last_bearing": self.last_bearing, "rng": self.rng.getstate(),
                "budget_owed": self.budget_owed}

    def load_state_dict(self, st: dict) -> None:
        self.recent, self.last_bearing = list(st["recent"]), st["last_bearing"]
        self.budget_owed = float(st.get("budget_owed", 0.0))
        self.rng.setstate(st["rng"])
        if "audit_gen" in st and hasattr(self.solver, "audit_gen"):  # a state written when the recipe owned
            self.solver.audit_gen.set_state(st["audit_gen"])  # the audit generator (tiny backend)

    # ------------------------------------------------------------------ the step
    def _train(self, spec: StepSpec, w: StepWriter) -> dict:
        ctx = self.ctx.at(spec)
        cands, extra = self._synthesize(spec, w)
        states = self._consensus(ctx, cands, w)
        truth = self._reference_truth(spec, cands, w)
        self._audit_pass_rates(ctx, states, w, post=False)
        self._screen(ctx, states, w)
        bear = [s for s in states if s.bearing]
        self.last_bearing = len(bear) / len(states) if states else self.last_bearing
        if self.confirm_train and self.timing == "pre":
            self._confirm(ctx, bear, w, "confirm", "train", "pre")
        elif not self.confirm_train and self.cfg.synco.instrument:
            self._confirm(ctx, bear, w, "confirm-instrument", "audit", "pre")
        self._doubt(states)
        screen_doubt = self.confirm_train and self.timing == "post" and self.cfg.rgbc.doubt_screen
        if screen_doubt:  # the bucket on the K screen answers, known before the update: it acts on both roles
            self._doubt_screen(bear)
        self._lag_null(ctx, bear, w)
        s_metrics, rewards = self._update_reasoner(ctx, states, w)
        if self.confirm_train and self.timing == "post":
            self._confirm(ctx, bear, w, "confirm", "train", "post")
            # after the update the 2K bucket can only change the Synthesizer reward (or, with doubt_screen,
            # nothing: the screen decision stands for both roles; the 2K bucket is reported)
            self._doubt(states, act=not screen_doubt)
        self._post_instrument(ctx, bear, w)
        if self.world.has_oracle:
            self._audit_pass_rates(ctx, [s for s in states if s.mu_post is not None], w, post=True)
        self._solver_majority(states)
        s_rewards, y_metrics, stats = self._reward_synthesizer(ctx, cands, w)
        return {**self._metrics(cands, states, stats, extra, s_rewards, rewards, y_metrics, s_metrics), **truth}

    # ------------------------------------------------------------------ stages
    def _synthesize(self, spec: StepSpec, w: StepWriter) -> tuple[list[Candidate], int]:
        """Synthesizer outputs (budget-matched extra groups in arm synco), validator verdicts, oracle facts."""
        sc = self.cfg.synco
        n_tasks = sc.tasks_per_step
        if self.cfg.rgbc.k_budget_ref is not None:  # K arm: screen rollouts per step of K = k_budget_ref
            n_tasks = budget_matched_tasks(sc.tasks_per_step, sc.k, self.cfg.rgbc.k_budget_ref, sc.synth_group)
        n_groups = n_tasks // sc.synth_group
        extra = self._extra_groups(n_groups) if self.matched else 0
        prompts = self.world.synthesizer_prompts(n_groups + extra, self.cfg.seed + spec.step)
        outs = self.synth.sample(prompts, sc.synth_group, role_sampling(self.world, SYNTHESIS, self.sp_synth))
        comps = [(g, c) for g, cs in enumerate(outs) for c in cs]
        ids = [f"s{spec.step}-{g}-{i % sc.synth_group}" for i, (g, _) in enumerate(comps)]
        window = self.recent[-sc.redundancy_window:] if sc.redundancy_window else []
        vals = validate_outputs(self.world, [c for _, c in comps], ids, window, sc.hard_checks,
                                sc.quality_weights, sc.reliability_weights, verifier=self.verifier)
        cands = [Candidate(ids[i], c, g, vals[i]) for i, (g, c) in enumerate(comps)]
        valid = [c for c in cands if c.validation.ok]
        self.recent = (self.recent + [c.validation.task.question for c in valid])[-max(sc.redundancy_window, 1):]
        w.add("verdicts", [verdict_row(self.run_id, spec.step, c.task_id, c.task_id, f"validator:{name}", int(ok),
                                       reason, VALIDATOR_KIND, "v1", criterion_id=name)
                           for c in cands for name, (ok, reason) in c.validation.checks.items()])
        if self.world.has_oracle:  # oracle facts: audit only, never enter a reward
            for c in cands:
                c.truth = self.world.oracle(c.validation.task) if c.validation.task is not None else None
            judged = self.verifier.match_many([(c.validation.task.reference, c.truth) for c in valid])
            for c, v in zip(valid, judged):
                c.reference_correct = None if v.value is None else bool(v.value)
        return cands, extra

    def _extra_groups(self, n_groups: int) -> int:
        """Budget-matched arm synco: round(budget_scale x b x groups), b = the previous step's bearing share;
        with ``budget_carry`` the rounding remainder moves on to the next step."""
        rc = self.cfg.rgbc
        want = rc.budget_scale * self.last_bearing * n_groups + (self.budget_owed if rc.budget_carry else 0.0)
        extra = max(0, int(round(want)))
        if rc.budget_carry:
            self.budget_owed = want - extra
        return extra

    def _consensus(self, ctx: StepContext, cands: list[Candidate], w: StepWriter) -> list[TaskState]:
        """Independent solves of each validated task; the accepted ones become TaskStates."""
        sc = self.cfg.synco
        valid = [c for c in cands if c.validation.ok]
        if sc.consensus and valid:
            tasks = [c.validation.task for c in valid]
            g = self._draw(ctx, tasks, sc.consensus_n, "consensus", "train", [c.truth for c in valid])
            w.extend(g.rows)
            for c, verdicts in zip(valid, g.verdicts["reference"]):
                c.consensus = consensus_from_verdicts(verdicts, sc.consensus_min_agree)
                w.add("verdicts", [verdict_row(self.run_id, ctx.step, c.task_id, c.task_id, "consensus",
                                               int(c.consensus.ok), c.consensus.reason, self.verifier.kind,
                                               self.verifier.version)])
        states = []
        for i, c in enumerate(cands):
            if c.validation.ok and (c.consensus is None or c.consensus.ok):
                c.state = TaskState(i, c.validation.task, c.truth, anchor=c.validation.task.reference)
                states.append(c.state)
        return states

    def _reference_truth(self, spec: StepSpec, cands: list[Candidate], w: StepWriter) -> dict:
        """Reference accuracy without an oracle (issue 13 item 5): the ``truth`` source's verdict on
        every validated task's reference answer, over the validated and the accepted tasks, and,
        where the world has an oracle, the source's agreement with it (coevo.audit.truth)."""
        valid = [c for c in cands if c.validation.ok]
        if self.truth is None or not valid:
            return {}
        vs, out = truth_metrics(self.truth, [c.validation.task.question for c in valid],
                                [c.validation.task.reference for c in valid],
                                [c.reference_correct for c in valid], name="reference_accuracy")
        w.add("verdicts", [verdict_row(self.run_id, spec.step, f"{c.task_id}-reference", c.task_id,
                                       f"truth:{self.truth.kind}", v.value, v.reason, self.truth.kind, v.version or "")
                           for c, v in zip(valid, vs)])
        acc = pseudo_label_accuracy([v.value for c, v in zip(valid, vs) if c.state is not None])
        out["reference_accuracy_truth_accepted"] = acc.value if acc.n else None
        return out

    def _draw(self, ctx: StepContext, tasks: list[Task], n: int, purpose: str, stream: str, truths: list,
              offset: int = 0):
        """n Reasoner rollouts per task with verdicts vs the reference (and the oracle where known)."""
        targets = {"reference": [t.reference for t in tasks],
                   "oracle": truths if self.world.has_oracle else None}
        scripted = getattr(self.world, "scripted_sampler", None)  # a world that fixes the pass rates
        return draw_group(ctx, self.solver, tasks, n, purpose, targets,
                          Draw(offset=offset, stream=stream, extract=lambda c: reasoner_answer(self.world, c),
                               sampler=scripted(f"{ctx.step}:{purpose}:{offset}") if scripted else None))

    def _audit_pass_rates(self, ctx: StepContext, states: list[TaskState], w: StepWriter, post: bool) -> None:
        """True pass rate (vs oracle) and reference-match rate per task from many extra samples
        (audit stream; their rollouts and verdicts are in the ledger with purpose audit / audit-post)."""
        n = self.cfg.synco.audit_samples
        if n == 0 or not states or not self.world.has_oracle:
            return
        g = self._draw(ctx, [s.task for s in states], n, "audit-post" if post else "audit", "audit",
                       [s.truth for s in states])
        w.extend(g.rows)
        for j, s in enumerate(states):
            if post:
                s.p_post, s.p_ref_post = g.mu("oracle", j), g.mu("reference", j)
            else:
                s.true_p, s.p_ref = g.mu("oracle", j), g.mu("reference", j)

    def _screen(self, ctx: StepContext, states: list[TaskState], w: StepWriter) -> None:
        K = self.cfg.synco.k
        g = self._draw(ctx, [s.task for s in states], K, "screen", "train", [s.truth for s in states])
        w.extend(g.rows)
        for j, s in enumerate(states):
            s.outs, s.answers, s.formatted = g.outs[j], g.answers[j], g.formatted[j]
            s.verdicts = g.verdicts["reference"][j]
            s.mu1 = match_share(s.verdicts)

    def _confirm(self, ctx: StepContext, bear: list[TaskState], w: StepWriter, purpose: str, stream: str,
                 timing: str) -> None:
        """The confirm group of the bearing tasks (a training group, or an audit-only instrument)."""
        if not bear:
            return
        K = self.cfg.synco.k
        g = self._draw(ctx, [s.task for s in bear], K, purpose, stream, [s.truth for s in bear], offset=K)
        w.extend(g.rows)
        for j, s in enumerate(bear):
            s.conf_answers, s.conf_verdicts = g.answers[j], g.verdicts["reference"][j]
            s.conf_purpose, s.conf_timing = purpose, timing
            if timing == "post":
                s.mu_post, s.post_purpose = match_share(s.conf_verdicts), purpose

    def _doubt_screen(self, bear: list[TaskState]) -> None:
        """``rgbc.doubt_screen``: the doubt bucket of each screen-bearing task decided on its K screen answers
        (mode != reference and mode share >= ``doubt_stable``) before the Reasoner update; the policy drops the
        task from both rewards or anchors both on the screen mode."""
        rc = self.cfg.rgbc
        if not bear:
            return
        votes = self.verifier.majority_votes([s.answers for s in bear])
        agree = self.verifier.match_many([(v.label, s.reference) for v, s in zip(votes, bear)])
        for s, v, a in zip(bear, votes, agree):
            s.doubt_screen = bool(v.label is not None and a.value == 0 and v.p_hat >= rc.doubt_stable - 1e-12)
            if s.doubt_screen:
                if rc.doubt_policy == "anchor":
                    s.anchor = v.label
                else:
                    s.dropped = True

    def _doubt(self, states: list[TaskState], act: bool = True) -> None:
        """Mode, nu and the reference-in-doubt bucket from the 2K answers; in arms with a training
        confirm group the bucket drops the task or anchors it on the mode (``rgbc.doubt_policy``);
        ``act=False``: measured and reported only."""
        rc = self.cfg.rgbc
        js = [s for s in states if s.conf_answers is not None]
        if not js:
            return
        votes = self.verifier.majority_votes([s.answers + s.conf_answers for s in js])
        agree = self.verifier.match_many([(v.label, s.reference) for v, s in zip(votes, js)])
        for s, v, a in zip(js, votes, agree):
            s.mode, s.share = v.label, v.p_hat
            s.nu = None if v.label is None or a.value is None else float(a.value)
            s.in_doubt = bool(s.nu == 0.0 and v.p_hat >= rc.doubt_stable - 1e-12)
            if act and self.confirm_train and s.in_doubt:
                if rc.doubt_policy == "anchor":
                    s.anchor = s.mode
                else:
                    s.dropped = True

    def _solver_majority(self, states: list[TaskState]) -> None:
        """The solver's majority answer of every screened task, mu_1 = 1 and mu_1 = 0 included (the 2K mode
        where ``_doubt`` drew one, else the screen group's), for the false-agreement audit (False Frontiers (FF))."""
        rest = [s for s in states if s.conf_answers is None]
        cols = solver_majority_columns(self.verifier, [s.answers for s in rest], [s.reference for s in rest])
        for s, c in zip(rest, cols):
            s.majority = c
        for s in states:
            if s.conf_answers is not None:
                s.majority = {"solver_majority": s.mode, "solver_majority_share": s.share,
                              "solver_agrees": 0.0 if s.mode is None else s.nu}

    def _update_reasoner(self, ctx: StepContext, states: list[TaskState], w: StepWriter):
        sc, K = self.cfg.synco, self.cfg.synco.k
        train = [s for s in states if not s.dropped]
        anchored = any(s.anchor != s.reference for s in states)
        verdicts = (match_grouped(self.verifier, [s.answers for s in train], [s.anchor for s in train])
                    if anchored else [s.verdicts for s in train])
        rewards = (np.concatenate([reasoner_rewards([v.value for v in vs], s.formatted, sc.reward_formatted,
                                                    sc.reward_recovered) for s, vs in zip(train, verdicts)])
                   if train else np.zeros(0))
        if not sc.reasoner_updates:  # frozen Reasoner (zero-learning control): no GRPO step
            train = []
        comps = [c for s in train for c in s.outs]
        items = [f"{s.task.task_id}-screen-{k}" for s in train for k in range(K)]
        components = [{"formatted": s.formatted[k], "anchor": "mode" if s.anchor != s.reference else "reference"}
                      for s in train for k in range(K)]
        up = update_role(ctx, self.solver, "solver", Scored(comps, rewards, items, [s.task.task_id for s in train
                                                                                  for _ in range(K)],
                                                              group_size=K, components=components))
        w.extend(up.rows)
        return up.metrics, rewards

    def _lag_null(self, ctx: StepContext, bear: list[TaskState], w: StepWriter) -> None:
        """The lag's zero-learning null: mu of an independent group of each bearing task drawn with the
        pre-update weights -- the pre-timing confirm group where there is one, else (``rgbc.lag_null:
        draw``) an audit-stream ``lag-null`` group of K (no training RNG moves, no reward effect)."""
        mode = self.cfg.rgbc.lag_null
        if mode == "off":
            return
        for s in bear:
            if s.conf_verdicts is not None and s.conf_timing == "pre":
                s.mu_null, s.null_source = s.mu_confirm, s.conf_purpose
        todo = [s for s in bear if s.mu_null is None]
        if mode != "draw" or not todo:
            return
        K = self.cfg.synco.k
        g = self._draw(ctx, [s.task for s in todo], K, "lag-null", "audit", [s.truth for s in todo], offset=3 * K)
        w.extend(g.rows)
        for j, s in enumerate(todo):
            s.mu_null, s.null_source = g.mu("reference", j), "lag-null"

    def _post_instrument(self, ctx: StepContext, bear: list[TaskState], w: StepWriter) -> None:
        """An audit-only post group where the arm has none (lag of every arm)."""
        if any(s.mu_post is not None for s in bear) or not self.cfg.synco.instrument or not bear:
            return
        K = self.cfg.synco.k
        g = self._draw(ctx, [s.task for s in bear], K, "post-instrument", "audit", [s.truth for s in bear],
                       offset=2 * K)
        w.extend(g.rows)
        for j, s in enumerate(bear):
            s.mu_post, s.post_purpose = g.mu("reference", j), "post-instrument"

    def _reward_synthesizer(self, ctx: StepContext, cands: list[Candidate], w: StepWriter):
        """r_S per Synthesizer output by arm, task and task_stats rows, the Synthesizer update."""
        sc = self.cfg.synco
        rewards, comps, stats, tasks = np.zeros(len(cands)), [], [], []
        for i, c in enumerate(cands):
            r, comp, row = self._candidate_reward(ctx, c)
            rewards[i] = r
            comps.append(comp)
            stats.append(row)
            tasks.append(self._task_row(ctx, c))
        up = update_role(ctx, self.synth, "synthesizer", Scored([c.completion for c in cands], rewards,
                                                                [c.task_id for c in cands], group_size=sc.synth_group,
                                                                components=comps))
        w.add("tasks", tasks)
        w.add("task_stats", stats)
        w.extend(up.rows)
        return rewards, up.metrics, stats

    def _candidate_reward(self, ctx: StepContext, c: Candidate) -> tuple[float, dict, dict]:
        sc, rc, K = self.cfg.synco, self.cfg.rgbc, self.cfg.synco.k
        v = c.validation
        comp = {"quality": v.quality, "reliability": v.reliability, "novelty": v.novelty,
                "G_q": float(quality_gate(v.quality)), "G_r": float(quality_gate(v.reliability)), "arm": self.arm}
        row = {"run_id": self.run_id, "task_id": c.task_id, "round": ctx.round, "step": ctx.step, "arm": self.arm,
               "validator_ok": v.ok, "consensus_ok": c.consensus.ok if c.consensus is not None else None,
               "proposer_answer": v.task.reference if v.task else None, "reference_correct": c.reference_correct}
        s = c.state
        if not v.ok:
            failed = [h for h in sc.hard_checks if not v.checks[h][0]]
            comp["rejected"] = f"validator:{failed[0] if failed else 'unknown'}"
            row["reward"] = float(sc.invalid_reward)
            return sc.invalid_reward, comp, row
        if s is None:
            comp["rejected"] = "consensus"
            row["reward"] = float(sc.consensus_reject_reward)
            return sc.consensus_reject_reward, comp, row
        row.update(self._stats_columns(s))
        feeds = s.conf_purpose == "confirm"  # a training confirm group exists
        mu_anchor = None
        if s.anchor != s.reference and feeds and not s.dropped:
            mu_anchor = match_share(match_grouped(self.verifier, [s.answers + s.conf_answers], [s.anchor])[0])
        facts = ArmFacts(v.quality, v.reliability, s.mu1, s.mu_confirm, feeds, s.dropped, mu_anchor)
        r, arm_comp = synthesizer_arm_reward(self.arm, facts, self.omega0, rc.reward_mu, rc.doubt_reward)
        if rc.reward_shape == "adv_hat" and arm_comp.get("mu_used") is not None:
            n_used = 2 * K if (self.arm != "synco" and feeds and not (self.arm == "full" and rc.reward_mu == "post")) else K
            r = adv_hat_reward(v.quality, v.reliability, arm_comp["mu_used"], n_used, arm_comp.get("kappa"),
                               self.omega0)
            arm_comp.update({"reward_shape": "adv_hat", "n_used": n_used})
        comp.update(arm_comp)
        mu_t = row.get("mu_tilde", s.mu1)
        n_adv = 2 * K if s.conf_answers is not None else K
        comp["adv_hat"] = float(advantage_magnitude(mu_t, n_adv)) if n_adv >= 2 else None
        row["reward"] = float(r)
        return r, comp, row

    def _stats_columns(self, s: TaskState) -> dict:
        """The task_stats columns an accepted task fills (NULL = not defined / not measured)."""
        K, n_audit = self.cfg.synco.k, self.cfg.synco.audit_samples
        row = {"k_screen": K, "mu_screen": s.mu1, "mu_pre": s.mu1, "true_p": s.true_p,
               "true_p_n": n_audit if s.true_p is not None else None}
        if s.conf_answers is not None:
            m2 = s.mu_confirm
            row.update({"k_confirm": K, "mu_confirm": m2, "kappa": int(0 < m2 < 1), "mu_tilde": (s.mu1 + m2) / 2.0})
        if s.in_doubt is not None:
            row.update({"mode_answer": s.mode, "mode_share": s.share, "nu": s.nu, "in_doubt": s.in_doubt})
        if s.mu_post is not None:
            row.update({"mu_post": s.mu_post, "lag": s.mu1 - s.mu_post})
            if s.true_p is not None:
                row["lag_null_analytic"] = finite(lag_selection_bias(s.true_p, K))
        if s.mu_null is not None:
            row.update({"mu_null": s.mu_null, "lag_null": s.mu1 - s.mu_null, "null_source": s.null_source})
        row.update(s.majority or {})
        return row

    def _task_row(self, ctx: StepContext, c: Candidate) -> dict:
        v, t, s = c.validation, c.validation.task, c.state
        meta = {"checks": {k: {"ok": ok, "reason": rs} for k, (ok, rs) in v.checks.items()},
                "scores": v.parts, "quality": v.quality, "reliability": v.reliability,
                "solution": t.solution if t else None,
                "consensus": ({"support": c.consensus.support, "n": c.consensus.n} if c.consensus else None)}
        if s is not None:
            meta.update({"p_ref": s.p_ref, "true_p_post": s.p_post, "p_ref_post": s.p_ref_post,
                         "confirm_timing": s.conf_timing or None, "confirm_purpose": s.conf_purpose or None,
                         "post_purpose": s.post_purpose or None, "dropped": s.dropped})
            if s.doubt_screen is not None:
                meta["doubt_screen"] = s.doubt_screen
        return task_row(self.run_id, ctx.round, ctx.step, c.task_id, "synthesizer", c.completion,
                        self.world.prompt_version, t, v.checks["well_posed"][1], c.truth, kept=s is not None,
                        meta_json=dumps(meta))

    # ------------------------------------------------------------------ per-step numbers
    def _metrics(self, cands, states, stats, extra, s_rewards, rewards, y_metrics, s_metrics) -> dict:
        sc, K = self.cfg.synco, self.cfg.synco.k
        n = len(states)
        cons = [c.consensus for c in cands if c.consensus is not None]
        n_conf_train = sum(1 for s in states if s.conf_purpose == "confirm")
        n_conf_instr = sum(1 for s in states if s.conf_purpose == "confirm-instrument")
        n_post_instr = sum(1 for s in states if s.post_purpose == "post-instrument")
        n_post_audit = sum(1 for s in states if s.mu_post is not None)
        n_valid = sum(1 for c in cands if c.validation.ok)
        m = {"n_proposed": len(cands), "n_extra_tasks": extra * sc.synth_group, "n_validated": n_valid,
             "validator_pass_rate": n_valid / len(cands) if cands else None,
             "n_consensus_checked": len(cons), "n_consensus_rejected": sum(1 for c in cons if not c.ok),
             "consensus_agreement": finite_mean([c.agreement for c in cons]),
             "n_accepted": n, "n_bearing": sum(1 for s in states if s.bearing),
             "rollouts": {"consensus": len(cons) * sc.consensus_n, "screen": n * K,
                          "confirm_train": n_conf_train * K, "instrument": (n_conf_instr + n_post_instr) * K,
                          "audit_oracle": (n + n_post_audit) * sc.audit_samples if self.world.has_oracle else 0},
             "synthesizer_reward_mean": float(np.mean(s_rewards)) if len(s_rewards) else None,
             "solver_reward_mean": float(np.mean(rewards)) if len(rewards) else None,
             "n_dropped_in_doubt": sum(1 for s in states if s.dropped),
             "loss_synthesizer": y_metrics, "loss_solver": s_metrics}
        m["rollouts"]["train_total"] = n * K + n_conf_train * K + m["rollouts"]["consensus"]
        m["confirm_overhead"] = (n_conf_train + n_conf_instr) * K / (n * K) if n else None
        m.update({k: v for k, v in screen_confirm_metrics(stats, self.cfg.rgbc.doubt_stable).items()
                  if v is not None or k == "bearing_rate"})
        nulls = [r for r in stats if r.get("mu_null") is not None and r.get("mu_post") is not None]
        if nulls:  # l - l_null: the lag beyond its zero-learning expectation (issue 13 item 4)
            m["lag_excess"] = estimate_dict(lag_excess([r["mu_pre"] for r in nulls], [r["mu_post"] for r in nulls],
                                                       [r["mu_null"] for r in nulls]))
        if self.world.has_oracle:
            facts = [dict(r, p_ref=c.state.p_ref if c.state else None,
                          p_ref_post=c.state.p_ref_post if c.state else None,
                          confirm_timing=c.state.conf_timing if c.state else None) for r, c in zip(stats, cands)]
            m["truth"] = screen_confirm_truth(facts, K, tuple(sc.mid_band))
        return m
