import pytest

from coevo.ledger.store import Ledger, LedgerError


def test_step_commit_is_atomic(tmp_path):
    led = Ledger(tmp_path / "l.duckdb")
    with led.step("r", 0, 0, "eval", 0) as w:
        w.add("evals", [{"run_id": "r", "round": 0, "step": 0, "task_id": "a", "difficulty": "L1",
                         "policy_version": "v", "mode": "greedy", "answer": "1", "correct": 1.0}])
        w.metrics = {"x": 1}
    assert led.last_completed_step("r") == 0
    with pytest.raises(RuntimeError):
        with led.step("r", 1, 0, "eval", 0) as w:
            w.add("evals", [{"run_id": "r", "round": 0, "step": 1, "task_id": "b"}])
            raise RuntimeError("crash inside the step")
    assert led.last_completed_step("r") == 0
    assert led.count("evals") == 1
    led.close()
    led2 = Ledger(tmp_path / "l.duckdb", read_only=True)
    assert led2.count("evals", "r") == 1 and led2.query("SELECT metrics_json FROM steps")[0]["metrics_json"] == '{"x": 1}'
    led2.close()


def test_nullable_values_and_cache_store(tmp_path):
    led = Ledger(tmp_path / "l.duckdb")
    led.append("verdicts", [{"run_id": "r", "rollout_id": "x", "value": None, "reason": "timeout"},
                            {"run_id": "r", "rollout_id": "y", "value": 1, "reason": ""}])
    rows = led.query("SELECT rollout_id, value, reason FROM verdicts ORDER BY rollout_id")
    assert rows == [{"rollout_id": "x", "value": None, "reason": "timeout"}, {"rollout_id": "y", "value": 1, "reason": ""}]
    led.put_many([{"key": "k1", "value": 1}, {"key": "k2", "value": None, "reason": "judge-unknown"}])
    got = led.get_many(["k1", "k2", "k3"])
    assert set(got) == {"k1", "k2"} and got["k2"]["reason"] == "judge-unknown"
    with pytest.raises(LedgerError):
        led.count("nope")
    led.close()


def test_missing_ledger_read_only(tmp_path):
    with pytest.raises(LedgerError):
        Ledger(tmp_path / "absent.duckdb", read_only=True)


def test_verdict_cache_in_the_ledger_replays_across_reopen(tmp_path):
    from coevo.verify import Verdict, VerdictCache

    calls = []

    def judge_many(items):
        calls.extend(items)
        return [Verdict(1 if a == "42" else 0, "", "llm_judge", "j1") if a != "?" else
                Verdict(None, "judge-unknown", "llm_judge", "j1") for _, a in items]

    items = [("c1", "42"), ("c1", "41"), ("c2", "?"), ("c1", "42")]
    led = Ledger(tmp_path / "l.duckdb")
    first = VerdictCache(led).get_or_compute_many("llm_judge", "j1", "judge-v1", items, judge_many)
    assert [v.value for v in first] == [1, 0, None, 1] and len(calls) == 3
    led.close()
    led = Ledger(tmp_path / "l.duckdb")  # a re-score of the run, later
    cache = VerdictCache(led)
    again = cache.get_or_compute_many("llm_judge", "j1", "judge-v1", items, judge_many)
    assert [v.value for v in again] == [1, 0, None, 1] and [v.reason for v in again][2] == "judge-unknown"
    assert len(calls) == 3 and cache.hits == 4 and all(v.detail.get("cached") for v in again)
    other = cache.get_or_compute_many("llm_judge", "j2", "judge-v1", items[:1], judge_many)
    assert len(calls) == 4 and other[0].value == 1  # another judge version is another key
    led.close()


def test_older_ledger_gains_new_columns(tmp_path):
    """A ledger written before a column existed opens, gets the column (NULL in old rows)
    and takes new rows by name."""
    import duckdb

    from coevo.ledger.schema import TABLES
    from coevo.ledger.store import Ledger

    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    old_cols = [c for c in TABLES["rollouts"] if c[0] != "sampler_json"]
    con.execute(f"CREATE TABLE rollouts ({', '.join(f'{c} {t}' for c, t in old_cols)})")
    con.execute("INSERT INTO rollouts (run_id, rollout_id, text) VALUES ('r', 'a', 'old')")
    con.close()
    led = Ledger(path)
    led.append("rollouts", [{"run_id": "r", "rollout_id": "b", "text": "new", "sampler_json": '{"server": "s"}'}])
    rows = led.query("SELECT rollout_id, text, sampler_json FROM rollouts ORDER BY rollout_id")
    led.close()
    assert rows == [{"rollout_id": "a", "text": "old", "sampler_json": None},
                    {"rollout_id": "b", "text": "new", "sampler_json": '{"server": "s"}'}]
