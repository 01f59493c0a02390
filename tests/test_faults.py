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
from pathlib import Path

import pytest

import testweb
from bench.politeness import host_delays, politeness_violations
from crawler.redisserver import RedisServer
from tests.crawlrun import ROOT, crawl_env
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
    server = RedisServer(tmp_path / "redis")
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
    assert politeness_violations(log, host_delays(web, DELAY))["total"] == 0
