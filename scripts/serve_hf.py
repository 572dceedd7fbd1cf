#!/usr/bin/env python
"""A tiny OpenAI-compatible server over the HF backend (reference + test server).

Implements the subset of vLLM's OpenAI server that ``coevo.backends.openai_server``
uses, on the standard library's ``ThreadingHTTPServer`` (requests are served one at
a time under a lock: this is a reference, not a fast server):

    GET  /v1/models
    POST /v1/completions          prompt (text, token ids, or a list of either), n,
                                  temperature, top_p, max_tokens, stop, logprobs,
                                  return_tokens_as_token_ids, seed
    POST /v1/chat/completions     messages (chat template applied from the tokenizer),
                                  n, temperature, top_p, max_tokens, stop, logprobs, seed
    POST /v1/load_lora_adapter    {"lora_name": ..., "lora_path": ...}  (PEFT directory)
    POST /v1/unload_lora_adapter  {"lora_name": ...}

``model`` in a request selects the base (``--served-model-name``) or a loaded adapter.
``--allow-fault-injection`` adds ``POST /admin/fail {"count": k, "status": 500}``: the
next k requests fail with that status (used by the tests for mid-round failures).
``--api-key-env NAME`` makes every route but ``/health`` require ``Authorization: Bearer
$NAME`` (the server reads the expected token from its own environment at start; HTTP 401
otherwise, like vLLM's ``--api-key``); the token is never printed or echoed.

    python scripts/serve_hf.py --model smollm2 --port 8000
    python scripts/serve_hf.py --model tiny-llama --port 0     # prints the chosen port
    MY_KEY=... python scripts/serve_hf.py --model tiny-llama --api-key-env MY_KEY
"""
from __future__ import annotations

import argparse
import hmac
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# generation seeds torch's process-global RNG: servers started in one process (the tests start
# two) must not interleave their draws, or a request's seed would not fix its samples
_RNG_LOCK = threading.Lock()


class HFServerState:
    """The model, its loaded adapters, and the lock that serialises generation."""

    def __init__(self, model, tokenizer, served_name: str = "base", device: str = "cpu", seed: int = 0,
                 allow_fault_injection: bool = False, api_key: str | None = None) -> None:
        from coevo.backends.hf import HFPolicy

        self.policy = HFPolicy("server", model=model, tokenizer=tokenizer, lr=0.0, device=device, seed=seed)
        self.served_name = served_name
        self.adapters: dict[str, str] = {}
        self.lock = threading.Lock()
        self.allow_faults = allow_fault_injection
        self.fail_next = 0
        self.fail_status = 500
        self.requests = 0
        self.api_key = api_key  # None: no authentication
        self.unauthorized = 0  # requests answered 401

    def authorized(self, header: str | None) -> bool:
        if not self.api_key:
            return True
        h = header or ""
        ok = h[:7].lower() == "bearer " and hmac.compare_digest(h[7:].strip().encode(), self.api_key.encode())
        self.unauthorized += 0 if ok else 1
        return ok

    # -- adapters ----------------------------------------------------------
    def load_adapter(self, name: str, path: str) -> None:
        from peft import PeftModel

        if not name or not path:
            raise ValueError("lora_name and lora_path are required")
        if not (Path(path) / "adapter_config.json").is_file():
            raise FileNotFoundError(f"no adapter_config.json under {path}")
        with self.lock:
            m = self.policy._model
            if name in self.adapters:
                m.delete_adapter(name)
            if isinstance(m, PeftModel):
                m.load_adapter(path, adapter_name=name)
            else:
                self.policy._model = PeftModel.from_pretrained(m, path, adapter_name=name)
            self.adapters[name] = path

    def unload_adapter(self, name: str) -> None:
        with self.lock:
            if name not in self.adapters:
                raise KeyError(f"adapter {name!r} is not loaded")
            self.policy._model.delete_adapter(name)
            del self.adapters[name]

    # -- sampling ----------------------------------------------------------
    def generate(self, model_name: str, prompt_ids: list[list[int]], n: int, sp, seed: int | None = None) -> list:
        """``seed``: the request's (vLLM semantics: the same seed and request give the same
        draws); without one the server's own counter seeds the call."""
        import contextlib

        with self.lock, _RNG_LOCK:
            m = self.policy._model
            if model_name in self.adapters:
                m.set_adapter(model_name)
                ctx = contextlib.nullcontext()
            elif model_name in (self.served_name, None, ""):
                ctx = m.disable_adapter() if self.adapters else contextlib.nullcontext()
            else:
                raise KeyError(f"model {model_name!r} not found (loaded: {[self.served_name, *self.adapters]})")
            with ctx:
                return self.policy.sample_ids(prompt_ids, n, sp, seed=seed)

    def models(self) -> dict:
        data = [{"id": self.served_name, "object": "model", "owned_by": "coevo", "root": self.served_name}]
        data += [{"id": k, "object": "model", "owned_by": "coevo", "root": v, "parent": self.served_name}
                 for k, v in self.adapters.items()]
        return {"object": "list", "data": data}


