# Sourced by .ci/verl.sh and .ci/trl.sh: a peer framework from PyPI in its own venv ($V), reused while the
# versions pinned in $PINS ("pkg==ver ...") are installed and the modules in $IMPORTS import; else rebuilt.
# torch first, pinned: 2.13.0 is the CPU build on local disk; any other spec pulls multi-GB CUDA wheels.
peer_matches() {
  test -x "$V/bin/python" || return 1
  "$V/bin/python" - "$PINS" "$IMPORTS" <<'PY' 2>/dev/null
import importlib
import sys
from importlib.metadata import version
ok = all(version(p.split("==")[0]).split("+")[0] == p.split("==")[1] for p in sys.argv[1].split())  # 2.13.0+cpu
for name in sys.argv[2].split():
    importlib.import_module(name)
# coevo's installed metadata must be today's: its recipes are entry points (a venv from before they were reads none)
from importlib.metadata import entry_points
ok = ok and bool(entry_points(group="coevo.recipes"))
sys.exit(0 if ok else 1)
PY
}
# a fresh venv with pip upgraded and the CPU torch
peer_new_venv() {
  rm -rf "$V"
  python3 -m venv "$V"
  "$V/bin/pip" install -q --upgrade pip
  "$V/bin/pip" install -q torch==2.13.0
}
# coevo, editable, into $V with the extras given ('.[test]' ...): the editable install writes coevo.egg-info in
# this tree, so not while `make setup` does (.ci/run builds the venvs in the background and sets
# COEVO_WAIT_FOR_VENV: wait up to 30 min for .venv's stamp) and one venv at a time (flock)
peer_install_coevo() {
  if [ -n "${COEVO_WAIT_FOR_VENV:-}" ]; then for _ in $(seq 360); do [ -f .venv/.installed ] && break; sleep 5; done; fi
  mkdir -p runs && flock runs/.editable-install.lock "$V/bin/pip" install -q -e "$@"
}
