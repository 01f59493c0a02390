"""crawler.metrics: a crawl worker's Scrapy stats in the Prometheus text format, on its own
port while it crawls; off by default."""

from __future__ import annotations

import re
import subprocess
import time
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

import testweb
from crawler.metrics import FAMILIES, CrawlMetrics, StatsCollector
from harness.crawlrun import ROOT, crawl_command, crawl_env, migrate
from harness.services import free_port


def parse(text: str) -> dict[tuple[str, tuple], float]:
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def test_stats_become_named_families_and_the_rest_is_kept():
    crawler = get_crawler()
    stats = crawler.stats
    for key, value in {
        "response_received_count": 12, "downloader/response_status_count/200": 10,
        "downloader/response_status_count/404": 2, "fetch/error/timeout": 3,
        "frontier/leased": 14, "frontier/dropped/seen": 40, "frontier/queued": 77,
        "frontier/politeness_waits": 5, "memory/rss_bytes": 123456,
        "memory/python_blocks": 999, "dedup/near": 4,
    }.items():
        stats.set_value(key, value)
    stats.set_value("start_time", "not a number")
    registry = CollectorRegistry()
    registry.register(StatsCollector(stats))
    samples = parse(generate_latest(registry).decode())
    assert samples[("websearch_crawl_pages_total", ())] == 12
    assert samples[("websearch_crawl_responses_total", (("status", "404"),))] == 2
    assert samples[("websearch_crawl_fetch_errors_total", (("kind", "timeout"),))] == 3
    assert samples[("websearch_crawl_frontier_leased_total", ())] == 14
    assert samples[("websearch_crawl_frontier_dropped_total", (("reason", "seen"),))] == 40
    assert samples[("websearch_crawl_queue_depth", ())] == 77
    assert samples[("websearch_crawl_politeness_waits_total", ())] == 5
    assert samples[("websearch_crawl_memory_bytes", (("kind", "rss"),))] == 123456
    assert samples[("websearch_crawl_stat", (("key", "memory/python_blocks"),))] == 999
    assert samples[("websearch_crawl_stat", (("key", "dedup/near"),))] == 4
    assert not any("start_time" in str(labels) for _, labels in samples)


def test_the_grafana_dashboard_uses_only_metrics_a_worker_exports():
    text = (ROOT / "docs" / "grafana-dashboard.json").read_text()
    used = set(re.findall(r"websearch_crawl_[a-z_]+", text))
    exported = {f.name + ("_total" if f.kind == "counter" else "") for f in FAMILIES}
    assert used and used <= exported, used - exported


def test_off_unless_a_port_is_set():
    with pytest.raises(NotConfigured):
        CrawlMetrics.from_crawler(get_crawler())


def _scrape(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            assert resp.headers["Content-Type"].startswith("text/plain")
            return parse(resp.read().decode())
    except OSError:  # refused, or no answer yet: the port listens before the reactor runs
        return None


@pytest.mark.slow
def test_a_crawl_worker_serves_its_stats_while_it_crawls(tmp_path):
    port = free_port()
    dead = free_port()  # nothing listens here: fetch errors of kind connection_refused
    with testweb.run(hosts=4) as web:
        migrate(tmp_path)
        seeds = [web.home_url(h) for h in web.hosts() if h.startswith("site")]
        seeds.append(f"http://dead.test:{dead}/")
        cmd = crawl_command(seeds, settings={
            "CRAWL_METRICS_PORT": port, "FRONTIER_DELAY": 0.3, "FRONTIER_STATS_INTERVAL": 0.5,
            "MEMORY_SAMPLE_INTERVAL": 1, "RETRY_TIMES": 0,
        }, args={"allowed_hosts": "*.test", "max_pages": 300})
        crawl = subprocess.Popen(cmd, cwd=ROOT, env=crawl_env(tmp_path),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            seen: dict = {}
            deadline = time.monotonic() + 120
            wanted = (
                ("websearch_crawl_pages_total", ()),
                ("websearch_crawl_fetch_errors_total", (("kind", "connection_refused"),)),
                ("websearch_crawl_queue_depth", ()),
                ("websearch_crawl_memory_bytes", (("kind", "rss"),)),
            )
            while time.monotonic() < deadline and crawl.poll() is None:
                seen = _scrape(f"http://127.0.0.1:{port}/metrics") or seen
                if seen.get(wanted[0], 0) >= 10 and all(k in seen for k in wanted):
                    break
                time.sleep(0.2)
            assert seen.get(wanted[0], 0) >= 10, seen
            assert all(key in seen for key in wanted), sorted(seen)
            assert seen[("websearch_crawl_responses_total", (("status", "200"),))] >= 1
            assert seen[("websearch_crawl_frontier_leased_total", ())] >= 10
            assert seen[("websearch_crawl_memory_bytes", (("kind", "rss"),))] > 1_000_000
            assert seen[("process_resident_memory_bytes", ())] > 1_000_000
            first = seen[wanted[0]]
            later = seen
            while time.monotonic() < deadline and crawl.poll() is None:
                later = _scrape(f"http://127.0.0.1:{port}/metrics") or later
                if later[wanted[0]] > first:
                    break
                time.sleep(0.2)
            assert later[wanted[0]] > first  # the counter moves with the crawl
        finally:
            crawl.terminate()
            _, err = crawl.communicate(timeout=120)
    assert "Traceback" not in err, err[-3000:]
    assert _scrape(f"http://127.0.0.1:{port}/metrics") is None  # closed with the crawl
