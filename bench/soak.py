"""Soak: a long distributed crawl (2 workers sharing Redis) over a large test web, against
scrapy-redis.

Two `scrapy crawl web` processes with the default pipelines (dedup through Redis, WARC, link
graph, embedded index per worker) crawl ``--hosts`` test web hosts for ``--minutes`` on the
project's Redis frontier. Then the baseline: the same two workers, spider, pipelines, delay and
concurrency with scrapy-redis's scheduler and dupefilter (Scrapy's robots.txt middleware,
DOWNLOAD_DELAY and one request per host slot for politeness, as scrapy-redis users run it)
crawl a fresh Redis and test web for ``--baseline-minutes`` (shorter: a second 30-minute crawl
would double the run; the per-core, per-URL and violation figures do not depend on length,
the RSS growth less so). Each crawl is measured the same way:

- ``pages``: pages served to the crawl (status 200, robots.txt excluded), from the test web's
  own request log;
- ``pages_per_s_per_core``: pages per second of worker CPU time (user + system of both
  workers), i.e. what one core sustains; the wall-clock rate is ``pages_per_s``;
- ``violations``: politeness violations in the test web's log (bench/politeness.py: a request
  to a host while one is in flight, or sooner than its delay after the previous one ended);
- ``rss_growth_mb``: the largest growth of a worker's resident memory after the warm-up,
  sampled from outside every 10 s: the least-squares trend of the samples from the end of
  the warm-up to the end of the crawl, times that span (RSS swings by tens of MB between
  samples, so end minus start would measure the swing). The warm-up is the first quarter of
  the run, at least ``WARMUP_MIN_S`` (5 minutes; shorter runs: half the run): the worker's
  bounded caches (canonical URLs, recent links, recent requests) take about 4 minutes to
  fill at the soak's rate, RSS rising from ~150 to ~330 MB meanwhile. ``rss_end_mb`` is
  the largest RSS of a worker in its last sample before the close; ``heap_in_use_growth_mb``
  the same trend for the C heap in use (glibc's ``mallinfo2``, from the workers' exported
  ``memory/heap_in_use_bytes`` stats, ``crawler/memory.py``): memory the process holds, as
  opposed to memory the allocator kept after it was freed; ``rss_trimmed_growth_mb`` the
  trend of the RSS each worker samples itself right after handing its free heap pages back
  (``memory/rss_bytes``, once a minute): RSS without what glibc kept since the last trim;
  ``pymalloc_arenas_growth_mb`` the trend of Python's small-object arenas (1 MiB each);
- ``redis_bytes_per_url``: Redis ``used_memory`` growth over the run divided by the URLs the
  crawl knows (the project: the workers' ``frontier/added``, URLs that passed the seen
  filter; scrapy-redis: its dupefilter's fingerprints). It is all of the crawl's Redis state
  (queues, hosts, seen filter, dedup, stats). ``redis_key_bytes`` splits the keys' own
  sizes (``MEMORY USAGE``) into ``frontier``, ``dedup`` and ``other``;
  ``redis_frontier_bytes_per_url`` is ``frontier`` per known URL and
  ``redis_dedup_bytes_per_page`` is ``dedup`` per fetched page.

The baseline's figures carry the same names prefixed ``baseline_``.

``--partitions N`` runs the project's frontier on N Redis servers partitioned by host hash
(the baseline keeps one).

    python bench/soak.py [--minutes 30] [--hosts 5000] [--baseline-minutes 5] [--partitions 1]
                         [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
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
from crawler.statsexport import RedisStatsStore  # noqa: E402
from tests.crawlrun import crawl_env  # noqa: E402

WORKERS = 2
SAMPLE_S = 10.0
#: The shortest warm-up; see ``rss_growth_mb`` above.
WARMUP_MIN_S = 300.0


def log(message: str) -> None:
    print(f"[soak] {message}", file=sys.stderr, flush=True)


def worker_settings(kind: str, seconds: float, delay: float) -> dict[str, object]:
    """The ``-s`` settings of a worker: the project's frontier, or scrapy-redis's scheduler."""
    shared = {
        "CLOSESPIDER_TIMEOUT": seconds,
        "CONCURRENT_REQUESTS": 64,
        "HOST_RULES_LOADER": "",
        "CRAWL_PROGRESS_INTERVAL": 0,
        "LOG_LEVEL": "INFO",
        "RESOLVE_OVERRIDES": "*.test=127.0.0.1",
        "SSRF_ALLOWED_NETWORKS": "127.0.0.0/8",
        "USER_AGENT": "websearch-soak",
    }
    if kind == "project":
        return {
            **shared,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
            "DOWNLOAD_DELAY": 0,
            "FRONTIER_DELAY": delay,
            "FRONTIER_IP_CONCURRENCY": 1_000_000,  # every test web host is 127.0.0.1
        }
    # scrapy-redis as its users run it: its scheduler and dupefilter on the shared Redis,
    # Scrapy's own robots.txt middleware and per-slot delay for politeness.
    return {
        **shared,
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_PERSIST": True,  # keep the queue and seen set at close, as the frontier does
        "ROBOTSTXT_OBEY": True,
        "DOWNLOAD_DELAY": delay,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }


def _line_count(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def _stat(text: str, name: str) -> int:
    match = re.search(rf"'{re.escape(name)}': (\d+)", text)
    return int(match.group(1)) if match else 0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def stat_series(snapshots: list[dict], name: str,
                scale: float = 2**20) -> dict[str, list[tuple[float, float]]]:
    """Per worker, (seconds since its first snapshot, stat ``name`` / ``scale``) from the
    exported stats (``crawler.memory.MemoryMonitor``'s ``memory/*``); workers without the
    stat give nothing."""
    series: dict[str, list[tuple[float, float]]] = {}
    first: dict[str, float] = {}
    for snap in snapshots:
        value = snap["stats"].get(name)
        if value is None:
            continue
        start = first.setdefault(snap["worker"], snap["ts"])
        series.setdefault(snap["worker"], []).append((snap["ts"] - start, value / scale))
    return series


def _growth(series: list[tuple[float, float]], warmup: float, end: float) -> float:
    """MB gained from the end of the warm-up to ``end`` (the crawl's end; the close that
    follows writes the last index commit): the least-squares trend of the samples in between
    times its length. A trend, not end minus start: RSS and heap swing by tens of MB from one
    sample to the next (the index writer's buffer comes and goes with each commit)."""
    window = [(t, mb) for t, mb in series if warmup <= t <= end]
    if len(window) < 3:
        return 0.0
    slope, _ = statistics.linear_regression([t for t, _ in window], [mb for _, mb in window])
    return slope * (window[-1][0] - window[0][0])


def _sampled(series: list[tuple[float, float]], every: int) -> str:
    """Every ``every``-th sample of a series, as ``<minute>m:<value>`` for the log."""
    return " ".join(f"{t / 60:.0f}m:{value:.0f}" for t, value in series[::every])


def _largest(growths: list[float]) -> float | None:
    return round(max(growths), 1) if growths else None


def redis_usage(client: Redis) -> dict[str, int]:
    """Bytes per key family (``MEMORY USAGE`` of every key): ``frontier`` (queues, hosts,
    seen filter, robots), ``dedup`` and the rest, so the per-URL figure can be split."""
    usage: dict[str, int] = {}
    keys = list(client.scan_iter(count=1000))
    for start in range(0, len(keys), 1000):
        batch = keys[start:start + 1000]
        pipe = client.pipeline(transaction=False)
        for key in batch:
            pipe.memory_usage(key, samples=0)
        for key, size in zip(batch, pipe.execute(), strict=True):
            family = key.split(b":", 1)[0].decode(errors="replace")
            if family not in ("frontier", "dedup"):
                family = "other"
            usage[family] = usage.get(family, 0) + (size or 0)
    return usage


def soak(kind: str, minutes: float, hosts: int, delay: float, workdir: Path,
         partitions: int = 1) -> dict[str, float]:
    """``WORKERS`` crawl workers of ``kind`` on a fresh Redis (``partitions`` servers for the
    project's frontier) and test web, measured."""
    seconds = minutes * 60
    workdir.mkdir(parents=True)
    with contextlib.ExitStack() as servers:
        urls = [servers.enter_context(running_redis(workdir / f"redis-{n}")).url
                for n in range(partitions if kind == "project" else 1)]
        clients = [Redis.from_url(url) for url in urls]
        client = clients[0]

        def used_memory() -> int:
            return sum(c.info("memory")["used_memory"] for c in clients)

        redis_before = used_memory()
        env = {"REDIS_URL": urls[0]}
        if len(urls) > 1:
            env["FRONTIER_REDIS_URLS"] = ",".join(urls)
        weblog = workdir / "web.log"
        with testweb.run(hosts=hosts, log=weblog, timeout=120) as web:
            seeds = workdir / "seeds.txt"
            seeds.write_text("\n".join(web.home_url(h) for h in web.hosts()) + "\n")
            cpu_before = _children_cpu()
            procs = []
            for n in range(WORKERS):
                cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a",
                       f"seeds_file={seeds}", "-a", "allowed_hosts=*.test"]
                for name, value in worker_settings(kind, seconds, delay).items():
                    cmd += ["-s", f"{name}={value}"]
                data = workdir / f"data-{n}"
                data.mkdir()
                procs.append(subprocess.Popen(
                    cmd, cwd=ROOT, env=crawl_env(data, env),
                    stdout=subprocess.DEVNULL, stderr=open(workdir / f"worker-{n}.err", "w"),
                ))
            log(f"{kind}: {WORKERS} workers crawling {hosts} hosts for {minutes:g} min "
                f"(delay {delay}s)")
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
                log(f"{kind} {elapsed:5.0f}s  requests {lines:7d} "
                    f"({lines / max(elapsed, 1):.1f}/s)  "
                    f"RSS MB {' '.join(f'{s[-1][1]:.0f}' for s in rss if s)}  "
                    f"redis MB {used_memory() / 2**20:.1f}")
                deadline = time.monotonic() + SAMPLE_S
                while time.monotonic() < deadline and any(p.poll() is None for p in procs):
                    time.sleep(0.5)
            for n, proc in enumerate(procs):
                if proc.wait(seconds + 300) != 0:
                    err = (workdir / f"worker-{n}.err").read_text()[-3000:]
                    raise SystemExit(f"{kind} worker {n} failed:\n{err}")
            cpu = _children_cpu() - cpu_before  # the workers only: testweb still runs
            time.sleep(0.5)  # the test web flushes its log every 0.2 s
            rows = web.read_log()
            audit = politeness_violations(rows, host_delays(web, delay))
        redis_after = used_memory()
        families: dict[str, int] = {}
        for c in clients:
            for family, size in redis_usage(c).items():
                families[family] = families.get(family, 0) + size
        if kind == "project":
            # Scrapy's stats dump is in each worker's detailed log, DATA_DIR/logs/crawl.log
            known = sum(_stat((workdir / f"data-{n}" / "logs" / "crawl.log").read_text(),
                              "frontier/added") for n in range(WORKERS))
        else:
            known = client.scard("web:dupefilter")  # request fingerprints seen
        snapshots = RedisStatsStore(client).read()
        exported = {key: stat_series(snapshots, name, scale) for key, name, scale in (
            ("heap_in_use", "memory/heap_in_use_bytes", 2**20),
            ("rss_trimmed", "memory/rss_bytes", 2**20),
            ("pymalloc_arenas", "memory/pymalloc_arenas", 1.0),  # 1 MiB each
        )}
        for c in clients:
            c.close()
    pages = sum(1 for r in rows if r["status"] == 200 and r["path"] != "/robots.txt")
    warmup = max(seconds / 4, min(WARMUP_MIN_S, seconds / 2))
    growth = [_growth(series, warmup, seconds) for series in rss]
    for series, grown in zip(rss, growth, strict=True):
        log(f"{kind} worker RSS MB: end {series[-1][1]:.0f} (+{grown:.1f} after the warm-up), "
            f"max {max(mb for _, mb in series):.0f}; samples {_sampled(series, 30)}")
    trends = {key: [_growth(series, warmup, seconds) for series in per_worker.values()]
              for key, per_worker in exported.items()}
    for key, per_worker in exported.items():
        log(f"{kind} exported {key}: " + "; ".join(
            f"{worker}: {_sampled(series, 36)}" for worker, series in per_worker.items()))
    log(f"{kind}: {pages} pages in {seconds:.0f}s = {pages / seconds:.1f}/s wall, worker CPU "
        f"{cpu:.0f}s = {pages / max(cpu, 1e-9):.1f} pages per CPU-second; known URLs {known}; "
        f"violations {audit}")
    return {
        "pages": pages,
        "pages_per_s_per_core": round(pages / max(cpu, 1e-9), 2),
        "violations": audit["total"],
        "rss_growth_mb": round(max(growth), 1),
        "rss_end_mb": round(max([mb for t, mb in series if t <= seconds][-1] for series in rss), 1),
        "rss_trimmed_growth_mb": _largest(trends["rss_trimmed"]),
        "heap_in_use_growth_mb": _largest(trends["heap_in_use"]),
        "pymalloc_arenas_growth_mb": _largest(trends["pymalloc_arenas"]),
        "redis_bytes_per_url": round((redis_after - redis_before) / max(known, 1), 1),
        "pages_per_s": round(pages / seconds, 2),
        "known_urls": known,
        "worker_cpu_s": round(cpu, 1),
        "minutes": minutes,
        "redis_key_bytes": families,
        "redis_frontier_bytes_per_url": round(families.get("frontier", 0) / max(known, 1), 1),
        "redis_dedup_bytes_per_page": round(families.get("dedup", 0) / max(pages, 1), 1),
    }


def run(minutes: float, baseline_minutes: float, hosts: int, delay: float,
        workdir: Path, partitions: int = 1) -> dict[str, float]:
    """The project's soak, then the scrapy-redis baseline's shorter one; keys side by side."""
    result = soak("project", minutes, hosts, delay, workdir / "project", partitions)
    if baseline_minutes > 0:
        base = soak("scrapy-redis", baseline_minutes, hosts, delay, workdir / "baseline")
        result.update({f"baseline_{name}": value for name, value in base.items()})
    result["hosts"] = hosts
    result["partitions"] = partitions
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--hosts", type=int, default=5000)
    parser.add_argument("--delay", type=float, default=1.0, help="per-host delay, seconds")
    parser.add_argument("--baseline-minutes", type=float, default=5.0,
                        help="length of the scrapy-redis baseline's crawl (0 = none)")
    parser.add_argument("--partitions", type=int, default=1,
                        help="Redis servers for the project's frontier (FRONTIER_REDIS_URLS)")
    parser.add_argument("--quick", action="store_true", help="2 minutes, baseline 1 minute")
    parser.add_argument("--workdir", type=Path, help="keep the run's files here")
    opts = parser.parse_args()
    minutes = 2.0 if opts.quick else opts.minutes
    baseline = min(1.0, opts.baseline_minutes) if opts.quick else opts.baseline_minutes
    if opts.workdir:
        opts.workdir.mkdir(parents=True)
        result = run(minutes, baseline, opts.hosts, opts.delay, opts.workdir, opts.partitions)
    else:
        with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
            result = run(minutes, baseline, opts.hosts, opts.delay, Path(tmp), opts.partitions)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
