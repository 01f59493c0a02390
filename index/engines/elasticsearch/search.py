"""Ranked search on Elasticsearch: the request bodies, the passes, facets and explain.

A page is ranked in two phases (:mod:`index.engines.elasticsearch.paging`): one request for the
strict page's window (the text query's top matches rescored with the signals), its total, "did you
mean" and the facets, and one more for the page's hits and their near-copy counts
(``ES_NEAR_COPY_COUNTS``). A second pass only when the first shows pages lacking a word
must compete (fewer than ``blend_below`` full matches of a short plain query: its words'
IDF read from the term statistics first, which costs the same on any index size, where
counting them over the index with a ``global`` aggregation did not) or that no page holds
every word (any word); the first pass's hits are then never read. With ``ES_TIERED`` the
strict pass runs on tier 1 first and the page stays there when tier 1 has enough good
results (:mod:`index.engines.elasticsearch.tiers`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from index.base import FACET_SIZE, Results
from index.engines.elasticsearch.explain import explain_hits
from index.engines.elasticsearch.mapping import HIT_SOURCE
from index.engines.elasticsearch.paging import Pager, Ranked, partial
from index.engines.elasticsearch.query import blend_terms, word_idf
from index.engines.elasticsearch.suggest import suggest_request, suggestion
from index.fields import FACET_FIELDS, IDF_FIELD
from index.hits import VECTORS_FIELD, make_hit
from index.plan import SearchPlan, Thresholds
from index.query import Query

if TYPE_CHECKING:
    from index.engines.elasticsearch.backend import ElasticsearchBackend

__all__ = ["EsSearch"]

_FACET_AGGS = {name: {"terms": {"field": field, "size": FACET_SIZE}}
               for name, field in FACET_FIELDS.items()}


def _facets(aggregations: dict) -> dict[str, list[tuple[str, int]]]:
    return {name: [(b["key"], b["doc_count"])
                   for b in aggregations.get(name, {}).get("buckets", []) if b["key"]]
            for name in FACET_FIELDS}


class EsSearch:
    """The search path of an :class:`~index.engines.elasticsearch.backend.ElasticsearchBackend`;
    reads the backend's options (thresholds, timeouts, ranking) at each search, so they can be tuned
    live."""

    def __init__(self, backend: ElasticsearchBackend):
        self.backend = backend

    def plan(self, parsed: Query) -> SearchPlan:
        """The search plan of a parsed query with the backend's thresholds now."""
        b = self.backend
        return SearchPlan.of(parsed, Thresholds.of(b), b.ranker, b.language, b.semantic.match())

    def run(self, parsed: Query, page: int, size: int, explain: bool, facets: bool,
            started: float) -> Results:
        """One page of results for a parsed query: its plan, executed."""
        return self.plan(parsed).execute(
            lambda plan, pg, sz: self.search(plan, pg, sz, explain, facets, started), page, size)

    def body(self, plan: SearchPlan, relaxed: bool = False,
             idf: list[float] | None = None) -> dict:
        """The search request body (see ``ElasticsearchBackend.search_body``)."""
        b = self.backend
        context = plan.context
        rank_feature = bool(b.ranker.weight("pagerank")) and b.uses_rank_feature()
        return {
            "query": b.ranking.query(context, relaxed, idf, rank_feature),
            "timeout": b.query_timeout,
            "track_total_hits": b.track_total_hits,
            "_source": HIT_SOURCE,
        }

    def search(self, plan: SearchPlan, page: int, size: int, explain: bool, facets: bool,
               started: float) -> Results:
        """One page of ranked hits for a search plan (see ``ElasticsearchBackend.search``);
        ``took_ms`` counts from ``started`` (a ``perf_counter`` reading)."""
        b = self.backend
        parsed = plan.query
        results = Results(query=parsed.raw, hits=[], total=0, page=page, size=size)
        if parsed.matches_nothing:
            results.suggestion = self.suggest(parsed)
            results.took_ms = (time.perf_counter() - started) * 1000
            return results
        offset = (page - 1) * size
        aggs = _FACET_AGGS if facets else None
        tier1 = b.tier1
        if tier1.enabled and tier1.pager is not None and tier1.min_rank() is not None:
            ranked = self._strict_page(tier1.pager, plan, offset, size, aggs)
            response = ranked.response
            # good results: pages holding every word, enough for this page
            if response["hits"]["total"]["value"] >= max(tier1.min_hits, offset + size):
                b.tier1.count("tier1")
                results.extra["tier"] = 1
                found = tier1.pager.fill(ranked)
                return self._finish(results, plan, response, found, partial(response),
                                    explain, aggs, False, None, started)
            b.tier1.count("fallthrough")
            results.extra["tier"] = 2
        ranked = self._strict_page(b.pager, plan, offset, size, aggs)
        response = ranked.response
        was_partial = partial(response)
        # Every match holds every word, bar the home pages of sites the query names.
        strict = response["hits"]["total"]["value"]
        idf = None
        # no page has every word: pages with some of them, those with more first
        relaxed = plan.relaxes(strict)
        if not relaxed and plan.blends(strict):
            docs, df = b.requests.term_stats(b.alias, IDF_FIELD, blend_terms(parsed))
            idf = word_idf(parsed, df, docs)
        if relaxed or idf:
            first = response
            body = self.body(plan, relaxed=relaxed, idf=idf)
            if aggs:
                body["aggs"] = aggs
            ranked = b.pager.rank(body, offset, size, self.text(plan, relaxed, idf))
            response = ranked.response
            response["suggest"] = first.get("suggest")
        found = b.pager.fill(ranked)
        return self._finish(results, plan, response, found, was_partial, explain, aggs,
                            relaxed, idf, started)

    def text(self, plan: SearchPlan, relaxed: bool = False,
             idf: list[float] | None = None) -> dict:
        """The text query of ``body``'s ranked query (its first phase): the same pages,
        scored by BM25 with compounds, no signal."""
        return self.backend.ranking.text_query(plan.context, relaxed, idf)

    def _strict_page(self, pager: Pager, plan: SearchPlan, offset: int, size: int,
                     aggs: dict | None) -> Ranked:
        """The strict pass: one page of the pages holding every word ranked, with "did you
        mean" (and the facets) in the same request; its hits not yet read."""
        body = self.body(plan)
        suggest = suggest_request(plan.query)
        if suggest:
            body["suggest"] = suggest
        if aggs:
            body["aggs"] = aggs
        return pager.rank(body, offset, size, self.text(plan))

    def _finish(self, results: Results, plan: SearchPlan, response: dict, found: list,
                was_partial: bool, explain: bool, aggs: dict | None, relaxed: bool,
                idf: list[float] | None, started: float) -> Results:
        """``results`` filled from the page's final response and its hits."""
        b = self.backend
        parsed = plan.query
        results.suggestion = suggestion(parsed, response.get("suggest"))
        results.total = response["hits"]["total"]["value"]
        results.partial = was_partial or partial(response)
        if aggs:
            results.facets = _facets(response.get("aggregations", {}))
        explained = self._explain(plan, [h for h, *_ in found], relaxed, idf) if explain else {}
        vectors = results.extra.setdefault("vectors", {}) if plan.reads_vectors else None
        for hit, similar, languages in found:
            source = hit["_source"]
            if vectors is not None:
                vectors[hit["_id"]] = source["doc"].get(VECTORS_FIELD, "")
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

    def _explain(self, plan: SearchPlan, hits: list[dict], relaxed: bool,
                 idf: list[float] | None) -> dict[str, dict]:
        b = self.backend
        return explain_hits(b.requests, b.alias, b.ranking, plan.context, hits, relaxed, idf)
