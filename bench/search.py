"""Index test-web pages into Elasticsearch (1,000,000 by default), then time 1-3 word queries.

Elasticsearch: ``--docs`` generated pages (default 1,000,000), or as many as fit in
``--seconds`` (default 3,600), go through ``ElasticsearchBackend.index`` from ``--writers``
processes (each a crawl worker with its own bulk writer; bulk requests up to 2,000 pages or
15 MB), on a private single node started by scripts/services.sh (or ``--url``), the index
under ``BULK_LOAD_SETTINGS`` (no refreshes, async translog) while they write, as a reindex
builds its new index. Reported: docs/s (generation, Python analysis and
bulk, up to the final refresh), the force merge a reindex also runs before its index
serves (``merge_for_serving``: ``es_merge_s``, ``es_segments_per_shard``), primary store
bytes per document after it and a flush, and query
latency p50/p95/p99 through ``search()`` (hits, collapse, near-copy counts, snippets,
suggestions) from 1 client, and from 8 concurrent client processes (``*_8clients``).

Where the time goes, per query: ``*_took_p50_ms``/``*_took_p95_ms`` is the sum of
Elasticsearch's own ``took`` over the query's requests, ``*_client_p50_ms``/``_p95_ms`` the
rest of the wall time (building the request, the loopback, JSON, hits, snippets), and
``*_client_cpu_ms_per_query`` the client's CPU time (its thread's) per query;
``*_node_cpu_ms_per_query`` is the node's CPU time (its process counters) per query over
the 1-client timing.

Each page gets a cluster id, as the crawl's dedup stage gives every page one (its own when
it has no near-copies), so the near-copy counts (``ES_NEAR_COPY_COUNTS``) cost what they
cost on a crawled index, and a static rank skewed like PageRank (``static_rank``).
``es_requests_per_query`` is the backend's own count of round trips per ``search()``.

The baseline of the two-phase ranking (index/engines/elasticsearch/paging.py: the text query's top
matches rescored by the signals) is the one-pass ranking, ``ES_RERANK_DEPTH=0`` (``function_score``
over every match, server-side collapse): the same queries through it give
``onepass_p50_ms``... (the same figures, ``onepass_`` prefix), ``onepass_requests_per_query``
and how often the two agree on the first hit and the top 10 of the first 100 timed queries
(``onepass_same_first``, ``onepass_top10_overlap``).

Tiered index (``ES_TIERED``, index/engines/elasticsearch/tiers.py): tier 1 (the top 10% of the pages
by static rank) is published from the same index, and the same queries run through the tiered
backend beside the flat one: ``tiered_p50_ms``... (the same figures, ``tiered_`` prefix),
``fallthrough_rate`` (the share of queries tier 1 could not answer) and
``tiered_requests_per_query``.

The result cache (index/cache.py) is measured on a query log drawn from the same queries
with Zipf-distributed popularity (exponent ``--zipf``, 1.0 by default: the k-th most
popular query is asked 1/k as often as the first): the log is replayed through
``search()`` uncached and then through the cache (local LRU, ``SEARCH_CACHE_TTL``), giving
``cache_hit_rate``, ``cached_p95_ms`` and, side by side, ``uncached_zipf_p95_ms``.

Hedged requests (``ES_HEDGE``, index/engines/elasticsearch/hedge.py) are measured on the three-node
cluster of ``scripts/services.sh es2`` (two data nodes, 2 shards, 1 replica; ``--hedge-docs``
pages): 8 client processes run the queries hedged and unhedged, in alternating rounds,
while ``es2-b`` is stalled by SIGSTOP for ``--stall-s`` seconds of every ``--stall-s`` +
``--run-s`` (SIGCONT in between), giving ``hedged_p50/p95/p99_ms_8clients``,
``unhedged_p50/p95/p99_ms_8clients`` and the share of requests hedged (``hedge_rate``)
and won by the second attempt (``hedge_win_rate``). ``--hedge off`` skips it, ``--hedge
only`` runs it alone.

Side by side, the embedded backend indexes the same number of the same pages and runs the
same queries from 1 client. Each side indexes once; the query timing runs ``--rounds``
rounds (default 2) in alternating order, each latency figure is the median over the rounds
with its ``[min, max]`` under ``range``, and the load average is sampled every 5 s
(``load_avg``). Pages and queries come from bench/query.py's generators.

Indexing a million pages takes a while, so ``--keep-index`` (with ``--url``) leaves the
index (and its tier 1) in place with its indexing figures in its ``_meta``, and
``--reuse-index`` times the queries on it again.

    python -m bench.search            # 1,000,000 docs (at most an hour), 2,000 queries
    python -m bench.search --quick    # 5,000 docs, 300 queries

Progress goes to stderr; the last stdout line is one JSON object with ``docs``,
``es_index_docs_per_s``, ``es_bytes_per_doc``, ``es_p50_ms``, ``es_p95_ms``, ``es_p99_ms``,
``es_p95_ms_8clients``, ``es_requests_per_query``, ``cache_hit_rate``, ``cached_p95_ms``,
``uncached_zipf_p95_ms``, ``tiered_p95_ms``, ``fallthrough_rate``, ``embedded_p95_ms``,
``hedged_p99_ms_8clients`` and ``unhedged_p99_ms_8clients`` (plus the figures above).
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

from bench.query import dir_bytes, index_docs
from crawler.options import setting_default
from harness import log
from harness.documents import SEED, make_queries, page, static_rank
from harness.rounds import DEFAULT_ROUNDS, LoadSampler, run_rounds, side_by_side
from index.base import Document
from index.cache import CachedBackend, LocalResultCache
from index.engines.elasticsearch.backend import ElasticsearchBackend
from index.engines.elasticsearch.mapping import BULK_LOAD_SETTINGS, bulk_loading, merge_for_serving
from index.engines.embedded.backend import EmbeddedBackend

PREFIX = "bench-search"
#: Timed queries the two-phase and one-pass rankings are compared on (their first hits).
AGREEMENT_QUERIES = 100
_index_prefix = [PREFIX]  # --index-prefix
BATCH = 500
#: The writers' bulk requests: up to 2,000 pages or 15 MB (Elasticsearch's advice: a few
#: MB to tens of MB per request; 500 pages of ~8 KB each made many small round trips).
BULK_DOCS, BULK_BYTES = 2_000, 15_000_000



def cuts(samples: list[float]) -> dict[str, float]:
    q = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50": round(q[49], 3), "p95": round(q[94], 3), "p99": round(q[98], 3)}


def es_backend(url: str, spool: Path, **options) -> ElasticsearchBackend:
    return ElasticsearchBackend(url, index_prefix=_index_prefix[0], spool_dir=spool, **options)


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
    backend = es_backend(url, Path(spool) / str(worker), refresh_interval="30s",
                         bulk_docs=BULK_DOCS, bulk_bytes=BULK_BYTES)
    batch: list[Document] = []
    for i in range(worker, limit, writers):
        doc = page(i, hosts, static_rank(i))
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


def reused_index(url: str, work: Path) -> dict | None:
    """The indexing figures a kept index (``--keep-index``) recorded, or ``None``."""
    admin = es_backend(url, work / "spool-admin", refresh_interval="30s")
    try:
        if admin.current_index() is None:
            return None
        meta = admin.client.indices.get_mapping(index=admin.alias)
        recorded = next(iter(meta.values()))["mappings"].get("_meta", {}).get("bench")
        if not recorded or admin.stats()["docs"] != recorded["docs"]:
            return None
        log(f"es: reusing the kept index of {recorded['docs']} docs")
        return recorded
    finally:
        admin.close()


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
    # no refreshes and an async translog while the writers run (bulk_loading), as a
    # reindex builds its new index; refreshed under the serving settings at the end
    with bulk_loading(admin.client, admin.current_index(), admin.options.refresh_interval):
        for p in procs:
            p.start()
        while any(p.is_alive() for p in procs):
            time.sleep(5)
            elapsed = time.monotonic() - started
            log(f"  {counter.value} docs, {counter.value / elapsed:.0f} docs/s")
        for p in procs:
            p.join()
    elapsed = time.monotonic() - started
    # merged as a reindex merges its new index before it serves (merge_for_serving)
    merging = time.monotonic()
    segments = merge_for_serving(admin.client, admin.current_index())
    merge_s = time.monotonic() - merging
    admin.client.indices.flush(index=admin.alias)
    stats = admin.stats()
    docs = stats["docs"]
    assert docs == counter.value, (docs, counter.value)
    log(f"es: {docs} docs in {elapsed:.0f} s ({docs / elapsed:.0f} docs/s), merged to "
        f"{segments} segment(s) in {merge_s:.0f} s, {stats['bytes']} bytes")
    figures = {"docs": docs, "docs_per_s": docs / elapsed, "bytes": stats["bytes"],
               "hosts": hosts, "merge_s": round(merge_s, 1), "segments": segments}
    # recorded with the index, so a later run with --reuse-index reports them
    admin.client.indices.put_mapping(index=admin.alias, meta={"bench": figures})
    admin.close()
    return figures


class Timed:
    """Per query: wall ms, this thread's CPU ms and Elasticsearch's own ``took`` ms."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.took: list[float] = []

    def extend(self, other: Timed) -> None:
        self.wall += other.wall
        self.cpu += other.cpu
        self.took += other.took


