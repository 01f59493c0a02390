"""Soak: a long distributed crawl (2 workers sharing the Redis frontier) over a large test web.

Two `scrapy crawl web` processes with the default pipelines (dedup through Redis, WARC, link
graph, embedded index per worker) crawl ``--hosts`` test web hosts for ``--minutes``. Measured:

- ``pages``: pages served to the crawl (status 200, robots.txt excluded), from the test web's
  own request log;
- ``pages_per_s_per_core``: pages per second of worker CPU time (user + system of both
  workers), i.e. what one core sustains; the wall-clock rate is printed too;
- ``violations``: politeness violations in the test web's log (bench/politeness.py: a request
  to a host while one is in flight, or sooner than its delay after the previous one ended);
- ``rss_growth_mb``: the largest growth of a worker's resident memory from the end of the
  warm-up (the first quarter of the run, at least 30 s) to the end of the run (mean of the
  last 3 samples);
- ``redis_bytes_per_url``: Redis ``used_memory`` growth over the run divided by the URLs the
  frontier knows (the workers' ``frontier/added``, i.e. URLs that passed the seen filter).
  It is all of the crawl's Redis state (frontier queues, hosts, Bloom filter, dedup, stats).

The baseline is the run's own start: RSS is compared with the warm-up, Redis with the empty
server (a second 30-minute crawl of another crawler would double the run).

    python bench/soak.py [--minutes 30] [--hosts 5000] [--quick]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402
from redis import Redis  # noqa: E402

import testweb  # noqa: E402
from bench.politeness import host_delays, politeness_violations  # noqa: E402
from crawler.redisserver import running_redis  # noqa: E402
from tests.crawlrun import crawl_env  # noqa: E402

WORKERS = 2
SAMPLE_S = 10.0


def log(message: str) -> None:
    print(f"[soak] {message}", file=sys.stderr, flush=True)


def worker_settings(seconds: float, delay: float) -> dict[str, object]:
    return {
        "CLOSESPIDER_TIMEOUT": seconds,
        "CONCURRENT_REQUESTS": 64,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "DOWNLOAD_DELAY": 0,
        "FRONTIER_DELAY": delay,
        "FRONTIER_IP_CONCURRENCY": 1_000_000,  # every test web host is 127.0.0.1
        "HOST_RULES_LOADER": "",
        "CRAWL_PROGRESS_INTERVAL": 0,
        "LOG_LEVEL": "INFO",
        "RESOLVE_OVERRIDES": "*.test=127.0.0.1",
        "SSRF_ALLOWED_NETWORKS": "127.0.0.0/8",
        "USER_AGENT": "websearch-soak",
    }


def _line_count(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def _stat(text: str, name: str) -> int:
    match = re.search(rf"'{re.escape(name)}': (\d+)", text)
    return int(match.group(1)) if match else 0


def soak(minutes: float, hosts: int, delay: float, workdir: Path) -> dict[str, float]:
    seconds = minutes * 60
    with running_redis(workdir / "redis") as server:
        client = Redis.from_url(server.url)
        redis_before = client.info("memory")["used_memory"]
        weblog = workdir / "web.log"
        with testweb.run(hosts=hosts, log=weblog, timeout=120) as web:
            seeds = workdir / "seeds.txt"
            seeds.write_text("\n".join(web.home_url(h) for h in web.hosts()) + "\n")
            procs = []
            for n in range(WORKERS):
                cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a",
                       f"seeds_file={seeds}", "-a", "allowed_hosts=*.test"]
                for name, value in worker_settings(seconds, delay).items():
                    cmd += ["-s", f"{name}={value}"]
                data = workdir / f"data-{n}"
                data.mkdir()
                procs.append(subprocess.Popen(
                    cmd, cwd=ROOT, env=crawl_env(data, {"REDIS_URL": server.url}),
                    stdout=subprocess.DEVNULL, stderr=open(workdir / f"worker-{n}.err", "w"),
                ))
            log(f"{WORKERS} workers crawling {hosts} hosts for {minutes:g} min (delay {delay}s)")
            rss: list[list[tuple[float, float]]] = [[] for _ in procs]
            started = time.monotonic()
            while any(p.poll() is None for p in procs):
                for n, proc in enumerate(procs):
                    if proc.poll() is not None:
                        continue
                    try:
                        mb = psutil.Process(proc.pid).memory_info().rss / 2**20
                    except psutil.Error:
                        continue
                    rss[n].append((time.monotonic() - started, mb))
                elapsed = time.monotonic() - started
                lines = _line_count(weblog)
                log(f"{elapsed:5.0f}s  requests {lines:7d} ({lines / max(elapsed, 1):.1f}/s)  "
                    f"RSS MB {' '.join(f'{s[-1][1]:.0f}' for s in rss if s)}  "
                    f"redis MB {client.info('memory')['used_memory'] / 2**20:.1f}")
                deadline = time.monotonic() + SAMPLE_S
                while time.monotonic() < deadline and any(p.poll() is None for p in procs):
                    time.sleep(0.5)
            for n, proc in enumerate(procs):
                if proc.wait(seconds + 300) != 0:
                    err = (workdir / f"worker-{n}.err").read_text()[-3000:]
                    raise SystemExit(f"worker {n} failed:\n{err}")
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = usage.ru_utime + usage.ru_stime  # the workers only: testweb still runs
            time.sleep(0.5)  # the test web flushes its log every 0.2 s
            rows = web.read_log()
            audit = politeness_violations(rows, host_delays(web, delay))
        redis_after = client.info("memory")["used_memory"]
    # Scrapy's stats dump is in each worker's detailed log, DATA_DIR/logs/crawl.log
    known = sum(_stat((workdir / f"data-{n}" / "logs" / "crawl.log").read_text(),
                      "frontier/added") for n in range(WORKERS))
    pages = sum(1 for r in rows if r["status"] == 200 and r["path"] != "/robots.txt")
    growth = []
    for series in rss:
        warm = [mb for t, mb in series if t <= max(seconds / 4, 30)]
        end = statistics.mean(mb for _, mb in series[-3:])
        growth.append(end - warm[-1])
        log(f"worker RSS MB: after warm-up {warm[-1]:.0f}, end {end:.0f}, "
            f"max {max(mb for _, mb in series):.0f}")
    log(f"{pages} pages in {seconds:.0f}s = {pages / seconds:.1f}/s wall, worker CPU {cpu:.0f}s "
        f"= {pages / max(cpu, 1e-9):.1f} pages per CPU-second; known URLs {known}; "
        f"violations {audit}")
    return {
        "pages": pages,
        "pages_per_s_per_core": round(pages / max(cpu, 1e-9), 2),
        "violations": audit["total"],
        "rss_growth_mb": round(max(growth), 1),
        "redis_bytes_per_url": round((redis_after - redis_before) / max(known, 1), 1),
        "pages_per_s": round(pages / seconds, 2),
        "known_urls": known,
        "worker_cpu_s": round(cpu, 1),
        "minutes": minutes,
        "hosts": hosts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--hosts", type=int, default=5000)
    parser.add_argument("--delay", type=float, default=1.0, help="per-host delay, seconds")
    parser.add_argument("--quick", action="store_true", help="2 minutes")
    parser.add_argument("--workdir", type=Path, help="keep the run's files here")
    opts = parser.parse_args()
    minutes = 2.0 if opts.quick else opts.minutes
    if opts.workdir:
        opts.workdir.mkdir(parents=True)
        result = soak(minutes, opts.hosts, opts.delay, opts.workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
            result = soak(minutes, opts.hosts, opts.delay, Path(tmp))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
