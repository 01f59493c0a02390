"""Test-session setup: every test run keeps its state in a fresh DATA_DIR."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Before Django or any component reads the configuration.
_DATA_DIR = Path(tempfile.mkdtemp(prefix="websearch-test-"))
os.environ["DATA_DIR"] = str(_DATA_DIR)
for _name in ("REDIS_URL", "ELASTICSEARCH_URL", "DATABASE_URL", "CELERY_BROKER_URL"):
    os.environ.pop(_name, None)

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_DATA_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The DATA_DIR of this test session."""
    return _DATA_DIR
