"""The shared frontier against scrapy-redis: politeness, throughput, frontier ops, Bloom.

1. Two `scrapy crawl web` processes share one Redis and crawl a fresh test web for
   ``--seconds``: first with FrontierScheduler (Scrapy's download slots permissive, the
   lease keeps politeness), then with scrapy-redis's own scheduler and dupefilter (Scrapy's
   DOWNLOAD_DELAY and CONCURRENT_REQUESTS_PER_DOMAIN=1, as scrapy-redis users set them).
   Both use the same delay, concurrency, spider and pipelines. ``--rounds`` rounds (default
   2) alternate the order; each figure is the median over the rounds with its ``[min, max]``
   under ``range``, and the load average is sampled every 5 s (``load_avg``). Violations
   come from the test web's log (harness/politeness.py): ``violations`` under the
   definition the baseline claims to honour (a request while another to the host is in
   flight, or sooner than DOWNLOAD_DELAY after the previous one started), and beside it
   ``violations_end_to_start`` (the frontier's promise: sooner than max(--delay, the
   host's robots Crawl-delay) after the previous one ended), ``violations_overlaps``,
   ``violations_start_to_start`` and ``violations_crawl_delay``. Each side's settings are
   written under ``settings`` and ``baseline_settings``.
   Then the span: the two workers crawl a small test web to its end (``--span-hosts``
   hosts of ``--span-pages`` pages, ``--span-delay`` per host, the crawl's default
   pipelines and value order) and the test web's log gives ``span_s`` (first request to
   last response), ``politeness_bound_s`` (the largest host's requests x its delay: no
   polite crawl is shorter), ``span_over_bound``, ``span_violations`` (end to start),
   ``span_due_lag_ms`` (p50/p95 of how long after a host was due and had work its request
   started) and ``span_gap_median_within_10pct`` (``harness.politeness.gap_report``).
2. Redis frontier operations from one process: URLs added per second (batched adds through
   the seen filter) and leases per second (lease + done round trips).
3. The Bloom filter at 1% FPR: bytes per URL, and the FPR measured on 1,000,000 unseen URLs
   after 1,000,000 were added.
4. Frontier memory: ``--memory-urls`` links (default 500,000) over 2,000 hosts of
   Zipf-distributed sizes (the largest holds ~1/8 of them), each the request the web spider
   queues for a link (callback, errback, depth, a same-host Referer), queued on a fresh
   Redis three ways: the project's frontier (``frontier_bytes_per_url``: compact payloads,
   packed URLs, per-host head and tail, crawler/frontier/codec.py and redis_backend.py),
   the same frontier with the previous encoding (``frontier_bytes_per_url_previous``: the
   pickled request with its URL in it, the full URL beside it, every entry in the host's
   sorted set) and scrapy-redis's priority queue and dupefilter
   (``baseline_frontier_bytes_per_url``). Bytes are ``MEMORY USAGE`` of every key over the
   links queued (the seen filter's false positives are not), the filter sized for them
   (``frontier_bloom_bytes_per_url`` of it); ``*_adds_per_s`` beside each.

Last stdout line: one JSON object with violations, baseline_violations, pages_per_s,
baseline_pages_per_s, span_over_bound (and span_s, politeness_bound_s, span_violations),
adds_per_s, leases_per_s, bloom_bytes_per_url, bloom_fpr and the
memory figures above.

    python -m bench.frontier [--hosts 2000] [--seconds 60] [--rounds 2] [--memory-urls N]
                             [--memory-only] [--quick]
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from redis import Redis
from scrapy import Request
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import PriorityQueue

import testweb
from crawler.frontier import Entry, Outcome, Politeness, frontier_options
from crawler.frontier.bloom import LocalBloom
from crawler.frontier.codec import encode_request
from crawler.frontier.redis_backend import RedisFrontier
from harness import ROOT, log
from harness.crawlrun import crawl_command, crawl_env, migrate
from harness.politeness import (
    crawl_delays,
    gap_report,
    politeness_bound,
    politeness_violations,
    span,
)
from harness.redisserver import running_redis
from harness.rounds import DEFAULT_ROUNDS, LoadSampler, run_rounds, side_by_side

WORKERS = 2
#: Hosts of the memory figures' links (part 4).
MEMORY_HOSTS = 2000


def crawl_settings(kind: str, delay: float, seconds: float) -> dict[str, object]:
    shared = {
        "CONCURRENT_REQUESTS": 32,
        "CLOSESPIDER_TIMEOUT": seconds,
        "CRAWL_PROGRESS_INTERVAL": 0,
        "CONTROL_STORE": "",
        "ITEM_PIPELINES": "{}",
        "LOG_LEVEL": "WARNING",
        "RESOLVE_OVERRIDES": "*.test=127.0.0.1",
        "SSRF_ALLOWED_NETWORKS": "127.0.0.0/8",
        "USER_AGENT": "websearch-bench",
    }
    if kind == "frontier":
        return {
            **shared,
            "SCHEDULER": "crawler.scheduler.FrontierScheduler",
            "FRONTIER_DELAY": delay,
            "FRONTIER_IP_CONCURRENCY": 1_000_000,  # every test web host is 127.0.0.1
            "FRONTIER_CRAWL": "bench",
            "ROBOTSTXT_OBEY": False,  # the frontier's own robots.txt policy is on
            "DOWNLOAD_DELAY": 0,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 32,
        }
    return {
        **shared,
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "ROBOTSTXT_OBEY": True,
        "DOWNLOAD_DELAY": delay,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }


def crawl(kind: str, redis_url: str, hosts: int, seconds: float, delay: float,
          workdir: Path) -> dict[str, float]:
    """Two workers of ``kind`` share Redis for ``seconds``; audit the test web's log."""
    Redis.from_url(redis_url).flushall()
    workdir.mkdir()
    weblog = workdir / f"{kind}-web.log"
    with testweb.run(hosts=hosts, log=weblog) as web:
        seeds = workdir / "seeds.txt"
        seeds.write_text("\n".join(web.home_url(h) for h in web.hosts()) + "\n")
        procs = []
        cpu_before = _children_cpu()
        for n in range(WORKERS):
            cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", f"seeds_file={seeds}",
                   "-a", "allowed_hosts=*.test"]
            for name, value in crawl_settings(kind, delay, seconds).items():
                cmd += ["-s", f"{name}={value}"]
            data = workdir / f"{kind}-data-{n}"
            data.mkdir()
            procs.append(subprocess.Popen(
                cmd, cwd=ROOT, env=crawl_env(data, {"REDIS_URL": redis_url}),
                stdout=subprocess.DEVNULL, stderr=open(workdir / f"{kind}-{n}.err", "w"),
            ))
        log(f"{kind}: {WORKERS} workers crawling {hosts} hosts for {seconds:.0f}s")
        for n, proc in enumerate(procs):
            if proc.wait(seconds * 3 + 120) != 0:
                err = (workdir / f"{kind}-{n}.err").read_text()[-3000:]
                raise SystemExit(f"{kind} worker {n} failed:\n{err}")
        cpu = _children_cpu() - cpu_before  # the workers only: testweb is still running
        rows = web.settled_log()
        audit = politeness_violations(rows, delay, crawl_delays(web))
    pages = sum(1 for r in rows if r["status"] == 200 and r["path"] != "/robots.txt")
    result = {
        "pages": pages,
        "pages_per_s": round(pages / seconds, 1),
        "violations": audit["download_delay"],
        **{f"violations_{name}": audit[name]
           for name in ("end_to_start", "overlaps", "start_to_start", "crawl_delay")},
        "requests": audit["requests"],
    }
    log(f"{kind}: {pages} pages = {result['pages_per_s']:.1f}/s, worker CPU "
        f"{cpu / max(pages, 1) * 1000:.1f} ms/page; violations: {audit}")
    return result


