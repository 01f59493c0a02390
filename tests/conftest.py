"""Shared fixtures. The environment itself is prepared by tests/testenv.py (``-p``)."""

import shutil
from pathlib import Path

import pytest

from tests import testenv

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(testenv.DATA_DIR, ignore_errors=True)


@pytest.fixture
def postgres_url():
    """A private PostgreSQL from scripts/services.sh, not migrated; yields its URL."""
    from harness.services import PostgresProcess, postgres_installed

    if not postgres_installed():
        pytest.skip("PostgreSQL is not installed: run scripts/install-services.sh")
    server = PostgresProcess()
    try:
        yield server.start()
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The DATA_DIR of this test session."""
    return Path(testenv.DATA_DIR)
