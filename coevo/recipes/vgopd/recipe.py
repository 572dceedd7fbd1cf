"""VG-OPD (CASA proposal §background): verifier-gated multi-expert on-policy distillation, with CASA's arms A/B/C.

Roles: ``student`` (trainable) and one frozen expert teacher per shipped ``coevo/assets/criteria_expert_*.pt``
(role ``expert_<name>``).  Each step, for ``prompts`` training prompts of the criteria world:

1. a GRPO group of ``group`` student answers per prompt (``draw_group``);
2. the experts' greedy answers, sampled once per prompt and cached in the recipe state;
3. every answer (student and expert) checked against every criterion of the prompt through the run
   verifier (pool, cache, criterion ids); one ``verdicts`` row per (answer, criterion), abstentions
   included with their reasons; the expert's verdicts are its ONE cached verdict per (group, expert);
4. per group the zero-abstention self-check (``coevo.recipes.vgopd.casa.selfcheck.self_check_group``: stops the run
   with one line naming step and group if the arms differ where no rollout abstained), which also gives
   the run arm's rewards and gate entries (failure set, licensing by Delta' > delta, arm C's
   low-confidence channel with its explicit discount);
5. CASA rows per (rollout, axis) and per licence (``coevo.recipes.vgopd.casa.rows.rollout_rows``), licences re-checked
   against the world's deterministic oracle;
6. one GRPO step on the student: group advantages of the arm's reward plus, on licensed rollouts, the
   gated-KL token advantage (teacher log-probs of the student's own tokens; localisation rule in
   ``coevo.recipes.vgopd.casa.gating.gated_kl_advantages``);
7. the three probes (own reference, mismatched reference, vacuous template) re-scored.
Docs: docs/vgopd.md, docs/casa.md.  The registry entry (roles, sections, tables, columns) is
``coevo/recipes/vgopd/__init__.py``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from coevo.core.policy import SamplingParams
from coevo.ledger.store import StepWriter, rollout_row
from coevo.recipes.base import RecipeBase, StepSpec, round_plan
from coevo.recipes.vgopd.casa.probes import ProbePrompt, probe_answers, run_probes
from coevo.recipes.vgopd.casa.rows import rollout_rows
from coevo.recipes.vgopd.casa.scoring import score_answer
from coevo.recipes.vgopd.casa.selfcheck import CasaSelfCheckError, self_check_group
from coevo.recipes.vgopd.steps import (criteria_scorer, expert_values, finite_or_none, oracle_checks,
                                       rechecks_for, score_items, step_metrics, token_advantages, verdict_rows)
from coevo.rl.grpo import group_advantages
from coevo.rl.grpo import to_groups
from coevo.stages.step import Draw, answer_of, draw_group, solve, update_role


@dataclass(frozen=True)
class GroupScores:
    """What a step's groups gave (``VgopdRecipe._groups``): the run arm's reward and gates per rollout,
    the number of self-checked groups, the step's criterion_scores rows and, in a world with an oracle,
    the oracle's axis score of each of those rows (None without one); ``_metrics`` reads them."""

    rewards: list
    gates: list
    n_checked: int
    score_rows: list
    score_truth: Optional[list]