def _sampling(body: dict):
    from coevo.core.policy import SamplingParams

    stop = body.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    t = float(body.get("temperature", 1.0))
    return SamplingParams(temperature=t, top_p=float(body.get("top_p", 1.0)),
                          max_new_tokens=int(body.get("max_tokens") or 16), stop=stop or None, greedy=t <= 0)


def _seed(body: dict) -> int | None:
    return None if body.get("seed") is None else int(body["seed"])


def _token_strs(tok, ids: list[int], as_ids: bool) -> list[str]:
    return [f"token_id:{i}" for i in ids] if as_ids else [tok.decode([i]) for i in ids]


def handle_completions(state: HFServerState, body: dict) -> dict:
    tok = state.policy.tokenizer
    prompt = body.get("prompt")
    if prompt is None:
        raise ValueError("prompt is required")
    if isinstance(prompt, str) or (isinstance(prompt, list) and prompt and isinstance(prompt[0], int)):
        prompt = [prompt]
    ids = [p if isinstance(p, list) else tok(p)["input_ids"] for p in prompt]
    n = int(body.get("n", 1))
    groups = state.generate(body.get("model"), ids, n, _sampling(body), _seed(body))
    as_ids = bool(body.get("return_tokens_as_token_ids"))
    want_lp = body.get("logprobs") is not None
    choices = []
    for j, g in enumerate(groups):
        for k, c in enumerate(g):
            ch = {"index": j * n + k, "text": c.text, "finish_reason": c.finish_reason, "logprobs": None,
                  "stop_reason": c.meta.get("stop")}
            if want_lp:
                ch["logprobs"] = {"tokens": _token_strs(tok, c.token_ids, as_ids), "token_logprobs": c.logprobs,
                                  "top_logprobs": None, "text_offset": None}
            choices.append(ch)
    return _envelope("text_completion", body, state, choices, ids, groups)


def handle_chat(state: HFServerState, body: dict) -> dict:
    tok = state.policy.tokenizer
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise ValueError("messages must be a non-empty list")
    cont = bool(body.get("continue_final_message"))  # vLLM: prefill = the final assistant message
    if cont and msgs[-1].get("role") != "assistant":
        raise ValueError("continue_final_message needs a final assistant message")
    if cont:
        text = tok.apply_chat_template(msgs[:-1], tokenize=False, add_generation_prompt=True) + msgs[-1]["content"]
    else:
        text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=bool(body.get("add_generation_prompt", True)))
    ids = [tok(text, add_special_tokens=False)["input_ids"]]
    n = int(body.get("n", 1))
    groups = state.generate(body.get("model"), ids, n, _sampling(body), _seed(body))
    as_ids = bool(body.get("return_tokens_as_token_ids"))
    choices = []
    for k, c in enumerate(groups[0]):
        ch = {"index": k, "message": {"role": "assistant", "content": c.text}, "finish_reason": c.finish_reason,
              "logprobs": None, "stop_reason": c.meta.get("stop")}
        if body.get("logprobs"):
            ch["logprobs"] = {"content": [{"token": s, "logprob": lp, "bytes": None, "top_logprobs": []}
                                          for s, lp in zip(_token_strs(tok, c.token_ids, as_ids), c.logprobs)]}
        choices.append(ch)
    return _envelope("chat.completion", body, state, choices, ids, groups)


def _envelope(obj: str, body: dict, state: HFServerState, choices: list, ids: list, groups: list) -> dict:
    comp = sum(len(c.token_ids) for g in groups for c in g)
    prompt_toks = sum(len(p) for p in ids)
    return {"id": f"cmpl-{uuid.uuid4().hex[:16]}", "object": obj, "created": int(time.time()),
            "model": body.get("model") or state.served_name, "system_fingerprint": "coevo-serve-hf",
            "choices": choices,
            "usage": {"prompt_tokens": prompt_toks, "completion_tokens": comp, "total_tokens": prompt_toks + comp}}


