"""OpenAI-compatible sampling backend: remote sampling, local HF training, LoRA weight sync.

``OpenAIPolicy(trainer, servers=[...])`` implements the Policy contract:

* ``sample`` sends one request per prompt (``n`` samples each) to one of the servers
  (round-robin, concurrent), with retries and exponential back-off, failing over to the
  next server.  ``endpoint='completions'`` sends the chat-templated prompt as *token
  ids* (the trainer's tokenizer and template, so training sees exactly the sampled
  context); ``endpoint='chat'`` sends ``messages`` and lets the server apply its
  template (the prompt ids are then re-derived locally with the same template).
  Either way we ask for ``logprobs`` and ``return_tokens_as_token_ids`` so every
  Completion carries token ids and per-token log-probabilities from the server.
* Streams: every request carries a ``seed`` (vLLM's per-request seed), derived from the
  trainer's counter of ``sampling.stream`` (``HFPolicy.next_seed``: one draw per ``sample``
  call, then mixed with the prompt's index), so "audit" calls never move the "train"
  seeds and the counters travel in the trainer's state.  (The reference server
  ``scripts/serve_hf.py`` honours ``seed``.)
* ``token_prefixes`` (multi-turn continuation): with ``endpoint='completions'`` the ids
  are appended to the prompt ids sent (exact); with ``endpoint='chat'`` they are decoded
  to text and appended to the continued assistant message (vLLM ``continue_final_message``),
  so the server re-tokenizes them: exact only where decode/encode round-trips
  (``meta['prefix_as_text'] = True`` marks such completions; prefer 'completions').
* Every Completion records ``meta['served_model']`` (the ``model`` the server
  answered with: the adapter name, which encodes the trainer version it was exported
  from), ``meta['server']``, ``meta['attempts']`` and ``policy_version`` = the trainer
  version the server is *known* to hold (it lags the trainer when a sync failed).
* A request that still fails after all retries yields ``n`` Completions with
  ``finish_reason='error'`` and ``meta['error']`` (the reason): data for the ledger, counted as
  errors (never as wrong answers; ``coevo.core.verdict``), and ``stats['failed']`` of
  ``stats['calls']``; when every call fails, the stage or the loop stops the command with one line
  (``EndpointDown``).  ``on_error='raise'`` raises ``ServerError`` at once.
* ``forward_backward`` runs on the local trainer (``HFPolicy``); ``optim_step`` then
  exports the LoRA adapter (PEFT format) under ``adapter_dir/<role>-v<k>`` and asks
  every server to load it (vLLM's ``POST /v1/load_lora_adapter`` with ``lora_name`` and
  ``lora_path``), then unloads the previous one.  A new name per version avoids
  relying on in-place reloads.  vLLM needs ``--enable-lora --max-lora-rank R
  --max-loras 2*roles`` and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``; the adapter path
  must be readable by the server (shared disk).  See docs/real-models.md.
* Secrets by reference: ``api_key_env`` (default ``OPENAI_API_KEY``) names the environment
  variable whose value is sent as ``Authorization: Bearer ...``; it is read at every request
  (``EnvBearer``), never stored, and scrubbed from every server text we record.  HTTP 401/403
  raises ``AuthError`` (one line naming the variable) whatever ``on_error`` says: a wrong key
  never becomes a run of recorded failures.
"""
from __future__ import annotations

import hashlib
import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Sequence

from coevo.core.policy import BackendError, Completion, LossConfig, SamplingParams
from coevo.secrets import AUTH_STATUS, DEFAULT_API_KEY_ENV, EnvBearer, refuse_literal_key  # noqa: F401 (re-exported)


class ServerError(BackendError):
    """A server request failed after every retry (message carries the reason)."""


class AuthError(ServerError):
    """The server refused our credentials (HTTP 401/403): one line naming the variable."""



