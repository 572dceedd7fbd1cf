"""The shipped Solver client (``coevo.integrations.solver_client``) against an OpenAI-compatible stub server on
127.0.0.1: n samples per question, a retry after a transient 503, timeouts, a dead server as an error, the key
sent from a reference; then ``compute_challenger_scores`` with ``solver_fn`` naming it, as verl's reward calls
it (the verl run itself: tests/test_verl_091.py, marker ``verl``)."""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import ThreadingHTTPServer

import pytest
from conftest import JSONHandler

from coevo.backends.openai_server import AuthError, ServerError
from coevo.core.verdict import EndpointDown
from coevo.integrations.solver_client import DEFAULT_PROMPT, SolverClient, settings_of, solve

SUFFIX = DEFAULT_PROMPT.split("\n\n", 1)[1]
# question -> the Solver's answers (cycled over the n choices)
ANSWERS = {"What is 2+2?": ["\\boxed{4}", "so \\boxed{4}", "\\boxed{4}", "\\boxed{5}"],
           "What is 3+5 exactly?": ["\\boxed{8}"],
           "Name the largest prime below twenty.": ["\\boxed{19}", "\\boxed{17}"]}


class Stub:
    def __init__(self):
        self.script = []  # per request, popped: "503" | "sleep" | "short"; empty: answer
        self.bodies, self.auth = [], []
        self.key = None  # the bearer token required (None: none)
        self.lock = threading.Lock()


