#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The Python package's tests: a virtual environment with what they need, the
# package built into it, pytest. Run from anywhere; VENV chooses the environment
# (default: target/pyvenv). The command-line binary the tests compare against is
# target/debug/iosched (built here if missing) or $IOSCHED_BIN.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
venv=${VENV:-$root/target/pyvenv}
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" 2>/dev/null || {
        # Debian keeps ensurepip in a package of its own.
        SUDO=$([ "$(id -u)" -eq 0 ] || echo sudo)
        $SUDO apt-get install -y -qq python3-venv >/dev/null
        python3 -m venv "$venv"
    }
fi
"$venv/bin/pip" install -q --disable-pip-version-check \
    'maturin>=1.5,<2' pytest pandas pyarrow pyyaml ray
(cd "$root" && cargo build -q -p iosched)
(cd "$here" && VIRTUAL_ENV="$venv" "$venv/bin/maturin" develop -q)
cd "$here"
# CI must not skip the Ray test for want of Ray.
SOURCE_DATE_EPOCH=0 IOSCHED_REQUIRE_RAY=1 "$venv/bin/python" -m pytest -q tests "$@"
