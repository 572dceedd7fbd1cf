"""Secrets by reference: API keys come from environment variables named by ``api_key_env``
(default OPENAI_API_KEY), read at request time, and never reach config.yaml, the ledger,
the report, stdout/stderr or error messages.  A wrong or missing key is one line naming
the variable, for the sampler (a BackendError: the run stops, resumable) and the judge."""
import importlib.util
import json
import re
import secrets
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import JSONHandler, need_module

need_module("transformers")
need_module("peft")
need_module("httpx")

from conftest import run_coevo  # noqa: E402

from coevo.core.policy import BackendError, SamplingParams  # noqa: E402
from coevo.backends.openai_server import AuthError, EnvBearer  # noqa: E402
from coevo.backends.roles import RoleConfigError, load_base, make_role_policies  # noqa: E402
from coevo.config import ConfigError, load_config  # noqa: E402
from coevo.runner import RunError, make_policies  # noqa: E402
from coevo.verify import LLMJudge, make_verifier  # noqa: E402
from coevo.verify.judge import JudgeAuthError, raise_for_auth  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("serve_hf", ROOT / "scripts" / "serve_hf.py")
serve_hf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve_hf)

KEY = "sk-coevo-" + secrets.token_hex(16)
OTHER = "sk-wrong-" + secrets.token_hex(16)


@pytest.fixture(scope="module")
def locked_server():
    model, tok = load_base({"model": "tiny-llama", "seed": 0})
    srv, state, url = serve_hf.start_server(model, tok, served_name="tiny-llama", api_key=KEY)
    yield state, url
    srv.shutdown()


def _run_args(url: str, *extra: str) -> list[str]:
    sets = ["world.name=math", "world.prompt_style=fewshot", "world.answer_extraction=lenient",
            "backend.kind=openai", "backend.roles=lora", "backend.options.model=tiny-llama",
            f"backend.options.servers={json.dumps([url])}", "backend.options.retries=0",
            "backend.options.backoff_s=0.01", "backend.options.lora={r: 4, alpha: 8}",
            "rzero.rounds=1", "rzero.challenger_steps=1", "rzero.solver_steps=1", "rzero.challenger_prompts=2",
            "rzero.challenger_group=2", "rzero.m=2", "rzero.n_candidates=2", "rzero.solver_prompts=1",
            "rzero.solver_group=2", "sampling.max_new_tokens=6", "verify.workers=0", *extra]
    return ["-q", *[a for s in sets for a in ("--set", s)]]


def _traces(run_dir: Path, key: str) -> list[str]:
    """Every file under run_dir whose bytes contain the key (grep -r over bytes)."""
    return [str(p) for p in run_dir.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]


def _error_message(p) -> str:
    """The CLI's one error message (rich soft-wraps it at the terminal width; library warnings,
    a warning line and its indented source line, are left out)."""
    text = p.stdout + p.stderr
    assert "Traceback" not in text
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(" ") and "Warning: " not in ln]
    assert lines and lines[0].startswith("error: ") and sum(ln.startswith("error:") for ln in lines) == 1, lines
    return " ".join(lines)


def test_cli_run_with_key_in_env_leaves_no_trace(locked_server, tmp_path):
    state, url = locked_server
    before = state.unauthorized
    out = tmp_path / "run"
    p = run_coevo("run", "--out", str(out), *_run_args(url), env={"OPENAI_API_KEY": KEY})  # the default variable
    assert (out / "summary.json").is_file() and (out / "ledger.duckdb").is_file()
    assert state.unauthorized == before  # every request carried the key
    assert "api_key_env" not in (out / "config.yaml").read_text()  # the default: nothing of the key in the config
    files = [f for f in out.rglob("*") if f.is_file()]
    assert len(files) >= 4 and _traces(out, KEY) == []
    assert KEY not in p.stdout + p.stderr


def test_cli_wrong_key_is_one_line_then_resumes(locked_server, tmp_path):
    _, url = locked_server
    out = tmp_path / "run"
    p = run_coevo("run", "--out", str(out), *_run_args(url, "backend.options.api_key_env=COEVO_SAMPLER_KEY"),
                  check=False, env={"COEVO_SAMPLER_KEY": OTHER, "OPENAI_API_KEY": KEY})
    assert p.returncode == 2
    msg = _error_message(p)
    assert msg.startswith("error: step 0 (round 0 eval) failed: http://127.0.0.1:") and "--resume" in msg
    assert "rejected the API key in $COEVO_SAMPLER_KEY (HTTP 401): set COEVO_SAMPLER_KEY to a valid key" in msg
    assert "Traceback" not in p.stderr and OTHER not in p.stdout + p.stderr and KEY not in p.stdout + p.stderr
    assert (out / "config.yaml").is_file() and _traces(out, OTHER) == [] and _traces(out, KEY) == []
    assert "api_key_env: COEVO_SAMPLER_KEY" in (out / "config.yaml").read_text()  # the name, by reference
    # the key fixed in the environment: the same run resumes and completes, still without a trace
    p = run_coevo("run", "--resume", str(out), "-q", env={"COEVO_SAMPLER_KEY": KEY})
    assert (out / "summary.json").is_file() and _traces(out, KEY) == [] and KEY not in p.stdout + p.stderr