def crawl_to_the_end(redis_url: str, hosts: int, pages: int, delay: float,
                     workdir: Path) -> dict[str, float]:
    """Two workers crawl a small test web until nothing is left; span against the bound."""
    Redis.from_url(redis_url).flushall()
    workdir.mkdir()
    with testweb.run(hosts=hosts, pages=pages, log=workdir / "web.log") as web:
        scope = web.hosts()
        procs = []
        for n in range(WORKERS):
            data = workdir / f"data-{n}"
            data.mkdir()
            migrate(data, {"REDIS_URL": redis_url})
            cmd = crawl_command([web.home_url(h) for h in scope], {
                "FRONTIER_DELAY": delay, "FRONTIER_CRAWL": "span", "LOG_LEVEL": "WARNING",
                "FRONTIER_HOST_PAGE_BUDGET": pages, "CLOSESPIDER_TIMEOUT": 600,
                "RESOLVE_OVERRIDES": "*.test=127.0.0.1"}, {"allowed_hosts": ",".join(scope)})
            procs.append(subprocess.Popen(
                cmd, cwd=ROOT, env=crawl_env(data, {"REDIS_URL": redis_url}),
                stdout=subprocess.DEVNULL, stderr=open(workdir / f"{n}.err", "w")))
        log(f"span: {WORKERS} workers crawling {hosts} hosts of {pages} pages to the end")
        for n, proc in enumerate(procs):
            if proc.wait(900) != 0:
                raise SystemExit(f"span worker {n} failed:\n"
                                 + (workdir / f"{n}.err").read_text()[-3000:])
        rows = web.settled_log()
        crawl_delay_of = crawl_delays(web)
        gaps, _ = gap_report(rows, web, lambda host: max(delay, crawl_delay_of(host) or 0.0))
    bound = politeness_bound(rows, delay, crawl_delay_of)
    result = {"span_s": round(span(rows), 2), "politeness_bound_s": round(bound, 2),
              "span_over_bound": round(span(rows) / bound, 3) if bound else None,
              "span_requests": len(rows),
              "span_violations": politeness_violations(rows, delay, crawl_delay_of)["total"],
              **{f"span_{key}": value for key, value in gaps.items()}}
    log(f"span: {result}")
    return result


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def frontier_ops(redis_url: str, urls: int, hosts: int, leases: int) -> dict[str, float]:
    """Adds/s and leases/s (lease + done) of the Redis frontier from one process."""
    Redis.from_url(redis_url).flushall()
    options = frontier_options(
        None, bloom_capacity=max(urls, 1000), ip_limit=0, robots_first=False,
        politeness=Politeness.from_settings(None, default_delay=0.0, latency_factor=0),
    )
    frontier = RedisFrontier(Redis.from_url(redis_url), "ops", **options)
    entries = [Entry(f"http://h{i % hosts}.test/page/{i}", f"h{i % hosts}.test",
                     payload=b"x" * 200) for i in range(urls)]
    started = time.perf_counter()
    for i in range(0, urls, 1000):
        frontier.add(entries[i:i + 1000])
    adds_per_s = urls / (time.perf_counter() - started)
    log(f"ops: {urls} adds = {adds_per_s:.0f}/s")
    done = 0
    started = time.perf_counter()
    ok = Outcome(status=200, latency=0.01)
    while done < leases:
        batch = frontier.next_ready(100)
        if not batch:
            break
        for lease in batch:
            frontier.done(lease, ok)
        done += len(batch)
    leases_per_s = done / (time.perf_counter() - started)
    log(f"ops: {done} leases (lease + done) = {leases_per_s:.0f}/s")
    frontier.close()
    return {"adds_per_s": adds_per_s, "leases_per_s": leases_per_s}


