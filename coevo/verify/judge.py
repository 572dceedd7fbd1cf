"""LLM judge over any OpenAI-compatible chat-completions endpoint.

``LLMJudge(base_url, model).judge(question, reference, answer, criterion=None)``
posts ``{base_url}/chat/completions`` with a versioned prompt (``PROMPTS``), reads the
first word of the reply: yes -> 1, no -> 0, unknown -> ``None/judge-unknown``,
anything else -> ``None/unparsable``.  HTTP 5xx / 429, timeouts, connection errors
and malformed JSON are retried with exponential backoff; when the retries run out the
verdict is ``None/judge-unavailable`` (the run continues).  Other 4xx are not retried.
Each verdict records model, prompt version and attempts in ``detail``; with a
``VerdictCache`` a repeated (model, prompt version, criterion, answer) is replayed.

Secrets by reference: ``api_key_env`` (default ``OPENAI_API_KEY``) names the variable whose
value is sent as the bearer token, read at every request, never stored or recorded (server
text is scrubbed).  HTTP 401/403 is not retried: the verdict is ``None/judge-unavailable``
(transient, so never cached) with ``detail["auth_error"]``, one line naming the variable.
Every verdict of a run would be wrong, so ``raise_for_auth(verdicts)`` turns such
verdicts into a ``JudgeAuthError`` (a ``BackendError``: the runner's one-line, resumable
error); the verifier itself never raises (the pool and ``guarded`` would turn an exception
into a cached ``verifier-error``).
"""
from __future__ import annotations

import json
import re
import time
from typing import Optional

import httpx

from coevo.core.policy import BackendError
from coevo.secrets import AUTH_STATUS, DEFAULT_API_KEY_ENV, EnvBearer, refuse_literal_key
from coevo.verify.cache import VerdictCache, criterion_fingerprint
from coevo.core.verdict import Verdict, abstain

JUDGE_CODE_VERSION = "llm_judge-1"
PROMPTS = {
    "judge-v1": (
        "You are grading an answer.\n"
        "Question:\n{question}\n\n"
        "Reference answer:\n{reference}\n\n"
        "Criterion:\n{criterion}\n\n"
        "Candidate answer:\n{answer}\n\n"
        "Does the candidate answer satisfy the criterion (judged against the reference)? "
        "Reply with exactly one word: yes, no, or unknown."
    ),
}
DEFAULT_CRITERION = "The candidate's final answer is equivalent to the reference answer."
_FIRST_WORD = re.compile(r"[A-Za-z]+")


class JudgeAuthError(BackendError):
    """The judge endpoint refused our credentials: one line naming the variable."""


def raise_for_auth(verdicts) -> None:
    """Raise ``JudgeAuthError`` when any verdict is a judge auth failure (see module doc)."""
    for v in verdicts:
        msg = (getattr(v, "detail", None) or {}).get("auth_error")
        if v.value is None and msg:
            raise JudgeAuthError(str(msg))


def parse_judgement(text: str) -> Optional[str]:
    """'Yes.' -> 'yes'; '**No**, because...' -> 'no'; 'unknown' -> 'unknown'; else None."""
    m = _FIRST_WORD.search(text or "")
    if not m:
        return None
    w = m.group(0).lower()
    return w if w in ("yes", "no", "unknown") else None


