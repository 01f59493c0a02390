"""The relevance evaluation shared by ``bench/relevance.py`` and ``tests/test_relevance.py``:
the judged queries of ``tests/relevance/queries.json``, the success@k and MRR metrics, the
crawl of ``testweb --real-docs`` with the project's ``web`` spider (cached), the embedded
index built from the crawled pages with anchor text and PageRank, and the SQLite FTS5 BM25
baseline over the body text of the same pages."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import testweb
from crawler.items import Link, PageItem
from crawler.urls import doc_id_for
from harness import ROOT, log
from harness.crawlrun import migrate, run_crawl
from index.analysis import analyze_joined
from index.base import Document
from index.embedded import (
    EmbeddedBackend,
)
from pipelines.index import document_from_item
from pipelines.linkgraph import SQLiteLinkStore
from ranking.batch import RankSettings, compute

QUERIES = ROOT / "tests" / "relevance" / "queries.json"
DEFAULT_CACHE = ROOT / ".cache" / "relevance"
#: The subset crawled by ``--quick`` and the CI test: small sites that crawl in under a minute.
QUICK_SITES = ("git.test", "requests.test", "sphinx.test", "docutils.test")
FEED_FIELDS = ["url", "fetched_url", "host", "status", "title", "text", "description",
               "lang", "headings", "links", "noindex", "doc_id", "cluster_id", "dup_of",
               "fetched_at"]
CRAWL_SETTINGS = {
    "DOWNLOAD_DELAY": 0.0,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
    "ROBOTSTXT_OBEY": True,
    "INDEX_ENABLED": False,
    "HOST_RULES_LOADER": "",
    "LOG_LEVEL": "WARNING",
}
CUTOFF = 10



# --- the judged queries ------------------------------------------------------------------


@dataclass(frozen=True)
class Judgement:
    """One query, its best page and other acceptable pages (``host/path``, no port)."""

    query: str
    best: str
    acceptable: tuple[str, ...] = ()
    intent: str = ""

    @property
    def relevant(self) -> frozenset[str]:
        return frozenset((self.best, *self.acceptable))

    @property
    def hosts(self) -> frozenset[str]:
        return frozenset(page.split("/", 1)[0] for page in self.relevant)


def load_queries(path: Path = QUERIES, hosts: Iterable[str] | None = None) -> list[Judgement]:
    """The judged queries; with ``hosts``, only those whose best page is on one of them."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    judged = [
        Judgement(q["query"], q["best"], tuple(q.get("acceptable", ())), q.get("intent", ""))
        for q in raw["queries"]
    ]
    if hosts is not None:
        wanted = set(hosts)
        judged = [j for j in judged if j.best.split("/", 1)[0] in wanted]
    return judged


def page_key(url: str) -> str:
    """``host/path`` of a URL without scheme, port or query; a directory means its index."""
    parts = urlsplit(url)
    path = parts.path or "/"
    if path.endswith("/"):
        path += "index.html"
    return (parts.hostname or "") + path


# --- metrics -----------------------------------------------------------------------------


@dataclass
class Scores:
    """success@1/3/10 and MRR@10 over a query set, with each query's first relevant rank."""

    ranks: dict[str, int | None] = field(default_factory=dict)

    def add(self, query: str, rank: int | None) -> None:
        self.ranks[query] = rank

    def success(self, k: int) -> float:
        hits = sum(1 for r in self.ranks.values() if r is not None and r <= k)
        return hits / max(1, len(self.ranks))

    def mrr(self) -> float:
        total = sum(1.0 / r for r in self.ranks.values() if r is not None and r <= CUTOFF)
        return total / max(1, len(self.ranks))

    def halves(self) -> tuple[Scores, Scores]:
        """The even- and odd-numbered queries (in judged-set order) as two score sets: tune
        on one, check on the other."""
        items = list(self.ranks.items())
        return Scores(dict(items[0::2])), Scores(dict(items[1::2]))

    def summary(self) -> dict[str, float]:
        return {
            "s_at_1": round(self.success(1), 4),
            "s_at_3": round(self.success(3), 4),
            "s_at_10": round(self.success(10), 4),
            "mrr_at_10": round(self.mrr(), 4),
        }