def tier1_ready(url: str, work: Path) -> dict:
    """Tier 1 of the bench index (``ES_TIERED``): published from it unless a kept index
    has one already; its size and build time."""
    backend = es_backend(url, work / "spool-tier", tiered=True)
    try:
        started = time.monotonic()
        built = backend.tier1.min_rank(fresh=True) is None
        if built:
            log("tiered: publishing tier 1 (the top 10% by static rank)")
            backend.publish_tiers()
        pages = backend.client.count(index=backend.tier1.alias)["count"]
        log(f"tiered: tier 1 holds {pages} pages, static rank >= {backend.tier1.min_rank()}")
        return {"tier1_docs": pages,
                "tier1_build_s": round(time.monotonic() - started, 1) if built else None}
    finally:
        backend.close()


def time_queries(search, queries: list[str], warmup: int, took=None) -> Timed:
    """Time ``search`` over ``queries`` after ``warmup`` untimed ones; ``took()`` gives the
    backend's running sum of Elasticsearch's ``took``."""
    for q in queries[:warmup]:
        search(q)
    timed = Timed()
    for done, q in enumerate(queries[warmup:], 1):
        before = took() if took else 0
        t, c = time.perf_counter(), time.thread_time()
        search(q)
        timed.wall.append((time.perf_counter() - t) * 1000)
        timed.cpu.append((time.thread_time() - c) * 1000)
        if took:
            timed.took.append(took() - before)
        if done % 500 == 0:
            log(f"  {done} queries")
    return timed


