"""Soak: a long distributed crawl (2 workers sharing Redis) over a large test web, against
scrapy-redis, in alternating rounds of the same length.

Two `scrapy crawl web` processes with the default pipelines (dedup through Redis, WARC, link
graph, embedded index per worker) crawl ``--hosts`` test web hosts for ``--minutes`` on the
project's Redis frontier; the baseline is the same two workers, spider, pipelines, delay and
concurrency with scrapy-redis's scheduler and dupefilter (Scrapy's robots.txt middleware,
``DOWNLOAD_DELAY`` and one request per host slot for politeness, as scrapy-redis users run
it; the settings are written under ``baseline_settings``) on a fresh Redis and test web for
the same ``--minutes``. ``--rounds`` rounds (default 2) alternate the order (project then
baseline, then baseline then project); each figure is the median over the rounds, its
``[min, max]`` under ``range``, and the 1-minute load average is sampled every 10 s through
the whole run (``load_avg``; each crawl's own median as ``load_avg_median``).

Each crawl is measured the same way, over the same window: from the *measure start* (the
first sample at least ``STARTUP_S`` after the workers were launched and after the first page
was served, so the start-up's imports, spider opening and first connections are left out on
both sides) to the last sample before the crawl's end (the close, with its last index commit,
is left out too):

- ``pages``: pages served to the crawl in the window (status 200, robots.txt excluded), from
  the test web's own request log; ``pages_total`` over the whole crawl;
- ``pages_per_s_per_core``: those pages per second of worker CPU time in the window (user +
  system of both workers, sampled with psutil), i.e. what one core sustains;
  ``pages_per_s_per_core_incl_startup`` is the old figure (all pages over all worker CPU,
  start-up and close included); ``pages_per_s`` the wall-clock rate in the window;
- ``violations``: politeness violations in the test web's log (harness/politeness.py) under
  the definition the baseline claims to honour (Scrapy's: a request while another to the host
  is in flight, or sooner than ``DOWNLOAD_DELAY`` after the previous one *started*); beside
  it ``violations_end_to_start`` (the project's promise: sooner than max(delay, Crawl-delay)
  after the previous one *ended*), ``violations_start_to_start``, ``violations_overlaps``,
  ``violations_crawl_delay``, and ``requests``;
- ``rss_growth_mb``: the largest growth of a worker's resident memory after the warm-up,
  sampled from outside every 10 s: the least-squares trend of the samples from the end of
  the warm-up to the end of the crawl, times that span (RSS swings by tens of MB between
  samples, so end minus start would measure the swing). The warm-up is the first quarter of
  the run, at least ``WARMUP_MIN_S`` (5 minutes; shorter runs: half the run): the worker's
  bounded caches take about 4 minutes to fill at the soak's rate. Both sides run as long, so
  the window is the same. ``rss_end_mb`` is the largest RSS of a worker in its last sample
  before the close; ``heap_in_use_growth_mb`` the same trend for the C heap in use (glibc's
  ``mallinfo2``, from the workers' exported ``memory/heap_in_use_bytes`` stats,
  ``crawler/memory.py``); ``rss_trimmed_growth_mb`` the trend of the RSS each worker samples
  itself right after handing its free heap pages back (``memory/rss_bytes``, once a minute);
  ``pymalloc_arenas_growth_mb`` the trend of Python's small-object arenas (1 MiB each);
- *flat* RSS, the soak's memory target: ``worker_rss_first_half_mb`` is the largest trend
  growth of a worker's RSS over the first half of the crawl (from the start-up on: its
  bounded caches filling), ``worker_rss_growth_mb`` the same over the second half, and
  ``worker_rss_slope_mb_per_10min`` that second half's trend slope in MB per 10 minutes;
  ``rss_flat`` (each side's, from its median slope) is true when the slope is at most
  ``RSS_FLAT_MB_PER_10MIN`` (10 MB per 10 minutes: a worker with every in-process
  structure capped reaches its caps and stays within the allocator's swings; one that
  keeps a little per page grows all the way);
- ``redis_bytes_per_url``: Redis ``used_memory`` growth over the run divided by the URLs the
  crawl knows (the project: the workers' ``frontier/added``, URLs that passed the seen
  filter; scrapy-redis: its dupefilter's fingerprints). It is all of the crawl's Redis state
  (queues, hosts, seen filter, dedup, stats); null, with the reason under
  ``null_reasons``, when no URL is known. ``redis_key_bytes`` splits the keys' own sizes
  (``MEMORY USAGE``) into ``frontier``, ``dedup`` and ``other``;
  ``redis_frontier_bytes_per_url`` is ``frontier`` per known URL and
  ``redis_dedup_bytes_per_page`` is ``dedup`` per fetched page.

The baseline's figures carry the same names prefixed ``baseline_``; ``pages_per_core_ratio``
is the project's median pages per CPU-second over the baseline's.

``--partitions N`` runs the project's frontier on N Redis servers partitioned by host hash
(the baseline keeps one). ``--concurrent`` runs the two sides of each round at the same
time, each with its own Redis and test web: half the wall time, both under the same load
(the wall-clock rates fall, the per-CPU-second figures are the ones to compare).

``--index elasticsearch`` is the distributed path end to end: both workers of each side
write one index (its own prefix per crawl) of the stack's Elasticsearch, the three nodes of
``scripts/services.sh es2`` that ``scripts/stack.sh`` runs (two data nodes and a
tie-breaker; started for the run, or ``--es-url``), instead of an embedded index each. Each
side then adds ``indexed``, ``index_written``, ``index_lost``, ``index_doubled`` (checked
against the crawl's own stats, see :func:`index_figures`), ``index_block_longest_ms`` (the
longest a worker waited for room in its bulk queue) and ``index_write_longest_ms``.

    python -m bench.soak [--minutes 30] [--rounds 2] [--hosts 5000] [--partitions 1]
                         [--concurrent] [--quick]
    python -m bench.soak --index elasticsearch --minutes 3 --rounds 1
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
from redis import Redis

import testweb
from crawler.statsexport import RedisStatsStore
from harness import ROOT, log
from harness.crawlrun import crawl_env
from harness.politeness import crawl_delays, politeness_violations
from harness.redisserver import running_redis
from harness.rounds import DEFAULT_ROUNDS, LoadSampler, ratio, run_rounds, side_by_side
from harness.series import growth, slope_per_s, stat_series

WORKERS = 2
SAMPLE_S = 10.0
#: The shortest warm-up; see ``rss_growth_mb`` above.
WARMUP_MIN_S = 300.0
#: The largest second-half RSS slope that is still flat; see ``rss_flat`` above.
RSS_FLAT_MB_PER_10MIN = 10.0
#: The measure window starts this long after launch at the earliest; see above.
STARTUP_S = 30.0
#: scrapy-redis's keys of its frontier (``<spider>:requests``, ``<spider>:dupefilter``).
SCRAPY_REDIS_FRONTIER = (b":requests", b":dupefilter")


def worker_settings(kind: str, seconds: float, delay: float) -> dict[str, object]:
    """The ``-s`` settings of a worker: the project's frontier, or scrapy-redis's scheduler."""
    shared = {
        "CLOSESPIDER_TIMEOUT": seconds,
        "CONCURRENT_REQUESTS": 64,
        "CONTROL_STORE": "",
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


def _cpu_s(pid: int) -> float | None:
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return times.user + times.system


def _sampled(series: list[tuple[float, float]], every: int) -> str:
    """Every ``every``-th sample of a series, as ``<minute>m:<value>`` for the log."""
    return " ".join(f"{t / 60:.0f}m:{value:.0f}" for t, value in series[::every])


def _largest(growths: list[float]) -> float | None:
    return round(max(growths), 1) if growths else None


def redis_usage(client: Redis) -> dict[str, int]:
    """Bytes per key family (``MEMORY USAGE`` of every key): ``frontier`` (queues, hosts,
    seen filter, robots; scrapy-redis's request queue and dupefilter), ``dedup`` and the
    rest, so the per-URL figure can be split."""
    usage: dict[str, int] = {}
    keys = list(client.scan_iter(count=1000))
    for start in range(0, len(keys), 1000):
        batch = keys[start:start + 1000]
        pipe = client.pipeline(transaction=False)
        for key in batch:
            pipe.memory_usage(key, samples=0)
        for key, size in zip(batch, pipe.execute(), strict=True):
            family = key.split(b":", 1)[0].decode(errors="replace")
            if key.endswith(SCRAPY_REDIS_FRONTIER):
                family = "frontier"  # the baseline's queue and seen set are its frontier
            elif family not in ("frontier", "dedup"):
                family = "other"
            usage[family] = usage.get(family, 0) + (size or 0)
    return usage




def soak(kind: str, minutes: float, hosts: int, delay: float, workdir: Path,
         partitions: int = 1, es_url: str | None = None) -> dict[str, object]:
    """``WORKERS`` crawl workers of ``kind`` on a fresh Redis (``partitions`` servers for the
    project's frontier) and test web, measured; with ``es_url`` both write one index of that
    Elasticsearch cluster instead of an embedded index each."""
    seconds = minutes * 60
    workdir.mkdir(parents=True)
    load = LoadSampler(SAMPLE_S)
    with contextlib.ExitStack() as servers:
        urls = [servers.enter_context(running_redis(workdir / f"redis-{n}")).url
                for n in range(partitions if kind == "project" else 1)]
        clients = [Redis.from_url(url) for url in urls]
        client = clients[0]

        def used_memory() -> int:
            return sum(c.info("memory")["used_memory"] for c in clients)

        redis_before = used_memory()
        env = {"REDIS_URL": urls[0]}
        es_prefix = f"soak-{kind}-{workdir.name}".lower()
        if es_url:
            env["ELASTICSEARCH_URL"] = es_url
        if len(urls) > 1:
            env["FRONTIER_REDIS_URLS"] = ",".join(urls)
        weblog = workdir / "web.log"
        with testweb.run(hosts=hosts, log=weblog, timeout=120) as web, load:
            seeds = workdir / "seeds.txt"
            seeds.write_text("\n".join(web.home_url(h) for h in web.hosts()) + "\n")
            procs = []
            for n in range(WORKERS):
                cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a",
                       f"seeds_file={seeds}", "-a", "allowed_hosts=*.test"]
                for name, value in worker_settings(kind, seconds, delay).items():
                    cmd += ["-s", f"{name}={value}"]
                if es_url:
                    cmd += ["-s", f"ES_INDEX_PREFIX={es_prefix}"]
                data = workdir / f"data-{n}"
                data.mkdir()
                procs.append(subprocess.Popen(
                    cmd, cwd=ROOT, env=crawl_env(data, env),
                    stdout=subprocess.DEVNULL, stderr=open(workdir / f"worker-{n}.err", "w"),
                ))
            log(f"{kind}: {WORKERS} workers crawling {hosts} hosts for {minutes:g} min "
                f"(delay {delay}s)")
            rss: list[list[tuple[float, float]]] = [[] for _ in procs]
            # (seconds since launch, wall-clock time, CPU seconds of each worker)
            cpu_samples: list[tuple[float, float, list[float]]] = []
            cpu_last = [0.0] * len(procs)
            started = time.monotonic()
            while any(p.poll() is None for p in procs):
                alive = True
                for n, proc in enumerate(procs):
                    cpu = _cpu_s(proc.pid) if proc.poll() is None else None
                    if cpu is None:
                        alive = False
                        continue
                    cpu_last[n] = cpu
                    try:
                        mb = psutil.Process(proc.pid).memory_info().rss / 2**20
                    except psutil.Error:
                        continue
                    rss[n].append((time.monotonic() - started, mb))
                elapsed = time.monotonic() - started
                if alive:
                    cpu_samples.append((elapsed, time.time(), list(cpu_last)))
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
            rows = web.settled_log()
            audit = politeness_violations(rows, delay, crawl_delays(web))
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
    served = [r for r in rows if r["status"] == 200 and r["path"] != "/robots.txt"]
    indexing = (index_figures(es_url, es_prefix, [workdir / f"data-{n}" / "logs" / "crawl.log"
                                                  for n in range(WORKERS)], served)
                if es_url else {})
    window = measure_window(cpu_samples, [r["start"] for r in served])
    if window is None:
        raise SystemExit(f"{kind}: no measure window (no page served {STARTUP_S:g} s after "
                         f"launch, or fewer than two CPU samples); run longer")
    (t0, wall0, cpu0), (t1, wall1, cpu1) = window
    pages = sum(1 for r in served if wall0 <= r["start"] < wall1)
    cpu = sum(cpu1) - sum(cpu0)
    total_cpu = sum(cpu_last)
    warmup = max(seconds / 4, min(WARMUP_MIN_S, seconds / 2))
    growths = [growth(series, warmup, seconds) for series in rss]
    first_half = [growth(series, STARTUP_S, seconds / 2) for series in rss]
    second_half = [growth(series, seconds / 2, seconds) for series in rss]
    slopes = [slope_per_s(series, seconds / 2, seconds) * 600 for series in rss]
    for series, grown in zip(rss, growths, strict=True):
        log(f"{kind} worker RSS MB: end {series[-1][1]:.0f} (+{grown:.1f} after the warm-up), "
            f"max {max(mb for _, mb in series):.0f}; samples {_sampled(series, 30)}")
    trends = {key: [growth(series, warmup, seconds) for series in per_worker.values()]
              for key, per_worker in exported.items()}
    for key, per_worker in exported.items():
        log(f"{kind} exported {key}: " + "; ".join(
            f"{worker}: {_sampled(series, 36)}" for worker, series in per_worker.items()))
    log(f"{kind}: {pages} pages from {t0:.0f}s to {t1:.0f}s = {pages / (t1 - t0):.1f}/s wall, "
        f"worker CPU {cpu:.0f}s = {ratio(pages, cpu, 2)} pages per CPU-second "
        f"({len(served)} pages, {total_cpu:.0f} CPU-s with start-up and close); "
        f"known URLs {known}; violations {audit}")
    null_reasons = {}
    if not known:
        null_reasons["redis_bytes_per_url"] = null_reasons["redis_frontier_bytes_per_url"] = (
            "no known URLs (frontier/added or the dupefilter's fingerprints are 0)")
    if not pages:
        null_reasons["redis_dedup_bytes_per_page"] = "no page fetched in the measured window"
    return {
        "pages": pages,
        "pages_per_s_per_core": ratio(pages, cpu, 2),
        "pages_per_s_per_core_incl_startup": ratio(len(served), total_cpu, 2),
        "violations": audit["download_delay"],
        "violations_end_to_start": audit["end_to_start"],
        "violations_start_to_start": audit["start_to_start"],
        "violations_overlaps": audit["overlaps"],
        "violations_crawl_delay": audit["crawl_delay"],
        "requests": audit["requests"],
        "rss_growth_mb": round(max(growths), 1),
        "worker_rss_first_half_mb": round(max(first_half), 1),
        "worker_rss_growth_mb": round(max(second_half), 1),
        "worker_rss_slope_mb_per_10min": round(max(slopes), 2),
        "rss_end_mb": round(max([mb for t, mb in series if t <= seconds][-1] for series in rss), 1),
        "rss_trimmed_growth_mb": _largest(trends["rss_trimmed"]),
        "heap_in_use_growth_mb": _largest(trends["heap_in_use"]),
        "pymalloc_arenas_growth_mb": _largest(trends["pymalloc_arenas"]),
        "redis_bytes_per_url": ratio(redis_after - redis_before, known, 1),
        "pages_per_s": ratio(pages, t1 - t0, 2),
        "pages_total": len(served),
        "known_urls": known,
        "worker_cpu_s": round(cpu, 1),
        "worker_cpu_s_total": round(total_cpu, 1),
        "measured_s": round(t1 - t0, 1),
        "startup_s": round(t0, 1),
        "minutes": minutes,
        "load_avg_median": load.summary()["median"],
        "redis_key_bytes": families,
        "null_reasons": null_reasons,
        "redis_frontier_bytes_per_url": ratio(families.get("frontier", 0), known, 1),
        "redis_dedup_bytes_per_page": ratio(families.get("dedup", 0), pages, 1),
        **indexing,
    }


def index_figures(es_url: str, prefix: str, crawl_logs: list[Path],
                  served: list[dict]) -> dict[str, object]:
    """What the workers wrote to Elasticsearch, checked against the crawl's own stats:

    - ``indexed``: documents in the index after the crawl (refreshed);
    - ``index_written``: pages the workers' pipelines handed to the index (``index/indexed``);
    - ``index_lost``: of those, the writes Elasticsearch never acknowledged
      (``index/indexed`` minus the acknowledged index actions, ``index/bulk/index``);
    - ``index_doubled``: acknowledged index actions that landed on a page already indexed
      (acknowledged writes minus the documents, plus the acknowledged deletions): a page
      indexed twice; ids are URL hashes, so a second write would replace, not add;
    - ``index_block_longest_ms``: a worker's longest wait for room in its bulk queue
      (``index/bulk/backpressure_longest_ms``; 0 when it never waited), and
      ``index_write_longest_ms``: the pipeline's longest index call (a batch's analysis
      plus that wait), the longest the crawl waited on its index;
    - ``pages_fetched_twice``: pages the test web served to the crawl twice (a lease that
      ran out on a slow worker; the second copy is an exact duplicate, not indexed again).
    """
    from elasticsearch import Elasticsearch

    texts = [path.read_text() for path in crawl_logs]

    def total(name: str) -> int:
        return sum(_stat(text, name) for text in texts)

    pages: dict[str, int] = {}
    for row in served:
        key = f"{row.get('host', '')}{row['path']}"
        pages[key] = pages.get(key, 0) + 1
    client = Elasticsearch(es_url.split(","), request_timeout=120)
    try:
        client.indices.refresh(index=prefix)
        indexed = client.count(index=prefix)["count"]
        client.options(ignore_status=404).indices.delete(index=f"{prefix}-*")
    finally:
        client.close()
    written, acked = total("index/indexed"), total("index/bulk/index")
    log(f"index: {indexed} documents; the crawl wrote {written}, {acked} acknowledged")
    return {
        "indexed": indexed,
        "index_written": written,
        "index_lost": written - acked,
        "index_doubled": acked + total("index/bulk/delete") - indexed,
        "index_block_longest_ms": max(_stat(t, "index/bulk/backpressure_longest_ms")
                                      for t in texts),
        "index_write_longest_ms": max(_stat(t, "index/write_longest_ms") for t in texts),
        "index_backpressure_waits": total("index/bulk/backpressure_waits"),
        "pages_fetched_twice": sum(1 for n in pages.values() if n > 1),
    }


def measure_window(cpu_samples: list[tuple[float, float, list[float]]],
                   page_starts: list[float]):
    """The first and last CPU sample of the measure window: the first sample at least
    ``STARTUP_S`` after launch and after the first page served, and the last one taken
    while every worker still ran; None if there are not two such samples."""
    if not page_starts:
        return None
    first_page = min(page_starts)
    inside = [s for s in cpu_samples if s[0] >= STARTUP_S and s[1] > first_page]
    if len(inside) < 2:
        return None
    return inside[0], inside[-1]


def run(minutes: float, rounds: int, hosts: int, delay: float, workdir: Path,
        partitions: int = 1, concurrent: bool = False,
        es_url: str | None = None) -> dict[str, object]:
    """``rounds`` alternating rounds of the project's soak and the scrapy-redis baseline's,
    each ``minutes`` long (with ``concurrent``, both sides of a round at once); medians and
    ranges side by side."""
    def side(kind: str):
        return lambda round_no: soak(kind, minutes, hosts, delay,
                                     workdir / f"{kind}-{round_no}", partitions, es_url)

    sides = {"project": side("project"), "baseline": side("scrapy-redis")}
    with LoadSampler(SAMPLE_S) as load:
        if concurrent:
            runs = {name: [] for name in sides}
            for round_no in range(rounds):
                log(f"round {round_no + 1}/{rounds}: both sides at once")
                with ThreadPoolExecutor(len(sides)) as pool:
                    futures = {name: pool.submit(fn, round_no) for name, fn in sides.items()}
                    for name, future in futures.items():
                        runs[name].append(future.result())
        else:
            runs = run_rounds(sides, rounds)
    result = side_by_side(runs, {"project": "", "baseline": "baseline_"}, load, digits=2)
    reasons = {}
    for name, prefix in (("project", ""), ("baseline", "baseline_")):
        for one in runs[name]:
            reasons.update({prefix + key: why for key, why in one["null_reasons"].items()})
        result.pop(prefix + "null_reasons", None)
    result["null_reasons"] = reasons
    result["pages_per_core_ratio"] = ratio(result["pages_per_s_per_core"],
                                           result["baseline_pages_per_s_per_core"])
    result["pages_per_core_ratio_incl_startup"] = ratio(
        result["pages_per_s_per_core_incl_startup"],
        result["baseline_pages_per_s_per_core_incl_startup"])
    for prefix in ("", "baseline_"):
        slope = result.get(prefix + "worker_rss_slope_mb_per_10min")
        result[prefix + "rss_flat"] = None if slope is None else slope <= RSS_FLAT_MB_PER_10MIN
    result["violations_definition"] = (
        "the baseline's own: same-host overlap or sooner than DOWNLOAD_DELAY after the "
        "previous request started")
    result["settings"] = worker_settings("project", minutes * 60, delay)
    result["baseline_settings"] = worker_settings("baseline", minutes * 60, delay)
    result["hosts"] = hosts
    result["partitions"] = partitions
    result["concurrent"] = concurrent
    result["index"] = "elasticsearch" if es_url else "embedded"
    return result


@contextlib.contextmanager
def elasticsearch_for(index: str, url: str | None):
    """The cluster the workers write to with ``--index elasticsearch``: ``url``, or the
    stack's three nodes (``scripts/services.sh es2``: two data nodes and a tie-breaker)
    started for the run; ``None`` for ``--index embedded``."""
    if index != "elasticsearch":
        yield None
        return
    if url:
        yield url
        return
    from harness.services import EsProcesses, not_installed_reason

    reason = not_installed_reason()
    if reason:
        raise SystemExit(f"--index elasticsearch: {reason}, or pass --es-url")
    cluster = EsProcesses("es2", ["es2-a", "es2-b", "es2-c"])
    log(f"starting the stack's three-node Elasticsearch under {cluster.run_dir}")
    try:
        cluster.start()
        yield cluster.url
    finally:
        cluster.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float,
                        help="length of each crawl, project and baseline alike (default 30; "
                             "2 with --quick)")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="alternating rounds of both sides")
    parser.add_argument("--hosts", type=int, default=5000)
    parser.add_argument("--delay", type=float, default=1.0, help="per-host delay, seconds")
    parser.add_argument("--partitions", type=int, default=1,
                        help="Redis servers for the project's frontier (FRONTIER_REDIS_URLS)")
    parser.add_argument("--concurrent", action="store_true",
                        help="run both sides of a round at once (half the time; both under "
                             "the same load, so compare the per-CPU figures)")
    parser.add_argument("--quick", action="store_true", help="2 minutes per crawl")
    parser.add_argument("--workdir", type=Path, help="keep the run's files here")
    parser.add_argument("--index", choices=("embedded", "elasticsearch"), default="embedded",
                        help="embedded: an index per worker; elasticsearch: one index on the "
                             "stack's cluster (or --es-url) for both")
    parser.add_argument("--es-url", help="with --index elasticsearch: this cluster")
    opts = parser.parse_args()
    minutes = opts.minutes or (2.0 if opts.quick else 30.0)
    with elasticsearch_for(opts.index, opts.es_url) as es_url:
        if opts.workdir:
            opts.workdir.mkdir(parents=True)
            result = run(minutes, opts.rounds, opts.hosts, opts.delay, opts.workdir,
                         opts.partitions, opts.concurrent, es_url)
        else:
            with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
                result = run(minutes, opts.rounds, opts.hosts, opts.delay, Path(tmp),
                             opts.partitions, opts.concurrent, es_url)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
