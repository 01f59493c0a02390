"""A clean first run: ``scrapy crawl web`` on a fresh DATA_DIR creates its control database
itself (embedded SQLite), and stops at once, saying what to run, when a PostgreSQL control
database is not migrated."""

from __future__ import annotations

import sqlite3

import pytest

import testweb
from harness.crawlrun import run_crawl

pytestmark = pytest.mark.slow


def test_fresh_data_dir_creates_the_control_database(tmp_path):
    assert not (tmp_path / "db.sqlite3").exists()
    with testweb.run(hosts=2, pages=10) as web:
        result = run_crawl(tmp_path, [web.home_url("site0.test")],
                           settings={"LOG_FILE": str(tmp_path / "crawl.log"),
                                     "HOST_RULES_TTL": 0.2},
                           args={"max_pages": 8}, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    log = (tmp_path / "crawl.log").read_text()
    assert "host rules unavailable" not in log and "no such table" not in log
    assert "created the control database" in log
    with sqlite3.connect(tmp_path / "db.sqlite3") as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert {"control_hostrule", "control_seed", "auth_user"} <= tables
    # a second run finds it ready and says nothing about it
    with testweb.run(hosts=2, pages=10) as web:
        again = run_crawl(tmp_path, [web.home_url("site1.test")],
                          settings={"LOG_FILE": str(tmp_path / "crawl2.log")},
                          args={"max_pages": 3}, timeout=180)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "created the control database" not in (tmp_path / "crawl2.log").read_text()


@pytest.mark.services
def test_unmigrated_postgres_stops_the_crawl_at_once(tmp_path, postgres_url):
    result = run_crawl(tmp_path, ["http://site0.test/"],
                       settings={"LOG_FILE": str(tmp_path / "crawl.log")},
                       env_extra={"DATABASE_URL": postgres_url}, timeout=120)
    assert result.returncode != 0
    output = result.stdout + result.stderr + (tmp_path / "crawl.log").read_text()
    assert "run `python manage.py migrate` with the same DATABASE_URL" in output, output[-3000:]
    assert "host rules unavailable" not in output
    assert "Spider opened" not in output  # stopped before crawling anything
    print(output[-3000:])