class PreviousEncoding(RedisFrontier):
    """The Redis frontier as it stored entries before the compact layout: the full URL
    beside the payload, and every entry in its host's sorted set (no tail)."""

    def __init__(self, client: Redis, crawl: str, **options) -> None:
        super().__init__(client, crawl, host_head=2**31, **options)

    def _blob(self, entry: Entry) -> bytes:
        return entry.url.encode() + b"\n" + entry.payload


SECTIONS = ("news", "blog", "docs", "products", "forum", "wiki", "tag", "user")


def links(n: int, hosts: int, seed: int = 7) -> list[dict]:
    """``n`` links over ``hosts`` hosts (Zipf sizes): the ``to_dict`` fields the web spider's
    ``links_extracted`` queues for each (its link template: parse, fetch_failed, depth, and
    the linking page of the same host as Referer)."""
    rng = random.Random(seed)
    weights = [1 / (h + 1) for h in range(hosts)]
    last: dict[int, str] = {}
    out = []
    for i, h in enumerate(rng.choices(range(hosts), weights, k=n)):
        origin = f"https://www.site{h}.example"
        url = (f"{origin}/{rng.choice(SECTIONS)}/{rng.randrange(2010, 2026)}/"
               f"item-{i}-{rng.randrange(10**6)}.html")
        out.append({"url": url, "callback": "parse", "errback": "fetch_failed",
                    "meta": {"depth": rng.randrange(1, 6)},
                    "headers": {b"Referer": [last.get(h, origin + "/").encode()]}})
        last[h] = url
    return out