def test_literal_api_key_is_refused_in_one_line(tmp_path):
    with pytest.raises(RoleConfigError, match=r"^api_key: .*name it with backend.options.api_key_env") as e:
        make_role_policies({"model": "tiny-llama", "backend": "openai", "servers": ["http://127.0.0.1:9"],
                            "api_key": KEY})
    assert KEY not in str(e.value)
    # refused by the backend (RunError), or already at config load (ConfigError) where config.py checks it
    with pytest.raises((RunError, ConfigError), match=r"backend.options(: |\.)api_key: .*environment variable") as e:
        make_policies(load_config("cpu", None, ["backend.kind=openai", "backend.roles=lora",
                                                "backend.options.model=tiny-llama", f"backend.options.api_key={KEY}",
                                                "backend.options.servers=['http://127.0.0.1:9']"]))
    assert KEY not in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(RoleConfigError, match="must name an environment variable") as e:  # the key pasted as the name
        make_role_policies({"model": "tiny-llama", "backend": "openai", "servers": ["http://127.0.0.1:9"],
                            "api_key_env": KEY})
    assert KEY not in str(e.value)
    with pytest.raises(ValueError, match=r"verify.options.api_key: .*verify.options.api_key_env") as e:
        make_verifier("llm_judge", base_url="http://127.0.0.1:9/v1", model="m", api_key=KEY)
    assert KEY not in str(e.value)


def test_cli_literal_api_key_is_one_line(tmp_path):
    out = tmp_path / "run"
    p = run_coevo("run", "--out", str(out), "-q", "--set", "backend.kind=openai", "--set", "backend.roles=lora",
                  "--set", "backend.options.model=tiny-llama", "--set", f"backend.options.api_key={KEY}",
                  "--set", "backend.options.servers=['http://127.0.0.1:9']", check=False)
    msg = _error_message(p)
    assert p.returncode == 2 and re.match(r"error: .*backend.options(: |\.)api_key: ", msg) and "api_key_env" in msg
    assert KEY not in p.stdout + p.stderr


def test_literal_api_key_never_reaches_the_run_directory(tmp_path):
    out = tmp_path / "run"
    p = run_coevo("run", "--out", str(out), "-q", "--set", "backend.kind=openai", "--set", "backend.roles=lora",
                  "--set", "backend.options.model=tiny-llama", "--set", f"backend.options.api_key={KEY}",
                  "--set", "backend.options.servers=['http://127.0.0.1:9']", check=False)
    assert p.returncode == 2 and "api_key_env" in p.stderr and KEY not in p.stdout + p.stderr
    assert not out.exists() or _traces(out, KEY) == []  # refused at config load: nothing written


def test_sampler_auth_failure_raises_even_with_on_error_record(locked_server, tmp_path, monkeypatch):
    state, url = locked_server
    pols = make_role_policies({"model": "tiny-llama", "seed": 0, "backend": "openai", "servers": [url],
                               "adapter_dir": str(tmp_path / "a"), "lora": {"r": 4, "alpha": 8},
                               "on_error": "record", "api_key_env": "COEVO_SAMPLER_KEY", "retries": 2})
    so = pols["solver"]
    try:
        monkeypatch.delenv("COEVO_SAMPLER_KEY", raising=False)  # read at request time, not at construction
        with pytest.raises(AuthError, match=r"requires an API key \(HTTP 401\) but \$COEVO_SAMPLER_KEY is not set"):
            so.sample(["2+2?"], 2, SamplingParams(max_new_tokens=4))
        monkeypatch.setenv("COEVO_SAMPLER_KEY", OTHER)
        with pytest.raises(BackendError, match=r"rejected the API key in \$COEVO_SAMPLER_KEY \(HTTP 401\)") as e:
            so.sample(["2+2?"], 2, SamplingParams(max_new_tokens=4))
        assert OTHER not in str(e.value) and so.stats["failed"] == 0 and so.errors == []  # raised, not recorded
        monkeypatch.setenv("COEVO_SAMPLER_KEY", KEY)
        out = so.sample(["2+2?"], 2, SamplingParams(max_new_tokens=4))
        assert [len(g) for g in out] == [2] and all(c.finish_reason != "error" for c in out[0])
        assert KEY not in repr(so.auth) and KEY not in json.dumps(vars(so.auth), default=str)
    finally:
        for p in {id(p): p for p in pols.values()}.values():
            p.close()


