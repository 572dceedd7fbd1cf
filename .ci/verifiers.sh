#!/usr/bin/env bash
# verifiers 0.4.0 (PyPI; prime-rl's environment package) in its own venv, .venv-verifiers, and coevo's tests against
# verifiers' own evaluation loop (docs/integrations.md, "verifiers (prime-rl)"). Same shape as .ci/trl.sh:
# torch first, pinned: 2.13.0 is the CPU build on local disk; any other spec pulls multi-GB CUDA wheels.
# An existing .venv-verifiers whose pinned versions match is reused (built once per clone); else it is rebuilt.
# --build: only build (or reuse) the venv; --test: only run the tests (the venv must be there).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-all}
V=.venv-verifiers
# verifiers: the extra `verifiers` in pyproject.toml names the same pin
PINS="torch==2.13.0 verifiers==0.4.0"
IMPORTS="coevo verifiers openai"
. .ci/peer_venv.sh
if [ "$MODE" != --test ] && ! peer_matches; then
  peer_new_venv
  # coevo with its `verifiers` extra (verifiers==0.4.0 and what it declares: openai, math-verify, ...)
  peer_install_coevo '.[test,verifiers]'
  peer_matches || { echo "verifiers venv: pinned versions missing after install ($PINS)" >&2; exit 1; }
fi
[ "$MODE" = --build ] && exit 0
peer_matches || { echo "verifiers venv: $V is missing or does not match ($PINS)" >&2; exit 1; }
# a missing verifiers venv fails here instead of skipping
COEVO_REQUIRE_VERIFIERS=1 OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q -p no:cacheprovider -m verifiers tests/test_verifiers.py