def split_summary(scores: Scores) -> dict[str, float]:
    """MRR@10 of the even- and odd-numbered queries (the tuning and held-out halves)."""
    even, odd = scores.halves()
    return {"mrr_at_10_even": round(even.mrr(), 4), "mrr_at_10_odd": round(odd.mrr(), 4)}


class NearCopies:
    """The pages of each near-duplicate cluster of a crawl, by ``host/path``.

    A copy of a judged page (the same English chapter under another language's directory of
    the handbook, a mirror) says the same thing, so it answers the query as well: both the
    project and the baseline are credited for it.
    """

    def __init__(self, pages: Iterable[dict]):
        self.cluster_of: dict[str, str] = {}
        self.members: dict[str, set[str]] = {}
        for page in pages:
            cluster = page.get("cluster_id") or page.get("dup_of")
            if cluster:
                key = page_key(page["url"])
                self.cluster_of[key] = cluster
                self.members.setdefault(cluster, set()).add(key)

    def expand(self, keys: Iterable[str]) -> frozenset[str]:
        """``keys`` and every near-copy of them."""
        out = set(keys)
        for key in keys:
            cluster = self.cluster_of.get(key)
            if cluster:
                out |= self.members[cluster]
        return frozenset(out)


def evaluate(
    search: Callable[[str], list[str]],
    judged: Sequence[Judgement],
    copies: NearCopies | None = None,
) -> Scores:
    """Run each query through ``search`` (query -> result URLs, best first) and score it;
    with ``copies``, a near-copy of a relevant page counts as relevant."""
    scores = Scores()
    for j in judged:
        relevant = copies.expand(j.relevant) if copies else j.relevant
        keys = [page_key(url) for url in search(j.query)[:CUTOFF]]
        rank = next((i for i, key in enumerate(keys, 1) if key in relevant), None)
        scores.add(j.query, rank)
    return scores


# --- the crawl ---------------------------------------------------------------------------


def crawl(cache: Path, hosts: Sequence[str], max_pages: int = 0, recrawl: bool = False,
          timeout: float = 3600) -> Path:
    """Crawl ``hosts`` of the real-docs test web with the project's spider into
    ``cache/pages.jsonl`` (reused when present, unless ``recrawl``); returns that path."""
    feed = cache / "pages.jsonl"
    done = cache / "crawl.json"
    wanted = {"hosts": sorted(hosts), "max_pages": max_pages, "fields": FEED_FIELDS}
    if not recrawl and feed.exists() and done.exists():
        if json.loads(done.read_text()) == wanted:
            log(f"reusing the crawl in {cache}")
            return feed
    cache.mkdir(parents=True, exist_ok=True)
    feed.unlink(missing_ok=True)
    done.unlink(missing_ok=True)
    data_dir = cache / "data"
    data_dir.mkdir(exist_ok=True)
    migrate(data_dir)
    started = time.monotonic()
    with testweb.run(hosts=1, fresh_hosts=0, real_docs=True) as web:
        missing = set(hosts) - set(web.web.doc_hosts)
        if missing:
            raise SystemExit(f"documentation sites not installed: {sorted(missing)}; run "
                             "scripts/install-services.sh (it installs scripts/apt-packages.txt)")
        log(f"crawling {', '.join(hosts)} on port {web.port}")
        settings = dict(CRAWL_SETTINGS)
        settings["FEEDS"] = json.dumps(
            {str(feed): {"format": "jsonlines", "fields": FEED_FIELDS, "encoding": "utf-8"}}
        )
        settings["ITEM_PIPELINES"] = json.dumps(
            {"pipelines.dedup.DedupPipeline": 100}
        )
        settings["CRAWL_PROGRESS_INTERVAL"] = 10
        args = {"allowed_hosts": ",".join(hosts)}
        if max_pages:
            args["max_pages"] = max_pages
        result = run_crawl(data_dir, [web.home_url(h) for h in hosts], settings=settings,
                           args=args, timeout=timeout)
        if result.returncode != 0 or not feed.exists():
            raise SystemExit(f"crawl failed ({result.returncode}):\n{result.stderr[-3000:]}")
    done.write_text(json.dumps(wanted))
    log(f"crawled {sum(1 for _ in feed.open())} pages in {time.monotonic() - started:.0f} s")
    return feed