def _key_bytes(client: Redis) -> int:
    keys = list(client.scan_iter(count=1000))
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.memory_usage(key, samples=0)
    return sum(size or 0 for size in pipe.execute())


class _Spider:
    """The callbacks scrapy-redis's queue names when it serializes a request."""

    name = "web"

    def parse(self, response):  # pragma: no cover - never called
        """The web spider's page callback."""

    def fetch_failed(self, failure):  # pragma: no cover - never called
        """The web spider's errback."""


def frontier_memory(redis_url: str, n: int, hosts: int) -> dict[str, float]:
    """Bytes per queued link: the project's frontier, its previous encoding, scrapy-redis."""
    client = Redis.from_url(redis_url)
    fields = links(n, hosts)
    options = frontier_options(None, bloom_capacity=n, ip_limit=0, robots_first=False)
    result: dict[str, float] = {}
    for name, cls, encode in (
        ("frontier_bytes_per_url", RedisFrontier, lambda f: encode_request(f, f["url"])),
        ("frontier_bytes_per_url_previous", PreviousEncoding,
         lambda f: pickle.dumps(f, protocol=pickle.HIGHEST_PROTOCOL)),
    ):
        client.flushall()
        frontier = cls(Redis.from_url(redis_url), "mem", **options)
        started = time.perf_counter()
        added = 0  # all but the seen filter's false positives
        for i in range(0, n, 1000):
            added += frontier.add([
                Entry(f["url"], f["url"].split("/")[2], payload=encode(f),
                      rank=min(f["meta"]["depth"], 3)) for f in fields[i:i + 1000]])["added"]
        seconds = time.perf_counter() - started
        queued = frontier.pending()
        if queued != added:
            raise SystemExit(f"{name}: {queued} links queued, {added} added")
        result[name] = round(_key_bytes(client) / added, 1)
        result[name.replace("bytes_per_url", "adds_per_s")] = round(n / seconds)
        if cls is RedisFrontier:
            bloom_bytes = client.memory_usage(frontier.bloom_key, samples=0)
            result["frontier_bloom_bytes_per_url"] = round(bloom_bytes / added, 2)
        frontier.close()
        log(f"memory: {name} {result[name]} ({n / seconds:.0f} adds/s)")
    client.flushall()
    spider = _Spider()
    queue = PriorityQueue(client, spider, "web:requests")
    dupefilter = RFPDupeFilter(client, "web:dupefilter")
    started = time.perf_counter()
    for f in fields:
        request = Request(f["url"], callback=spider.parse, errback=spider.fetch_failed,
                          meta=f["meta"], headers=f["headers"])
        if not dupefilter.request_seen(request):
            queue.push(request)
    seconds = time.perf_counter() - started
    result["baseline_frontier_bytes_per_url"] = round(
        _key_bytes(client) / client.zcard("web:requests"), 1)
    result["baseline_frontier_adds_per_s"] = round(n / seconds)
    log(f"memory: scrapy-redis {result['baseline_frontier_bytes_per_url']} "
        f"({n / seconds:.0f} adds/s)")
    client.flushall()
    client.close()
    return result


