"""Shared fixtures. The environment itself is prepared by tests/testenv.py (``-p``)."""

import shutil
from pathlib import Path

import pytest

from tests import testenv

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(testenv.DATA_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The DATA_DIR of this test session."""
    return Path(testenv.DATA_DIR)