def _search_es(backend: ElasticsearchBackend):
    return lambda q: backend.search(q, page=1, size=10)


def _took(backend: ElasticsearchBackend):
    return lambda: backend.requests.took_ms


def _client(url: str, spool: str, queries: list[str], warmup: int, out, options: dict) -> None:
    backend = es_backend(url, Path(spool), **options)
    out.put(time_queries(_search_es(backend), queries, warmup, _took(backend)))
    backend.client.close()


def es_cpu_ms(url: str) -> float:
    """CPU milliseconds the Elasticsearch node processes have used so far."""
    from elasticsearch import Elasticsearch

    client = Elasticsearch(url.split(","))
    try:
        nodes = client.nodes.stats(metric="process")["nodes"].values()
        return float(sum(n["process"]["cpu"]["total_in_millis"] for n in nodes))
    finally:
        client.close()


def query_es(url: str, work: Path, queries: list[str], warmup: int, clients: int,
             stats: dict | None = None, options: dict | None = None) -> Timed:
    options = options or {}
    if clients == 1:
        backend = es_backend(url, work / "spool-q", **options)
        timed = time_queries(_search_es(backend), queries, warmup, _took(backend))
        if stats is not None:
            stats.update(backend.requests.stats())
            stats.update(backend.tier1.stats())
        backend.client.close()
        return timed
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
                options,
            ),
        )
        for c in range(clients)
    ]
    for p in procs:
        p.start()
    timed = Timed()
    for _ in procs:
        timed.extend(out.get())
    for p in procs:
        p.join()
    return timed


