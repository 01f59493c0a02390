#!/usr/bin/env bash
# Install what the tests need (Python packages, Redis, PostgreSQL, Elasticsearch, chromium)
# and run the whole suite. Services are started by the test fixtures on free local ports.
# Then the Django UI, admin and control-plane tests run a second time on a private
# PostgreSQL (the first pass runs them on SQLite); given test paths, only the first pass runs.
#   bash scripts/test.sh [pytest args]
set -euo pipefail
# -h, --help: the comment above.
case "${1:-}" in -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.."

# The services run as system users (elasticsearch, postgres); a checkout they cannot reach
# (under a private home or a mktemp directory) keeps them under /var/tmp instead.
if [[ -z "${SERVICES_DIR:-}" && $(id -u) -eq 0 ]] && ! runuser -u nobody -- test -x "$PWD"; then
    export SERVICES_DIR="/var/tmp/websearch-services/$(printf %s "$PWD" | md5sum | cut -c1-12)"
    echo "test: $PWD is private to root; services under $SERVICES_DIR"
fi
bash scripts/setup.sh --dev
bash scripts/install-services.sh

echo "test: ruff"
.venv/bin/ruff check .
echo "test: pytest"
.venv/bin/python -m pytest "$@"

# The distributed stack keeps its control plane in PostgreSQL: the Django tests again, there.
PG_TESTS=(tests/test_database.py tests/test_webui.py tests/test_dashboard.py tests/test_monitoring.py
          tests/test_querylog.py)
options=() positional=0
for arg in "$@"; do
    if [[ $arg == -* ]]; then options+=("$arg"); else positional=1; fi
done
if ((positional)); then
    echo "test: test paths given, no PostgreSQL pass"
else
    echo "test: pytest on PostgreSQL (${PG_TESTS[*]})"
    .venv/bin/python -m harness.with_postgres .venv/bin/python -m pytest "${options[@]}" "${PG_TESTS[@]}"
fi
