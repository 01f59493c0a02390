#!/usr/bin/env bash
# Install what the tests need (Python packages, Redis, PostgreSQL, Elasticsearch, chromium)
# and run the whole suite. Services are started by the test fixtures on free local ports.
#   bash scripts/test.sh [pytest args]
set -euo pipefail
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
