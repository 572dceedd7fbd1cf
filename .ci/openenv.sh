#!/usr/bin/env bash
# openenv-core 0.3.0 (PyPI; Meta's OpenEnv) in its own venv, .venv-openenv, and coevo's tests against OpenEnv's own
# client (docs/integrations.md, "OpenEnv" and "NeMo Gym /verify"). Same shape as .ci/trl.sh:
# torch first, pinned: 2.13.0 is the CPU build on local disk; any other spec pulls multi-GB CUDA wheels.
# An existing .venv-openenv whose pinned versions match is reused (built once per clone); else it is rebuilt.
# --build: only build (or reuse) the venv; --test: only run the tests (the venv must be there).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-all}
V=.venv-openenv
# openenv-core: the extra `openenv` in pyproject.toml names the same pin
PINS="torch==2.13.0 openenv-core==0.3.0"
IMPORTS="coevo openenv.core.env_server openenv.core.generic_client fastapi uvicorn websockets"
. .ci/peer_venv.sh
if [ "$MODE" != --test ] && ! peer_matches; then
  peer_new_venv
  # coevo with its `openenv` extra (openenv-core==0.3.0 and what it declares: fastapi, uvicorn, websockets, ...)
  peer_install_coevo '.[test,openenv]'
  peer_matches || { echo "openenv venv: pinned versions missing after install ($PINS)" >&2; exit 1; }
fi
[ "$MODE" = --build ] && exit 0
peer_matches || { echo "openenv venv: $V is missing or does not match ($PINS)" >&2; exit 1; }
# a missing OpenEnv venv fails here instead of skipping
COEVO_REQUIRE_OPENENV=1 OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q -p no:cacheprovider -m openenv tests/test_openenv.py
