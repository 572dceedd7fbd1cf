"""coevo's math and facts worlds as an OpenEnv environment server (docs/integrations.md, "OpenEnv"; tested
against openenv-core 0.3.0's own client), with NeMo Gym's ``/verify`` on the same server.

OpenEnv 0.3.0: an environment is an ``openenv.core.env_server.Environment`` subclass with ``reset``, ``step``
and the ``state`` property over pydantic ``Action`` / ``Observation`` / ``State`` types; openenv's own
factory ``create_app(env_factory, Action, Observation)`` serves it (FastAPI): a session per WebSocket
(``/ws``, what its ``EnvClient`` / ``GenericEnvClient`` speak), stateless ``POST /reset`` and ``/step``
(each on a fresh environment), ``GET /state``, ``/health``, ``/schema``, ``/metadata``.

* ``reset(seed=None, episode_id=None, task_id=None, step=None)``: the episode's task (``task_id``; else
  task ``seed mod n``; else the next in turn); the observation holds the question and the world's Solver
  prompt (how to answer: ``\\boxed{}`` for math, ``<answer>…</answer>`` for facts), never the answer.
* ``step(CoevoAction(answer=text))``: the answer is judged by coevo's verifier (``ServedWorld.score``:
  through the killable pool, its timeouts kept) against the oracle truth held on the server; the
  observation is ``done`` with ``reward`` 1.0 / 0.0, or the server's ``abstain`` value (None by default)
  when the verifier abstained, and ``verdict`` = correct / wrong / abstained with its ``reason``.
* The oracle truth goes to the ledger with each answer (the task row's ``oracle_answer``, the verdict):
  no observation, state or metadata sent to the client carries it (tests/test_openenv.py checks).
* ``step`` of a row = ``reset(step=...)`` (the trainer's step), else 0, and the row says which
  (``step_from``); the episodes of one task at one step are one answer group for ``coevo audit``.
* ``POST /verify``: ``coevo.integrations.served.verify_request`` (NeMo Gym's request and answer shape).

``coevo serve-env --world math|facts --port 8000 --ledger runs/openenv-ledger`` serves it.
"""
from __future__ import annotations

import functools
import json
import socket
import threading
import uuid
from typing import Any, Optional

from coevo.integrations.served import ServedWorld, verify_request

__all__ = ["classes", "make_app", "serve"]

_C: dict = {}


def classes() -> dict:
    """The Action, Observation, State and Environment classes, built on first use on openenv-core's base
    classes (this module imports without openenv-core)."""
    if _C:
        return _C
    from openenv.core.env_server import Action, Environment, Observation, State
    from pydantic import Field

    class CoevoAction(Action):
        """The agent's answer: its whole output; the world's rule extracts the answer from it."""
        answer: str = Field(..., description="The agent's final output (math: \\boxed{...}; facts: <answer>...</answer>)")

    class CoevoObservation(Observation):
        """What the agent sees: the task, and after its answer the verdict (never the reference)."""
        world: str = ""
        task_id: str = ""
        episode_id: str = ""
        question: str = ""
        prompt: str = ""
        verdict: Optional[str] = Field(None, description="correct | wrong | abstained (after the answer)")
        reason: str = Field("", description="the verdict's reason: no-answer, timeout, ...")
        extracted_answer: Optional[str] = None

    class CoevoState(State):
        world: str = ""
        task_id: Optional[str] = None
        question: Optional[str] = None
        done: bool = False

    class CoevoEnvironment(Environment):
        """One session's episodes over a shared ``ServedWorld`` (tasks, verifier, ledger)."""
        SUPPORTS_CONCURRENT_SESSIONS = True  # read-only tasks; scoring and the ledger part are thread-safe

        def __init__(self, served: ServedWorld) -> None:
            super().__init__()
            self.served, self.task, self.step_no, self.step_from = served, None, 0, "none"
            self._state = CoevoState(world=served.world_name)

        def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, task_id: Optional[str] = None,
                  step: Optional[int] = None, **kwargs: Any) -> CoevoObservation:
            self.task = self.served.pick(task_id, seed)
            self.step_no, self.step_from = (int(step), "reset.step") if step is not None else (0, "none")
            self._state = CoevoState(episode_id=episode_id or str(uuid.uuid4()), step_count=0,
                                     world=self.served.world_name, task_id=self.task.task_id,
                                     question=self.task.question)
            return self._obs()

        def step(self, action: CoevoAction, timeout_s: Optional[float] = None, **kwargs: Any) -> CoevoObservation:
            if self.task is None or self._state.done:
                raise ValueError("no open episode: reset first")
            s = self.served.score(self.task, action.answer, self.step_no, self.step_from,
                                  meta={"episode_id": self._state.episode_id})
            self._state.step_count += 1
            self._state.done = True
            return self._obs(done=True, reward=s.reward, verdict=s.label, reason=s.verdict.reason,
                             extracted_answer=s.answer)

        @property
        def state(self) -> CoevoState:
            return self._state

        def _obs(self, **kw) -> CoevoObservation:
            t = self.task
            return CoevoObservation(world=self.served.world_name, task_id=t.task_id, episode_id=self._state.episode_id,
                                    question=t.question, prompt=self.served.prompt(t), **kw)

    _C.update(action=CoevoAction, observation=CoevoObservation, state=CoevoState, env=CoevoEnvironment)
    return _C


def make_app(served: ServedWorld, max_sessions: int = 64):
    """openenv-core's own ``create_app`` over a ``CoevoEnvironment`` factory, plus ``POST /verify``."""
    from fastapi import Request
    from fastapi.responses import JSONResponse
    from openenv.core.env_server import create_app
    from starlette.concurrency import run_in_threadpool

    from coevo.integrations.ledger_writer import close_parts

    c = classes()
    app = create_app(functools.partial(c["env"], served), c["action"], c["observation"],
                     env_name=f"coevo-{served.world_name}", max_concurrent_envs=max_sessions)

    async def verify(request):
        try:
            body = json.loads(await request.body() or b"null")
            return await run_in_threadpool(verify_request, served, body)
        except ValueError as e:  # a bad body (JSON included) is FastAPI's 422
            return JSONResponse({"detail": str(e)}, status_code=422)

    verify.__annotations__ = {"request": Request}  # the class itself: this module's annotations are strings
    app.post("/verify")(verify)

    app.router.on_shutdown.append(close_parts)  # commit what the ledger part holds when the server stops
    return app


def serve(served: ServedWorld, host: str = "127.0.0.1", port: int = 8000, max_seconds: Optional[float] = None,
          max_sessions: int = 64) -> dict:
    """Serve until interrupted (or ``max_seconds``); prints one JSON line with the URLs first."""
    import time

    import uvicorn

    served.writer()  # the ledger part opens now, in the main thread: a bad path fails before serving
    app = make_app(served, max_sessions)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    url = f"http://{host}:{sock.getsockname()[1]}"
    print(json.dumps({"url": url, "ws": url.replace("http", "ws", 1) + "/ws", "verify": url + "/verify",
                      "health": url + "/health", "world": served.world_name, "tasks": len(served.tasks),
                      "verifier": served.kind, "ledger": served.ledger}), flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    if max_seconds is not None:
        timer = threading.Timer(max_seconds, lambda: setattr(server, "should_exit", True))
        timer.daemon = True
        timer.start()
    t0 = time.monotonic()
    server.run(sockets=[sock])
    return {"url": url, "served_s": round(time.monotonic() - t0, 1), "scored": served.n_scored}
