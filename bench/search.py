"""Index test-web pages into Elasticsearch for a time budget, then time 1-3 word queries.

Elasticsearch: as many generated pages as fit in ``--seconds`` (default 600; aim 1,000,000)
go through ``ElasticsearchBackend.index`` from ``--writers`` processes (each a crawl worker
with its own bulk writer), on a private single node started by scripts/services.sh (or
``--url``). Reported: docs/s (generation, Python analysis and bulk, up to the final refresh),
primary store bytes per document after a flush, and query latency p50/p95/p99 through
``search()`` (hits, collapse, snippets, suggestions) from 1 client, and p95 from 8 concurrent
client processes.

Each page gets a cluster id, as the crawl's dedup stage gives every page one (its own when
it has no near-copies), so the near-copy counts (``ES_NEAR_COPY_COUNTS``) cost what they
cost on a crawled index.
``es_requests_per_query`` is the backend's own count of round trips per ``search()``.

The result cache (index/cache.py) is measured on a query log drawn from the same queries
with Zipf-distributed popularity (exponent ``--zipf``, 1.0 by default: the k-th most
popular query is asked 1/k as often as the first): the log is replayed through
``search()`` uncached and then through the cache (local LRU, ``SEARCH_CACHE_TTL``), giving
``cache_hit_rate``, ``cached_p95_ms`` and, side by side, ``uncached_zipf_p95_ms``.

Hedged requests (``ES_HEDGE``, index/es_hedge.py) are measured on the three-node cluster
of ``scripts/services.sh es2`` (two data nodes, 2 shards, 1 replica; ``--hedge-docs``
pages): 8 client processes run the queries hedged and unhedged, in alternating rounds,
while ``es2-b`` is stalled by SIGSTOP for ``--stall-s`` seconds of every ``--stall-s`` +
``--run-s`` (SIGCONT in between), giving ``hedged_p50/p95/p99_ms_8clients``,
``unhedged_p50/p95/p99_ms_8clients`` and the share of requests hedged (``hedge_rate``)
and won by the second attempt (``hedge_win_rate``). ``--hedge off`` skips it, ``--hedge
only`` runs it alone.

Side by side, the embedded backend indexes the same number of the same pages and runs the
same queries from 1 client. Each side indexes once; the query timing runs ``--rounds``
rounds (default 2) in alternating order (Elasticsearch then embedded, then the other way
round), each latency figure is the median over the rounds with its ``[min, max]`` under
``range``, and the load average is sampled every 5 s (``load_avg``). Pages and queries come
from bench/query.py's generators.

    python -m bench.search            # 10 minutes of indexing, 2,000 queries
    python -m bench.search --quick    # 5,000 docs, 300 queries

Progress goes to stderr; the last stdout line is one JSON object with ``docs``,
``es_index_docs_per_s``, ``es_bytes_per_doc``, ``es_p50_ms``, ``es_p95_ms``, ``es_p99_ms``,
``es_p95_ms_8clients``, ``es_requests_per_query``, ``cache_hit_rate``, ``cached_p95_ms``,
``uncached_zipf_p95_ms``, ``embedded_p95_ms``, ``hedged_p99_ms_8clients`` and
``unhedged_p99_ms_8clients`` (plus a few more figures).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.query import (
    SEED,
    dir_bytes,
    generate,
    index_generated,
    make_queries,
    title_for,
)
from crawler.options import setting_default
from crawler.urls import doc_id_for
from harness import log
from harness.rounds import DEFAULT_ROUNDS, LoadSampler, run_rounds, side_by_side
from index.base import Document
from index.cache import CachedBackend, LocalResultCache
from index.elasticsearch import ElasticsearchBackend
from index.embedded import EmbeddedBackend
from testweb import text

PREFIX = "bench-search"
BATCH = 500



def cuts(samples: list[float]) -> dict[str, float]:
    q = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50": round(q[49], 3), "p95": round(q[94], 3), "p99": round(q[98], 3)}


def page(i: int, hosts: int) -> Document:
    """Page ``i`` of bench/query.py's ``generate``, made alone so writers can split the work."""
    rng = text.rng_for(SEED, i)
    host = f"host{i % hosts}.test"
    url = f"http://{host}/p/{i // hosts}"
    title = title_for(rng)
    paragraphs = []
    for _ in range(text.between(rng, 4, 10)):
        sentences = []
        for _ in range(text.between(rng, 3, 5)):
            sentences.append(" ".join(text.sentence(rng)).capitalize() + ".")
        paragraphs.append(" ".join(sentences))
    anchors = " ".join(" ".join(text.words(rng, 3)) for _ in range(text.between(rng, 0, 4)))
    return Document(
        id=doc_id_for(url),
        url=url,
        host=host,
        title=title,
        body="\n\n".join(paragraphs),
        anchors=anchors,
        fetched_at=1_760_000_000.0 + i,
    )


