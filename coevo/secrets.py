"""Secrets by reference: API keys live in environment variables, the config names the variable.

``api_key_env`` (default ``OPENAI_API_KEY``) is read at every request (connect time), never at
config load, and never stored on an object; ``refuse_literal_key`` keeps a literal key out of
the config (which is written to the run directory); ``EnvBearer.scrub`` removes the key (and
any ``Bearer <token>``) from text before it is recorded, since servers echo headers.
"""
from __future__ import annotations

import os
import re

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;}]+")
AUTH_STATUS = (401, 403)


def refuse_literal_key(options: dict | None, where: str) -> None:
    """ValueError (one line) when ``options`` holds a literal ``api_key`` or an ``api_key_env``
    that is not a variable name.  The value itself is never echoed."""
    opts = options or {}
    if opts.get("api_key") is not None:
        raise ValueError(f"{where}.api_key: API keys are not accepted in the config (it is written to the run "
                         f"directory); put the key in an environment variable and name it with "
                         f"{where}.api_key_env (default {DEFAULT_API_KEY_ENV})")
    var = opts.get("api_key_env", DEFAULT_API_KEY_ENV)
    if not isinstance(var, str) or not _ENV_NAME.match(var):
        raise ValueError(f"{where}.api_key_env: must name an environment variable (letters, digits, _), "
                         f"not hold the key itself")


class EnvBearer:
    """httpx auth (a callable): ``Authorization: Bearer $VAR``, the variable read at every
    request (connect time, never at config load) and never stored; no header when it is
    unset or empty.  ``api_key``: a literal key for programmatic callers (never from a config)."""

    def __init__(self, var: str = DEFAULT_API_KEY_ENV, api_key: str | None = None) -> None:
        self.var = var or DEFAULT_API_KEY_ENV
        self._literal = api_key

    def key(self) -> str | None:
        return self._literal or os.environ.get(self.var) or None

    def __call__(self, request):
        k = self.key()
        if k:
            request.headers["Authorization"] = f"Bearer {k}"
        return request

    def __repr__(self) -> str:
        return f"EnvBearer({self.var!r})"

    def scrub(self, text: object) -> str:
        """``text`` without the key (and without any ``Bearer <token>``): servers echo headers."""
        out = _BEARER.sub(r"\1***", str(text))
        k = self.key()
        return out.replace(k, "***") if k and len(k) >= 4 else out

    def failure(self, who: str, status: int | None, hint: str = "api_key_env") -> str:
        """The one-line message of an auth failure at ``who``."""
        src = "the api_key given" if self._literal else f"${self.var}"
        code = f" (HTTP {status})" if status else ""
        if self.key() is None:
            return (f"{who} requires an API key{code} but ${self.var} is not set: export {self.var}=<key> "
                    f"(or name another variable with {hint})")
        return f"{who} rejected the API key in {src}{code}: set {self.var} to a valid key (variable named by {hint})"
