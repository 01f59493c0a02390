"""Rendering memory: N renders of js.test pages through the crawler's browser pool.

Runs a small spider with the project's settings (``RENDER_JS_ENABLED``, the bounded page
pool, resource blocking) against a local test web and samples the RSS of the whole
process tree (Python, the Playwright driver, chromium and its renderers; PSS summed) every
50 renders.
``rss_start_mb`` is taken after the first batch (browser up and warm), ``rss_end_mb`` after
the last; memory is flat when they are close. Side by side, in a second process: the same
renders with scrapy-playwright's defaults (a page per concurrent request, nothing blocked).
``--rounds`` rounds (default 2) alternate the order; each figure is the median over the
rounds with its ``[min, max]`` under ``range``, the load average is sampled every 5 s
(``load_avg``), and each side's settings are written beside its figures.

Last stdout line: one JSON object with ``renders``, ``rss_start_mb``, ``rss_end_mb``,
``rss_max_mb``, ``renders_per_s`` and the baseline's (``baseline_*``).

    python -m bench.render [--renders 500] [--rounds 2] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from harness import ROOT, log
from harness.rounds import DEFAULT_ROUNDS, LoadSampler, run_rounds, side_by_side

SAMPLE_EVERY = 50
#: scrapy-playwright's defaults, as its users start: no page cap, nothing blocked.
BASELINE_SETTINGS = {"PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": 0, "PLAYWRIGHT_ABORT_REQUEST": None,
                     "PLAYWRIGHT_MAX_CONTEXTS": 0}
#: Both sides: the browser pool is measured, not politeness.
SHARED_SETTINGS = {
    "RESOLVE_OVERRIDES": "*.test=127.0.0.1",
    "SSRF_ALLOWED_NETWORKS": "127.0.0.0/8",
    "ROBOTSTXT_OBEY": False,
    "ITEM_PIPELINES": {},
    "EXTENSIONS": {},
    "LOG_LEVEL": "WARNING",
    "LOG_FILE": None,
    "DOWNLOAD_DELAY": 0,
    "CONCURRENT_REQUESTS": 8,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    # Scrapy's scheduler, no frontier
    "SCHEDULER": "scrapy.core.scheduler.Scheduler",
}


def tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and all its descendants, in MiB: the sum of their PSS
    (shared pages divided among the processes sharing them, so chromium's many processes
    are not counted several times), RSS where PSS is not available."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total_kb, todo = 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        for path, key in ((f"/proc/{p}/smaps_rollup", "Pss:"), (f"/proc/{p}/status", "VmRSS:")):
            try:
                with open(path) as f:
                    value = next((int(line.split()[1]) for line in f if line.startswith(key)),
                                 None)
            except OSError:
                continue
            if value is not None:
                total_kb += value
                break
    return total_kb / 1024


def run_spider(kind: str, renders: int, port: int) -> None:
    """Child process: render ``renders`` js.test pages, print the samples as JSON."""
    import scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.utils.project import get_project_settings

    from crawler.render import render_meta

    settings = get_project_settings()
    settings.setdict(SHARED_SETTINGS, priority="cmdline")
    if kind == "baseline":
        settings.setdict(BASELINE_SETTINGS, priority="cmdline")
    samples: list[tuple[int, float, float]] = []
    started = time.monotonic()

    class RenderSpider(scrapy.Spider):
        name = "render-bench"

        async def start(self):
            for i in range(renders):
                url = f"http://js.test:{port}/app/{i % 20}"
                meta = render_meta(15_000) if kind == "project" else {"playwright": True}
                yield scrapy.Request(url, meta=meta, dont_filter=True)

        def parse(self, response):
            done = len(samples_done) + 1
            samples_done.append(done)
            assert b"<h1>" in response.body, "the page was not rendered"
            if done == 1 or done % SAMPLE_EVERY == 0 or done == renders:
                rss = tree_rss_mb(os.getpid())
                samples.append((done, round(rss, 1), round(time.monotonic() - started, 2)))
                log(f"{kind:8} {done:4} renders, tree RSS {rss:.0f} MiB")

    samples_done: list[int] = []
    process = CrawlerProcess(settings)
    process.crawl(RenderSpider)
    process.start()
    print(json.dumps({"samples": samples, "renders": len(samples_done)}))


def run_kind(kind: str, renders: int, port: int) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.render", "--child", kind, "--renders", str(renders), "--port",
         str(port)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True, timeout=renders * 2 + 300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if proc.returncode != 0:
        raise SystemExit(f"{kind} render run failed")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    samples = data["samples"]
    start = samples[1] if len(samples) > 1 else samples[0]  # after the first batch
    end = samples[-1]
    return {
        "renders": data["renders"],
        "rss_start_mb": start[1],
        "rss_end_mb": end[1],
        "rss_max_mb": max(s[1] for s in samples),
        "renders_per_s": round((end[0] - start[0]) / max(end[2] - start[2], 1e-6), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renders", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="alternating rounds of both sides")
    parser.add_argument("--quick", action="store_true", help="100 renders")
    parser.add_argument("--child", choices=("project", "baseline"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        run_spider(opts.child, opts.renders, opts.port)
        return
    if opts.quick:
        opts.renders = 100
    import testweb

    with testweb.run(hosts=1) as web, LoadSampler() as load:
        runs = run_rounds({kind: (lambda _, kind=kind: run_kind(kind, opts.renders, web.port))
                           for kind in ("project", "baseline")}, opts.rounds)
    summary = side_by_side(runs, {"project": "", "baseline": "baseline_"}, load, digits=2)
    summary["settings"] = {**SHARED_SETTINGS, "meta": "crawler.render.render_meta(15_000)",
                           "RENDER_*": "crawler/settings.py defaults"}
    summary["baseline_settings"] = {**SHARED_SETTINGS, **BASELINE_SETTINGS,
                                    "meta": {"playwright": True}}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
