#!/usr/bin/env bash
# Install what the tests need (Python packages, Redis, PostgreSQL, Elasticsearch, chromium)
# and run the whole suite. Services are started by the test fixtures on free local ports.
#   bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh --dev
bash scripts/install-services.sh

echo "test: ruff"
.venv/bin/ruff check .
echo "test: pytest"
.venv/bin/python -m pytest "$@"
