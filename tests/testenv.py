"""Loaded with ``-p tests.testenv`` before pytest-django configures Django: every test run
keeps its state in a fresh DATA_DIR and starts with no service URLs. With
``TEST_DATABASE_URL`` set (``python -m harness.with_postgres``), Django's database is that
PostgreSQL instead of SQLite: pytest-django creates its test database there."""

import os
import tempfile

DATA_DIR = tempfile.mkdtemp(prefix="websearch-test-")
os.environ["DATA_DIR"] = DATA_DIR
for _name in ("REDIS_URL", "ELASTICSEARCH_URL", "DATABASE_URL", "CELERY_BROKER_URL"):
    os.environ.pop(_name, None)
if os.environ.get("TEST_DATABASE_URL", "").strip():
    os.environ["DATABASE_URL"] = os.environ["TEST_DATABASE_URL"].strip()