@pytest.fixture()
def stub():
    st = Stub()

    class H(JSONHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            with st.lock:
                st.bodies.append(body)
                st.auth.append(self.headers.get("Authorization"))
                step = st.script.pop(0) if st.script else "ok"
            if st.key is not None and self.headers.get("Authorization") != f"Bearer {st.key}":
                return self._send(401, {"error": {"message": f"bad key {self.headers.get('Authorization')}"}})
            if step == "503":
                return self._send(503, {"error": {"message": "warming up"}})
            if step == "sleep":
                time.sleep(1.0)
            text = body["messages"][0]["content"] if "messages" in body else body["prompt"]
            q = text.split("\n\n")[0]
            ans = ANSWERS.get(q, ["no idea"])
            n = int(body.get("n", 1)) - (step == "short")
            key = "message" if "messages" in body else "text"
            ch = [{"index": i, key: ({"role": "assistant", "content": ans[i % len(ans)]} if key == "message"
                                     else ans[i % len(ans)]), "finish_reason": "stop"} for i in range(n)]
            return self._send(200, {"model": body.get("model"), "choices": ch})

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    st.url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    yield st
    srv.shutdown()
    srv.server_close()


def client(url, **kw):
    return SolverClient(settings_of({"base_url": url, "backoff_s": 0.01, **kw}, environ={}))


def test_n_samples_per_question_one_request_each(stub):
    c = client(stub.url, n=4, model="solver-7b", seed=3, max_tokens=64)
    out = c(["What is 2+2?", "What is 3+5 exactly?"])
    assert out == [["\\boxed{4}", "so \\boxed{4}", "\\boxed{4}", "\\boxed{5}"], ["\\boxed{8}"] * 4]
    assert len(stub.bodies) == 2 and c.stats == {"calls": 1, "questions": 2, "requests": 2, "retries": 0, "failed": 0}
    b = sorted(stub.bodies, key=lambda x: x["messages"][0]["content"])[0]
    assert b["messages"] == [{"role": "user", "content": "What is 2+2?\n\n" + SUFFIX}]
    assert (b["n"], b["model"], b["max_tokens"], b["temperature"], b["top_p"]) == (4, "solver-7b", 64, 1.0, 1.0)
    again = client(stub.url, n=4, model="solver-7b", seed=3, max_tokens=64)
    assert again.body("What is 2+2?")["seed"] == b["seed"]  # per (seed, question): reproducible draws
    assert client(stub.url).body("What is 2+2?").keys() == {"n", "temperature", "top_p", "max_tokens", "messages"}


def test_completions_endpoint_and_two_servers_comma_separated(stub):
    c = client(f"http://127.0.0.1:{_free_port()}," + stub.url, n=2, endpoint="completions", retries=1)
    assert c(["What is 3+5 exactly?"]) == [["\\boxed{8}", "\\boxed{8}"]]  # the dead first server: failed over
    assert stub.bodies[0]["prompt"] == "What is 3+5 exactly?\n\n" + SUFFIX and c.stats["retries"] == 1


def test_retry_after_a_transient_503_and_after_short_answers(stub):
    stub.script = ["503", "short"]
    c = client(stub.url, n=2, retries=2)
    assert c(["What is 3+5 exactly?"]) == [["\\boxed{8}"] * 2]
    assert len(stub.bodies) == 3 and c.stats["requests"] == 3 and c.stats["retries"] == 2


def test_a_timeout_is_retried_then_an_error(stub):
    stub.script = ["sleep", "sleep"]
    c = client(stub.url, n=1, timeout_s=0.2, retries=1)
    with pytest.raises(EndpointDown, match=r"1 of 1 requests failed after retries \(2 attempts each\).*ReadTimeout"):
        c(["What is 2+2?"])
    stub.script = ["sleep"]
    assert c(["What is 2+2?"]) == [["\\boxed{4}"]]  # one timeout, then the retry answers


def test_a_dead_server_is_an_error_never_empty_answers():
    url = f"http://127.0.0.1:{_free_port()}/v1"
    with pytest.raises(EndpointDown, match=r"2 of 2 requests failed after retries \(2 attempts each\); "
                                           r"last cause: http://127\.0\.0\.1:\d+: ConnectError"):
        client(url, retries=1)(["What is 2+2?", "What is 3+5 exactly?"])


def test_some_requests_failing_is_an_error_too(stub):
    stub.script = ["503", "503"]  # retries=1: the first question's two attempts fail, the second answers
    c = client(stub.url, n=1, retries=1, concurrency=1)
    with pytest.raises(ServerError, match=r"1 of 2 requests failed .* HTTP 503"):
        c(["What is 2+2?", "What is 3+5 exactly?"])
    assert c.stats["failed"] == 1


def test_the_key_is_sent_from_the_variable_it_names(stub, monkeypatch):
    stub.key = "s3cret-token"
    monkeypatch.setenv("MY_SOLVER_KEY", "s3cret-token")
    c = client(stub.url, n=1, api_key_env="MY_SOLVER_KEY")
    assert c(["What is 3+5 exactly?"]) == [["\\boxed{8}"]] and stub.auth == ["Bearer s3cret-token"]
    monkeypatch.setenv("MY_SOLVER_KEY", "wrong")
    with pytest.raises(AuthError, match=r"rejected the API key in \$MY_SOLVER_KEY \(HTTP 401\)") as e:
        c(["What is 3+5 exactly?"])
    assert "wrong" not in str(e.value) and len(stub.bodies) == 2  # not retried, never echoed
    with pytest.raises(ValueError, match="solver.api_key: API keys are not accepted"):
        settings_of({"base_url": stub.url, "api_key": "s3cret-token"}, environ={})


def test_settings_from_the_environment_and_bad_values_name_the_field():
    s = settings_of({"n": 3}, environ={"COEVO_SOLVER_BASE_URL": "http://h:8000/v1/", "COEVO_SOLVER_N": "7",
                                       "COEVO_SOLVER_TIMEOUT_S": "12.5"})
    assert (s.servers, s.n, s.timeout_s, s.retries) == (["http://h:8000"], 3, 12.5, 3)  # the kwarg wins over env
    with pytest.raises(ValueError, match="no server given: set the reward kwarg solver_base_url or "
                                         r"\$COEVO_SOLVER_BASE_URL"):
        settings_of({}, environ={})
    with pytest.raises(ValueError, match=r"solver settings: n: Input should be greater than or equal to 1"):
        settings_of({"base_url": "http://h", "n": 0}, environ={})
    with pytest.raises(ValueError, match=r"solver settings: temprature: unknown field"):
        settings_of({"base_url": "http://h", "temprature": 0.5}, environ={})


CH = ["<question>What is 2+2?</question> \\boxed{4}", "no tags here", "<question>What is 3+5 exactly?</question>",
      "<question>Name the largest prime below twenty.</question>"]


def test_verl_challenger_reward_with_the_shipped_solver_fn(stub, tmp_path):
    from coevo.integrations.common import close_parts
    from coevo.integrations.importers import import_parts
    from coevo.integrations.verl_reward import compute_challenger_scores

    led = tmp_path / "led"
    out = compute_challenger_scores(["rzero"] * 4, CH, [None] * 4, [{}] * 4, ledger=str(led), verify_workers=0,
                                    solver_fn="coevo.integrations.solver_client:solve", solver_base_url=stub.url,
                                    solver_n=4, solver_backoff_s=0.01, step=2)
    # B = 4, 3 valid questions in 3 BLEU clusters: r_rep = 1/3 * 3/4 = 1/4; p_hat 3/4 -> r_unc 1/2 -> 1/4;
    # p_hat 1 -> 0; p_hat 1/2 -> r_unc 1 -> 3/4; no question -> 0
    assert [o["p_hat"] for o in out] == [0.75, 0.0, 1.0, 0.5]
    assert [o["score"] for o in out] == pytest.approx([0.25, 0.0, 0.0, 0.75])
    assert len(stub.bodies) == 3 and {b["n"] for b in stub.bodies} == {4}  # the valid questions only
    close_parts()
    con = import_parts(led, tmp_path / "run")
    assert con["counts"]["rollouts"] == 12
    import duckdb

    db = duckdb.connect(str(tmp_path / "run" / "ledger.duckdb"), read_only=True)
    rows = db.execute("select t.question, t.p_hat, list(r.answer order by r.group_idx) from tasks t join rollouts r "
                      "using (task_id) group by 1, 2 order by 1").fetchall()
    assert rows == [("Name the largest prime below twenty.", 0.5, ["19", "17", "19", "17"]),
                    ("What is 2+2?", 0.75, ["4", "4", "4", "5"]), ("What is 3+5 exactly?", 1.0, ["8"] * 4)]
    with pytest.raises(EndpointDown):  # a dead Solver stops the reward: no question scored as unsolved
        solve(["What is 2+2?"], base_url=f"http://127.0.0.1:{_free_port()}", retries=0)


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