def bloom(n: int) -> dict[str, float]:
    """Bytes per URL and measured FPR at 1% target, n added and n unseen probed."""
    filt = LocalBloom(None, n, 0.01)
    filt.add_many([f"http://seen{i % 9973}.test/p/{i}" for i in range(n)])
    fpr = float(filt.contains_many([f"http://new{i % 9973}.test/q/{i}" for i in range(n)]).mean())
    result = {"bloom_bytes_per_url": filt.nbytes / n, "bloom_fpr": fpr}
    log(f"bloom: {result['bloom_bytes_per_url']:.3f} bytes/URL, FPR {fpr:.4%} on {n} unseen")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=2000, help="test web hosts")
    parser.add_argument("--seconds", type=float, default=60.0, help="crawl time per side")
    parser.add_argument("--delay", type=float, default=0.5, help="per-host delay (s)")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="alternating rounds of both sides")
    parser.add_argument("--memory-urls", type=int, default=500_000,
                        help="links queued for the memory figures")
    parser.add_argument("--memory-only", action="store_true",
                        help="only the frontier memory figures (part 4)")
    parser.add_argument("--span-hosts", type=int, default=8,
                        help="hosts of the crawl to the end (span against the bound)")
    parser.add_argument("--span-pages", type=int, default=60, help="pages per host there")
    parser.add_argument("--span-delay", type=float, default=0.25, help="per-host delay there")
    parser.add_argument("--span-only", action="store_true",
                        help="only the crawl to the end (span_over_bound)")
    parser.add_argument("--quick", action="store_true", help="small sizes, for smoke runs")
    opts = parser.parse_args()
    urls, leases, bloom_n = 200_000, 50_000, 1_000_000
    if opts.quick:
        opts.hosts, opts.seconds = 200, 12.0
        urls, leases, bloom_n = 20_000, 5_000, 100_000
        opts.memory_urls = min(opts.memory_urls, 50_000)
    if opts.span_only:
        with tempfile.TemporaryDirectory(prefix="bench-frontier-") as tmp, \
                running_redis(Path(tmp) / "redis") as server, LoadSampler() as load:
            result = crawl_to_the_end(server.url, opts.span_hosts, opts.span_pages,
                                      opts.span_delay, Path(tmp) / "span")
        print(json.dumps({**result, "span_hosts": opts.span_hosts,
                          "span_pages": opts.span_pages, "span_delay": opts.span_delay,
                          "load_avg": load.summary()}))
        return
    if opts.memory_only:
        with tempfile.TemporaryDirectory(prefix="bench-frontier-") as tmp, \
                running_redis(Path(tmp) / "redis") as server, LoadSampler() as load:
            memory = frontier_memory(server.url, opts.memory_urls, MEMORY_HOSTS)
        print(json.dumps({**memory, "memory_urls": opts.memory_urls,
                          "memory_hosts": MEMORY_HOSTS, "load_avg": load.summary()}))
        return
    with tempfile.TemporaryDirectory(prefix="bench-frontier-") as tmp:
        workdir = Path(tmp)
        with running_redis(workdir / "redis") as server, LoadSampler() as load:
            def side(kind: str):
                return lambda round_no: crawl(kind, server.url, opts.hosts, opts.seconds,
                                              opts.delay, workdir / f"{kind}-{round_no}")

            runs = run_rounds({"project": side("frontier"), "baseline": side("scrapy-redis")},
                              opts.rounds)
            ends = crawl_to_the_end(server.url, opts.span_hosts, opts.span_pages,
                                    opts.span_delay, workdir / "span")
            ops = frontier_ops(server.url, urls, hosts=max(urls // 10, 1), leases=leases)
            memory = frontier_memory(server.url, opts.memory_urls, MEMORY_HOSTS)
    summary = side_by_side(runs, {"project": "", "baseline": "baseline_"}, load, digits=1)
    summary.update({
        "violations_definition": "the baseline's own: same-host overlap or sooner than "
                                 "DOWNLOAD_DELAY after the previous request started",
        **ends,
        "adds_per_s": round(ops["adds_per_s"]),
        "leases_per_s": round(ops["leases_per_s"]),
        **{k: round(v, 5) for k, v in bloom(bloom_n).items()},
        **memory,
        "memory_urls": opts.memory_urls,
        "memory_hosts": MEMORY_HOSTS,
        "settings": crawl_settings("frontier", opts.delay, opts.seconds),
        "baseline_settings": crawl_settings("scrapy-redis", opts.delay, opts.seconds),
        "hosts": opts.hosts,
    })
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
