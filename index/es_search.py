"""Ranked search on Elasticsearch: the request bodies, the passes, facets and explain.

A page is ranked in two phases (:mod:`index.es_paging`): one request for the strict page's
window (the text query's top matches rescored with the signals), its total, "did you mean"
and the facets, and one more for the page's hits and their near-copy counts
(``ES_NEAR_COPY_COUNTS``). A second pass only when the first shows pages lacking a word
must compete (fewer than ``blend_below`` full matches of a short plain query: its words'
IDF read from the term statistics first, which costs the same on any index size, where
counting them over the index with a ``global`` aggregation did not) or that no page holds
every word (any word); the first pass's hits are then never read. With ``ES_TIERED`` the
strict pass runs on tier 1 first and the page stays there when tier 1 has enough good
results (:mod:`index.es_tiers`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from index.base import FACET_SIZE, Results
from index.es_explain import explain_hits
from index.es_mapping import HIT_SOURCE
from index.es_paging import Pager, Ranked, partial
from index.es_query import blend_terms, word_idf
from index.es_suggest import suggest_request, suggestion
from index.fields import FACET_FIELDS
from index.hits import make_hit
from index.query import Query
from index.signals import RankContext

if TYPE_CHECKING:
    from index.elasticsearch import ElasticsearchBackend

__all__ = ["EsSearch"]

_FACET_AGGS = {name: {"terms": {"field": field, "size": FACET_SIZE}}
               for name, field in FACET_FIELDS.items()}


def _facets(aggregations: dict) -> dict[str, list[tuple[str, int]]]:
    return {name: [(b["key"], b["doc_count"])
                   for b in aggregations.get(name, {}).get("buckets", []) if b["key"]]
            for name in FACET_FIELDS}


class EsSearch:
    """The search path of an :class:`~index.elasticsearch.ElasticsearchBackend`; reads the
    backend's options (thresholds, timeouts, ranking) at each search, so they can be tuned
    live."""

    def __init__(self, backend: ElasticsearchBackend):
        self.backend = backend

    def body(self, parsed: Query, relaxed: bool = False,
             idf: list[float] | None = None) -> dict:
        """The search request body (see ``ElasticsearchBackend.search_body``)."""
        b = self.backend
        context = RankContext.of(parsed, b.language)
        rank_feature = bool(b.ranker.weight("pagerank")) and b.uses_rank_feature()
        return {
            "query": b.ranking.query(context, relaxed, idf, rank_feature),
            "timeout": b.query_timeout,
            "track_total_hits": b.track_total_hits,
            "_source": HIT_SOURCE,
        }

    def search(self, parsed: Query, page: int, size: int, explain: bool, facets: bool,
               started: float) -> Results:
        """One page of ranked hits (see ``ElasticsearchBackend.search``); ``took_ms`` counts
        from ``started`` (a ``perf_counter`` reading)."""
        b = self.backend
        results = Results(query=parsed.raw, hits=[], total=0, page=page, size=size)
        if parsed.matches_nothing:
            results.suggestion = self.suggest(parsed)
            results.took_ms = (time.perf_counter() - started) * 1000
            return results
        offset = (page - 1) * size
        aggs = _FACET_AGGS if facets else None
        tier1 = b.tier1
        if tier1.enabled and tier1.pager is not None and tier1.min_rank() is not None:
            ranked = self._strict_page(tier1.pager, parsed, offset, size, aggs)
            response = ranked.response
            # good results: pages holding every word, enough for this page
            if response["hits"]["total"]["value"] >= max(tier1.min_hits, offset + size):
                b.tier1.count("tier1")
                results.extra["tier"] = 1
                found = tier1.pager.fill(ranked)
                return self._finish(results, parsed, response, found, partial(response),
                                    explain, aggs, False, None, started)
            b.tier1.count("fallthrough")
            results.extra["tier"] = 2
        ranked = self._strict_page(b.pager, parsed, offset, size, aggs)
        response = ranked.response
        was_partial = partial(response)
        # Every match holds every word, bar the home pages of sites the query names.
        strict = response["hits"]["total"]["value"]
        idf = None
        # no page has every word: pages with some of them, those with more first
        relaxed = strict < b.min_strict_hits and parsed.relaxable
        if not relaxed and parsed.blendable(b.blend_words) and strict < b.blend_below:
            docs, df = b.requests.term_stats(b.alias, "body", blend_terms(parsed))
            idf = word_idf(parsed, df, docs)
        if relaxed or idf:
            first = response
            body = self.body(parsed, relaxed=relaxed, idf=idf)
            if aggs:
                body["aggs"] = aggs
            ranked = b.pager.rank(body, offset, size, self.text(parsed, relaxed, idf))
            response = ranked.response
            response["suggest"] = first.get("suggest")
        found = b.pager.fill(ranked)
        return self._finish(results, parsed, response, found, was_partial, explain, aggs,
                            relaxed, idf, started)

    def text(self, parsed: Query, relaxed: bool = False,
             idf: list[float] | None = None) -> dict:
        """The text query of ``body``'s ranked query (its first phase): the same pages,
        scored by BM25 with compounds, no signal."""
        b = self.backend
        return b.ranking.text_query(RankContext.of(parsed, b.language), relaxed, idf)

    def _strict_page(self, pager: Pager, parsed: Query, offset: int, size: int,
                     aggs: dict | None) -> Ranked:
        """The strict pass: one page of the pages holding every word ranked, with "did you
        mean" (and the facets) in the same request; its hits not yet read."""
        body = self.body(parsed)
        suggest = suggest_request(parsed)
        if suggest:
            body["suggest"] = suggest
        if aggs:
            body["aggs"] = aggs
        return pager.rank(body, offset, size, self.text(parsed))

    def _finish(self, results: Results, parsed: Query, response: dict, found: list,
                was_partial: bool, explain: bool, aggs: dict | None, relaxed: bool,
                idf: list[float] | None, started: float) -> Results:
        """``results`` filled from the page's final response and its hits."""
        b = self.backend
        results.suggestion = suggestion(parsed, response.get("suggest"))
        results.total = response["hits"]["total"]["value"]
        results.partial = was_partial or partial(response)
        if aggs:
            results.facets = _facets(response.get("aggregations", {}))
        explained = self._explain(parsed, [h for h, *_ in found], relaxed, idf) if explain else {}
        for hit, similar, languages in found:
            source = hit["_source"]
            results.hits.append(make_hit(source["doc"], hit["_score"] or 0.0, similar,
                                         parsed, b.snippet_chars,
                                         explained.get(hit["_id"]),
                                         text=source.get("snippet", ""), languages=languages,
                                         sections=source.get("sections", "")))
        results.took_ms = (time.perf_counter() - started) * 1000
        return results

    def suggest(self, parsed: Query) -> str | None:
        """The query with words the index lacks replaced by the term suggester's best."""
        request = suggest_request(parsed)
        if request is None:
            return None
        b = self.backend
        response = b.requests.search(index=b.alias, size=0, suggest=request)
        return suggestion(parsed, response.get("suggest"))

    def _explain(self, parsed: Query, hits: list[dict], relaxed: bool,
                 idf: list[float] | None) -> dict[str, dict]:
        b = self.backend
        context = RankContext.of(parsed, b.language)
        return explain_hits(b.requests, b.alias, b.ranking, context, hits, relaxed, idf)
