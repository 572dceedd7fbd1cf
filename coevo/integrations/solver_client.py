"""The shipped Solver client: a ``solver_fn`` that samples the Solver from an OpenAI-compatible server
(vLLM, SGLang, ``scripts/serve_hf.py``) for the R-Zero Challenger's reward (docs/verl.md).

The Challenger's reward needs p_hat, the majority share of ``n`` Solver answers per question
(R-Zero §2.2; R-Zero samples 10). ``compute_challenger_scores`` calls ``solver_fn(questions)`` for the
questions whose answers are not in the data; this module is that function::

    +reward.reward_kwargs.solver_fn=coevo.integrations.solver_client:solve
    +reward.reward_kwargs.solver_base_url=http://127.0.0.1:8000/v1
    +reward.reward_kwargs.solver_model=Qwen/Qwen3-4B-Base
    +reward.reward_kwargs.solver_n=10

Every ``solver_<field>`` reward kwarg sets ``SolverSettings.<field>``; a field not given there is read
from ``$COEVO_SOLVER_<FIELD>`` (``COEVO_SOLVER_BASE_URL`` ...), else its default. A bad value or an
unknown field fails with the field's name. ``SolverClient(settings)`` is the same client as a callable
object (TRL's ``ChallengerReward(solver_fn=SolverClient(...))``).

One request per question asks for ``n`` samples (``/v1/chat/completions`` with the question and R-Zero's
Solver instruction as the user message, as coevo's ``rzero`` prompt style; or ``/v1/completions``),
``concurrency`` requests at a time, each with ``timeout_s``, ``retries`` and exponential back-off, failing
over across the comma-separated servers of ``base_url`` (the retry loop is the OpenAI backend's,
``coevo.backends.openai_server.post_retrying``). The key is sent by reference: ``api_key_env`` names the
variable read at every request (``coevo.secrets``); HTTP 401/403 raises at once.

Failing closed (``coevo.core.verdict``): a question whose request still fails after its retries is an
error, never empty answers that would count as a question nobody solved (p_hat 0). ``EndpointDown`` when
every request of the call failed, ``ServerError`` when some did; both one line naming the server and the
cause, and verl's reward worker (so the step) stops there.
"""
from __future__ import annotations

import hashlib
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coevo.backends.openai_server import ServerError, post_retrying, request_seed
from coevo.config import format_validation_error
from coevo.core.verdict import EndpointDown
from coevo.recipes.rzero.prompts import SOLVER_SUFFIX
from coevo.secrets import DEFAULT_API_KEY_ENV, EnvBearer, refuse_literal_key

__all__ = ["SolverSettings", "SolverClient", "solve", "settings_of", "ENV_PREFIX", "KWARG_PREFIX", "DEFAULT_PROMPT"]

ENV_PREFIX = "COEVO_SOLVER_"
KWARG_PREFIX = "solver_"
DEFAULT_PROMPT = "{question}\n\n" + SOLVER_SUFFIX  # coevo's rzero prompt style (MathWorld.solver_prompt)


