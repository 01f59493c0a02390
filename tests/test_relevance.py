"""Relevance on real documentation sites must not fall below the figure in docs/relevance.md.

Crawls the CI subset of ``testweb --real-docs`` (``harness.relevance.QUICK_SITES``) with the
project's crawler, indexes it with anchor text and PageRank from the link store, runs the
judged queries of those sites through the embedded backend and compares success@3 with
the recorded one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.relevance import (
    QUICK_SITES,
    BodyBM25,
    NearCopies,
    backend_search,
    build_index,
    crawl,
    documents,
    evaluate,
    load_queries,
    read_pages,
)

ROOT = Path(__file__).resolve().parent.parent
TOLERANCE = 0.05


def recorded_success_at_3() -> float:
    """The CI subset's success@3 as docs/relevance.md records it."""
    text = (ROOT / "docs" / "relevance.md").read_text(encoding="utf-8")
    match = re.search(r"CI subset success@3: \*\*([0-9.]+)\*\*", text)
    assert match, "docs/relevance.md must record 'CI subset success@3: **X**'"
    return float(match.group(1))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    cache = tmp_path_factory.mktemp("relevance")
    pages = read_pages(crawl(cache, QUICK_SITES, timeout=300))
    backend = build_index(cache / "index", documents(pages, cache / "links.sqlite"))
    return pages, backend


def test_crawl_obeyed_robots_and_covered_the_sites(corpus):
    pages, _ = corpus
    hosts = {p["host"] for p in pages}
    assert hosts == set(QUICK_SITES)
    assert len(pages) >= 300
    assert not any("/_sources/" in p["url"] or "/_static/" in p["url"] for p in pages)


def test_success_at_3_holds_the_recorded_figure(corpus):
    pages, backend = corpus
    judged = load_queries(hosts=QUICK_SITES)
    assert len(judged) >= 25
    copies = NearCopies(pages)
    project = evaluate(backend_search(backend), judged, copies)
    baseline = evaluate(BodyBM25(pages).search, judged, copies)
    floor = recorded_success_at_3() - TOLERANCE
    misses = sorted(q for q, rank in project.ranks.items() if rank is None or rank > 3)
    assert project.success(3) >= floor, f"success@3 {project.success(3):.3f} < {floor}: {misses}"
    assert project.mrr() > baseline.mrr()
