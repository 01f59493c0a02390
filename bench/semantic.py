"""Semantic matching of sections, measured before it is kept: relevance and cost.

Crawls the relevance sites (the quick set by default; never the sealed ones), indexes them
with the project, and scores the judged queries four ways in the same run: the project's
ranking, plain BM25 (``harness.relevance.PlainBM25``), and each of them fused by reciprocal
rank with the sentence embeddings of ``index.semantic`` over its top ``--depth`` pages (a
page scores by its best section: title, heading and first ``WINDOW_WORDS`` words of each,
at most ``--max-sections`` a page). No weight is fitted: every site is held out.

Also measures the cost: sections embedded a second and a query's encoding time (p50, p95),
and, through the embedded engine with semantic matching on (``SEARCH_SEMANTIC``, at most
``--engine-sections`` windows a page) beside the same engine with it off, in the same run:
the index's build time with the embedding batch after it (``engine_index_s``,
``baseline_engine_index_s`` and their ratio) and the judged queries' latency
(``engine_query_ms_p50`` / ``_p95``, each query run on both indexes in turn, which first
alternating; ``baseline_engine_query_ms_*``), with the load average over the run. The last
line is one JSON object. ``--quick`` checks that the run works, in seconds: one site, its
first ``QUICK_PAGES`` pages, ``QUICK_QUERIES`` queries, ``QUICK_SECTIONS`` sections a
page, in a fresh directory unless ``--cache`` names one; its figures mean nothing.

    python -m bench.semantic [--quick] [--sites a.test,b.test] [--cache DIR]
                             [--engine-sections N]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from harness.relevance import (
    DEFAULT_CACHE,
    QUICK_SITES,
    NearCopies,
    PlainBM25,
    Scores,
    backend_search,
    build_index,
    crawl,
    documents,
    embed_all,
    evaluate,
    grouped,
    load_queries,
    read_pages,
    refuse_sealed,
)
from harness.rounds import LoadSampler, log, ratio
from index.semantic import Encoder, SemanticOptions, reciprocal_rank_fusion, section_text

#: Pages of each ranking re-ranked by fusion.
DEPTH = 30
#: Most sections embedded a page (the first ones; the page's opening counts as one).
MAX_SECTIONS = 48
#: The ``--quick`` run's site, pages, judged queries and sections a page.
QUICK_SITE = QUICK_SITES[0]
QUICK_PAGES = 40
QUICK_QUERIES = 10
QUICK_SECTIONS = 4


class SectionVectors:
    """The vectors of each page's sections, embedded when a page is first asked for."""

    def __init__(self, pages: list[dict], encoder: Encoder, max_sections: int):
        self.pages = {p["url"]: p for p in pages}
        self.encoder = encoder
        self.max_sections = max_sections
        self.vectors: dict[str, np.ndarray] = {}
        self.sections = 0
        self.seconds = 0.0

    def texts(self, page: dict) -> list[str]:
        text, title = page.get("text") or page.get("description") or "", page.get("title", "")
        starts = [(s["start"], s["heading"]) for s in page.get("sections") or ()]
        if not starts or starts[0][0] > 0:
            starts.insert(0, (0, ""))
        ends = [s for s, _ in starts[1:]] + [len(text)]
        units = [section_text(title, heading, text[start:end])
                 for (start, heading), end in zip(starts, ends, strict=True)]
        return units[: self.max_sections]

    def fill(self, urls: list[str]) -> None:
        """Embed the pages of ``urls`` not embedded yet, in one batch."""
        todo = [u for u in dict.fromkeys(urls) if u not in self.vectors and u in self.pages]
        texts = {u: self.texts(self.pages[u]) for u in todo}
        flat = [t for u in todo for t in texts[u]]
        if not flat:
            return
        started = time.perf_counter()
        vectors = self.encoder.encode(flat)
        self.seconds += time.perf_counter() - started
        self.sections += len(flat)
        at = 0
        for u in todo:
            self.vectors[u] = vectors[at : at + len(texts[u])]
            at += len(texts[u])

    def rank(self, query_vector: np.ndarray, urls: list[str]) -> list[str]:
        """``urls`` by their best section's similarity to the query, best first."""
        self.fill(urls)
        best = {u: float((self.vectors[u] @ query_vector).max()) if u in self.vectors
                and len(self.vectors[u]) else -1.0 for u in urls}
        return sorted(urls, key=lambda u: -best[u])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", default=",".join(QUICK_SITES),
                        help="comma-separated relevance sites (default: the quick set)")
    parser.add_argument("--cache", type=Path, default=None,
                        help=f"crawl cache directory (default {DEFAULT_CACHE}-quick; "
                             "with --quick a fresh temporary one)")
    parser.add_argument("--depth", type=int, default=DEPTH)
    parser.add_argument("--max-sections", type=int, default=MAX_SECTIONS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--engine-sections", type=int, default=None,
                        help="windows a page the engine embeds (default the setting's, "
                             "SEARCH_SEMANTIC_SECTIONS)")
    parser.add_argument("--quick", action="store_true",
                        help=f"a seconds-long check: {QUICK_SITE}, {QUICK_PAGES} pages, "
                             f"{QUICK_QUERIES} queries, {QUICK_SECTIONS} sections a page")
    args = parser.parse_args(argv)
    if args.quick:
        args.sites, args.max_sections = QUICK_SITE, QUICK_SECTIONS
        args.engine_sections = QUICK_SECTIONS
    sites = [h.strip() for h in args.sites.split(",") if h.strip()]
    refuse_sealed(sites, "a semantic-matching run")
    with tempfile.TemporaryDirectory(prefix="bench-semantic-") as scratch:
        if args.cache is None:
            args.cache = Path(scratch) if args.quick else Path(f"{DEFAULT_CACHE}-quick")
        return run(args, sites)


