"""Ranking signals, the weighted ranker, and rerank() as backends call it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from index.base import Hit, doc_id_for
from index.query import parse
from ranking.pagerank import LinkGraph, pagerank, static_rank
from ranking.signals import (
    HostHomePage,
    HostRankSignal,
    PageRankSignal,
    QueryInfo,
    RankContext,
    Ranker,
    TextRelevance,
    UrlDepth,
    query_names_host,
    rerank,
)


def hit(url: str, score: float = 1.0, pagerank: float = 0.0) -> Hit:
    host = url.split("/")[2]
    return Hit(
        id=doc_id_for(url), url=url, title="", snippet="", score=score, host=host, pagerank=pagerank
    )


def ctx(query: str, max_text_score: float = 1.0, host_ranks=None) -> RankContext:
    return RankContext(QueryInfo.of(query), max_text_score, host_ranks or {})


def test_query_info_from_string_skips_operators():
    q = QueryInfo.of('Python "Monty Flying" -snake site:docs.test OR circus')
    assert q.terms == ("python", "monty", "flying", "circus")


def test_query_info_from_the_shared_query_parser_uses_raw_words():
    parsed = parse('Docs Python "running dogs" -snake site:x.test')
    assert QueryInfo.of(parsed).terms == ("docs", "python", "running", "dogs")


def test_query_info_from_parsed_query_with_terms():
    parsed = SimpleNamespace(terms=("Docs", "python.test"))
    assert QueryInfo.of(parsed).terms == ("docs", "python.test")
    with pytest.raises(TypeError, match="terms"):
        QueryInfo.of(object())


@pytest.mark.parametrize(
    "query,host,named",
    [
        ("python", "python.test", True),
        ("python.test", "python.test", True),
        ("www.python.test", "www.python.test", True),
        ("Python", "www.python.test", True),
        ("docs python", "docs.python.test", True),
        ("python", "docs.python.test", False),
        ("stack overflow", "stackoverflow.test", True),
        ("python tutorial", "python.test", True),
        ("snake", "python.test", False),
        ("", "python.test", False),
        ("test", "python.test", False),
    ],
)
def test_query_names_host(query, host, named):
    assert query_names_host(QueryInfo.of(query), host) is named


def test_home_page_signal_only_for_home_of_named_host():
    signal = HostHomePage()
    assert signal.compute(hit("https://python.test/"), ctx("python")) == 1.0
    assert signal.compute(hit("https://python.test/index.html"), ctx("python")) == 1.0
    assert signal.compute(hit("https://python.test/about"), ctx("python")) == 0.0
    assert signal.compute(hit("https://python.test/?q=1"), ctx("python")) == 0.0
    assert signal.compute(hit("https://snakes.test/"), ctx("python")) == 0.0


def test_url_depth():
    signal = UrlDepth()
    assert signal.compute(hit("https://a.test/"), ctx("x")) == 1.0
    assert signal.compute(hit("https://a.test/a/b"), ctx("x")) == pytest.approx(1 / 3)
    assert signal.compute(hit("https://a.test/a?x=1"), ctx("x")) == pytest.approx(1 / 3)


def test_text_relevance_is_relative_to_best_candidate():
    signal = TextRelevance()
    assert signal.compute(hit("https://a.test/", score=5.0), ctx("x", 10.0)) == 0.5
    assert signal.compute(hit("https://a.test/", score=5.0), ctx("x", 0.0)) == 0.0


def test_pagerank_signal_reads_the_static_rank_clamped():
    signal = PageRankSignal()
    values = [signal.compute(hit("https://a.test/", pagerank=r), ctx("x")) for r in (-1, 0.3, 2)]
    assert values == [0.0, 0.3, 1.0]


def test_static_rank_is_log_scaled_with_best_page_one():
    scores = np.array([0.5, 0.25, 0.125, 0.0625, 0.0625])
    ranked = static_rank(scores)
    assert ranked.max() == 1.0 and ranked.argmax() == 0
    assert (np.diff(ranked) <= 0).all()
    # log scale: half the PageRank keeps far more than half the static rank
    assert ranked[1] > 0.6
    assert static_rank(np.array([])).size == 0


def test_host_rank_signal_reads_context():
    signal = HostRankSignal()
    c = ctx("x", host_ranks={"big.test": 1.0, "small.test": 0.2})
    big = signal.compute(hit("https://big.test/a"), c)
    small = signal.compute(hit("https://small.test/a"), c)
    assert big > small > signal.compute(hit("https://none.test/a"), c) == 0.0


def test_ranker_weights_are_data():
    ranker = Ranker([TextRelevance(), UrlDepth()], {"urldepth": 0.0})
    assert ranker.weights == {"text": 1.0, "urldepth": 0.0}
    deep = hit("https://a.test/a/b/c", score=2.0)
    shallow = hit("https://a.test/", score=1.0)
    assert [h.url for h in ranker.rerank([shallow, deep], "x")] == [deep.url, shallow.url]
    ranker.weights["urldepth"] = 5.0
    assert [h.url for h in ranker.rerank([shallow, deep], "x")] == [shallow.url, deep.url]
    with pytest.raises(ValueError, match="unknown signals"):
        Ranker([TextRelevance()], {"nosuch": 1.0})


def test_ranker_from_settings_mapping_and_object():
    ranker = Ranker.from_settings(
        {
            "RANKING_SIGNALS": ["ranking.signals.TextRelevance", "ranking.signals.UrlDepth"],
            "RANKING_WEIGHTS": {"text": 2.0},
        }
    )
    assert ranker.weights == {"text": 2.0, "urldepth": UrlDepth.default_weight}

    django_like = SimpleNamespace(RANKING_WEIGHTS={"pagerank": 0.9})
    defaults = Ranker.from_settings(django_like)
    assert [s.name for s in defaults.signals] == [
        "text",
        "pagerank",
        "hostrank",
        "homepage",
        "urldepth",
    ]
    assert defaults.weights["pagerank"] == 0.9
    with pytest.raises(ImportError, match="RANKING_SIGNALS"):
        Ranker.from_settings({"RANKING_SIGNALS": ["ranking.signals.Nope"]})


def test_explain_lists_every_signal():
    ranker = Ranker.from_settings({})
    h = hit("https://python.test/", score=3.0, pagerank=2.0)
    c = ranker.context([h], "python")
    values = ranker.explain(h, c)
    assert set(values) == {"text", "pagerank", "hostrank", "homepage", "urldepth"}
    assert ranker.score(h, c) == pytest.approx(
        sum(ranker.weights[k] * v for k, v in values.items())
    )


def test_navigational_query_puts_the_home_page_first():
    hits = [
        hit("https://blog.test/posts/python-tips", score=9.0, pagerank=3.0),
        hit("https://python.test/downloads/python-3", score=8.0, pagerank=2.0),
        hit("https://python.test/", score=4.0, pagerank=2.0),
    ]
    ranked = rerank(hits, "python")
    assert ranked[0].url == "https://python.test/"
    assert [h.score for h in ranked] == sorted((h.score for h in ranked), reverse=True)
    assert hits[0].score == 9.0  # inputs untouched


def test_well_linked_page_beats_poorly_linked_page_with_same_text():
    pages = [f"https://site{i}.test/p" for i in range(8)]
    ids = [doc_id_for(u) for u in pages]
    # pages 1..6 link to page 0; only page 7 links to page 1
    edges = [(ids[i], ids[0]) for i in range(1, 7)] + [(ids[7], ids[1])]
    graph = LinkGraph.from_doc_edges(edges, nodes=ids)
    rank = dict(zip(graph.node_ids(), static_rank(pagerank(graph)).tolist(), strict=True))
    well, poor = hit(pages[0], 5.0, rank[ids[0]]), hit(pages[1], 5.0, rank[ids[1]])
    assert rank[ids[0]] == 1.0 > rank[ids[1]]
    assert [h.url for h in rerank([poor, well], "widgets")] == [well.url, poor.url]
    # much better text still beats better links
    better_text = hit(pages[1], 15.0, rank[ids[1]])
    assert rerank([well, better_text], "widgets")[0].url == pages[1]