class _EchoServer:
    """An OpenAI-ish server that echoes the Authorization header in its errors (some do)."""

    def __init__(self, key: str, status: int = 500, routes_ok=("/v1/load_lora_adapter",)):
        outer = self

        class H(JSONHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                self.rfile.read(n)
                auth = self.headers.get("Authorization") or ""
                if auth != f"Bearer {key}":
                    code, body = 401, {"error": f"bad credentials: got header {auth!r}"}
                elif self.path in routes_ok:
                    code, body = 200, "ok"
                elif self.path == "/v1/chat/completions":
                    code, body = 200, {"choices": [{"message": {"role": "assistant", "content": "Yes"}}]}
                else:
                    code, body = outer.status, {"error": f"overloaded; request headers: Authorization: {auth}"}
                self._send(code, body)

        self.status = status
        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


def test_server_error_text_is_scrubbed(tmp_path, monkeypatch):
    echo = _EchoServer(KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pols = make_role_policies({"model": "tiny-llama", "seed": 0, "backend": "openai", "servers": [echo.url],
                               "adapter_dir": str(tmp_path / "a"), "lora": {"r": 4, "alpha": 8}, "retries": 1,
                               "backoff_s": 0.01})
    so = pols["solver"]
    try:
        out = so.sample(["2+2?"], 2, SamplingParams(max_new_tokens=4))
        assert [c.finish_reason for c in out[0]] == ["error", "error"]
        recorded = json.dumps([c.meta for c in out[0]]) + json.dumps(so.errors)
        assert "HTTP 500" in recorded and "Bearer ***" in recorded and KEY not in recorded
        assert so.stats["failed"] == 1 and so.errors[0]["attempts"] == 2  # a 500 is retried, then recorded
    finally:
        so.close()
        echo.close()
    assert EnvBearer("X", "abcd1234").scrub("key abcd1234 and Bearer zzz") == "key *** and Bearer ***"


def test_judge_reads_the_key_from_the_named_variable(monkeypatch):
    echo = _EchoServer(KEY)
    monkeypatch.delenv("COEVO_JUDGE_KEY", raising=False)
    j = LLMJudge(echo.url + "/v1", "judge-model", api_key_env="COEVO_JUDGE_KEY", retries=2, backoff_s=0.01)
    try:
        v = j.judge("q", "4", "4")  # variable unset: the server demands a key
        assert v.value is None and v.reason == "judge-unavailable" and v.detail["attempts"] == 1
        assert "but $COEVO_JUDGE_KEY is not set" in v.detail["auth_error"]
        monkeypatch.setenv("COEVO_JUDGE_KEY", KEY)  # read at request time: the same judge now works
        assert [j.judge("q", "4", "4").value, j.judge("q", "4", "5").value] == [1, 1]
        j.close()
        monkeypatch.setenv("COEVO_JUDGE_KEY", OTHER)
        bad = [j.judge("q", "4", a) for a in ("4", "5")]
        assert [(v.value, v.reason, v.detail["attempts"]) for v in bad] == [(None, "judge-unavailable", 1)] * 2
        msg = bad[0].detail["auth_error"]
        assert msg.startswith("judge http://127.0.0.1:") and "rejected the API key in $COEVO_JUDGE_KEY (HTTP 401)" in msg
        assert "\n" not in msg and OTHER not in json.dumps([v.to_row() for v in bad])
        with pytest.raises(JudgeAuthError, match=r"\$COEVO_JUDGE_KEY") as e:
            raise_for_auth(bad)
        assert isinstance(e.value, BackendError)  # the runner's one-line, resumable error
        raise_for_auth([])  # nothing to raise
    finally:
        j.close()
        echo.close()


def test_serve_hf_requires_the_token_it_reads_from_its_environment(locked_server, monkeypatch, capsys):
    import httpx

    state, url = locked_server
    assert httpx.get(url + "/health").status_code == 200  # the only open route
    r = httpx.get(url + "/v1/models")
    assert r.status_code == 401 and r.json()["type"] == "AuthenticationError" and KEY not in r.text
    assert httpx.get(url + "/v1/models", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    monkeypatch.delenv("COEVO_SERVE_KEY", raising=False)
    with pytest.raises(SystemExit) as e:  # refused before any model is loaded
        serve_hf.main(["--model", "tiny-llama", "--api-key-env", "COEVO_SERVE_KEY"])
    assert e.value.code == 2 and "$COEVO_SERVE_KEY is not set" in capsys.readouterr().err


def test_eval_server_reads_the_key_from_api_key_env(locked_server, tmp_path):
    """`coevo eval --server URL --api-key-env VAR`: the key from VAR on every request; a wrong key
    is one line naming VAR, with no trace of either key."""
    state, url = locked_server
    args = ["eval", "--model", "tiny-llama", "--server", url, "--api-key-env", "COEVO_EVAL_KEY", "--world", "math",
            "--limit", "2", "--max-new-tokens", "4", "--json"]
    before = state.unauthorized
    p = run_coevo(*args, env={"COEVO_EVAL_KEY": KEY, "OPENAI_API_KEY": OTHER})
    assert state.unauthorized == before and json.loads(p.stdout)["n"] == 2
    assert KEY not in p.stdout + p.stderr
    p = run_coevo(*args, check=False, env={"COEVO_EVAL_KEY": OTHER, "OPENAI_API_KEY": KEY})
    assert p.returncode == 2
    msg = _error_message(p)
    assert "$COEVO_EVAL_KEY (HTTP 401)" in msg and OTHER not in msg and KEY not in msg
