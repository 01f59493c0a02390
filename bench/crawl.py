"""Crawl throughput: the project's `web` spider against a plain Scrapy spider, same run.

Both crawl a fresh local test web for the same time with the same concurrency and per-host
settings; pages/s is counted from the test web's own request log, CPU seconds from the
crawler process. Last stdout line: one JSON object with pages_per_s, baseline_pages_per_s,
ratio, cpu_s_per_page (and the baseline's).

    python -m bench.crawl [--seconds 30] [--hosts 400] [--rounds 2] [--quick]
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
from harness import ROOT
from harness.crawlrun import crawl_env, migrate

SHARED = {
    "CONCURRENT_REQUESTS": 32,
    "USER_AGENT": "websearch-bench",
    "COOKIES_ENABLED": False,
    "RESOLVE_OVERRIDES": "*.test=127.0.0.1",
    "SSRF_ALLOWED_NETWORKS": "127.0.0.0/8",
}
# The same per-host policy said two ways: one request in flight per host, no delay, robots.
BASELINE = {
    "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    "DOWNLOAD_DELAY": 0.0,
    "ROBOTSTXT_OBEY": True,
}
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


def run_one(kind: str, hosts: int, seconds: float, workdir: Path) -> dict:
    log = workdir / f"{kind}-testweb.log"
    data_dir = workdir / f"{kind}-data"
    data_dir.mkdir()
    with testweb.run(hosts=hosts, log=log) as web:
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
            for name, value in {**SHARED, **PROJECT}.items():
                cmd += ["-s", f"{name}={value}"]
        else:
            cmd = [
                sys.executable,
                str(ROOT / "bench" / "baseline_spider.py"),
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
    pages = count_pages(log)
    result = {
        "pages": pages,
        "wall_s": round(wall, 2),
        "pages_per_s": pages / seconds,
        "cpu_s": round(cpu, 2),
        "cpu_s_per_page": cpu / max(pages, 1),
    }
    print(
        f"[bench] {kind:8} {pages:6} pages in {seconds:.0f}s = {result['pages_per_s']:.1f}/s, "
        f"cpu {cpu:.1f}s ({result['cpu_s_per_page'] * 1000:.2f} ms/page)",
        file=sys.stderr,
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="crawl time per run")
    parser.add_argument("--hosts", type=int, default=400, help="test web hosts")
    parser.add_argument("--rounds", type=int, default=2, help="alternating runs of each")
    parser.add_argument("--quick", action="store_true", help="one short round")
    opts = parser.parse_args()
    if opts.quick:
        opts.seconds, opts.rounds = 8.0, 1
    runs: dict[str, list[dict]] = {"project": [], "baseline": []}
    with tempfile.TemporaryDirectory(prefix="bench-crawl-") as tmp:
        for round_no in range(opts.rounds):
            order = ("project", "baseline") if round_no % 2 == 0 else ("baseline", "project")
            for kind in order:
                workdir = Path(tmp) / f"{kind}-{round_no}"
                workdir.mkdir()
                runs[kind].append(run_one(kind, opts.hosts, opts.seconds, workdir))

    def mean(kind: str, key: str) -> float:
        return sum(r[key] for r in runs[kind]) / len(runs[kind])

    ours, base = mean("project", "pages_per_s"), mean("baseline", "pages_per_s")
    summary = {
        "pages_per_s": round(ours, 1),
        "baseline_pages_per_s": round(base, 1),
        "ratio": round(ours / base, 3) if base else None,
        "cpu_s_per_page": round(mean("project", "cpu_s_per_page"), 5),
        "baseline_cpu_s_per_page": round(mean("baseline", "cpu_s_per_page"), 5),
        "seconds": opts.seconds,
        "rounds": opts.rounds,
        "hosts": opts.hosts,
        "cores": os.cpu_count(),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
