"""Process-level crawls with FrontierScheduler against the test web; politeness is checked
from the test web's own request log."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from protego import Protego
from redis import Redis

import testweb
from crawler.frontier.partitioned import partition_of
from crawler.urls import canonicalize, host_of
from harness.crawlrun import ROOT, crawl_env, final_stats, run_crawl
from harness.politeness import crawl_delays, idle_waits, politeness_violations
from harness.redisserver import running_redis

pytestmark = pytest.mark.slow

DELAY = 0.3
SETTINGS = {
    "SCHEDULER": "crawler.scheduler.FrontierScheduler",
    "FRONTIER_DELAY": DELAY,
    "FRONTIER_IP_CONCURRENCY": 1000,
    "FRONTIER_LATENCY_FACTOR": 0,
    "FRONTIER_RELEASE_INTERVAL": 0.5,
    "DOWNLOAD_DELAY": 0,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    "ROBOTSTXT_OBEY": False,
    "CONTROL_STORE": "",
    "ITEM_PIPELINES": "{}",
    "CRAWL_PROGRESS_INTERVAL": 0,
    "RESOLVE_OVERRIDES": "*.test=127.0.0.1",
    "SITEMAPS_ENABLED": False,  # the ground truth below follows links only
    "SSRF_ALLOWED_NETWORKS": "127.0.0.0/8",  # the test web is on loopback
}


def reachable(web, scope: set[str]) -> set[str]:
    """Ground truth: canonical URLs reachable from the scope's home pages, robots obeyed."""
    robots = {h: Protego.parse(web.web.host(h).robots_txt() or "") for h in scope}
    todo = [canonicalize(web.home_url(h)) for h in sorted(scope)]
    seen = set(todo)
    while todo:
        parts = urlsplit(todo.pop())
        info = web.web.page(parts.hostname, parts.path)
        for link in info.links if info else ():
            url = canonicalize(link.url)
            host = host_of(url)
            if host in scope and robots[host].can_fetch(url, "x") and url not in seen:
                seen.add(url)
                todo.append(url)
    return seen


def crawled(web) -> Counter:
    """Canonical URL -> times fetched, robots.txt excluded."""
    return Counter(
        canonicalize(f"http://{row['host']}:{web.port}{row['path']}")
        for row in web.read_log() if row["path"] != "/robots.txt"
    )


