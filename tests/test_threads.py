"""coevo.runner.thread_count: backend.threads capped by COEVO_MAX_THREADS (the test suite sets 1)."""
from coevo.runner import thread_count


def test_cap_applies_only_when_set_and_positive(monkeypatch):
    monkeypatch.delenv("COEVO_MAX_THREADS", raising=False)
    assert thread_count(2) == 2
    for cap, configured, want in (("1", 2, 1), ("4", 2, 2), ("2", 3, 2), ("0", 2, 2), ("x", 2, 2), (" 1 ", 4, 1)):
        monkeypatch.setenv("COEVO_MAX_THREADS", cap)
        assert thread_count(configured) == want, (cap, configured)
