"""The Django tests run on the database they were asked to: SQLite by default, the private
PostgreSQL of ``python -m harness.with_postgres`` (scripts/test.sh's second pass) when
``TEST_DATABASE_URL`` is set."""

from __future__ import annotations

import os

import pytest
from django.db import connection

from webui.control.models import HostRule


@pytest.mark.django_db
def test_the_control_plane_runs_on_the_requested_database():
    expected = "postgresql" if os.environ.get("TEST_DATABASE_URL", "").strip() else "sqlite"
    assert connection.vendor == expected
    HostRule.objects.create(pattern="db.test", action="block")
    assert HostRule.objects.get(pattern="db.test").action == "block"
