"""Run a command with a private PostgreSQL: ``TEST_DATABASE_URL`` points at a fresh server
(scripts/services.sh, a free port, its own run directory) that is deleted afterwards.
tests/testenv.py hands it to Django as ``DATABASE_URL``, so pytest-django creates its test
database there instead of SQLite::

    python -m harness.with_postgres python -m pytest tests/test_webui.py

Exits with the command's status; with PostgreSQL not installed, says so and exits 1.
"""

from __future__ import annotations

import os
import subprocess
import sys

from harness import log
from harness.services import PostgresProcess, postgres_installed


def main(argv: list[str]) -> int:
    """Start the server, run ``argv`` with ``TEST_DATABASE_URL`` set, delete the server."""
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if not postgres_installed():
        log("PostgreSQL is not installed: run scripts/install-services.sh")
        return 1
    server = PostgresProcess()
    try:
        url = server.start()
        log(f"private PostgreSQL on {url.rsplit('@', 1)[-1]}")
        return subprocess.run(argv, env={**os.environ, "TEST_DATABASE_URL": url}).returncode
    finally:
        server.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