class OpenAIPolicy:
    def __init__(self, trainer, servers: Sequence[str], endpoint: str = "completions",
                 adapter_dir: str | Path | None = None, served_model: str | None = None,
                 timeout_s: float = 300.0, retries: int = 3, backoff_s: float = 0.5, concurrency: int | None = None,
                 on_error: str = "record", api_key_env: str = DEFAULT_API_KEY_ENV,
                 api_key: str | None = None) -> None:
        import httpx

        if endpoint not in ("completions", "chat"):
            raise ValueError(f"endpoint must be 'completions' or 'chat', got {endpoint!r}")
        if on_error not in ("record", "raise"):
            raise ValueError(f"on_error must be 'record' or 'raise', got {on_error!r}")
        if not servers:
            raise ValueError("OpenAIPolicy needs at least one server URL")
        if getattr(trainer, "adapter", None) is None:
            raise ValueError("OpenAIPolicy syncs weights as LoRA adapters: the trainer must be a LoRA role "
                             "(roles mode 'lora' or 'shared')")
        self.trainer = trainer
        self.name = trainer.name
        self.servers = [s.rstrip("/") for s in servers]
        self.endpoint = endpoint
        self.adapter_dir = Path(adapter_dir) if adapter_dir else Path("adapters")
        self.served_model = served_model
        self.retries, self.backoff_s, self.on_error = int(retries), float(backoff_s), on_error
        refuse_literal_key({"api_key_env": api_key_env}, "backend.options")
        self.auth = EnvBearer(api_key_env, api_key)  # holds the variable's name, reads it per request
        self.client = httpx.Client(timeout=timeout_s, auth=self.auth)
        self.pool = ThreadPoolExecutor(max_workers=concurrency or max(4, 4 * len(self.servers)))
        self._rr = itertools.count()
        self._lock = threading.Lock()
        self.lora_name: str | None = None  # adapter currently served
        self.synced_version: str | None = None
        self.errors: list[dict] = []  # every failed request / sync, with its reason
        self._last_exc: dict[str, str] = {}  # server -> the last connection error of a weight sync
        # calls: one per prompt (its retries are requests); failed: calls that failed after every retry
        self.stats = {"calls": 0, "requests": 0, "retries": 0, "failed": 0, "syncs": 0, "sync_failures": 0}

    # ------------------------------------------------------------------ contract
    @property
    def version(self) -> str:
        return self.trainer.version

    def sample(self, prompts: Sequence[str], n: int, sampling: SamplingParams,
               token_prefixes: Sequence[Sequence[int]] | None = None) -> list[list[Completion]]:
        if token_prefixes is not None and len(token_prefixes) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(token_prefixes)} token_prefixes")
        if self.synced_version != self.trainer.version:
            self.sync()
        base = self.trainer.next_seed(sampling.stream)
        futs = [self.pool.submit(self._sample_one, p, n, sampling, request_seed(base, j),
                                 list(token_prefixes[j]) if token_prefixes is not None else None)
                for j, p in enumerate(prompts)]
        return [f.result() for f in futs]

    def tokenize(self, text: str) -> list[int]:
        return self.trainer.tokenize(text)

    def forward_backward(self, batch: Sequence[Completion], advantages: Sequence[Any], loss: LossConfig,
                         scale: float = 1.0, num_active_tokens: int | None = None) -> dict[str, float]:
        return self.trainer.forward_backward(batch, advantages, loss, scale=scale, num_active_tokens=num_active_tokens)

    def optim_step(self) -> dict[str, float]:
        m = dict(self.trainer.optim_step())
        m.update(self.sync())
        return m

    def save(self, path: str) -> None:
        self.trainer.save(path)

    def state(self, with_optimizer: bool = True) -> dict:
        """The trainer's full state (adapter weights, optimizer, counters) for run resume."""
        return self.trainer.state(with_optimizer)

    def load_state(self, st: dict) -> None:
        self.trainer.load_state(st)
        self.synced_version = None  # the servers hold another version: re-sync before sampling

    def set_reference(self) -> None:
        self.trainer.set_reference()

    def load(self, path: str) -> None:
        self.trainer.load(path)
        self.synced_version = None  # re-sync before the next sample

    def close(self) -> None:
        self.pool.shutdown(wait=False)
        self.client.close()

    # ------------------------------------------------------------------ weight sync
    def sync(self) -> dict[str, float]:
        """Export the trainer's adapter and (re)load it on every server; returns metrics."""
        t0 = time.time()
        version = self.trainer.version
        name = f"{self.trainer.adapter}-v{self.trainer.updates}"
        path = self.trainer.export_adapter(self.adapter_dir / name)
        ok = True
        for s in self.servers:
            for old in ([name] if name == self.lora_name else []):  # same name again: unload first
                self._post(s, "/v1/unload_lora_adapter", {"lora_name": old}, raise_for_status=False)
            r = self._post(s, "/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(Path(path).resolve())},
                           raise_for_status=False)
            if r is not None and r.status_code == 400 and "already" in r.text.lower():
                continue  # vLLM: this server kept the adapter from an earlier, partly failed sync
            if r is not None and r.status_code in AUTH_STATUS:
                raise AuthError(self.auth.failure(s, r.status_code, "backend.options.api_key_env"))
            if r is None or r.status_code != 200:
                ok = False
                reason = (f"unreachable ({self._last_exc.get(s, 'no answer')})" if r is None
                          else f"HTTP {r.status_code}: {self.auth.scrub(r.text)[:200]}")
                self.errors.append({"kind": "sync", "server": s, "lora_name": name, "reason": reason})
        self.stats["syncs"] += 1
        if ok:
            prev, self.lora_name, self.synced_version = self.lora_name, name, version
            if prev and prev != name:
                for s in self.servers:
                    self._post(s, "/v1/unload_lora_adapter", {"lora_name": prev}, raise_for_status=False)
        else:
            self.stats["sync_failures"] += 1
        return {"sync_ok": float(ok), "sync_s": time.time() - t0}

    def _post(self, server: str, route: str, body: dict, raise_for_status: bool = True):
        try:
            r = self.client.post(server + route, json=body)
        except Exception as e:  # noqa: BLE001 - connection refused, timeout, ...
            if raise_for_status:
                raise
            self._last_exc[server] = f"{type(e).__name__}: {self.auth.scrub(e)[:200]}"
            return None
        if raise_for_status:
            r.raise_for_status()
        return r

    # ------------------------------------------------------------------ requests
    def _body(self, prompt: str, n: int, sp: SamplingParams, seed: int | None = None,
              prefix: list[int] | None = None) -> tuple[dict, list[int]]:
        ids = self.trainer.format_prompt(prompt, sp.response_prefix) + list(prefix or [])
        greedy = sp.greedy or sp.temperature <= 0
        body: dict[str, Any] = {"model": self.lora_name or self.served_model, "n": n,
                                "temperature": 0.0 if greedy else sp.temperature,
                                "top_p": 1.0 if greedy else sp.top_p, "max_tokens": sp.max_new_tokens,
                                "return_tokens_as_token_ids": True}
        if seed is not None:
            body["seed"] = int(seed)
        if sp.stop:
            body["stop"] = list(sp.stop)
        if self.endpoint == "completions":
            body.update(prompt=ids, logprobs=1)
        else:
            msgs = ([{"role": "system", "content": self.trainer.system_prompt}] if self.trainer.system_prompt else [])
            msgs = msgs + [{"role": "user", "content": prompt}]
            cont = sp.response_prefix + (self.trainer.tokenizer.decode(prefix) if prefix else "")
            if cont:  # vLLM's chat extension: continue the final assistant message
                msgs.append({"role": "assistant", "content": cont})
                body.update(add_generation_prompt=False, continue_final_message=True)
            body.update(messages=msgs, logprobs=True, top_logprobs=0)
        return body, ids

    def _sample_one(self, prompt: str, n: int, sp: SamplingParams, seed: int | None = None,
                    prefix: list[int] | None = None) -> list[Completion]:
        body, ids = self._body(prompt, n, sp, seed, prefix)
        extra: dict[str, Any] = {"seed": seed} if seed is not None else {}
        if prefix and self.endpoint == "chat":
            extra["prefix_as_text"] = True  # token_prefixes went as text: the server re-tokenized them
        route = "/v1/completions" if self.endpoint == "completions" else "/v1/chat/completions"
        start = next(self._rr)
        with self._lock:
            self.stats["calls"] += 1

        def count(a: int) -> None:
            with self._lock:
                self.stats["requests"] += 1
                if a:
                    self.stats["retries"] += 1

        ok, out, attempts, reasons = post_retrying(
            self.client, self.auth, self.servers, route, body,
            lambda resp, server, att, why: self._parse(resp, prompt, ids, n, sp, server, att, why, extra),
            self.retries, self.backoff_s, start, "backend.options.api_key_env", count)
        if ok:
            return out
        reason = " | ".join(reasons)
        with self._lock:
            self.stats["failed"] += 1
            self.errors.append({"kind": "sample", "prompt": prompt[:200], "reason": reason, "attempts": attempts})
        if self.on_error == "raise":
            raise ServerError(f"sampling failed after {attempts} attempts: {reason}")
        temp = 1.0 if (sp.greedy or sp.temperature <= 0) else float(sp.temperature)
        return [Completion(prompt=prompt, text="", prompt_ids=list(ids), token_ids=[], logprobs=[],
                           finish_reason="error", policy_version=self.synced_version or self.version,
                           meta={"error": reason, "attempts": attempts, "temperature": temp}) for _ in range(n)]

    def _parse(self, resp: dict, prompt: str, ids: list[int], n: int, sp: SamplingParams, server: str,
               attempts: int, reasons: list[str], extra: dict | None = None) -> list[Completion]:
        temp = 1.0 if (sp.greedy or sp.temperature <= 0) else float(sp.temperature)
        out: list[Completion] = []
        choices = sorted(resp.get("choices", []), key=lambda c: c.get("index", 0))
        if len(choices) != n:
            raise ServerError(f"{server} returned {len(choices)} choices, expected {n}")
        for ch in choices:
            lp = ch.get("logprobs") or {}
            if self.endpoint == "completions":
                toks, lps = lp.get("tokens") or [], lp.get("token_logprobs") or []
                text = ch.get("text", "")
            else:
                content = lp.get("content") or []
                toks, lps = [c["token"] for c in content], [c["logprob"] for c in content]
                text = (ch.get("message") or {}).get("content") or ""
            token_ids = [_token_id(t) for t in toks]
            meta = {"temperature": temp, "top_p": 1.0 if (sp.greedy or sp.temperature <= 0) else float(sp.top_p),
                    "served_model": resp.get("model"), "server": server, "attempts": attempts,
                    "system_fingerprint": resp.get("system_fingerprint"), "endpoint": self.endpoint}
            if reasons:
                meta["retried_after"] = list(reasons)
            if isinstance(ch.get("stop_reason"), str):  # vLLM: the stop string hit (an int is a stop token)
                meta["stop"] = ch.get("stop_reason")
            if sp.response_prefix:
                meta["response_prefix"] = sp.response_prefix
            meta.update(extra or {})
            finish = ch.get("finish_reason") or "stop"
            out.append(Completion(prompt=prompt, text=text, prompt_ids=list(ids), token_ids=token_ids,
                                  logprobs=[float(x) for x in lps], finish_reason=finish if finish in ("stop", "length") else "stop",
                                  policy_version=self.synced_version or self.version, meta=meta))
        return out