class SolverSettings(BaseModel):
    """Where and how to sample the Solver (see the module docstring)."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(min_length=1)  # one server, or several comma-separated (failover); /v1 optional
    model: Optional[str] = None  # the served model name (vLLM: --served-model-name); None: not sent
    n: int = Field(10, ge=1)  # samples per question (R-Zero: 10)
    endpoint: Literal["chat", "completions"] = "chat"
    prompt: str = DEFAULT_PROMPT  # "{question}" is replaced by the question
    temperature: float = Field(1.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(4096, ge=1)
    seed: Optional[int] = None  # fixed per (seed, question): the same question gets the same draws
    timeout_s: float = Field(300.0, gt=0.0)
    retries: int = Field(3, ge=0)
    backoff_s: float = Field(0.5, ge=0.0)
    concurrency: int = Field(8, ge=1)  # requests in flight at once
    api_key_env: str = DEFAULT_API_KEY_ENV  # the variable whose value is sent as the bearer token

    @property
    def servers(self) -> list[str]:
        return [_server_root(u) for u in self.base_url.split(",") if u.strip()]


def _server_root(url: str) -> str:
    u = url.strip().rstrip("/")
    return u[: -len("/v1")] if u.endswith("/v1") else u


def settings_of(options: Optional[dict] = None, environ: Optional[dict] = None) -> SolverSettings:
    """``SolverSettings`` from ``options`` (field -> value; reward kwargs ``solver_<field>`` with the prefix
    removed), then ``$COEVO_SOLVER_<FIELD>`` for the fields not given; ValueError naming the field."""
    env = os.environ if environ is None else environ
    opts = {k: v for k, v in (options or {}).items() if v is not None}
    refuse_literal_key(opts, "solver")
    for name in SolverSettings.model_fields:
        var = ENV_PREFIX + name.upper()
        if name not in opts and env.get(var):
            opts[name] = env[var]
    if "base_url" not in opts:
        raise ValueError(f"solver: no server given: set the reward kwarg {KWARG_PREFIX}base_url or "
                         f"${ENV_PREFIX}BASE_URL (e.g. http://127.0.0.1:8000/v1)")
    try:
        return SolverSettings.model_validate(opts)
    except ValidationError as e:
        raise ValueError(f"solver settings: {format_validation_error(e, SolverSettings)}") from None


class SolverClient:
    """``client(questions) -> one list of n raw Solver outputs per question`` (the ``solver_fn`` contract of
    ``coevo.integrations.scoring.challenger_scores``); raises when a request fails (module docstring)."""

    def __init__(self, settings: SolverSettings, api_key: Optional[str] = None) -> None:
        import httpx

        self.settings = s = settings
        if not s.servers:
            raise ValueError("solver.base_url: no server URL")
        self.auth = EnvBearer(s.api_key_env, api_key)  # holds the variable's name, reads it per request
        self.client = httpx.Client(timeout=s.timeout_s, auth=self.auth)
        self.pool = ThreadPoolExecutor(max_workers=s.concurrency, thread_name_prefix="coevo-solver")
        self._rr = itertools.count()
        self._lock = threading.Lock()
        self.stats = {"calls": 0, "questions": 0, "requests": 0, "retries": 0, "failed": 0}

    def __call__(self, questions: Sequence[str]) -> list[list[str]]:
        qs = [str(q) for q in questions]
        with self._lock:
            self.stats["calls"] += 1
            self.stats["questions"] += len(qs)
        results = list(self.pool.map(self._one, qs))
        failed = [r for r in results if not r[0]]
        if failed:
            with self._lock:
                self.stats["failed"] += len(failed)
            cause = failed[0][1][-1] if failed[0][1] else "no answer"
            what = (f"solver server: {len(failed)} of {len(qs)} requests failed after retries "
                    f"({failed[0][2]} attempts each); last cause: {cause}")
            raise (EndpointDown if len(failed) == len(qs) else ServerError)(what)
        return [r[1] for r in results]

    def body(self, question: str) -> dict:
        """The request of one question: ``n`` samples of the Solver's prompt."""
        s = self.settings
        text = s.prompt.replace("{question}", question)
        b: dict = {"n": s.n, "temperature": s.temperature, "top_p": s.top_p, "max_tokens": s.max_tokens}
        if s.model is not None:
            b["model"] = s.model
        if s.seed is not None:
            b["seed"] = request_seed(s.seed, int.from_bytes(hashlib.sha256(question.encode()).digest()[:8], "big"))
        if s.endpoint == "chat":
            b["messages"] = [{"role": "user", "content": text}]
        else:
            b["prompt"] = text
        return b

    def _one(self, question: str) -> tuple[bool, list, int]:
        s = self.settings
        route = "/v1/chat/completions" if s.endpoint == "chat" else "/v1/completions"

        def count(a: int) -> None:
            with self._lock:
                self.stats["requests"] += 1
                self.stats["retries"] += bool(a)

        ok, out, attempts, reasons = post_retrying(self.client, self.auth, s.servers, route, self.body(question),
                                                   self._texts, s.retries, s.backoff_s, next(self._rr),
                                                   f"{KWARG_PREFIX}api_key_env", count)
        return ok, (out if ok else reasons), attempts

    def _texts(self, resp: dict, server: str, attempts: int, reasons: list) -> list[str]:
        n = self.settings.n
        choices = sorted(resp.get("choices") or [], key=lambda c: c.get("index", 0))
        if len(choices) != n:  # retried: a short answer would shrink the question's group
            raise ServerError(f"{server} returned {len(choices)} choices, expected n={n}")
        if self.settings.endpoint == "chat":
            return [(c.get("message") or {}).get("content") or "" for c in choices]
        return [c.get("text") or "" for c in choices]

    def close(self) -> None:
        self.pool.shutdown(wait=False)
        self.client.close()


_CLIENTS: dict = {}
_CLIENTS_LOCK = threading.Lock()


def solve(questions: Sequence[str], **options) -> list[list[str]]:
    """The ``solver_fn`` verl's reward names (``coevo.integrations.solver_client:solve``): ``options`` are the
    ``solver_<field>`` reward kwargs without the prefix (``compute_challenger_scores`` passes them), the rest
    comes from ``$COEVO_SOLVER_<FIELD>``. One client per distinct settings per process, kept (its
    connections and threads serve every step)."""
    s = settings_of(options)
    with _CLIENTS_LOCK:
        c = _CLIENTS.get(s)
        if c is None:
            c = _CLIENTS[s] = SolverClient(s)
    return c(questions)