class LLMJudge:
    kind = "llm_judge"
    key_setting = "verify.options.api_key_env"  # the config key an auth failure tells the user to fix

    def __init__(self, base_url: str, model: str, api_key: Optional[str] = None, prompt_version: str = "judge-v1",
                 timeout_s: float = 30.0, retries: int = 3, backoff_s: float = 1.0, temperature: float = 0.0,
                 max_tokens: int = 8, cache: Optional[VerdictCache] = None, client: Optional[httpx.Client] = None,
                 api_key_env: str = DEFAULT_API_KEY_ENV):
        if prompt_version not in PROMPTS:
            raise ValueError(f"unknown judge prompt version {prompt_version!r}; known: {sorted(PROMPTS)}")
        refuse_literal_key({"api_key_env": api_key_env}, "verify.options")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.auth = EnvBearer(api_key_env, api_key)  # ``api_key``: programmatic callers only
        self.prompt_version = prompt_version
        self.timeout_s = float(timeout_s)
        self.retries = int(retries)
        self.backoff_s = float(backoff_s)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.cache = cache
        self._client = client

    @property
    def version(self) -> str:
        return f"{JUDGE_CODE_VERSION}:{self.model}"

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout_s, auth=self.auth)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def prompt(self, question, reference, answer, criterion=None) -> str:
        return PROMPTS[self.prompt_version].format(question=question, reference=reference,
                                                   answer=answer, criterion=criterion or DEFAULT_CRITERION)

    def judge(self, question: str, reference: str, answer: str, criterion: Optional[str] = None,
              criterion_id: Optional[str] = None) -> Verdict:
        """Never raises.  Cached by (kind+version, prompt version, criterion id, answer)."""
        if self.cache is None:
            return self._judge(question, reference, answer, criterion)
        cid = criterion_id or criterion_fingerprint(question, f"{reference}\x1f{criterion or ''}")
        return self.cache.get_or_compute(self.kind, self.version, self.prompt_version, cid, answer,
                                         lambda: self._judge(question, reference, answer, criterion))

    def verify(self, answer, reference=None, question: str = "", criterion: Optional[str] = None, **ctx) -> Verdict:
        return self.judge(question, reference, answer, criterion, ctx.get("criterion_id"))

    __call__ = verify

    def _judge(self, question, reference, answer, criterion) -> Verdict:
        t0 = time.perf_counter()
        detail = {"model": self.model, "prompt_version": self.prompt_version}
        try:
            body = {"model": self.model, "temperature": self.temperature, "max_tokens": self.max_tokens,
                    "messages": [{"role": "user", "content": self.prompt(question, reference, answer, criterion)}]}
            url = f"{self.base_url}/chat/completions"
            errors = []
            for attempt in range(self.retries + 1):
                if attempt:
                    time.sleep(self.backoff_s * (2 ** (attempt - 1)))
                try:
                    r = self._http().post(url, json=body, auth=self.auth)  # also on an injected client
                except httpx.TimeoutException as e:
                    errors.append(f"timeout: {type(e).__name__}")
                    continue
                except httpx.HTTPError as e:
                    errors.append(f"http: {type(e).__name__}: {self.auth.scrub(e)[:100]}")
                    continue
                if r.status_code in AUTH_STATUS:  # not retried: a wrong key stays wrong
                    detail.update(attempts=attempt + 1, auth_error=self.auth.failure(
                        f"judge {self.base_url}", r.status_code, self.key_setting))
                    return Verdict(None, "judge-unavailable", self.kind, self.version, time.perf_counter() - t0,
                                   detail)
                if r.status_code >= 500 or r.status_code == 429:
                    errors.append(f"status {r.status_code}")
                    continue
                if r.status_code >= 400:
                    errors.append(f"status {r.status_code}")
                    break
                try:
                    text = r.json()["choices"][0]["message"]["content"]
                    if not isinstance(text, str):
                        raise TypeError("content is not a string")
                except (ValueError, KeyError, IndexError, TypeError, json.JSONDecodeError) as e:
                    errors.append(f"malformed response: {type(e).__name__}")
                    continue
                detail.update(attempts=attempt + 1, reply=text[:200])
                word = parse_judgement(text)
                el = time.perf_counter() - t0
                if word == "yes":
                    return Verdict(1, "", self.kind, self.version, el, detail)
                if word == "no":
                    return Verdict(0, "", self.kind, self.version, el, detail)
                return Verdict(None, "judge-unknown" if word == "unknown" else "unparsable",
                               self.kind, self.version, el, detail)
            detail.update(attempts=len(errors), errors=errors[-5:])
            return Verdict(None, "judge-unavailable", self.kind, self.version, time.perf_counter() - t0, detail)
        except Exception as e:  # noqa: BLE001 - never an exception out of a verifier
            return abstain("verifier-error", self.kind, self.version, time.perf_counter() - t0,
                           error=f"{type(e).__name__}: {self.auth.scrub(e)}", **detail)