def post_retrying(client, auth: EnvBearer, servers: Sequence[str], route: str, body: dict, parse, retries: int,
                  backoff_s: float, start: int = 0, key_setting: str = "api_key_env", on_request=None):
    """POST ``body`` to ``route``, trying ``servers[(start + a) % len(servers)]`` for attempt ``a`` (failing
    over), with ``retries`` retries and exponential back-off (``backoff_s * 2**a``): a connection error, a
    timeout, HTTP 408 / 429 / 5xx, or an exception from ``parse(json, server, attempts, reasons)`` is retried;
    other 4xx are not (the request itself is wrong); 401/403 raise ``AuthError`` (one line naming the key's
    variable and ``key_setting``). ``on_request(a)`` is called before attempt ``a``. Returns ``(ok, parsed,
    attempts, reasons)``: ``reasons`` are the failed attempts' causes, each starting with the server, key
    scrubbed."""
    reasons: list[str] = []
    attempts = 0
    for a in range(retries + 1):
        server = servers[(start + a) % len(servers)]
        attempts += 1
        if on_request is not None:
            on_request(a)
        try:
            r = client.post(server + route, json=body)
            if r.status_code == 200:
                return True, parse(r.json(), server, attempts, reasons), attempts, reasons
            if r.status_code in AUTH_STATUS:  # whatever on_error says: every request would fail
                raise AuthError(auth.failure(server, r.status_code, key_setting))
            reasons.append(f"{server}: HTTP {r.status_code}: {auth.scrub(r.text)[:200]}")
            if 400 <= r.status_code < 500 and r.status_code not in (408, 429):
                break  # the request itself is wrong: retrying will not help
        except AuthError:
            raise
        except Exception as e:  # noqa: BLE001
            reasons.append(f"{server}: {type(e).__name__}: {auth.scrub(e)[:300]}")
        if a < retries:
            time.sleep(backoff_s * (2 ** a))
    return False, None, attempts, reasons


def request_seed(base: int, index: int) -> int:
    """The seed of request ``index`` of a ``sample`` call whose stream seed is ``base``
    (31 bits, which every OpenAI-compatible server accepts)."""
    return int.from_bytes(hashlib.sha256(f"{base}:{index}".encode()).digest()[:8], "big") % (2 ** 31 - 1)


def _token_id(tok: str) -> int:
    """vLLM's ``return_tokens_as_token_ids`` format: ``token_id:123``."""
    if isinstance(tok, int):
        return tok
    if not str(tok).startswith("token_id:"):
        raise ServerError(f"server did not return token ids (got {tok!r}); it must honour return_tokens_as_token_ids")
    return int(str(tok).split(":", 1)[1])
