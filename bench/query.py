"""Index N pages into the embedded backend and time queries through its search(), snippets included.

Side by side in the same run: the same pages go into SQLite FTS5 (porter stemming, bm25 with
the title weighted up, ``snippet()`` for highlighting, ``count(*)`` for the total), the
obvious alternative engine for an embedded index; and the same queries go to tantivy alone
over the embedded index (``tantivy_*``: the compiled query, top 10 and the exact count, no
re-ranking, stored fields or snippets), the floor the backend's own work sits on.

Two corpora:

- generated (default): the test web's Zipf text generator (``testweb.text``): a title, a
  body of paragraphs, anchor text, a URL on one of many hosts. Queries are 1-3 words drawn
  from titles of indexed pages, so they match a realistic spread of documents.
- ``--real``: the real documentation pages that ``python -m testweb --real-docs`` serves
  (the Debian documentation packages of ``testweb/docsites.py``, installed by
  ``scripts/install-services.sh``), read from disk with the paths their robots.txt allows,
  extracted by the crawler's extractor (``crawler.extract``), and repeated under distinct
  URLs (``/copy1/...``, ``/copy2/...``; each copy its own document, no cluster) up to N.
  Queries alternate between the judged relevance queries (``tests/relevance/queries.json``)
  and 1-3 words drawn from titles of the pages.

The indexes are built once; then ``--rounds`` rounds time the queries on each side in
alternating order (embedded first, then FTS5 first, ...). Each figure is the median of the
rounds, with its ``*_range`` (lowest, highest). The 1-minute load average is sampled every
2 seconds through the run (``load_avg_1m_min``/``_median``/``_max``): the machine is shared.

    python bench/query.py                   # generated, N = 100,000
    python bench/query.py --quick           # generated, N = 5,000
    python bench/query.py --real            # real pages, N = 100,000
    python bench/query.py --real --quick    # four small sites, N = 3,000

``--embed-questions`` times the questions as on an index the embedding batch has run on
(semantic matching re-ranks a question-shaped query's first results by their section
vectors, and an index without vectors never encodes the question): before timing, the
pages the question-shaped queries re-rank get section vectors (:func:`embed_questions`;
hashed stand-ins, so the sizes and the work are the model's, not its ranking):

    python -m bench.query --real --docs 100000 --keep COPY --reuse --no-fts5 --embed-questions

Progress goes to stderr; the last stdout line is one JSON object with ``docs``, ``real``,
``index_docs_per_s``, ``query_p50_ms``, ``query_p95_ms``, ``snippet_p95_ms`` (the time spent
building the snippets of one query's hits), the ``tantivy_*`` and ``fts5_*`` figures,
``query_p95_over_tantivy_p95`` (what the layers above the engine cost, as a multiple),
``query_cpu_*`` (the querying thread's CPU) and ``query_process_cpu_*`` (the process's, its
helper threads included: a question's encoding, the embedded engine's checks), and
``index_docs_per_cpu_s`` (documents per CPU second of the indexing process: the machine is
shared, so wall-clock rates mostly measure the load).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawler.urls import doc_id_for  # noqa: E402
from harness.documents import FETCHED_AT, SEED, generate, make_queries  # noqa: E402
from index import hits  # noqa: E402
from index.analysis import STOPWORDS, WORD_RE  # noqa: E402
from index.base import Document  # noqa: E402
from index.engines.embedded.backend import EmbeddedBackend  # noqa: E402
from index.snippets import located_snippet  # noqa: E402


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


#: The four small documentation sites of ``--real --quick`` (the relevance CI subset until
#: that moved to sites the hand weights never saw; kept here so speed figures stay comparable).
REAL_QUICK_SITES = ("git.test", "requests.test", "sphinx.test", "docutils.test")


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def percentiles(samples: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return round(cuts[49], 3), round(cuts[94], 3)


def time_queries(run, queries: list[str], warmup: int
                 ) -> tuple[list[float], list[float], list[float]]:
    """Wall, CPU and process CPU milliseconds of each query after ``warmup`` untimed ones.

    The CPU time (this thread's) shows the cost without the other processes that share the
    machine; the process CPU time adds the search's helper threads (a question's encoding,
    the embedded engine's checks); the wall time is the latency a user sees.
    """
    for q in queries[:warmup]:
        run(q)
    wall, cpu, process = [], [], []
    for done, q in enumerate(queries[warmup:], 1):
        t, c, p = time.perf_counter(), time.thread_time(), time.process_time()
        run(q)
        wall.append((time.perf_counter() - t) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
        process.append((time.process_time() - p) * 1000)
        if done % 500 == 0:
            log(f"  {done} queries")
    return wall, cpu, process


def index_docs(backend, docs: Iterable[Document], report_every: int) -> float:
    """Index ``docs`` in batches of 1,000 and refresh; returns seconds taken."""
    started = time.perf_counter()
    batch: list[Document] = []
    for i, doc in enumerate(docs, 1):
        batch.append(doc)
        if len(batch) == 1000:
            backend.index(batch)
            batch = []
        if i % report_every == 0:
            log(f"  {i} docs, {i / (time.perf_counter() - started):.0f} docs/s")
    backend.index(batch)
    backend.refresh()
    return time.perf_counter() - started


def index_generated(backend, n: int, hosts: int, report_every: int) -> float:
    """Index ``generate(n, hosts)`` in batches of 1,000 and refresh; returns seconds taken."""
    return index_docs(backend, generate(n, hosts), report_every)


# --- the real corpus ---------------------------------------------------------------------


def real_pages(hosts: Sequence[str] | None = None) -> list[Document]:
    """The pages of the installed ``--real-docs`` sites (``hosts``: only these) that their
    robots.txt allows, as the index writer gets them from the crawler's extractor.

    Noindex pages and pages without text are skipped, as the index writer skips them.
    """
    from protego import Protego

    from crawler.extract import decode_html, extract, page_item
    from pipelines.index import document_from_item
    from testweb.docsites import DOC_SITES, DocSiteHost, available_doc_sites

    sites = [s for s in available_doc_sites() if hosts is None or s.host in hosts]
    if not sites:
        raise SystemExit("bench/query.py --real: no documentation site is installed; run "
                         "scripts/install-services.sh or apt-get install -y "
                         + " ".join(s.package for s in DOC_SITES))
    pages: list[Document] = []
    for site in sites:
        served = DocSiteHost(None, site)
        robots = Protego.parse(served.robots_txt())
        for path in sorted(site.root.rglob("*")):
            rel = "/" + path.relative_to(site.root).as_posix()
            url = f"http://{site.host}{quote(rel)}"
            if (path.suffix not in (".html", ".htm") or not path.is_file()
                    or not robots.can_fetch(url, "*") or served.resolve(rel) is None):
                continue
            html, _ = decode_html(path.read_bytes(), "text/html")
            page = extract(html, url)
            if page.noindex or not page.text:
                continue
            item = page_item(page, url, 200, FETCHED_AT + len(pages))
            pages.append(document_from_item(item))
        log(f"real: {len(pages)} pages after {site.host}")
    return pages


def repeated(pages: Sequence[Document], n: int) -> Iterator[Document]:
    """``n`` documents: ``pages``, then copies of them under ``/copy1/``, ``/copy2/``, ...

    Each copy is its own document (its own URL and id, no cluster), so a query's hits may
    be copies of one page: the snippets of a long page are built for each of them.
    """
    for i in range(n):
        copy, k = divmod(i, len(pages))
        page = pages[k]
        if copy:
            url = page.url.replace(f"//{page.host}/", f"//{page.host}/copy{copy}/", 1)
            page = dataclasses.replace(page, id=doc_id_for(url), url=url,
                                       fetched_at=page.fetched_at + copy * len(pages))
        yield page


def title_words(title: str) -> list[str]:
    """The words of a title a user might type: letters only, no stopwords, unique."""
    words = (w for w in WORD_RE.findall(title.lower()) if w.isalpha() and len(w) > 1)
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS))


def real_queries(pages: Sequence[Document], count: int) -> list[str]:
    """``count`` queries, alternately a judged relevance query (``tests/relevance/``, each
    used once per pass in a shuffled order) and 1-3 words of a random page's title."""
    from bench.relevance import load_queries

    judged = [j.query for j in load_queries()]
    rng = random.Random(SEED)
    queries: list[str] = []
    order: list[str] = []
    while len(queries) < count:
        if len(queries) % 2 == 0:
            if not order:
                order = rng.sample(judged, len(judged))
            queries.append(order.pop())
            continue
        words = title_words(pages[rng.randrange(len(pages))].title)
        if words:
            k = min(len(words), 1 + (len(queries) // 2) % 3)
            queries.append(" ".join(rng.sample(words, k)))
    return queries


class HashedVectors:
    """A stand-in page encoder for :func:`embed_questions`: each text's unit vector drawn
    from a hash of the text, not the model's."""

    dim = 384

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8)
            vector = np.random.default_rng(int.from_bytes(digest.digest(), "little")
                                           ).standard_normal(self.dim).astype(np.float32)
            out[i] = vector / np.linalg.norm(vector)
        return out


def embed_questions(backend: EmbeddedBackend, queries: list[str]) -> dict:
    """Section vectors for the pages ``queries``' question-shaped ones re-rank (their first
    ``SEARCH_SEMANTIC_DEPTH`` results), written into ``backend``'s index: what the
    embedding batch (``batch/embed.py``) gives every page, for the pages these questions
    read, so their timing is a question's on an embedded index. The windows are the
    batch's (``index.semantic.windows``); each window's vector comes from
    :class:`HashedVectors`, so the sizes stored and read are the model's and the ranking
    says nothing of relevance. The question itself is encoded by the model."""
    from index.query import parse
    from index.semantic import SectionMatch, SemanticOptions

    started = time.perf_counter()
    questions = [q for q in queries if parse(q).question]
    seen: set[str] = set()
    rerank = SectionMatch.rerank

    def record(self, ranked, text, ahead=None):
        seen.update(p.id for p in ranked)
        return list(ranked)

    SectionMatch.rerank = record
    # every question's results, whether or not a page holds vectors yet
    backend._section_match = lambda parsed: backend.semantic.match()
    try:
        for query in questions:
            backend.search(query, page=1, size=10)
    finally:
        SectionMatch.rerank = rerank
        del backend._section_match
    options = SemanticOptions.of()
    match = SectionMatch(HashedVectors(), options.sections, options.depth, options.queries)
    backend.index(list(match.embed(backend.get_many(sorted(seen)))))
    backend.refresh()
    return {"embedded_questions": len(questions), "embedded_pages": len(seen),
            "embed_questions_s": round(time.perf_counter() - started, 1)}


# --- the two sides -----------------------------------------------------------------------


class LoadSampler:
    """The 1-minute load average, sampled every ``interval`` seconds while in a ``with``."""

    def __init__(self, interval: float = 2.0):
        self.interval = interval
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self.samples.append(os.getloadavg()[0])
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append(os.getloadavg()[0])

    def figures(self) -> dict:
        """Lowest, median and highest load average seen, and the number of samples."""
        return {
            "load_avg_1m_min": round(min(self.samples), 2),
            "load_avg_1m_median": round(statistics.median(self.samples), 2),
            "load_avg_1m_max": round(max(self.samples), 2),
            "load_avg_samples": len(self.samples),
        }


class EmbeddedSide:
    """The project: ``EmbeddedBackend.search()`` for the first page of 10 hits, snippets
    included; the time spent in ``located_snippet`` (what every hit's snippet comes from)
    is summed per query as well."""

    name = "embedded"
    prefix = ""

    def __init__(self, work: Path):
        self.path = work / "tantivy"
        self.backend: EmbeddedBackend | None = None
        self.totals: list[int] = []
        self.snippet_ms: list[float] = []
        self._spent = 0.0
        self._hits = 0

    def build(self, docs: Iterable[Document], reuse: bool = False) -> dict:
        """Index ``docs``, reopen the index for reading; the indexing figures (the CPU
        seconds are the process's, tantivy's indexing and merging threads included).
        ``reuse``: open the index a ``--keep`` run left instead (no indexing figures)."""
        if reuse and self.path.is_dir():
            self.backend = EmbeddedBackend(self.path)
            return {"docs": self.backend.stats()["docs"], "reused_index": True}
        backend = EmbeddedBackend(self.path)
        backend.ensure_index()
        cpu = time.process_time()
        elapsed = index_docs(backend, docs, report_every=10_000)
        backend.close()
        cpu = time.process_time() - cpu
        self.backend = EmbeddedBackend(self.path)
        stats = self.backend.stats()
        return {
            "docs": stats["docs"],
            "index_docs_per_s": round(stats["docs"] / elapsed, 1),
            "index_docs_per_cpu_s": round(stats["docs"] / cpu, 1),
            "index_bytes": dir_bytes(self.path),
            "segments": stats["segments"],
        }

    def _timed_snippet(self, *args, **kwargs) -> tuple[str, int]:
        started = time.perf_counter()
        try:
            return located_snippet(*args, **kwargs)
        finally:
            self._spent += time.perf_counter() - started

    def run(self, query: str) -> None:
        """One search; its total and its snippets' milliseconds are recorded."""
        self._spent = 0.0
        results = self.backend.search(query, page=1, size=10)
        self.totals.append(results.total)
        self.snippet_ms.append(self._spent * 1000)
        self._hits += len(results.hits)

    def start_round(self) -> None:
        self.totals, self.snippet_ms, self._hits = [], [], 0
        hits.located_snippet = self._timed_snippet

    def end_round(self, warmup: int) -> dict:
        """The round's figures beyond the query times, over the timed queries."""
        hits.located_snippet = located_snippet
        spent = self.snippet_ms[warmup:]
        if self._hits and not any(self.snippet_ms):
            raise RuntimeError("search() returned hits but never called "
                               "index.hits.located_snippet: point EmbeddedSide at the "
                               "function that builds its snippets now")
        p50, p95 = percentiles(spent)
        return {
            "snippet_p50_ms": p50,
            "snippet_p95_ms": p95,
            "median_total_hits": statistics.median(self.totals[warmup:]),
        }

    def close(self) -> None:
        hits.located_snippet = located_snippet
        if self.backend is not None:
            self.backend.close()


class TantivySide:
    """The floor under the project: tantivy's own search of the same index for the same
    queries (the compiled query, top 10 and the exact count), without re-ranking, stored
    fields or snippets. Built by the embedded side (it reuses that index)."""

    name = "tantivy"
    prefix = "tantivy_"

    def __init__(self, embedded: EmbeddedSide):
        self.embedded = embedded

    def build(self, docs: Iterable[Document]) -> dict:
        return {}

    def run(self, query: str) -> None:
        """Parse, compile, and tantivy's top 10 with the count."""
        from index.query import parse

        backend = self.embedded.backend
        parsed = parse(query)
        if parsed.matches_nothing:
            return
        compiler = backend._search.compiler()
        backend._tantivy().searcher().search(compiler.compile(parsed.root), limit=10,
                                             count=True)

    def start_round(self) -> None:
        pass

    def end_round(self, warmup: int) -> dict:
        return {}

    def close(self) -> None:
        pass


def fts5_match(query: str) -> str:
    return " ".join('"' + w.replace('"', '""') + '"' for w in query.split())


class Fts5Side:
    """The baseline: one SQLite FTS5 table, bm25 with field weights, ``snippet()`` and a
    ``count(*)`` for the total."""

    name = "fts5"
    prefix = "fts5_"
    top = (
        "SELECT doc_id, url, title, snippet(docs, 1, '<mark>', '</mark>', '…', 32), "
        "bm25(docs, 3.0, 1.0, 2.0, 1.5) AS score FROM docs WHERE docs MATCH ? "
        "ORDER BY score LIMIT 10"
    )
    count = "SELECT count(*) FROM docs WHERE docs MATCH ?"

    def __init__(self, work: Path):
        self.path = work / "fts5.sqlite"
        self.db: sqlite3.Connection | None = None

    def build(self, docs: Iterable[Document]) -> dict:
        """Load ``docs`` in transactions of 1,000 and optimize; the indexing figures."""
        db = self.db = sqlite3.connect(self.path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(title, body, anchors, url, doc_id UNINDEXED, "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
        started = time.perf_counter()
        rows = []
        n = 0
        for n, d in enumerate(docs, 1):
            rows.append((d.title, d.body, d.anchors, d.url, d.id))
            if len(rows) == 1000:
                db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?)", rows)
                db.commit()
                rows = []
            if n % 10_000 == 0:
                log(f"  {n} docs, {n / (time.perf_counter() - started):.0f} docs/s")
        db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?)", rows)
        db.commit()
        db.execute("INSERT INTO docs(docs) VALUES ('optimize')")
        db.commit()
        elapsed = time.perf_counter() - started
        return {
            "fts5_index_docs_per_s": round(n / elapsed, 1),
            "fts5_index_bytes": sum(p.stat().st_size for p in self.path.parent.glob("fts5*")),
        }

    def run(self, query: str) -> None:
        """The top 10 with snippets, then the count."""
        match = fts5_match(query)
        self.db.execute(self.top, (match,)).fetchall()
        self.db.execute(self.count, (match,)).fetchone()

    def start_round(self) -> None:
        pass

    def end_round(self, warmup: int) -> dict:
        return {}

    def close(self) -> None:
        if self.db is not None:
            self.db.close()


def time_round(side, queries: list[str], warmup: int) -> dict:
    """One round of ``queries`` on ``side``: wall and CPU percentiles and the side's own."""
    log(f"{side.name}: timing {len(queries) - warmup} queries")
    side.start_round()
    wall, cpu, process = time_queries(side.run, queries, warmup)
    p50, p95 = percentiles(wall)
    cpu_p50, cpu_p95 = percentiles(cpu)
    process_p50, process_p95 = percentiles(process)
    figures = {
        "query_p50_ms": p50,
        "query_p95_ms": p95,
        "query_p99_ms": round(statistics.quantiles(wall, n=100, method="inclusive")[98], 3),
        "query_cpu_p50_ms": cpu_p50,
        "query_cpu_p95_ms": cpu_p95,
        "query_process_cpu_p50_ms": process_p50,
        "query_process_cpu_p95_ms": process_p95,
        "query_process_cpu_mean_ms": round(statistics.fmean(process), 3),
        **side.end_round(warmup),
    }
    log(f"{side.name}: p50 {p50} ms, p95 {p95} ms (CPU p95 {cpu_p95} ms)")
    return {side.prefix + key: value for key, value in figures.items()}


def summarize(rounds: list[dict]) -> dict:
    """Each figure's median over the rounds, and its ``*_range`` [lowest, highest]."""
    out: dict = {}
    for key in rounds[0]:
        values = [r[key] for r in rounds]
        out[key] = round(statistics.median(values), 3)
        out[key + "_range"] = [min(values), max(values)]
    return out


def run_bench(sides: list, docs, queries: list[str], warmup: int, rounds: int,
              profile: bool = False, reuse: bool = False,
              prepare: Callable[[EmbeddedBackend, list[str]], dict] | None = None) -> dict:
    """Build every side from ``docs()`` (the embedded one may ``reuse`` a kept index), then
    ``rounds`` rounds in alternating order; ``prepare(backend, queries)`` first changes the
    embedded index (its figures added)."""
    result: dict = {}
    for side in sides:
        log(f"{side.name}: indexing")
        built = side.build(docs(), reuse) if isinstance(side, EmbeddedSide) else side.build(
            docs())
        log(f"{side.name}: {built}")
        result.update(built)
    if prepare is not None:
        prepared = prepare(sides[0].backend, queries)
        log(f"prepared: {prepared}")
        result.update(prepared)
    per_side: dict[str, list[dict]] = {side.name: [] for side in sides}
    profiler = None
    for round_no in range(rounds):
        order = sides if round_no % 2 == 0 else sides[::-1]
        log(f"round {round_no + 1} of {rounds}: {', '.join(s.name for s in order)}")
        for side in order:
            if profile and profiler is None and side.name == "embedded":
                from pyinstrument import Profiler

                profiler = Profiler()
                profiler.start()
                per_side[side.name].append(time_round(side, queries, warmup))
                profiler.stop()
                log(profiler.output_text(unicode=True, color=False, show_all=False))
            else:
                per_side[side.name].append(time_round(side, queries, warmup))
    for figures in per_side.values():
        result.update(summarize(figures))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", action="store_true",
                        help="real documentation pages (testweb --real-docs), repeated to N")
    parser.add_argument("--quick", action="store_true",
                        help="5,000 generated docs (--real: 3,000 from four small sites), "
                             "300 queries")
    parser.add_argument("--docs", type=int, help="number of documents (default 100,000)")
    parser.add_argument("--queries", type=int, help="timed queries per round (default 2,000)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds of queries on each side, in alternating order (default 2)")
    parser.add_argument("--hosts", type=int, default=500, help="hosts of the generated pages")
    parser.add_argument("--sites", metavar="HOST,...",
                        help="--real: only these documentation sites (e.g. python.test,"
                             "django.test; the figures in docs/index-performance.md use "
                             "every site)")
    parser.add_argument("--no-fts5", action="store_true", help="skip the FTS5 baseline")
    parser.add_argument("--embed-questions", action="store_true",
                        help="before timing, give the pages the question-shaped queries "
                             "re-rank section vectors (hashed stand-ins, the batch's "
                             "windows: embed_questions), as the embedding batch would; "
                             "changes the index timed (with --reuse, keep a copy)")
    parser.add_argument("--profile", action="store_true",
                        help="pyinstrument the first embedded round, on stderr")
    parser.add_argument("--keep", metavar="DIR", help="build the indexes in DIR and keep them")
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: time the embedded index a --keep run left in DIR "
                             "instead of building it (query figures only)")
    args = parser.parse_args()
    if args.reuse and not args.keep:
        parser.error("--reuse needs --keep DIR")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    timed = args.queries or (300 if args.quick else 2_000)
    warmup = 100
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-query-"))
    work.mkdir(parents=True, exist_ok=True)
    sides: list = []
    try:
        with LoadSampler() as load:
            result: dict = {}
            if args.real:
                n = args.docs or (3_000 if args.quick else 100_000)
                sites = args.sites.split(",") if args.sites else None
                pages = real_pages(sites or (REAL_QUICK_SITES if args.quick else None))
                queries = real_queries(pages, timed + warmup)
                lengths = [len(p.body) for p in pages]
                result.update({
                    "real": True,
                    "pages": len(pages),
                    "body_chars_median": statistics.median(lengths),
                    "body_chars_max": max(lengths),
                    "queries": "judged relevance queries and title words, alternately",
                })

                def docs() -> Iterator[Document]:
                    return repeated(pages, n)
            else:
                n = args.docs or (5_000 if args.quick else 100_000)
                queries = make_queries(n, timed + warmup)
                result.update({"real": False, "queries": "title words of generated pages"})

                def docs() -> Iterator[Document]:
                    return generate(n, args.hosts)
            sides.append(EmbeddedSide(work))
            sides.append(TantivySide(sides[0]))
            if not args.no_fts5:
                sides.append(Fts5Side(work))
            result.update(run_bench(sides, docs, queries, warmup, args.rounds, args.profile,
                                    args.reuse, embed_questions if args.embed_questions
                                    else None))
            result["snippet_p95_over_query_p95"] = round(
                result["snippet_p95_ms"] / result["query_p95_ms"], 2)
            result["query_p95_over_tantivy_p95"] = round(
                result["query_p95_ms"] / result["tantivy_query_p95_ms"], 2)
            result["timed_queries"] = timed
            result["rounds"] = args.rounds
            if not args.no_fts5:
                result["fts5_p95_over_embedded_p95"] = round(
                    result["fts5_query_p95_ms"] / result["query_p95_ms"], 1
                )
    finally:
        for side in sides:
            side.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    result["cpus"] = os.cpu_count()
    result["load_avg_1m"] = round(os.getloadavg()[0], 2)
    result.update(load.figures())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
