#!/usr/bin/env bash
# OpenRLHF 0.11.2 (PyPI) in its own venv, .venv-openrlhf, and coevo's tests against OpenRLHF's own reward-function
# loader and calling path (openrlhf.utils.agent.SingleTurnAgentExecutor; docs/integrations.md, "OpenRLHF").
# Same shape as .ci/trl.sh: torch first, pinned (2.13.0 is the CPU build; any other spec pulls multi-GB CUDA wheels).
# OpenRLHF's declared dependencies (deepspeed==0.19.6, flash-attn==2.8.3, ray, vllm ...) need CUDA and do not build on
# a CPU machine with torch 2.13.0, so openrlhf is installed with --no-deps, plus only what its loader module imports:
# openrlhf.utils.agent -> aiohttp; openrlhf.utils (package __init__) -> sympy, pylatexenc, torch and transformers
# (pinned as OpenRLHF 0.11.2 declares it). All from PyPI.
# An existing .venv-openrlhf whose pinned versions match is reused (built once per clone); else it is rebuilt.
# --build: only build (or reuse) the venv; --test: only run the tests (the venv must be there).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-all}
V=.venv-openrlhf
# openrlhf: the extra `openrlhf` in pyproject.toml names the same pin (not installed through it: see above)
PINS="torch==2.13.0 openrlhf==0.11.2 transformers==5.15.0"
IMPORTS="coevo openrlhf.utils.agent"
. .ci/peer_venv.sh
if [ "$MODE" != --test ] && ! peer_matches; then
  peer_new_venv
  peer_install_coevo '.[test]'
  "$V/bin/pip" install -q transformers==5.15.0 aiohttp sympy pylatexenc
  "$V/bin/pip" install -q --no-deps openrlhf==0.11.2
  peer_matches || { echo "openrlhf venv: pinned versions missing after install ($PINS)" >&2; exit 1; }
fi
[ "$MODE" = --build ] && exit 0
peer_matches || { echo "openrlhf venv: $V is missing or does not match ($PINS)" >&2; exit 1; }
# a missing OpenRLHF venv fails here instead of skipping
COEVO_REQUIRE_OPENRLHF=1 OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q -p no:cacheprovider -m openrlhf \
  tests/test_openrlhf.py
