"""Index N generated pages into the embedded backend and time 1-3 word queries through search().

Side by side in the same run, the same pages go into SQLite FTS5 (porter stemming, bm25 with
the title weighted up, ``snippet()`` for highlighting, ``count(*)`` for the total), the
obvious alternative engine for an embedded index.

Pages come from the test web's Zipf text generator (``testweb.text``): a title, a body of
paragraphs, anchor text, a URL on one of many hosts. Queries are 1-3 words drawn from titles
of indexed pages, so they match a realistic spread of documents, from a few to most.

    python bench/query.py            # N = 100,000
    python bench/query.py --quick    # N = 5,000

Progress goes to stderr; the last stdout line is one JSON object with ``docs``,
``index_docs_per_s``, ``query_p50_ms``, ``query_p95_ms`` and the ``fts5_*`` figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawler.urls import doc_id_for  # noqa: E402
from index.analysis import STOPWORDS  # noqa: E402
from index.base import Document  # noqa: E402
from index.embedded import EmbeddedBackend  # noqa: E402
from testweb import text  # noqa: E402

SEED = 20261129


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def generate(n: int, hosts: int) -> Iterator[Document]:
    """n deterministic pages shaped like the test web's articles."""
    for i in range(n):
        rng = text.rng_for(SEED, i)
        host = f"host{i % hosts}.test"
        url = f"http://{host}/p/{i // hosts}"
        title = title_for(rng)
        paragraphs = []
        for _ in range(text.between(rng, 4, 10)):
            sentences = []
            for _ in range(text.between(rng, 3, 5)):
                ws = text.sentence(rng)
                sentences.append(" ".join(ws).capitalize() + ".")
            paragraphs.append(" ".join(sentences))
        anchors = " ".join(" ".join(text.words(rng, 3)) for _ in range(text.between(rng, 0, 4)))
        yield Document(
            id=doc_id_for(url),
            url=url,
            host=host,
            title=title,
            body="\n\n".join(paragraphs),
            anchors=anchors,
            fetched_at=1_760_000_000.0 + i,
            cluster_id="",
        )


def title_for(rng: random.Random) -> str:
    """A page title: the first draws of the page's generator."""
    return text.title_case(text.words(rng, text.between(rng, 3, 7)))


