"""Crawl throughput: the project's `web` spider against a plain Scrapy spider, same run.

Both crawl a fresh local test web for the same time with the same concurrency and per-host
settings; pages/s is counted from the test web's own request log, CPU seconds from the
crawler process. ``--rounds`` rounds (default 2) alternate the order; each figure is the
median over the rounds with its ``[min, max]`` under ``range``, the load average is sampled
every 5 s (``load_avg``) and each side's settings are written beside its figures. Last
stdout line: one JSON object with pages_per_s, baseline_pages_per_s, ratio (of the
medians), cpu_s_per_page (and the baseline's) and cpu_ratio: the project's pages per
CPU-second over the baseline's (the baseline's CPU seconds per page over the project's).
The project's modules are compiled to bytecode first, as an installed package's are
(``harness.crawlrun.compile_project``). ``--set NAME=VALUE`` sets a setting of the project's
crawl (not the baseline's), written under ``settings``.

    python -m bench.crawl [--seconds 30] [--hosts 400] [--rounds 2] [--quick]
                          [--set NAME=VALUE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import testweb
from harness import ROOT, log
from harness.baseline import BASELINE, SHARED, SPIDER
from harness.crawlrun import compile_project, crawl_env, migrate
from harness.rounds import DEFAULT_ROUNDS, LoadSampler, ratio, run_rounds, side_by_side

PROJECT = {
    "FRONTIER_DELAY": 0.0,
    "FRONTIER_LATENCY_FACTOR": 0.0,
    "FRONTIER_IP_CONCURRENCY": 32,  # every test-web host is on 127.0.0.1
}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def count_pages(log: Path) -> int:
    pages = 0
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        if entry["status"] == 200 and entry["path"] != "/robots.txt":
            pages += 1
    return pages


def run_one(kind: str, hosts: int, seconds: float, workdir: Path,
            extra: dict[str, str] | None = None) -> dict:
    """One crawl of ``kind`` (``project`` or ``baseline``); ``extra``: more settings of
    the project's crawl."""
    weblog = workdir / f"{kind}-testweb.log"
    data_dir = workdir / f"{kind}-data"
    data_dir.mkdir()
    with testweb.run(hosts=hosts, log=weblog) as web:
        seeds = workdir / "seeds.txt"
        seeds.write_text(
            "\n".join(web.home_url(h) for h in web.hosts() if h.startswith("site")) + "\n"
        )
        if kind == "project":
            migrate(data_dir)
            cmd = [
                sys.executable,
                "-m",
                "scrapy",
                "crawl",
                "web",
                "-a",
                f"seeds_file={seeds}",
                "-a",
                "allowed_hosts=*.test",
                "-s",
                f"CLOSESPIDER_TIMEOUT={seconds}",
                "-s",
                "CRAWL_PROGRESS_INTERVAL=0",
            ]
            for name, value in {**SHARED, **PROJECT, **(extra or {})}.items():
                cmd += ["-s", f"{name}={value}"]
        else:
            cmd = [
                sys.executable,
                str(SPIDER),
                str(seeds),
                str(seconds),
                json.dumps({**SHARED, **BASELINE}),
            ]
        cpu_before = children_cpu()
        started = time.monotonic()
        proc = subprocess.run(
            cmd,
            cwd=ROOT,
            env=crawl_env(data_dir),
            capture_output=True,
            text=True,
            timeout=seconds * 4 + 120,
        )
        wall = time.monotonic() - started
        cpu = children_cpu() - cpu_before
        time.sleep(0.5)  # let testweb flush its log
    if proc.returncode != 0:
        raise SystemExit(f"{kind} crawl failed:\n{proc.stderr[-3000:]}")
    pages = count_pages(weblog)
    result = {
        "pages": pages,
        "wall_s": round(wall, 2),
        "pages_per_s": round(pages / seconds, 2),
        "cpu_s": round(cpu, 2),
        "cpu_s_per_page": ratio(cpu, pages, 5),
    }
    log(f"{kind:8} {pages:6} pages in {seconds:.0f}s = {result['pages_per_s']:.1f}/s, "
        f"cpu {cpu:.1f}s ({cpu / max(pages, 1) * 1000:.2f} ms/page)")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="crawl time per run")
    parser.add_argument("--hosts", type=int, default=400, help="test web hosts")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="alternating rounds of both sides")
    parser.add_argument("--quick", action="store_true", help="8-second crawls")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of the project's crawl (e.g. EXTRACT_WORKERS=1); "
                             "repeatable")
    opts = parser.parse_args()
    extra = dict(item.split("=", 1) for item in opts.set)
    if opts.quick:
        opts.seconds = 8.0
    compile_project()  # both sides run compiled code: Scrapy's was compiled when installed
    with tempfile.TemporaryDirectory(prefix="bench-crawl-") as tmp, LoadSampler() as load:
        def side(kind: str):
            def one(round_no: int) -> dict:
                workdir = Path(tmp) / f"{kind}-{round_no}"
                workdir.mkdir()
                return run_one(kind, opts.hosts, opts.seconds, workdir, extra)
            return one

        runs = run_rounds({"project": side("project"), "baseline": side("baseline")},
                          opts.rounds)
    summary = side_by_side(runs, {"project": "", "baseline": "baseline_"}, load, digits=5)
    summary.update({
        "ratio": ratio(summary["pages_per_s"], summary["baseline_pages_per_s"]),
        "cpu_ratio": ratio(summary["baseline_cpu_s_per_page"], summary["cpu_s_per_page"]),
        "seconds": opts.seconds,
        "hosts": opts.hosts,
        "cores": os.cpu_count(),
        "settings": {**SHARED, **PROJECT, **extra},
        "baseline_settings": {**SHARED, **BASELINE},
    })
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
