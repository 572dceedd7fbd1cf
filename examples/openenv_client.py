"""Play episodes of `coevo serve-env --world math` with OpenEnv's own client, then ask its NeMo Gym /verify
(docs/integrations.md, "OpenEnv"; run by tests/test_openenv.py). Prints one JSON object: every payload the
client received (reset and step results, states) and the /verify answers.

    .venv-openenv/bin/python examples/openenv_client.py --url http://127.0.0.1:8011
"""
import argparse
import json

import httpx
from openenv.core.generic_client import GenericEnvClient

# R-Zero-style Solver outputs: right, wrong, no \boxed{} (no answer), and a power tower that hangs math-verify
# (the server's verifier pool ends the check at --timeout-s: an abstention)
TOWER = r"\boxed{\dfrac{5^{\left(5^{\left(5^{\left(5^5\right)}\right)} - 4\right)} - 5}{16}}"
PLAYS = [("sample-01", r"17 \times 23 = \boxed{391}"), ("sample-01", r"\boxed{390}"), ("sample-01", TOWER),
         ("sample-02", "x = 5")]


def response(text: str) -> dict:
    """An OpenAI Responses object with one assistant message (what a NeMo Gym agent sends to /verify)."""
    return {"id": "resp-1", "object": "response", "created_at": 0, "model": "policy", "status": "completed",
            "output": [{"type": "message", "id": "msg-1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "parallel_tool_calls": False, "tool_choice": "auto", "tools": []}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", required=True)
    a = ap.parse_args()
    out: dict = {"episodes": [], "verify": []}
    with GenericEnvClient(base_url=a.url).sync() as env:  # one WebSocket session (/ws)
        for task_id, text in PLAYS:
            first = env.reset(task_id=task_id)
            mid = env.state()
            last = env.step({"answer": text})
            out["episodes"].append({"reset": vars(first), "state": mid, "step": vars(last), "end": env.state()})
    q = "What is $17 \\times 23$?"
    for text in (r"\boxed{391}", TOWER):  # NeMo Gym's BaseVerifyRequest: the row + responses_create_params + response
        body = {"question": q, "expected_answer": "391", "id": "nemo-row-1",
                "responses_create_params": {"input": [{"role": "user", "content": q}]}, "response": response(text)}
        r = httpx.post(a.url + "/verify", json=body, timeout=120)
        r.raise_for_status()
        out["verify"].append(r.json())
    print(json.dumps(out))
    for e in out["episodes"]:
        o = e["step"]["observation"]
        print(f"{o['task_id']}: reward {e['step']['reward']}, {o['verdict']} {o['reason']}".rstrip())


if __name__ == "__main__":
    main()