def make_queries(n_docs: int, count: int) -> list[str]:
    """1-3 word queries from the titles of random indexed pages (stopwords skipped)."""
    rng = random.Random(SEED)
    queries = []
    while len(queries) < count:
        title = title_for(text.rng_for(SEED, rng.randrange(n_docs)))
        words = [w for w in title.lower().split() if w not in STOPWORDS]
        if not words:
            continue
        k = min(len(words), 1 + len(queries) % 3)
        queries.append(" ".join(rng.sample(words, k)))
    return queries


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def percentiles(samples: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return round(cuts[49], 3), round(cuts[94], 3)


def time_queries(run, queries: list[str], warmup: int) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of each query after ``warmup`` untimed ones.

    The CPU time (this thread's) shows the cost without the other processes that share the
    machine; the wall time is the latency a user sees.
    """
    for q in queries[:warmup]:
        run(q)
    wall, cpu = [], []
    for done, q in enumerate(queries[warmup:], 1):
        t, c = time.perf_counter(), time.thread_time()
        run(q)
        wall.append((time.perf_counter() - t) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
        if done % 500 == 0:
            log(f"  {done} queries")
    return wall, cpu


def index_generated(backend, n: int, hosts: int, report_every: int) -> float:
    """Index ``generate(n, hosts)`` in batches of 1,000 and refresh; returns seconds taken."""
    started = time.perf_counter()
    batch: list[Document] = []
    for i, doc in enumerate(generate(n, hosts), 1):
        batch.append(doc)
        if len(batch) == 1000:
            backend.index(batch)
            batch = []
        if i % report_every == 0:
            log(f"  {i} docs, {i / (time.perf_counter() - started):.0f} docs/s")
    backend.index(batch)
    backend.refresh()
    return time.perf_counter() - started


def bench_embedded(n: int, hosts: int, queries: list[str], warmup: int, work: Path) -> dict:
    path = work / "tantivy"
    backend = EmbeddedBackend(path)
    backend.ensure_index()
    log(f"embedded: indexing {n} docs")
    elapsed = index_generated(backend, n, hosts, report_every=10_000)
    backend.close()
    backend = EmbeddedBackend(path)
    assert backend.stats()["docs"] == n, backend.stats()
    log(f"embedded: {n / elapsed:.0f} docs/s; timing {len(queries) - warmup} queries")
    totals = []

    def run(q: str) -> None:
        totals.append(backend.search(q, page=1, size=10).total)

    samples, cpu = time_queries(run, queries, warmup)
    p50, p95 = percentiles(samples)
    cpu_p50, cpu_p95 = percentiles(cpu)
    result = {
        "docs": n,
        "index_docs_per_s": round(n / elapsed, 1),
        "query_p50_ms": p50,
        "query_p95_ms": p95,
        "query_p99_ms": round(statistics.quantiles(samples, n=100)[98], 3),
        "query_cpu_p50_ms": cpu_p50,
        "query_cpu_p95_ms": cpu_p95,
        "index_bytes": dir_bytes(path),
        "median_total_hits": statistics.median(totals),
        "segments": backend.stats()["segments"],
    }
    backend.close()
    return result


def fts5_match(query: str) -> str:
    return " ".join('"' + w.replace('"', '""') + '"' for w in query.split())


def bench_fts5(n: int, hosts: int, queries: list[str], warmup: int, work: Path) -> dict:
    path = work / "fts5.sqlite"
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE VIRTUAL TABLE docs USING fts5(title, body, anchors, url, doc_id UNINDEXED, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    log(f"fts5: indexing {n} docs")
    started = time.perf_counter()
    rows = []
    for i, d in enumerate(generate(n, hosts), 1):
        rows.append((d.title, d.body, d.anchors, d.url, d.id))
        if len(rows) == 1000:
            db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?)", rows)
            db.commit()
            rows = []
        if i % 10_000 == 0:
            log(f"  {i} docs, {i / (time.perf_counter() - started):.0f} docs/s")
    db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?)", rows)
    db.commit()
    db.execute("INSERT INTO docs(docs) VALUES ('optimize')")
    db.commit()
    elapsed = time.perf_counter() - started
    log(f"fts5: {n / elapsed:.0f} docs/s; timing {len(queries) - warmup} queries")
    top = (
        "SELECT doc_id, url, title, snippet(docs, 1, '<mark>', '</mark>', '…', 32), "
        "bm25(docs, 3.0, 1.0, 2.0, 1.5) AS score FROM docs WHERE docs MATCH ? "
        "ORDER BY score LIMIT 10"
    )
    count = "SELECT count(*) FROM docs WHERE docs MATCH ?"

    def run(q: str) -> None:
        match = fts5_match(q)
        db.execute(top, (match,)).fetchall()
        db.execute(count, (match,)).fetchone()

    samples, cpu = time_queries(run, queries, warmup)
    p50, p95 = percentiles(samples)
    cpu_p50, cpu_p95 = percentiles(cpu)
    db.close()
    return {
        "fts5_index_docs_per_s": round(n / elapsed, 1),
        "fts5_query_p50_ms": p50,
        "fts5_query_p95_ms": p95,
        "fts5_query_p99_ms": round(statistics.quantiles(samples, n=100)[98], 3),
        "fts5_query_cpu_p50_ms": cpu_p50,
        "fts5_query_cpu_p95_ms": cpu_p95,
        "fts5_index_bytes": path.stat().st_size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 docs, 300 queries")
    parser.add_argument("--docs", type=int, help="number of documents (default 100,000)")
    parser.add_argument("--queries", type=int, help="timed queries (default 2,000)")
    parser.add_argument("--hosts", type=int, default=500)
    parser.add_argument("--no-fts5", action="store_true", help="skip the FTS5 baseline")
    parser.add_argument("--profile", action="store_true", help="pyinstrument the query loop")
    parser.add_argument("--keep", metavar="DIR", help="build the indexes in DIR and keep them")
    args = parser.parse_args()
    n = args.docs or (5_000 if args.quick else 100_000)
    timed = args.queries or (300 if args.quick else 2_000)
    warmup = 100
    queries = make_queries(n, timed + warmup)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-query-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.profile:
            from pyinstrument import Profiler

            profiler = Profiler()
            profiler.start()
        result = bench_embedded(n, args.hosts, queries, warmup, work)
        if args.profile:
            profiler.stop()
            log(profiler.output_text(unicode=True, color=False, show_all=False))
        if not args.no_fts5:
            result.update(bench_fts5(n, args.hosts, queries, warmup, work))
            result["fts5_p95_over_embedded_p95"] = round(
                result["fts5_query_p95_ms"] / result["query_p95_ms"], 1
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    result["cpus"] = os.cpu_count()
    result["load_avg_1m"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
