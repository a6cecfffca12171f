# Source this on a machine where rigcheck is not installed (the GPU machine): it makes
# `python3 -m rigcheck.tui.cli` importable from this checkout through links, like an install would.
RIGCHECK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RIGCHECK_SHIM="$(mktemp -d)"
mkdir -p "$RIGCHECK_SHIM/rigcheck"
for part in engine tui themes; do ln -s "$RIGCHECK_ROOT/$part" "$RIGCHECK_SHIM/rigcheck/$part"; done
ln -s "$RIGCHECK_ROOT/engine/fleet/entry" "$RIGCHECK_SHIM/rigcheck/fleet"  # `python3 -m rigcheck.fleet`, as the wheel maps it
export PYTHONPATH="$RIGCHECK_SHIM${PYTHONPATH:+:$PYTHONPATH}"
rigcheck() { python3 -m rigcheck.tui.cli "$@"; }