def read_pages(feed: Path) -> list[dict]:
    """The crawled pages of a feed, in crawl order."""
    with feed.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


# --- indexes -----------------------------------------------------------------------------


def link_signals(pages: Sequence[dict], path: Path) -> tuple[SQLiteLinkStore, dict[str, float]]:
    """The project's link store (``pipelines.linkgraph``) filled from the crawled pages, and
    the static rank per document id from the project's ranking batch (``ranking.batch``)."""
    path.unlink(missing_ok=True)
    store = SQLiteLinkStore(path, batch_size=2000)
    for page in pages:
        links = [Link(**link) for link in page.get("links") or ()]
        store.add(page.get("doc_id") or doc_id_for(page["url"]), page["host"], links)
    store.flush()
    computed = compute(store, RankSettings.from_settings(None))
    ranks: dict[str, float] = {}
    for batch in computed.pages.batches(computed.page_ranks):
        ranks.update(batch)
    return store, ranks


def documents(
    pages: Sequence[dict], link_db: Path, *, dedup: bool = True, links: bool = True
) -> Iterator[Document]:
    """Index documents of crawled pages as the index pipeline writes them (noindex and exact
    duplicates skipped, cluster ids kept) plus anchor text and static rank from the crawl's
    links (as ``manage.py reindex`` and ``manage.py rank`` add them). ``dedup=False`` keeps
    duplicates and drops cluster ids; ``links=False`` leaves anchors and rank empty."""
    store, ranks = link_signals(pages, link_db) if links else (None, {})
    try:
        for page in pages:
            if page.get("noindex") or (dedup and page.get("dup_of")):
                continue
            doc = document_from_item(PageItem(**{k: v for k, v in page.items() if k != "links"}))
            if not dedup:
                doc.cluster_id = ""
            if store is not None:
                doc.anchors = store.anchor_text(doc.id)
                doc.pagerank = ranks.get(doc.id, 0.0)
            yield doc
    finally:
        if store is not None:
            store.close()


def build_index(path: Path, docs: Iterable[Document]) -> EmbeddedBackend:
    """A fresh embedded index at ``path`` holding ``docs``."""
    if path.exists():
        for child in path.iterdir():
            child.unlink()
    backend = EmbeddedBackend(path, commit_every_docs=5000)
    backend.ensure_index()
    backend.index(docs)
    backend.close()
    return EmbeddedBackend(path)


class BodyBM25:
    """The baseline: SQLite FTS5 BM25 over body text only, every crawled page, no dedup."""

    def __init__(self, pages: Iterable[dict]):
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, url UNINDEXED, "
                        "tokenize='unicode61')")
        self.db.executemany(
            "INSERT INTO docs(body, url) VALUES (?, ?)",
            ((analyze_joined(p.get("text") or ""), p["url"]) for p in pages
             if not p.get("noindex")),
        )
        self.db.commit()

    def search(self, query: str, size: int = CUTOFF) -> list[str]:
        """The URLs of the best ``size`` pages for the OR of the query's terms."""
        terms = analyze_joined(query).split()
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        rows = self.db.execute(
            "SELECT url FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?", (match, size)
        )
        return [url for (url,) in rows]


def backend_search(backend) -> Callable[[str], list[str]]:
    """query -> result URLs through a backend's own ``search()``."""
    return lambda query: [hit.url for hit in backend.search(query, size=CUTOFF).hits]
