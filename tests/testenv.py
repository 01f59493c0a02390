"""Loaded with ``-p tests.testenv`` before pytest-django configures Django: every test run
keeps its state in a fresh DATA_DIR and starts with no service URLs."""

import os
import tempfile

DATA_DIR = tempfile.mkdtemp(prefix="websearch-test-")
os.environ["DATA_DIR"] = DATA_DIR
for _name in ("REDIS_URL", "ELASTICSEARCH_URL", "DATABASE_URL", "CELERY_BROKER_URL"):
    os.environ.pop(_name, None)
