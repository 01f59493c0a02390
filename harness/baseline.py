"""Plain Scrapy as a benchmark's baseline: the spider of ``bench/baseline_spider.py`` (run
as a script, so none of the project's settings reach it), the settings it shares with the
project's side, and its run over a test web at the project crawl's politeness.

``bench/crawl.py`` runs it for throughput (``SHARED`` + ``BASELINE``: one request in flight
per host, no delay, robots.txt obeyed); ``bench/realweb.py --baseline`` runs it over the
real documentation sites with a delay and a page budget (:func:`run_polite`) and reports
:func:`polite_figures` beside the project's crawl.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from harness import ROOT, log
from harness.crawlrun import crawl_env
from harness.politeness import (
    crawl_delays,
    found_times,
    gap_report,
    politeness_bound,
    politeness_violations,
    span,
)
from harness.rounds import ratio

#: The baseline spider, a script: ``SEEDS_FILE SECONDS SETTINGS_JSON [--same-host]
#: [--host-budget N]``.
SPIDER = ROOT / "bench" / "baseline_spider.py"

#: Settings both sides of ``bench/crawl.py`` run with.
SHARED = {
    "CONCURRENT_REQUESTS": 32,
    "USER_AGENT": "websearch-bench",
    "COOKIES_ENABLED": False,
    "RESOLVE_OVERRIDES": "*.test=127.0.0.1",
    "SSRF_ALLOWED_NETWORKS": "127.0.0.0/8",
}
#: The project's per-host policy said in plain Scrapy's settings: one request in flight per
#: host, no delay, robots.txt obeyed.
BASELINE = {
    "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    "DOWNLOAD_DELAY": 0.0,
    "ROBOTSTXT_OBEY": True,
}


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def polite_settings(web, hosts: list[str], delay: float) -> dict:
    """``SHARED`` + ``BASELINE`` at a per-host ``delay`` for the running test web ``web``:
    ``DOWNLOAD_DELAY`` not randomized, and a host whose robots.txt Crawl-delay is larger
    (which Scrapy ignores) gets it as its download slot's delay."""
    crawl_delay_of = crawl_delays(web)
    return {
        **SHARED, **BASELINE,
        "DOWNLOAD_DELAY": delay,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "RESOLVE_OVERRIDES": ",".join(f"{h}={ip}" for h, ip in web.resolve_map().items()),
        "DOWNLOAD_SLOTS": {h: {"concurrency": 1, "delay": crawl_delay_of(h),
                               "randomize_delay": False}
                           for h in hosts if (crawl_delay_of(h) or 0.0) > delay},
    }


def run_polite(web, hosts: list[str], data_dir: Path, delay: float, budget: int,
               timeout: float) -> dict:
    """Plain Scrapy over ``hosts`` of the running test web ``web`` from their home pages,
    same-host links only, at most ``budget`` pages a host, at :func:`polite_settings`:
    its request-log lines (``lines``), ``wall`` and ``cpu`` seconds."""
    data_dir.mkdir(parents=True, exist_ok=True)
    seeds = data_dir / "seeds.txt"
    seeds.write_text("".join(web.home_url(h) + "\n" for h in hosts))
    cmd = [sys.executable, str(SPIDER), str(seeds), str(int(timeout)),
           json.dumps(polite_settings(web, hosts, delay)), "--same-host",
           "--host-budget", str(budget)]
    before = len(web.read_log())
    started, cpu_before = time.monotonic(), children_cpu()
    proc = subprocess.run(cmd, cwd=ROOT, env=crawl_env(data_dir), capture_output=True,
                          text=True, timeout=timeout + 180)
    wall, cpu = time.monotonic() - started, children_cpu() - cpu_before
    if proc.returncode != 0:
        raise RuntimeError(f"the baseline crawl failed:\n{proc.stderr[-3000:]}")
    lines = web.settled_log(before)
    log(f"baseline: {len(lines)} requests in {wall:.0f} s, {cpu:.1f} CPU-s")
    return {"lines": lines, "wall": wall, "cpu": cpu}


def polite_figures(run: dict, delay: float,
                   crawl_delay_of: Callable[[str], float | None]) -> dict:
    """The ``baseline_*`` figures of a :func:`run_polite` run: its span, its own
    politeness bound (``harness.politeness.politeness_bound`` over its own requests), CPU,
    requests, distinct pages answered 200 and politeness violations (``total``, as the
    project's are counted: Scrapy's delay runs start to start, so a request sent sooner
    than the delay after the previous response ended counts)."""
    lines = run["lines"]
    took, bound = span(lines), politeness_bound(lines, delay, crawl_delay_of)
    pages = {(line["host"], line["path"]) for line in lines
             if line["status"] == 200 and line["path"] != "/robots.txt"}
    return {
        "baseline_span_s": round(took, 1),
        "baseline_politeness_bound_s": round(bound, 1),
        "baseline_span_over_bound": ratio(took, bound),
        "baseline_crawl_cpu_s": round(run["cpu"], 1),
        "baseline_cpu_ms_per_request": ratio(run["cpu"] * 1000, len(lines), 2),
        "baseline_requests": len(lines),
        "baseline_pages": len(pages),
        "baseline_violations": politeness_violations(lines, delay, crawl_delay_of)["total"],
    }


def polite_lags(lines: list[dict], web, delay: float,
                crawl_delay_of: Callable[[str], float | None],
                found: dict[tuple[str, str], float] | None = None,
                timed: list[tuple[str, float, float, float, float]] | None = None) -> dict:
    """Plain Scrapy's due lag from the request log ``lines`` of its :func:`run_polite`
    run on the test web ``web``, measured as the project's is (``baseline_due_lag_ms``:
    due the previous response's end + max(``delay``, Crawl-delay, k x latency)), and
    against its own promise (``baseline_due_lag_own_ms``: due ``delay`` after the previous
    request started); a request sooner than due counts with a negative lag. ``found``:
    the log's ``found_times``, and ``timed`` its ``report_lags`` rows (due after the
    previous response), when the caller has them already."""
    def promised(host: str) -> float:
        return max(delay, crawl_delay_of(host) or 0.0)

    if found is None:  # every answered page rendered and read once, for both
        found = found_times(web, lines)
    same, _ = gap_report(lines, web, promised, found=found, timed=timed)
    own, _ = gap_report(lines, web, promised, start_to_start=True, found=found)
    return {"baseline_due_lag_ms": same["due_lag_ms"],
            "baseline_gap_median_within_10pct": same["gap_median_within_10pct"],
            "baseline_due_lag_own_ms": own["due_lag_ms"]}