def test_local_frontier_crawl_is_polite_and_complete(tmp_path):
    scope = {"site1.test", "site3.test", "site4.test"}
    with testweb.run(hosts=10, pages=12, log=tmp_path / "web.log") as web:
        seeds = [web.home_url(h) for h in sorted(scope)]
        proc = run_crawl(tmp_path / "data", seeds, SETTINGS,
                         args={"allowed_hosts": ",".join(sorted(scope))}, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        time.sleep(0.5)
        fetched = crawled(web)
        log = web.read_log()
    assert set(fetched) == reachable(web, scope)
    assert max(fetched.values()) == 1
    assert politeness_violations(log, DELAY, crawl_delays(web))["total"] == 0
    assert not any("/private/" in row["path"] for row in log if row["host"] != "site0.test")


def test_a_due_host_with_work_is_fetched_at_once_whatever_its_standing(tmp_path):
    """Work-conserving: with free slots, each host's next request starts within ~50 ms of
    the moment its delay ends (the test web's log; the median, with room for a busy box),
    the host of low standing too (deadlinks.test: no other host links to it, so the value
    order ranks it under the others). Before, a due host waited for the scheduler's next
    0.2 s tick (median 0.198 s) and the low host for its 5% lane (0.397 s)."""
    scope = {"site0.test", "site1.test", "site2.test", "deadlinks.test"}
    delay = 0.2
    with testweb.run(hosts=4, pages=60, log=tmp_path / "web.log") as web:
        seeds = [web.home_url(h) for h in sorted(scope)]
        proc = run_crawl(tmp_path / "data", seeds,
                         {**SETTINGS, "FRONTIER_DELAY": delay, "FRONTIER_ORDER": "value",
                          "FRONTIER_LATENCY_FACTOR": 2, "FRONTIER_HOST_PAGE_BUDGET": 30},
                         args={"allowed_hosts": ",".join(sorted(scope))}, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        time.sleep(0.5)
        log = web.read_log()
        crawl_delay_of = crawl_delays(web)
    waits = idle_waits(log, delay, crawl_delay_of)
    assert set(waits) == scope and all(len(w) >= 20 for w in waits.values())
    late = {host: round(sorted(w)[len(w) // 2], 3) for host, w in waits.items()}
    assert all(median <= 0.075 for median in late.values()), late
    assert politeness_violations(log, delay, crawl_delay_of)["total"] == 0


@pytest.mark.parametrize("store", ["local", "redis"])
def test_links_into_a_dead_directory_leave_no_page_of_the_budget_unused(tmp_path, store):
    """deadlinks.test's 40 documents link six URLs each under /archive/, all answering 404
    (django.test's case in the real corpus: 45 intersphinx links into a 404 tree). They
    take pages of its budget of 60 before the directory is found dead; dropped when leased,
    they give them back, and the pages the budget refused meanwhile, waiting, take them:
    the host gets 60 distinct URLs fetched, its budget whole and no more. Without the
    waiting list (``FRONTIER_BUDGET_WAITING=0``) it got 51: the refused pages were gone."""
    budget = 60
    with contextlib.ExitStack() as stack:
        env = {}
        if store == "redis":
            env["REDIS_URL"] = stack.enter_context(running_redis(tmp_path / "redis")).url
        web = stack.enter_context(testweb.run(hosts=1, pages=10, log=tmp_path / "web.log"))
        proc = run_crawl(tmp_path / "data", [web.home_url("deadlinks.test")],
                         {**SETTINGS, "FRONTIER_DELAY": 0.05, "FRONTIER_HOST_PAGE_BUDGET": budget,
                          "LOG_FILE": str(tmp_path / "crawl.log"), "LOG_LEVEL": "INFO"},
                         args={"allowed_hosts": "deadlinks.test"}, env_extra=env, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        time.sleep(0.5)
        fetched = crawled(web)
    stats = final_stats((tmp_path / "crawl.log").read_text())
    assert stats.get("frontier/dropped/dead_subtree", 0) > 0, stats
    assert stats["frontier/cluster/budget_promoted"] > 0, stats
    assert len(fetched) == budget, (sorted(fetched), stats)


def _worker(tmp_path: Path, name: str, redis_url: str, seeds, scope, **extra):
    cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", "seeds=" + ",".join(seeds),
           "-a", "allowed_hosts=" + ",".join(sorted(scope))]
    settings = {**SETTINGS, "FRONTIER_LEASE_S": 4, "LOG_FILE": str(tmp_path / f"{name}.log"),
                "LOG_LEVEL": "INFO", **extra}
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    env = crawl_env(tmp_path / f"{name}-data", {"REDIS_URL": redis_url})
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_two_workers_share_redis_and_survive_sigkill(tmp_path):
    scope = {"site1.test", "site3.test", "site4.test", "site5.test", "site6.test"}
    with running_redis(tmp_path / "redis") as redis_server, \
            testweb.run(hosts=10, pages=12, log=tmp_path / "web.log") as web:
        seeds = [web.home_url(h) for h in sorted(scope)]
        # the worker to be killed sits 2 s on each leased request in Scrapy's download slot,
        # so it holds leases most of the time; it is killed once the other worker crawls too
        killed = _worker(tmp_path, "a", redis_server.url, seeds, scope,
                         DOWNLOAD_DELAY=2, CONCURRENT_REQUESTS_PER_DOMAIN=1)
        client = Redis.from_url(redis_server.url)
        survivor = None
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if survivor is None and len(web.read_log()) >= 6:
                    survivor = _worker(tmp_path, "b", redis_server.url, seeds, scope)
                opened = survivor and "Spider opened" in _read(tmp_path / "b.log")
                if opened and client.zcard("frontier:web:leases") > 0:
                    break
                time.sleep(0.05)
            held = client.zcard("frontier:web:leases")
            os.kill(killed.pid, signal.SIGKILL)
            killed.wait(10)
            assert survivor.wait(120) == 0
        finally:
            for proc in (killed, survivor):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()
        time.sleep(0.5)
        fetched = crawled(web)
        log = web.read_log()
    survivor_log = _read(tmp_path / "b.log")
    assert held > 0
    assert set(fetched) == reachable(web, scope)  # nothing lost
    # only what the killed worker had on the wire (one per host) may be fetched twice
    assert sum(n - 1 for n in fetched.values()) <= len(scope)
    assert "expired leases" in survivor_log
    assert politeness_violations(log, DELAY, crawl_delays(web))["total"] == 0


def _spread_over_two_partitions(web, scope: list[str], spare: list[str]) -> set[str]:
    """``scope`` with its last host swapped for a ``spare`` one if every host fell on one
    partition: a host's partition hashes its netloc, port included, and the test web's port
    changes from run to run (5 hosts all on one of 2 partitions: 1 run in 16)."""
    def part(host):
        return partition_of(urlsplit(web.home_url(host)).netloc, 2)

    if len({part(h) for h in scope}) == 1:
        scope = scope[:-1] + [next(h for h in spare if part(h) != part(scope[0]))]
    return set(scope)


def test_two_workers_on_two_partitions_crawl_everything_once(tmp_path):
    with running_redis(tmp_path / "r1") as r1, running_redis(tmp_path / "r2") as r2, \
            testweb.run(hosts=20, pages=12, log=tmp_path / "web.log") as web:
        scope = _spread_over_two_partitions(
            web, ["site1.test", "site3.test", "site4.test", "site5.test", "site6.test"],
            spare=[f"site{n}.test" for n in range(7, 21)])
        seeds = [web.home_url(h) for h in sorted(scope)]
        partitions = f"{r1.url},{r2.url}"
        workers = [_worker(tmp_path, name, r1.url, seeds, scope, FRONTIER_REDIS_URLS=partitions)
                   for name in ("a", "b")]
        try:
            assert [w.wait(120) for w in workers] == [0, 0]
        finally:
            for proc in workers:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        time.sleep(0.5)
        fetched = crawled(web)
        log = web.read_log()
        hosts_on = [sorted(k.decode()[len("frontier:web:h:"):]
                           for k in Redis.from_url(r.url).scan_iter("frontier:web:h:*"))
                    for r in (r1, r2)]
    assert set(fetched) == reachable(web, scope)
    assert max(fetched.values()) == 1
    assert politeness_violations(log, DELAY, crawl_delays(web))["total"] == 0
    assert hosts_on[0] and hosts_on[1]  # both partitions hold hosts, none holds one twice
    assert not set(hosts_on[0]) & set(hosts_on[1])
