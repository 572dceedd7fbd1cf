"""Ray executor (coevo/executors): the verifier-pool drop-in on a Ray instance in this
process (fast), and a real local cluster (a head and a worker node as separate processes on
127.0.0.1, in a private network namespace where root allows) running `coevo run --executor
ray`, whose ledger and summary must equal the local executor's for the same seed (slow)."""
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, coevo_cmd, kill_after_step, need_module, run_coevo  # noqa: E402
from fingerprint import fingerprint, summary_numbers  # noqa: E402

from coevo.executors.cluster import RAY_ENV  # noqa: E402

# before Ray is imported (it reads these once): a token of this session's own, so the Ray
# instance of the fast tests requires it and writes none to ~/.ray
os.environ.update({**RAY_ENV, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)})
ray = need_module("ray")

from coevo.verify.probes import crash_item, echo_item, sleep_item  # noqa: E402

TINY_RZERO = ["--set", "world.eval_per_level=5", "--set", "rzero.rounds=1", "--set", "rzero.challenger_steps=1",
              "--set", "rzero.solver_steps=2", "--set", "rzero.challenger_prompts=8", "--set",
              "rzero.n_candidates=16", "--set", "rzero.solver_prompts=8"]


@pytest.fixture(scope="module")
def ray_pool():
    """Two verifier actors on a Ray instance started by this process (no cluster processes to manage)."""
    from coevo.executors.ray_executor import RayVerifierPool

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        with RayVerifierPool(actors=2, timeout_s=1.0).start() as p:
            yield p
    finally:
        ray.shutdown()


def test_pool_drop_in_order_timeout_crash(ray_pool):
    """Same contract as VerifierPool.map: input order, hung item -> timeout, dead worker ->
    worker-crash, an exception -> verifier-error, and the pool keeps serving."""
    out = ray_pool.map(echo_item, range(300))
    assert [v.detail["x"] for v in out] == list(range(300)) and sum(v.value for v in out) == 150
    assert len(set(ray_pool.nodes)) == 1 and ray_pool.n_actors == 2
    out = ray_pool.map(sleep_item, [0, 30, 0, 0.01], timeout_s=0.5)
    assert [v.value for v in out] == [1, None, 1, 1]
    assert out[1].reason == "timeout" and out[1].detail == {"limit_s": 0.5} and out[1].elapsed_s > 0.5
    out = ray_pool.map(crash_item, ["a", "crash", "b", "raise", "c"])
    assert [v.value for v in out] == [1, None, 1, None, 1]
    assert out[1].reason == "worker-crash" and out[3].reason == "verifier-error" and "boom" in out[3].detail["error"]
    assert ray_pool.map(echo_item, []) == [] and [v.value for v in ray_pool.map(echo_item, [2, 3])] == [1, 0]


def test_pool_matches_local_pool_on_math_pairs(ray_pool):
    from coevo.verify.bench import make_pairs
    from coevo.verify.checks import math_task
    from coevo.verify.pool import VerifierPool

    pairs = make_pairs(40, seed=3)
    with VerifierPool(workers=1, timeout_s=60.0) as local:  # a limit no loaded machine reaches
        want = [(v.value, v.reason) for v in local.map(math_task, pairs)]
    assert [(v.value, v.reason) for v in ray_pool.map(math_task, pairs, timeout_s=60.0)] == want
    assert sum(v for v, _ in want if v is not None) == 20  # make_pairs(40, 3): 20 equivalent pairs


def test_executor_config_errors():
    from coevo.config import ConfigError, load_config
    from coevo.executors.base import ExecutorError
    from coevo.executors.ray_executor import reach

    cfg = load_config("cpu", None, ["executor.kind=ray", "executor.address='127.0.0.1:1'"])
    assert cfg.executor.kind == "ray" and cfg.executor.address == "127.0.0.1:1"
    assert load_config("cpu").executor.kind == "local"
    with pytest.raises(ConfigError, match="executor.kind"):
        load_config("cpu", None, ["executor.kind=spark"])
    with pytest.raises(ConfigError, match="needs executor.kind=ray"):
        load_config("cpu", None, ["executor.address='127.0.0.1:1'"])
    with pytest.raises(ExecutorError, match="cannot reach the Ray cluster at '127.0.0.1:1'"):
        reach("127.0.0.1:1")  # before ray.init, which would wait minutes for an absent cluster


