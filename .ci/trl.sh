#!/usr/bin/env bash
# TRL 1.16.0 (PyPI) in its own venv, .venv-trl, and coevo's tests against TRL's own GRPOTrainer
# (docs/integrations.md, "TRL"). Same shape as .ci/verl.sh:
# torch first, pinned: 2.13.0 is the CPU build on local disk; any other spec pulls multi-GB CUDA wheels.
# An existing .venv-trl whose pinned versions match is reused (built once per clone); else it is rebuilt.
# --build: only build (or reuse) the venv; --test: only run the tests (the venv must be there).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-all}
V=.venv-trl
# trl: the extra `trl` in pyproject.toml names the same pin
PINS="torch==2.13.0 trl==1.16.0"
IMPORTS="coevo trl transformers datasets"
. .ci/peer_venv.sh
if [ "$MODE" != --test ] && ! peer_matches; then
  peer_new_venv
  # coevo with its `trl` extra (trl==1.16.0 and what it declares: transformers, accelerate, datasets)
  peer_install_coevo '.[test,trl]'
  peer_matches || { echo "trl venv: pinned versions missing after install ($PINS)" >&2; exit 1; }
fi
[ "$MODE" = --build ] && exit 0
peer_matches || { echo "trl venv: $V is missing or does not match ($PINS)" >&2; exit 1; }
# a missing TRL venv fails here instead of skipping
COEVO_REQUIRE_TRL=1 OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q -p no:cacheprovider -m trl tests/test_trl.py