def agreement(url: str, work: Path, queries: list[str], options: dict, baseline: dict,
              prefix: str) -> dict[str, float]:
    """How often ``options`` and ``baseline`` give the same first hit, and the share of the
    top 10 they share, over ``queries`` (page 1, size 10)."""
    ours = es_backend(url, work / "spool-agree", **options)
    theirs = es_backend(url, work / "spool-agree-b", **baseline)
    try:
        first = shared = 0.0
        for query in queries:
            a = [h.id for h in ours.search(query, page=1, size=10).hits]
            b = [h.id for h in theirs.search(query, page=1, size=10).hits]
            first += a[:1] == b[:1]
            shared += len(set(a) & set(b)) / max(1, len(b))
        n = max(1, len(queries))
        return {f"{prefix}same_first": round(first / n, 4),
                f"{prefix}top10_overlap": round(shared / n, 4)}
    finally:
        ours.close()
        theirs.close()


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
    uncached = time_queries(search, log_queries, 0).wall
    cached = CachedBackend(backend, LocalResultCache(ttl=ttl))
    log(f"cache: the same log through the result cache (TTL {ttl:g} s)")
    with_cache = time_queries(lambda q: cached.search(q, page=1, size=10), log_queries, 0).wall
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
    docs = (page(i, hosts, static_rank(i)) for i in range(n))
    elapsed = index_docs(backend, docs, report_every=20_000)
    assert backend.stats()["docs"] == n, backend.stats()
    log(f"embedded: {n / elapsed:.0f} docs/s")
    return backend, {
        "embedded_index_docs_per_s": round(n / elapsed, 1),
        "embedded_bytes_per_doc": round(dir_bytes(path) / n, 1),
    }


def _ms(cut: dict[str, float], suffix: str = "") -> dict[str, float]:
    return {f"{k}_ms{suffix}": v for k, v in cut.items()}