def es_backend(url: str, spool: Path, **options) -> ElasticsearchBackend:
    return ElasticsearchBackend(url, index_prefix=PREFIX, spool_dir=spool, **options)


def _write(
    url: str,
    spool: str,
    worker: int,
    writers: int,
    limit: int,
    hosts: int,
    deadline: float,
    counter,
) -> None:
    """One writer process: pages worker, worker+writers, ... until the limit or the deadline."""
    backend = es_backend(url, Path(spool) / str(worker), refresh_interval="30s")
    batch: list[Document] = []
    for i in range(worker, limit, writers):
        doc = page(i, hosts)
        doc.cluster_id = doc.id  # what dedup gives a page without near-copies
        batch.append(doc)
        if len(batch) == BATCH:
            backend.index(batch)
            with counter.get_lock():
                counter.value += len(batch)
            batch = []
            if time.monotonic() >= deadline:
                break
    if batch and time.monotonic() < deadline:
        backend.index(batch)
        with counter.get_lock():
            counter.value += len(batch)
    backend.writer.close(timeout_s=None)


def index_es(url: str, work: Path, limit: int, seconds: float, writers: int, hosts: int) -> dict:
    admin = es_backend(url, work / "spool-admin", refresh_interval="30s")
    admin.drop()
    admin = es_backend(url, work / "spool-admin", refresh_interval="30s")
    admin.ensure_index()
    log(f"es: indexing for up to {seconds:.0f} s or {limit} docs with {writers} writer(s)")
    counter = mp.Value("q", 0)
    started = time.monotonic()
    deadline = started + seconds
    procs = [
        mp.Process(
            target=_write,
            args=(url, str(work / "spool"), w, writers, limit, hosts, deadline, counter),
        )
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    while any(p.is_alive() for p in procs):
        time.sleep(5)
        elapsed = time.monotonic() - started
        log(f"  {counter.value} docs, {counter.value / elapsed:.0f} docs/s")
    for p in procs:
        p.join()
    admin.refresh()
    elapsed = time.monotonic() - started
    admin.client.indices.flush(index=admin.alias)
    stats = admin.stats()
    docs = stats["docs"]
    assert docs == counter.value, (docs, counter.value)
    log(f"es: {docs} docs in {elapsed:.0f} s ({docs / elapsed:.0f} docs/s), {stats['bytes']} bytes")
    admin.close()
    return {"docs": docs, "docs_per_s": docs / elapsed, "bytes": stats["bytes"]}


def time_queries(search, queries: list[str], warmup: int) -> list[float]:
    for q in queries[:warmup]:
        search(q)
    samples = []
    for done, q in enumerate(queries[warmup:], 1):
        t = time.perf_counter()
        search(q)
        samples.append((time.perf_counter() - t) * 1000)
        if done % 500 == 0:
            log(f"  {done} queries")
    return samples


def _client(url: str, spool: str, queries: list[str], warmup: int, out) -> None:
    backend = es_backend(url, Path(spool))
    out.put(time_queries(lambda q: backend.search(q, page=1, size=10), queries, warmup))
    backend.client.close()


def query_es(url: str, work: Path, queries: list[str], warmup: int, clients: int,
             stats: dict | None = None) -> list[float]:
    if clients == 1:
        backend = es_backend(url, work / "spool-q")
        samples = time_queries(lambda q: backend.search(q, page=1, size=10), queries, warmup)
        if stats is not None:
            stats.update(backend.requests.stats())
        backend.client.close()
        return samples
    out: mp.Queue = mp.Queue()
    share = max(1, len(queries) // clients)
    procs = [
        mp.Process(
            target=_client,
            args=(
                url,
                str(work / f"spool-c{c}"),
                queries[c * share : (c + 1) * share],
                warmup // clients,
                out,
            ),
        )
        for c in range(clients)
    ]
    for p in procs:
        p.start()
    samples = [s for _ in procs for s in out.get()]
    for p in procs:
        p.join()
    return samples


def zipf_log(queries: list[str], length: int, exponent: float) -> list[str]:
    """``length`` queries drawn from the distinct ``queries`` with Zipf popularity."""
    pool = list(dict.fromkeys(queries))
    weights = [1.0 / (rank ** exponent) for rank in range(1, len(pool) + 1)]
    return random.Random(SEED).choices(pool, weights=weights, k=length)


def bench_cache(url: str, work: Path, log_queries: list[str], ttl: float) -> dict:
    """The Zipf log through ``search()`` uncached, then through the result cache."""
    backend = es_backend(url, work / "spool-cache")
    search = lambda q: backend.search(q, page=1, size=10)  # noqa: E731
    log(f"cache: {len(log_queries)} Zipf-distributed queries uncached")
    uncached = time_queries(search, log_queries, 0)
    cached = CachedBackend(backend, LocalResultCache(ttl=ttl))
    log(f"cache: the same log through the result cache (TTL {ttl:g} s)")
    with_cache = time_queries(lambda q: cached.search(q, page=1, size=10), log_queries, 0)
    stats = cached.cache.stats()
    backend.client.close()
    return {
        "cache_hit_rate": stats["cache/hit_rate"],
        "cached_p50_ms": cuts(with_cache)["p50"],
        "cached_p95_ms": cuts(with_cache)["p95"],
        "uncached_zipf_p50_ms": cuts(uncached)["p50"],
        "uncached_zipf_p95_ms": cuts(uncached)["p95"],
        "zipf_queries": len(log_queries),
        "zipf_distinct": len(set(log_queries)),
    }


def index_embedded(n: int, hosts: int, work: Path) -> tuple[EmbeddedBackend, dict]:
    """The same ``n`` pages in a fresh embedded index: the backend and its index figures."""
    path = work / "tantivy"
    backend = EmbeddedBackend(path)
    backend.ensure_index()
    log(f"embedded: indexing {n} docs")
    elapsed = index_generated(backend, n, hosts, report_every=20_000)
    assert backend.stats()["docs"] == n, backend.stats()
    log(f"embedded: {n / elapsed:.0f} docs/s")
    return backend, {
        "embedded_index_docs_per_s": round(n / elapsed, 1),
        "embedded_bytes_per_doc": round(dir_bytes(path) / n, 1),
    }


def _ms(cut: dict[str, float], suffix: str = "") -> dict[str, float]:
    return {f"{k}_ms{suffix}": v for k, v in cut.items()}


# --- hedged requests with a data node stalled (ES_HEDGE) --------------------------------------

HEDGE_NODES = ["es2-a", "es2-b", "es2-c"]
STALLED = "es2-b"


def _stall_bursts(cluster, stall_s: float, run_s: float, stop) -> None:
    """SIGSTOP ``STALLED`` for ``stall_s``, let it run ``run_s``, until ``stop`` is set."""
    while not stop.wait(run_s):
        cluster.pause(STALLED)
        try:
            stop.wait(stall_s)
        finally:
            cluster.resume(STALLED)


def _hedge_client(url: str, spool: str, queries: list[str], warmup: int, hedge: bool,
                  delay_s: float, out) -> None:
    backend = es_backend(url, Path(spool), hedge=hedge, hedge_delay_s=delay_s)
    try:
        samples = time_queries(lambda q: backend.search(q, page=1, size=10), queries, warmup)
        out.put((samples, backend.requests.stats()))
    except Exception as exc:  # the parent says which query failed, instead of waiting
        out.put((None, repr(exc)))
        raise
    finally:
        backend.close()


def bench_hedge(work: Path, limit: int, seconds: float, writers: int, hosts: int,
                timed: int, rounds: int, stall_s: float, run_s: float,
                delay_s: float | None = None) -> dict:
    """p50/p95/p99 at 8 clients, hedged and not, on the three-node cluster of services.sh
    es2 (two data nodes, one replica) while ``es2-b`` is stalled in SIGSTOP/SIGCONT bursts;
    ``delay_s``: the hedge delay (default ``ES_HEDGE_DELAY_S``)."""
    import threading

    from harness.services import EsProcesses

    if delay_s is None:
        delay_s = float(setting_default("ES_HEDGE_DELAY_S"))
    cluster = EsProcesses("es2", HEDGE_NODES)
    log(f"hedge: starting the three-node cluster under {cluster.run_dir}")
    try:
        cluster.start()
        es = index_es(cluster.url, work / "hedge", limit, seconds, writers, hosts)
        cluster.health(wait_for_status="green", timeout="120s")
        queries = make_queries(es["docs"], timed + 80)
        counts: dict[str, list[dict]] = {"hedged": [], "unhedged": []}

        def side(hedge: bool):
            name = "hedged" if hedge else "unhedged"

            def timed_round(_: int) -> dict[str, float]:
                log(f"hedge: {timed} queries from 8 clients, {name}, {STALLED} stalled "
                    f"{stall_s:g} s of every {stall_s + run_s:g} s")
                out: mp.Queue = mp.Queue()
                share = max(1, timed // 8)
                procs = [mp.Process(target=_hedge_client, args=(
                    cluster.url, str(work / f"spool-h{c}"), queries[c * share:(c + 1) * share],
                    10, hedge, delay_s, out)) for c in range(8)]
                stop = threading.Event()
                staller = threading.Thread(target=_stall_bursts,
                                           args=(cluster, stall_s, run_s, stop))
                for proc in procs:
                    proc.start()
                staller.start()
                try:
                    results = [out.get() for _ in procs]
                finally:
                    stop.set()
                    staller.join()
                for proc in procs:
                    proc.join()
                failed = [stats for samples, stats in results if samples is None]
                if failed:
                    raise RuntimeError(f"hedge: a client failed: {failed[0]}")
                samples = [x for r, _ in results for x in r]
                stats = [s for _, s in results]
                counts[name].append({k: sum(s.get(k, 0) for s in stats) for k in (
                    "search/requests", "search/hedged", "search/hedge_wins")})
                return _ms(cuts(samples), "_8clients")
            return timed_round

        with LoadSampler() as load:
            runs = run_rounds({"hedged": side(True), "unhedged": side(False)}, rounds)
        figures = side_by_side(runs, {"hedged": "hedged_", "unhedged": "unhedged_"}, load, 3)
        hedged = counts["hedged"]
        requests = sum(c["search/requests"] for c in hedged) or 1
        return {
            **{k: v for k, v in figures.items() if k.startswith(("hedged_", "unhedged_"))},
            "hedge_range": figures["range"],
            "hedge_load_avg": figures["load_avg"],
            "hedge_docs": es["docs"],
            "hedge_rate": round(sum(c["search/hedged"] for c in hedged) / requests, 4),
            "hedge_win_rate": round(sum(c["search/hedge_wins"] for c in hedged) / requests, 4),
            "hedge_settings": {
                "cluster": "services.sh es2: es2-a, es2-b (data), es2-c (master only); "
                           "2 shards, 1 replica",
                "stalled": STALLED, "stall_s": stall_s, "run_s": run_s,
                "hedge_delay_s": delay_s, "clients": 8, "queries": timed,
                "rounds": figures["rounds"],
            },
        }
    finally:
        cluster.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 docs, 300 queries")
    parser.add_argument("--docs", type=int, help="most documents to index (default 1,000,000)")
    parser.add_argument("--seconds", type=float, help="indexing time budget (default 600)")
    parser.add_argument("--queries", type=int, help="timed queries (default 2,000)")
    parser.add_argument("--writers", type=int, default=2, help="Elasticsearch writer processes")
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--url", help="use this Elasticsearch instead of a private node")
    parser.add_argument("--no-embedded", action="store_true", help="skip the embedded side")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="alternating rounds of query timing on both sides")
    parser.add_argument("--zipf", type=float, default=1.0,
                        help="exponent of the cached query log's popularity (default 1.0)")
    parser.add_argument("--log-queries", type=int,
                        help="length of the Zipf query log (default: 2 x --queries)")
    parser.add_argument("--hedge", choices=("on", "off", "only"), default="on",
                        help="the hedged-requests section on a three-node cluster with a "
                             "data node stalled in bursts: on (default), off, or only it")
    parser.add_argument("--hedge-docs", type=int,
                        help="documents of the hedged section's index (default 50,000; "
                             "5,000 with --quick)")
    parser.add_argument("--stall-s", type=float, default=1.0,
                        help="seconds of each SIGSTOP of the stalled node (default 1)")
    parser.add_argument("--run-s", type=float, default=2.0,
                        help="seconds it runs between stalls (default 2)")
    parser.add_argument("--hedge-delay-s", type=float,
                        help="the hedge delay (default: the ES_HEDGE_DELAY_S setting)")
    args = parser.parse_args()
    limit = args.docs or (5_000 if args.quick else 1_000_000)
    seconds = args.seconds or (120.0 if args.quick else 600.0)
    timed = args.queries or (300 if args.quick else 2_000)
    warmup = 80
    assert page(7, args.hosts) == list(generate(8, args.hosts))[7], "pages differ from bench/query"
    work = Path(tempfile.mkdtemp(prefix="bench-search-"))
    hedge_args = (args.hedge_docs or (5_000 if args.quick else 50_000), seconds, args.writers,
                  args.hosts, timed, args.rounds, args.stall_s, args.run_s,
                  args.hedge_delay_s)
    if args.hedge == "only":
        try:
            result = bench_hedge(work, *hedge_args)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        result["cpus"] = os.cpu_count()
        print(json.dumps(result))
        return
    node = None
    try:
        url = args.url
        if url is None:
            from harness.services import EsProcesses, not_installed_reason

            reason = not_installed_reason()
            if reason:
                sys.exit(reason)
            node = EsProcesses("es", ["es"])
            log(f"es: starting a private node under {node.run_dir}")
            node.start()
            url = node.url
        es = index_es(url, work, limit, seconds, args.writers, args.hosts)
        n = es["docs"]
        queries = make_queries(n, timed + warmup)
        result: dict = {
            "docs": n,
            "es_index_docs_per_s": round(es["docs_per_s"], 1),
            "es_bytes_per_doc": round(es["bytes"] / n, 1),
        }
        requests: dict = {}

        def es_round(_: int) -> dict[str, float]:
            log(f"es: timing {timed} queries, 1 client")
            one = cuts(query_es(url, work, queries, warmup, 1, requests))
            log(f"es: timing {timed} queries, 8 clients")
            eight = cuts(query_es(url, work, queries, warmup, 8))
            return {**_ms(one), **_ms(eight, "_8clients")}

        sides = {"es": es_round}
        if not args.no_embedded:
            embedded, figures = index_embedded(n, args.hosts, work)
            result.update(figures)

            def embedded_round(_: int) -> dict[str, float]:
                log(f"embedded: timing {timed} queries, 1 client")
                return _ms(cuts(time_queries(lambda q: embedded.search(q, page=1, size=10),
                                             queries, warmup)))

            sides["embedded"] = embedded_round
        with LoadSampler() as load:
            runs = run_rounds(sides, args.rounds)
        if not args.no_embedded:
            embedded.close()
        result.update(side_by_side(runs, {"es": "es_", "embedded": "embedded_"}, load, 3))
        result["es_requests_per_query"] = requests["search/requests_per_query"]
        ttl = float(setting_default("SEARCH_CACHE_TTL")) or 30.0
        log_queries = zipf_log(queries, args.log_queries or 2 * timed, args.zipf)
        result.update(bench_cache(url, work, log_queries, ttl))
        es_backend(url, work / "spool-admin").drop()
    finally:
        if node is not None:
            node.cleanup()
    try:
        if args.hedge == "on":
            result.update(bench_hedge(work, *hedge_args))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result["writers"] = args.writers
    result["es_settings"] = {
        "node": args.url or "private single node (scripts/services.sh es)",
        "writers": args.writers, "bulk_batch": BATCH, "refresh_interval": "30s",
        "search": "ElasticsearchBackend.search(q, page=1, size=10)",
    }
    result["embedded_settings"] = {"search": "EmbeddedBackend.search(q, page=1, size=10)"}
    result["queries"] = timed
    result["cpus"] = os.cpu_count()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
