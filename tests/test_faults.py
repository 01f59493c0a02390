"""Fault injection on a running crawl: each test breaks one part of the distributed stack
mid-crawl and asserts that nothing is lost and the crawl goes on.

Covered elsewhere, not repeated here:

- SIGKILL of a crawl worker: tests/test_frontier_crawl.py
  (``test_two_workers_share_redis_and_survive_sigkill``: the survivor takes over the expired
  leases, every reachable page is fetched, politeness holds).
- An Elasticsearch node killed: tests/test_elasticsearch_faults.py (no document lost, queries
  keep answering); ES down altogether: tests/test_elasticsearch_spool.py.
- The Celery worker killed during PageRank: tests/test_celery_rank.py (the redelivered task
  publishes the whole run; no document carries a mix of versions).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import testweb
from crawler.urls import canonicalize, host_of
from harness.crawlrun import ROOT, crawl_env, migrate
from harness.politeness import crawl_delays, politeness_violations
from harness.redisserver import RedisServer
from harness.services import PostgresProcess, postgres_installed
from tests.test_frontier_crawl import DELAY, SETTINGS, crawled, reachable

pytestmark = pytest.mark.slow


def _crawl(tmp_path: Path, seeds, scope, env_extra=None, **extra) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", "seeds=" + ",".join(seeds),
           "-a", "allowed_hosts=" + ",".join(sorted(scope))]
    settings = {**SETTINGS, "LOG_FILE": str(tmp_path / "crawl.log"), "LOG_LEVEL": "INFO",
                **extra}
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    env = crawl_env(tmp_path / "data", env_extra)
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _finish(proc: subprocess.Popen, timeout: float) -> int:
    try:
        return proc.wait(timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _pages(web) -> int:
    return sum(1 for row in web.read_log() if row["path"] != "/robots.txt")


@pytest.mark.services
def test_redis_restart_mid_crawl_loses_nothing(tmp_path):
    """Redis is SIGKILLed mid-crawl and restarted on its AOF: the worker waits, reconnects,
    and the crawl completes, every reachable page fetched."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    scope = {"site1.test", "site3.test", "site4.test", "site5.test"}
    # every acknowledged write in the AOF before its reply: with everysec, a busy disk makes
    # Redis put off its AOF writes for up to 2 s, and the SIGKILL then loses acknowledged
    # adds, links no page yields again (crawler/frontier/redis_backend.py)
    server = RedisServer(tmp_path / "redis", appendfsync="always")
    server.start()
    try:
        with testweb.run(hosts=8, pages=15, log=tmp_path / "web.log") as web:
            seeds = [web.home_url(h) for h in sorted(scope)]
            proc = _crawl(tmp_path, seeds, scope, {"REDIS_URL": server.url})
            _wait_for(lambda: _pages(web) >= 10, 60, "the crawl to start")
            server.stop(kill=True)
            before = _pages(web)
            time.sleep(3)
            server.start()  # same port, same directory: the AOF is replayed
            assert _finish(proc, 120) == 0
            time.sleep(0.5)
            fetched = crawled(web)
            log = web.read_log()
    finally:
        server.stop()
    crawl_log = (tmp_path / "crawl.log").read_text()
    assert "frontier store unavailable" in crawl_log
    assert "frontier store is back" in crawl_log
    assert "Traceback" not in crawl_log
    assert before < len(fetched)  # the crawl went on after the restart
    assert set(fetched) == reachable(web, scope)
    assert politeness_violations(log, DELAY, crawl_delays(web))["total"] == 0


@pytest.fixture
def postgres(tmp_path):
    """A private PostgreSQL from scripts/services.sh, migrated; yields the server."""
    if not postgres_installed():
        pytest.skip("PostgreSQL is not installed: run scripts/install-services.sh")
    server = PostgresProcess()
    try:
        migrate(tmp_path / "data", {"DATABASE_URL": server.start()})
        yield server
    finally:
        server.cleanup()


