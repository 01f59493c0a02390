#!/usr/bin/env bash
# scripts/restore.sh ARGS: `manage.py restore ARGS` with the project's Python (`--help` for them).
#
# The services are those of the environment (DATA_DIR, DATABASE_URL, REDIS_URL,
# FRONTIER_REDIS_URLS, ELASTICSEARCH_URL); for the stack of scripts/stack.sh first run
#   source .services/stack/stack.env
# What a backup holds and how a restore is checked: docs/operations.md "Backup and restore".
# Settings (environment): PYTHON [.venv/bin/python].
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$REPO/.venv/bin/python}"
[[ -x "$PY" ]] || { echo "restore: no Python at $PY: run scripts/setup.sh, or set PYTHON" >&2; exit 1; }
exec "$PY" "$REPO/manage.py" restore "$@"
