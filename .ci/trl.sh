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
matches() {
  test -x "$V/bin/python" || return 1
  "$V/bin/python" - "$PINS" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
ok = all(version(p.split("==")[0]).split("+")[0] == p.split("==")[1] for p in sys.argv[1].split())  # 2.13.0+cpu
import coevo, trl, transformers, datasets  # noqa: F401
sys.exit(0 if ok else 1)
PY
}
if [ "$MODE" != --test ] && ! matches; then
  rm -rf "$V"
  python3 -m venv "$V"
  "$V/bin/pip" install -q --upgrade pip
  "$V/bin/pip" install -q torch==2.13.0
  # the editable install writes coevo.egg-info in this tree: not at the same time as `make setup` does
  # (.ci/run builds this venv in the background and sets COEVO_WAIT_FOR_VENV): wait up to 30 min for .venv's stamp
  if [ -n "${COEVO_WAIT_FOR_VENV:-}" ]; then for _ in $(seq 360); do [ -f .venv/.installed ] && break; sleep 5; done; fi
  # coevo with its `trl` extra (trl==1.16.0 and what it declares: transformers, accelerate, datasets)
  # one editable install at a time in this tree (.ci/run builds .venv-verl and .venv-trl at once): flock
  mkdir -p runs && flock runs/.editable-install.lock "$V/bin/pip" install -q -e '.[test,trl]'
  matches || { echo "trl venv: pinned versions missing after install ($PINS)" >&2; exit 1; }
fi
[ "$MODE" = --build ] && exit 0
matches || { echo "trl venv: $V is missing or does not match ($PINS)" >&2; exit 1; }
# a missing TRL venv fails here instead of skipping
COEVO_REQUIRE_TRL=1 OMP_NUM_THREADS=1 .venv/bin/python -m pytest -q -p no:cacheprovider -m trl tests/test_trl.py
