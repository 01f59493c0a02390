"""The real-web acceptance bench in its quick form: real documentation sites crawled with
the default quality settings beside hostile hosts; no real site is judged spam, a trap or
a mirror, and the hostile hosts are still contained."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections import Counter
from itertools import pairwise

import pytest

import testweb
from harness import ROOT
from harness.baseline import polite_figures, polite_lags, run_polite
from harness.crawlrun import final_stats, migrate, run_crawl
from harness.politeness import crawl_delays, politeness_violations
from testweb.docsites import available_doc_sites

pytestmark = pytest.mark.slow


def test_quick_real_web_crawl_judges_no_real_site():
    installed = {site.host for site in available_doc_sites()}
    if not {"httpd.test", "postgresql.test"} <= installed:
        pytest.skip("apache2-doc and postgresql-doc-15 are not installed "
                    "(scripts/apt-packages.txt)")
    proc = subprocess.run([sys.executable, "-m", "bench.realweb", "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["real_sites_judged"] == {}, out
    assert out["min_site_coverage"] >= 0.99, out
    assert out["violations"] == 0 and out["finished"], out
    # the lag from "due with work" is measured for (nearly) every request after a host's first
    assert out["due_lag_ms"]["n"] >= 0.9 * (out["requests"] - len(out["per_site"])), out
    # and over the real sites' requests alone, as plain Scrapy's (--baseline)
    assert 0 < out["due_lag_sites_ms"]["n"] < out["due_lag_ms"]["n"], out
    assert out["stats"]["reactor/ticks"] > 0, out  # the reactor's lateness is probed
    # the crawl process is found and sampled through the crawl, and every measured lag
    # falls in a sampled second, idle or saturated
    split, cpu = out["due_lag_by_cpu"], out["crawl_cpu_per_s"]
    assert split["cpu"] == "main thread" and cpu["seconds"] >= 0.8 * out["wall_s"] - 5, out
    assert cpu["process"]["max"] > 0 and cpu["workers"]["max"] > 0, out
    assert split["idle"]["n"] + split["saturated"]["n"] == out["due_lag_ms"]["n"], out
    assert split["unsampled"] == 0 and 0 <= out["saturated_s"] <= cpu["seconds"], out
    verdicts = {host: row["verdicts"] for host, row in out["per_site"].items()}
    assert verdicts["httpd.test"] == [] and verdicts["postgresql.test"] == []
    # the real site's mirror may be cut as its mirror (when its copies came later), only so
    assert all(v.startswith("mirror of postgresql.test")
               for v in verdicts["pgdocs-mirror.test"])
    for host in ("stuffing.test", "doorway.test", "farm0.test"):
        assert verdicts[host] == ["spam: budget_cut"], out
        assert out["hostile"][host] < out["budget"], out  # cut within its budget
    assert verdicts["mirror.test"] == ["mirror of site0.test: budget_cut"], out
    assert out["hostile"]["events.test"] < out["budget"], out  # a calendar: endless


def test_real_sites_get_their_whole_page_budget(tmp_path):
    """The host budget counts pages, not queue entries: the value order's re-pushes (a URL
    queued again, ahead, when more in-links raise its value) counted as pages too, and real
    sites with a budget of 300 got 194 (dask.test), 210 (httpd.test) and 184 of 215
    (pytest.test) pages."""
    hosts = ["dask.test", "httpd.test", "pytest.test"]
    if not set(hosts) <= {site.host for site in available_doc_sites()}:
        pytest.skip("python-dask-doc, apache2-doc or python-pytest-doc is not installed "
                    "(scripts/apt-packages.txt)")
    budget = 60  # each site has more pages
    with testweb.run(hosts=1, pages=10, log=tmp_path / "web.log", real_docs=True) as web:
        migrate(tmp_path)
        proc = run_crawl(tmp_path, [web.home_url(host) for host in hosts], {
            "FRONTIER_HOST_PAGE_BUDGET": budget, "FRONTIER_DELAY": 0.25,
            "LOG_FILE": str(tmp_path / "crawl.log"),
            "RESOLVE_OVERRIDES": ",".join(f"{h}={ip}" for h, ip in web.resolve_map().items()),
        }, {"allowed_hosts": ",".join(hosts)}, timeout=240)
        assert proc.returncode == 0, proc.stderr[-3000:]
        # distinct pages (the quality pipeline's cloaking probe fetches one page again)
        pages = Counter(host for host, path in {
            (line["host"].rsplit(":", 1)[0], line["path"]) for line in web.settled_log()}
            if path != "/robots.txt")
    stats = final_stats((tmp_path / "crawl.log").read_text(errors="replace"))
    assert stats.get("frontier/repushed", 0) > 0, stats  # the case: copies were queued
    assert pages == {host: budget for host in hosts}, (pages, stats)


def test_plain_scrapy_baseline_crawls_one_real_site_politely(tmp_path):
    """``bench/realweb.py --baseline``'s side: plain Scrapy over a real site at the project
    crawl's politeness stays on the host, within its page budget, robots.txt first, one
    request at a time 0.25 s apart, and its figures are measured, not zero."""
    if "click.test" not in {site.host for site in available_doc_sites()}:
        pytest.skip("python-click-doc is not installed (scripts/apt-packages.txt)")
    budget, delay = 12, 0.25  # click.test has more pages than the budget
    with testweb.run(hosts=1, pages=10, log=tmp_path / "web.log", real_docs=True) as web:
        run = run_polite(web, ["click.test"], tmp_path / "baseline", delay, budget, 60)
        out = polite_figures(run, delay, crawl_delays(web))
        lags = polite_lags(run["lines"], web, delay, crawl_delays(web))
    lines = sorted(run["lines"], key=lambda line: line["start"])
    assert {line["host"].rsplit(":", 1)[0] for line in lines} == {"click.test"}, lines
    assert lines[0]["path"] == "/robots.txt", lines[:3]
    assert out["baseline_pages"] == budget, out  # the budget, not more, not fewer
    # one request in flight, started DOWNLOAD_DELAY apart as the server sees them (Scrapy
    # times the delay from when a request leaves its slot: the first connection's setup
    # and a loaded box shorten some gaps)
    assert politeness_violations(lines, delay)["overlaps"] == 0
    gaps = [b["start"] - a["start"] for a, b in pairwise(lines)]
    assert statistics.median(gaps) == pytest.approx(delay, rel=0.1), gaps
    assert min(gaps) > delay / 2, gaps
    assert out["baseline_politeness_bound_s"] == pytest.approx(len(lines) * delay, abs=0.05), out
    # spaced by the delay: no faster than the bound allows, and not idling far past it
    assert 0.85 <= out["baseline_span_over_bound"] < 3, out
    assert out["baseline_crawl_cpu_s"] > 0 and out["baseline_cpu_ms_per_request"] > 0, out
    # its due lag from its own log: against its own promise (start to start) near 0, and
    # against the project's (end to start, later by each response's time) no later
    own, same = lags["baseline_due_lag_own_ms"], lags["baseline_due_lag_ms"]
    assert own["n"] == same["n"] >= budget - 2, lags
    assert abs(own["p50"]) < 50 and same["p50"] <= own["p50"], lags