def figures(timed: Timed, suffix: str = "") -> dict[str, float]:
    """Latency cuts of ``timed`` and where the time went: Elasticsearch's ``took``, the
    rest (client side: request building, JSON, hits, snippets; and the loopback), and the
    client's CPU per query."""
    out = _ms(cuts(timed.wall), suffix)
    if timed.took:
        took = cuts(timed.took)
        rest = cuts([w - t for w, t in zip(timed.wall, timed.took, strict=True)])
        out.update({f"took_p50_ms{suffix}": took["p50"], f"took_p95_ms{suffix}": took["p95"],
                    f"client_p50_ms{suffix}": rest["p50"],
                    f"client_p95_ms{suffix}": rest["p95"]})
    out[f"client_cpu_ms_per_query{suffix}"] = round(statistics.fmean(timed.cpu), 3)
    return out


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
        out.put((samples.wall, backend.requests.stats()))
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
    parser.add_argument("--seconds", type=float, help="indexing time budget (default 3,600)")
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
    parser.add_argument("--keep-index", action="store_true",
                        help="leave the Elasticsearch index in place at the end (with --url)")
    parser.add_argument("--reuse-index", action="store_true",
                        help="time queries on an index a --keep-index run left (with --url)")
    parser.add_argument("--tier1-min-hits", type=int,
                        default=setting_default("ES_TIER1_MIN_HITS"),
                        help="good results tier 1 needs to answer (ES_TIER1_MIN_HITS)")
    parser.add_argument("--index-prefix", default=PREFIX,
                        help=f"the bench index's alias (default {PREFIX})")
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
    _index_prefix[0] = args.index_prefix  # the client processes are forked: theirs too
    limit = args.docs or (5_000 if args.quick else 1_000_000)
    seconds = args.seconds or (120.0 if args.quick else 3600.0)
    if (args.keep_index or args.reuse_index) and not args.url:
        parser.error("--keep-index and --reuse-index need --url")
    timed = args.queries or (300 if args.quick else 2_000)
    warmup = 80
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
        es = reused_index(url, work) if args.reuse_index else None
        if es is not None and es["hosts"] != args.hosts:
            sys.exit(f"the kept index has {es['hosts']} hosts, not --hosts {args.hosts}")
        es = es or index_es(url, work, limit, seconds, args.writers, args.hosts)
        n = es["docs"]
        queries = make_queries(n, timed + warmup)
        result: dict = {
            "docs": n,
            "es_index_docs_per_s": round(es["docs_per_s"], 1),
            "es_bytes_per_doc": round(es["bytes"] / n, 1),
            "es_merge_s": es.get("merge_s"),
            "es_segments_per_shard": es.get("segments"),
        }
        flat = {"tiered": False}
        onepass = {"tiered": False, "rerank_depth": 0}
        tiered = {"tiered": True, "tier1_min_hits": args.tier1_min_hits}
        result.update(tier1_ready(url, work))
        result.update(agreement(url, work, queries[warmup : warmup + AGREEMENT_QUERIES],
                                flat, onepass, "onepass_"))
        requests: dict = {}
        onepass_requests: dict = {}
        tier_requests: dict = {}

        def timing(options: dict, stats: dict, name: str):
            def side(_: int) -> dict[str, float]:
                log(f"{name}: timing {timed} queries, 1 client")
                cpu = es_cpu_ms(url)
                one = query_es(url, work, queries, warmup, 1, stats, options)
                one_cpu = es_cpu_ms(url) - cpu
                log(f"{name}: timing {timed} queries, 8 clients")
                eight = query_es(url, work, queries, warmup, 8, None, options)
                # over the warm-up queries too: the node's counter cannot tell them apart
                return {**figures(one),
                        "node_cpu_ms_per_query": round(one_cpu / len(queries), 3),
                        **figures(eight, "_8clients")}
            return side

        es_round = timing(flat, requests, "es")
        sides = {"es": es_round, "onepass": timing(onepass, onepass_requests, "onepass"),
                 "tiered": timing(tiered, tier_requests, "tiered")}
        if not args.no_embedded:
            embedded, embedded_figures = index_embedded(n, args.hosts, work)
            result.update(embedded_figures)

            def embedded_round(_: int) -> dict[str, float]:
                log(f"embedded: timing {timed} queries, 1 client")
                return figures(time_queries(lambda q: embedded.search(q, page=1, size=10),
                                            queries, warmup))

            sides["embedded"] = embedded_round
        with LoadSampler() as load:
            runs = run_rounds(sides, args.rounds)
        if not args.no_embedded:
            embedded.close()
        result.update(side_by_side(runs, {"es": "es_", "onepass": "onepass_",
                                          "tiered": "tiered_", "embedded": "embedded_"},
                                   load, 3))
        result["onepass_requests_per_query"] = onepass_requests["search/requests_per_query"]
        result["fallthrough_rate"] = tier_requests["tier/fallthrough_rate"]
        result["tiered_requests_per_query"] = tier_requests["search/requests_per_query"]
        result["es_requests_per_query"] = requests["search/requests_per_query"]
        result["es_took_ms_per_query"] = round(
            requests["search/took_ms"] / requests["search/queries"], 3)
        ttl = float(setting_default("SEARCH_CACHE_TTL")) or 30.0
        log_queries = zipf_log(queries, args.log_queries or 2 * timed, args.zipf)
        result.update(bench_cache(url, work, log_queries, ttl))
        if not args.keep_index:
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
        "writers": args.writers, "bulk_batch": BATCH, "bulk_docs": BULK_DOCS,
        "bulk_bytes": BULK_BYTES, "refresh_interval": "30s",
        "while_indexing": BULK_LOAD_SETTINGS,
        "search": "ElasticsearchBackend.search(q, page=1, size=10)",
    }
    result["tiered_settings"] = {"ES_TIERED": True, "ES_TIER1_SHARE": setting_default(
        "ES_TIER1_SHARE"), "ES_TIER1_MIN_HITS": args.tier1_min_hits}
    result["embedded_settings"] = {"search": "EmbeddedBackend.search(q, page=1, size=10)"}
    result["queries"] = timed
    result["cpus"] = os.cpu_count()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