def make_handler(state: HFServerState):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, status: int, obj) -> None:
            data = (json.dumps(obj) if not isinstance(obj, str) else obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if not isinstance(obj, str) else "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, msg: str, typ: str = "BadRequestError") -> None:
            self._send(status, {"object": "error", "message": msg, "type": typ, "code": status})

        def _denied(self) -> bool:
            """401 unless the bearer token matches (when the server has one); never echoes it."""
            if self.path.rstrip("/") == "/health" or state.authorized(self.headers.get("Authorization")):
                return False
            self._error(401, "invalid or missing API key", "AuthenticationError")
            return True

        def _fault(self) -> bool:
            if state.fail_next > 0:
                state.fail_next -= 1
                self._error(state.fail_status, "injected fault", "InternalServerError")
                return True
            return False

        def do_GET(self) -> None:
            state.requests += 1
            if self._denied() or self._fault():
                return
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, state.models())
            elif self.path.rstrip("/") in ("/health", ""):
                self._send(200, {"status": "ok"})
            else:
                self._error(404, f"no route {self.path}", "NotFoundError")

        def do_POST(self) -> None:
            state.requests += 1
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            except json.JSONDecodeError as e:
                self._error(400, f"invalid JSON: {e.msg}")
                return
            if self._denied():
                return
            path = self.path.rstrip("/")
            if path == "/admin/fail" and state.allow_faults:
                state.fail_next, state.fail_status = int(body.get("count", 1)), int(body.get("status", 500))
                self._send(200, {"fail_next": state.fail_next})
                return
            if self._fault():
                return
            try:
                if path == "/v1/completions":
                    self._send(200, handle_completions(state, body))
                elif path == "/v1/chat/completions":
                    self._send(200, handle_chat(state, body))
                elif path == "/v1/load_lora_adapter":
                    state.load_adapter(body.get("lora_name"), body.get("lora_path"))
                    self._send(200, f"Success: LoRA adapter '{body.get('lora_name')}' added successfully.")
                elif path == "/v1/unload_lora_adapter":
                    state.unload_adapter(body.get("lora_name"))
                    self._send(200, f"Success: LoRA adapter '{body.get('lora_name')}' removed successfully.")
                else:
                    self._error(404, f"no route {path}", "NotFoundError")
            except KeyError as e:
                self._error(404, str(e).strip("'\""), "NotFoundError")
            except (ValueError, FileNotFoundError) as e:
                self._error(400, str(e))
            except Exception as e:  # noqa: BLE001 - a server error is an HTTP 500, not a dead server
                self._error(500, f"{type(e).__name__}: {e}", "InternalServerError")

    return Handler


def start_server(model, tokenizer, host: str = "127.0.0.1", port: int = 0, served_name: str = "base",
                 seed: int = 0, allow_fault_injection: bool = False, device: str = "cpu", api_key: str | None = None):
    """Start in a daemon thread; returns (server, state, base_url).  ``server.shutdown()`` stops it.
    ``api_key``: the bearer token every request must carry (None: no authentication)."""
    state = HFServerState(model, tokenizer, served_name, device=device, seed=seed,
                          allow_fault_injection=allow_fault_injection, api_key=api_key)
    srv = ThreadingHTTPServer((host, port), make_handler(state))
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, state, f"http://{host}:{srv.server_address[1]}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2", help="smollm2 | tiny-llama | tiny-qwen2 | local HF directory")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000, help="0 picks a free port (printed)")
    ap.add_argument("--served-model-name", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--allow-fault-injection", action="store_true")
    ap.add_argument("--api-key-env", default=None, metavar="NAME",
                    help="require 'Authorization: Bearer $NAME' (read from this server's environment)")
    a = ap.parse_args(argv)
    api_key = None
    if a.api_key_env:
        api_key = os.environ.get(a.api_key_env)
        if not api_key:
            ap.error(f"--api-key-env {a.api_key_env}: ${a.api_key_env} is not set (or empty)")
    from coevo.backends.roles import load_base

    model, tok = load_base({"model": a.model, "device": a.device, "dtype": a.dtype, "seed": a.seed})
    name = a.served_model_name or Path(a.model).name
    srv, _, url = start_server(model, tok, a.host, a.port, name, a.seed, a.allow_fault_injection, a.device,
                               api_key=api_key)
    print(json.dumps({"url": url, "served_model": name, "auth": a.api_key_env}), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.shutdown()


if __name__ == "__main__":
    main()