def run(args: argparse.Namespace, sites: list[str]) -> int:
    pages = read_pages(crawl(args.cache, sites, max_pages=QUICK_PAGES if args.quick else 0))
    judged = load_queries(hosts=sites)
    if args.quick:
        judged = judged[:QUICK_QUERIES]
    with LoadSampler() as load:
        cost = engine_cost(args.cache, pages, [j.query for j in judged], args.engine_sections)
    backend = build_index(args.cache / "index", documents(pages, args.cache / "links.sqlite"))
    log(f"{len(pages)} pages, {len(judged)} judged queries")
    started = time.perf_counter()
    encoder = Encoder(threads=args.threads)
    load_s = time.perf_counter() - started
    vectors = SectionVectors(pages, encoder, args.max_sections)
    ours = backend_search(backend)
    bm25 = PlainBM25(pages).search
    query_ms: list[float] = []
    query_vectors: dict[str, np.ndarray] = {}
    for j in judged:
        started = time.perf_counter()
        query_vectors[j.query] = encoder.encode([j.query])[0]
        query_ms.append((time.perf_counter() - started) * 1000)

    def fused(search):
        def run(query: str) -> list[str]:
            ranked = search(query)
            return reciprocal_rank_fusion([ranked, vectors.rank(query_vectors[query], ranked)])
        return run

    deep_ours = lambda q: [h.url for h in backend.search(q, size=args.depth).hits]  # noqa: E731
    copies = NearCopies(pages)
    runs: dict[str, Scores] = {
        "ours": evaluate(ours, judged, copies),
        "bm25": evaluate(bm25, judged, copies),
        "ours_semantic": evaluate(fused(deep_ours), judged, copies),
        "bm25_semantic": evaluate(fused(lambda q: bm25(q, args.depth)), judged, copies),
    }
    by_class = grouped(judged, lambda j: j.cls)
    query_ms.sort()
    result = {
        "sites": sites,
        "queries": len(judged),
        **{f"{name}_mrr_at_10": round(s.mrr(), 4) for name, s in runs.items()},
        **{f"{name}_s_at_10": round(s.success(10), 4) for name, s in runs.items()},
        "per_class": {cls: {name: round(s.subset(qs).mrr(), 4) for name, s in runs.items()}
                      for cls, qs in by_class.items()},
        "better_worse_vs_ours": _better_worse(runs["ours_semantic"], runs["ours"]),
        "sections_embedded": vectors.sections,
        "sections_per_s": round(vectors.sections / max(vectors.seconds, 1e-9), 2),
        "query_encode_ms_p50": round(query_ms[len(query_ms) // 2], 1),
        "query_encode_ms_p95": round(query_ms[int(len(query_ms) * 0.95)], 1),
        "model_load_s": round(load_s, 2),
        "depth": args.depth,
        "max_sections": args.max_sections,
        **cost,
        "load_avg": load.summary(),
    }
    for cls, row in result["per_class"].items():
        log(f"class {cls:14} {row}")
    print(json.dumps(result))
    return 0


def engine_cost(cache: Path, pages: list[dict], queries: list[str],
                sections: int | None) -> dict:
    """Semantic matching's cost through the embedded engine, beside the same engine without
    it: the build time of each index (the model loaded beforehand) and each query's time on
    both, the two run in turn, which first alternating from query to query."""
    options = SemanticOptions.of(True, sections)
    options.match()  # the model loaded, not timed
    backends, index_s = {}, {}
    for on in (False, True):
        started = time.perf_counter()
        docs = documents(pages, cache / "links.sqlite")
        backends[on] = build_index(cache / f"index-cost-{int(on)}", docs, semantic=on,
                                   semantic_sections=options.sections)
        embed_all(backends[on])  # the embedding batch (batch.embed), counted in index_s
        index_s[on] = time.perf_counter() - started
    times: dict[bool, list[float]] = {False: [], True: []}
    for n, query in enumerate(queries):
        for on in (bool(n % 2), not n % 2):
            started = time.perf_counter()
            backends[on].search(query)
            times[on].append((time.perf_counter() - started) * 1000)
    for backend in backends.values():
        backend.close()
    figures = {}
    for on, prefix in ((True, ""), (False, "baseline_")):
        ms = sorted(times[on])
        figures[f"{prefix}engine_index_s"] = round(index_s[on], 2)
        figures[f"{prefix}engine_query_ms_p50"] = round(ms[len(ms) // 2], 1)
        figures[f"{prefix}engine_query_ms_p95"] = round(ms[int(len(ms) * 0.95)], 1)
    figures["engine_index_ratio"] = ratio(index_s[True], index_s[False])
    figures["engine_query_p95_ratio"] = ratio(figures["engine_query_ms_p95"],
                                              figures["baseline_engine_query_ms_p95"])
    figures["engine_sections"] = options.sections
    return figures


def _rr(scores: Scores, query: str) -> float:
    rank = scores.ranks.get(query)
    return 1.0 / rank if rank else 0.0


def _better_worse(new: Scores, old: Scores) -> list[int]:
    """How many queries ``new`` ranks better and worse than ``old``."""
    return [sum(1 for q in old.ranks if _rr(new, q) > _rr(old, q)),
            sum(1 for q in old.ranks if _rr(new, q) < _rr(old, q))]


if __name__ == "__main__":
    sys.exit(main())