@pytest.mark.services
def test_postgres_stopped_mid_crawl_rules_keep_their_cached_values(tmp_path, postgres):
    """PostgreSQL stops while the crawl reloads host rules every 0.5 s: the blocked host stays
    blocked, the crawl goes on, and it completes when the database is back."""
    import psycopg

    url = postgres.url
    with psycopg.connect(url) as conn:
        conn.execute(
            "INSERT INTO control_hostrule (pattern, action, render_js, note, created, updated)"
            " VALUES ('site2.test', 'block', false, '', now(), now())"
        )
    scope = {"site1.test", "site2.test", "site3.test", "site4.test"}
    with testweb.run(hosts=8, pages=15, log=tmp_path / "web.log") as web:
        seeds = [web.home_url(h) for h in sorted(scope)]
        proc = _crawl(tmp_path, seeds, scope, {"DATABASE_URL": url},
                      CONTROL_STORE="webui.control.rules.DjangoControlStore",
                      HOST_RULES_TTL=0.5)
        try:
            _wait_for(lambda: _pages(web) >= 10, 60, "the crawl to start")
            postgres.stop()
            _wait_for(lambda: "host rules unavailable" in _read(tmp_path / "crawl.log"), 120,
                      "the crawl to notice that PostgreSQL is down")
            before = _pages(web)
            # the crawl outlasts the database: pages keep coming while it is still down
            _wait_for(lambda: _pages(web) > before, 120, "a page fetched with PostgreSQL down")
            during = _pages(web)
            postgres.start()
            assert _finish(proc, 120) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        time.sleep(0.5)
        fetched = crawled(web)
    crawl_log = (tmp_path / "crawl.log").read_text()
    assert "host rules unavailable" in crawl_log
    assert before < during  # crawling while the database was down
    assert not any(host_of(url) == "site2.test" for url in fetched)
    assert set(fetched) == reachable(web, scope - {"site2.test"})


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs mounted for the test (needs root)."""
    mount = tmp_path / "warc"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(path: Path) -> None:
    with open(path, "wb", buffering=0) as f:
        chunk = b"\0" * 65536
        while True:
            try:
                f.write(chunk)
            except OSError:
                chunk = chunk[: len(chunk) // 2]
                if not chunk:
                    return


def _warc_urls(directory: Path) -> Counter:
    from warcio.archiveiterator import ArchiveIterator

    urls: Counter = Counter()
    for path in sorted(directory.glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "response":
                    urls[canonicalize(record.rec_headers.get_header("WARC-Target-URI"))] += 1
    return urls


def test_full_warc_disk_pauses_the_crawl_until_space_returns(tmp_path, small_disk):
    """The WARC disk fills mid-crawl: the crawl pauses with a clear error, resumes when the
    space comes back, and every download ends up in the WARC files exactly once."""
    scope = {"site1.test", "site3.test", "site4.test"}
    filler = small_disk / "filler"
    with testweb.run(hosts=8, pages=15, log=tmp_path / "web.log") as web:
        seeds = [web.home_url(h) for h in sorted(scope)]
        proc = _crawl(tmp_path, seeds, scope,
                      ITEM_PIPELINES='{"pipelines.warc.WarcPipeline": 200}',
                      WARC_DIR=str(small_disk), WARC_DISK_RETRY_S=0.5,
                      LOG_FORMAT="%(created)f [%(name)s] %(levelname)s: %(message)s")
        crawl_log = tmp_path / "crawl.log"
        try:
            _wait_for(lambda: _pages(web) >= 8, 60, "the crawl to start")
            _fill(filler)
            _wait_for(lambda: "WARC disk full" in _read(crawl_log), 120, "the pause")
            paused_at = _logged_at(_read(crawl_log), "WARC disk full")
            # requests the downloader already held go out and finish; then the log stays quiet
            _wait_for_quiet(web, 2.0, 120)
            # the pause stops the scheduler: only what the downloader already held (one lease
            # per host) may start after it, however slowly the box runs
            started_after = [row for row in web.read_log() if row["start"] > paused_at]
            assert len(started_after) <= len(scope), started_after
            assert proc.poll() is None
            filler.unlink()
            assert _finish(proc, 120) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        time.sleep(0.5)
        fetched = Counter(
            canonicalize(f"http://{row['host']}:{web.port}{row['path']}")
            for row in web.read_log()
        )
    text = crawl_log.read_text()
    assert "crawl paused" in text and "crawl resumed" in text
    assert set(fetched) - {u for u in fetched if "/robots.txt" in u} >= reachable(web, scope)
    assert _warc_urls(small_disk) == fetched  # every download recorded, none twice


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def _logged_at(text: str, message: str) -> float:
    """The time (``%(created)f`` at the start of the line) ``message`` was first logged."""
    line = next(line for line in text.splitlines() if message in line)
    return float(line.split(" ", 1)[0])


def _wait_for_quiet(web, quiet_s: float, timeout: float) -> None:
    """Wait until the test web has logged no request for ``quiet_s`` seconds."""
    deadline = time.monotonic() + timeout
    count, since = len(web.read_log()), time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline, "the test web never went quiet"
        time.sleep(0.1)
        now = len(web.read_log())
        if now != count:
            count, since = now, time.monotonic()