def ledger_details(run_dir: Path) -> list:
    import duckdb

    con = duckdb.connect(str(run_dir / "ledger.duckdb"), read_only=True)
    try:
        steps = con.execute("SELECT step, phase, versions_json FROM steps ORDER BY step").fetchall()
        rollouts = con.execute("SELECT rollout_id, policy_version, n_tokens, finish_reason FROM rollouts "
                               "ORDER BY ALL").fetchall()
        updates = con.execute("SELECT step, role, version_before, version_after, metrics_json FROM updates "
                              "ORDER BY ALL").fetchall()  # loss, grad norm: computed on the replicas' samples
    finally:
        con.close()
    return [steps, rollouts, updates]


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_ray_cluster_run_equals_local_run(tmp_path):
    """`coevo run --executor ray --address` on a head + worker node gives the local run's
    ledger (result fingerprints; policy versions of every rollout; losses and gradient norms
    of every update) and summary; so does a Ray run killed with -9 after step 2 and resumed on
    the cluster (the replicas get the restored weights and RNG streams)."""
    from coevo.executors.cluster import LocalCluster

    p = run_coevo("run", "--executor", "ray", "--address", "127.0.0.1:1", "--out", str(tmp_path / "u"), check=False)
    assert p.returncode == 2 and "cannot reach the Ray cluster" in p.stderr + p.stdout  # one line, no hang
    local, remote = tmp_path / "local", tmp_path / "ray"
    run_coevo("run", "-q", "--out", str(local), *TINY_RZERO, timeout=1800)
    with LocalCluster(workers=1, head_cpus=1, worker_cpus=1) as c:
        p = subprocess.run([*c.prefix, *coevo_cmd("run", "-q", "--out", str(remote), *TINY_RZERO, "--executor", "ray",
                                                  "--address", c.address)],
                           capture_output=True, text=True, env=c.env, cwd=REPO, timeout=1800)
        outs = [f.read_text(errors="replace") for f in Path(c.tmp).glob("session_*/logs/worker-*.out")]
        # kill -9 mid-run on the cluster, then resume there: the same ledger as the uninterrupted run
        killed = tmp_path / "killed"
        k = subprocess.Popen([*c.prefix, *coevo_cmd("run", "-q", "--out", str(killed), *TINY_RZERO, "--executor", "ray",
                                                    "--address", c.address)],
                             env=dict(c.env, PYTHONUNBUFFERED="1"), cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        kill_after_step(k, killed, step=2, timeout=900)
        was_killed = not (killed / "summary.json").exists()
        r = subprocess.run([*c.prefix, *coevo_cmd("run", "--resume", str(killed), "-q")], capture_output=True,
                           text=True, env=c.env, cwd=REPO, timeout=1800)
    logs, verifier_logs = "".join(outs), sum(":actor_name:VerifierActor" in o for o in outs)
    assert p.returncode == 0, p.stderr[-3000:]
    assert verifier_logs >= 2 and ":actor_name:ReplicaActor" in logs  # both nodes' CPUs verified, replicas sampled
    assert "kind: ray" in (remote / "config.yaml").read_text()
    assert fingerprint(remote) == fingerprint(local)
    assert summary_numbers(remote) == summary_numbers(local)
    assert ledger_details(remote) == ledger_details(local)
    assert json.loads((remote / "summary.json").read_text())["rounds"]
    assert was_killed, "the Ray run finished before it could be killed"
    assert r.returncode == 0, r.stderr[-3000:]
    assert "kind: ray" in (killed / "config.yaml").read_text()
    assert fingerprint(killed) == fingerprint(local) and summary_numbers(killed) == summary_numbers(local)
    assert ledger_details(killed) == ledger_details(local)