class VgopdRecipe(RecipeBase):
    name = "vgopd"
    solver_role = "student"

    def __init__(self, cfg, world, policies: dict, run_id: str, verifier) -> None:
        super().__init__(cfg, world, policies, run_id, verifier)
        self.student = policies["student"]
        self.experts = {r: p for r, p in sorted(policies.items()) if r.startswith("expert_")}
        if not self.experts:
            raise ValueError("vgopd needs at least one expert role (coevo/assets/criteria_expert_*.pt)")
        self.vc, self.casa = cfg.vgopd, cfg.casa
        self.scorer = criteria_scorer(world, verifier)
        self.expert_answers: dict[str, dict[str, Optional[str]]] = {r: {} for r in self.experts}
        evals = list(self.eval_tasks)
        self.probe_tasks = evals[:self.vc.probe_prompts]

    def plan(self) -> list[StepSpec]:
        """Rounds of training steps, each followed by an evaluation; the initial evaluation (step 0) only with
        ``vgopd.initial_eval`` (the other steps keep their numbers, so the training is the same either way)."""
        specs = round_plan(self.vc.rounds, [("train", self._train, self.vc.steps_per_round)], self._eval)
        return specs if self.vc.initial_eval else [s for s in specs if s.round > 0]

    def state_dict(self) -> dict:
        return {"expert_answers": {r: dict(d) for r, d in self.expert_answers.items()}}

    def load_state_dict(self, st: dict) -> None:
        for r, d in (st.get("expert_answers") or {}).items():
            self.expert_answers.setdefault(r, {}).update(d)

    # ------------------------------------------------------------------ experts
    def _expert_greedy(self, spec: StepSpec, tasks, w: StepWriter) -> dict[str, list[Optional[str]]]:
        """Each expert's greedy answer per task, sampled once per prompt and cached (new ones get a rollout row)."""
        sp = SamplingParams(greedy=True, temperature=0.0, max_new_tokens=self.vc.expert_max_tokens)
        rows = []
        for role, pol in self.experts.items():
            cache = self.expert_answers[role]
            todo = list({t.task_id: t for t in tasks if t.task_id not in cache}.values())
            for t, comps in zip(todo, solve(pol, self.world, todo, 1, sp)):
                cache[t.task_id] = answer_of(self.world, comps[0])
                rows.append(rollout_row(self.run_id, spec.round, spec.step, f"{t.task_id}-{role}-greedy", t.task_id,
                                        role, "expert-greedy", 0, comps[0], cache[t.task_id]))
        w.add("rollouts", rows)
        return {role: [self.expert_answers[role][t.task_id] for t in tasks] for role in self.experts}

    # ------------------------------------------------------------------ one step
    def _train(self, spec: StepSpec, w: StepWriter) -> dict:
        vc, G = self.vc, self.vc.group
        tasks = self.world.sample_tasks(vc.prompts, seed=spec.step)
        ctx = self.ctx.at(spec)
        g = draw_group(ctx, self.student, tasks, G, "train", {"oracle": [self.world.oracle(t) for t in tasks]},
                       Draw(role="student", rid="{task}-s{step}-train-{k}"))
        w.extend(g.rows)
        ex_ans = self._expert_greedy(spec, tasks, w)
        ids = [r["rollout_id"] for r in g.rows["rollouts"]]
        flat = [(t, a) for t, ans in zip(tasks, g.answers) for a in ans]
        e_items = [(t, ex_ans[r][j]) for r in self.experts for j, t in enumerate(tasks)]
        both, both_v = score_items(self.world, self.scorer, flat + e_items)  # one batch: one cache lookup per kind
        (checks, e_checks), (verdicts, e_verdicts) = _split(both, len(flat)), _split(both_v, len(flat))
        vrows = [row for i, (t, _) in enumerate(flat) for row in verdict_rows(self.run_id, spec.step, ids[i],
                                                                              t.task_id, verdicts[i])]
        for n, (t, _) in enumerate(e_items):
            role = list(self.experts)[n // len(tasks)]
            vrows += verdict_rows(self.run_id, spec.step, f"{t.task_id}-{role}-s{spec.step}", t.task_id, e_verdicts[n])
        w.add("verdicts", vrows)
        gs = self._groups(spec, tasks, checks, e_checks, ex_ans, ids, g.answers, w)
        rewards, gates = gs.rewards, gs.gates
        seq = group_advantages(to_groups(rewards, G), ctx.advantage_scale).flatten().numpy()
        adv, taught = token_advantages(self.student, self.experts, g.completions(), seq.tolist(), gates,
                                       self.casa.kl_coef, self.casa.kl_tau, self.casa.kl_clip)
        comps = [{"arm": self.casa.arm, "n_licences": len(gt), "taught_tokens": taught[i]} for i, gt in enumerate(gates)]
        up = update_role(ctx, self.student, "student", g.scored(rewards, components=comps, advantages=adv))
        w.extend(up.rows)
        self._probes(spec, w)
        return self._metrics(flat, gs, taught, up.metrics)

    def _groups(self, spec, tasks, checks, e_checks, ex_ans, ids, answers, w: StepWriter) -> GroupScores:
        """Per group: self-check (all arms when no rollout abstained), the run arm's rewards and gates, and
        the CASA rows (written to ``w``, and returned with the oracle's axis scores for the step's
        metrics).  A self-check failure stops the run with its one-line message."""
        from coevo.runner import RunError

        G, roles = self.vc.group, list(self.experts)
        rewards, gates, n_checked, rows = [], [], 0, {"criterion_scores": [], "casa_gates": []}
        truth: list = []  # the oracle's axis score of each criterion_scores row (rank reversals' check)
        for j, t in enumerate(tasks):
            cj = checks[j * G:(j + 1) * G]
            ev = {r: expert_values(e_checks[k * len(tasks) + j]) for k, r in enumerate(roles)}
            try:
                outs = self_check_group(spec.step, f"{j} ({t.task_id})", cj, ev, self.casa, self.vc.axis_weights)
            except CasaSelfCheckError as e:
                raise RunError(str(e)) from None
            n_checked += int(len(outs) > 1)
            out = outs[self.casa.arm]
            rewards += out["rewards"]
            gates += out["gates"]
            for k in range(G):
                i = j * G + k
                rc = rechecks_for(self.world, t, answers[j][k], {r: ex_ans[r][j] for r in roles},
                                  out["gates"][k]) if self.vc.recheck else {}
                scores = score_answer(cj[k])  # one criterion_scores row per axis, in this order
                true = oracle_checks(self.world, t, answers[j][k], cj[k]) if self.world.has_oracle else []
                for table, rs in rollout_rows(self.run_id, spec.step, ids[i], t.task_id, j, self.casa.arm,
                                              scores, cj[k], out["gates"][k], rc, true).items():
                    rows[table] += rs
                if self.world.has_oracle:
                    ts = score_answer(true)
                    truth += [ts[a].r_tilde_raw if a in ts else float("nan") for a in scores]
        for table, rs in rows.items():
            w.add(table, rs)
        return GroupScores(rewards, gates, n_checked, rows["criterion_scores"],
                           truth if self.world.has_oracle else None)

    def _probes(self, spec: StepSpec, w: StepWriter) -> None:
        if not self.probe_tasks:
            return
        by_id = {t.task_id: t for t in self.probe_tasks}
        prompts = [ProbePrompt(t.task_id, self.world.entry(t).reference) for t in self.probe_tasks]
        vac = getattr(self.world, "probe_answers", None)
        kw = {"vacuous": vac(self.probe_tasks[0], self.probe_tasks[0])["vacuous"]} if vac else {}

        items = probe_answers(prompts, **kw)  # scored in one batch (one verdict-cache lookup per kind)
        got = score_items(self.world, self.scorer, [(by_id[tid], a) for tid, _, _, a in items])[0]
        checks = {(tid, a): cs for (tid, _, _, a), cs in zip(items, got)}
        w.add("probes", run_probes(self.run_id, spec.step, prompts, lambda tid, a: checks[(tid, a)], **kw))

    def _metrics(self, flat, gs: GroupScores, taught, loss) -> dict:
        m = step_metrics(gs.score_rows, self.casa.rank_delta, gs.score_truth)
        acc = getattr(self.world, "axis_accuracy", None)
        if acc is not None:
            for a, v in acc([t for t, _ in flat], [a for _, a in flat]).items():
                m[f"acc_{a}"] = finite_or_none(v)
        m.update({"answer_reward_mean": finite_or_none(np.mean(gs.rewards)), "self_checked_groups": gs.n_checked,
                  "taught_tokens": int(sum(taught)), "arm": self.casa.arm, "loss": loss})
        return m


def _split(xs: list, n: int) -> tuple:
    """``xs[:n], xs[n:]``: the student's and the experts' part of one scored batch."""
    return xs[:n], xs[n:]
