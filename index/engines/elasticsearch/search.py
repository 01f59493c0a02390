"""Ranked search on Elasticsearch: the request bodies, the passes, facets and explain.

A page is ranked in two phases (:mod:`index.engines.elasticsearch.paging`): one request for the
strict page's window (the text query's top matches rescored with the signals), its total, "did you
mean" and the facets, and one more for the page's hits and their near-copy counts
(``ES_NEAR_COPY_COUNTS``). A second pass only when the first shows pages lacking a word
must compete (fewer than ``blend_below`` full matches of a short plain query: its words'
IDF read from the term statistics first, which costs the same on any index size, where
counting them over the index with a ``global`` aggregation did not) or that no page holds
every word (any word); the first pass's hits are then never read. The any-word pass ranks
every page in one pass and says so (``plan.ANY_WORD``): the plan then ranks the pages
holding every word, or lacking one minor word, before the others (``SearchPlan.first``),
as the embedded engine does in its own pass. With ``ES_TIERED`` the
strict pass runs on tier 1 first and the page stays there when tier 1 has enough good
results (:mod:`index.engines.elasticsearch.tiers`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from index.base import FACET_SIZE, Results
from index.engines.elasticsearch.explain import explain_hits
from index.engines.elasticsearch.mapping import HIT_SOURCE
from index.engines.elasticsearch.paging import Pager, Ranked, partial
from index.engines.elasticsearch.query import blend_terms, word_idf
from index.engines.elasticsearch.suggest import suggest_request, suggestion
from index.fields import FACET_FIELDS, IDF_FIELD
from index.hits import VECTORS_FIELD, make_hit
from index.plan import ANY_WORD, SearchPlan, Thresholds
from index.query import Query

if TYPE_CHECKING:
    from index.engines.elasticsearch.options import ElasticsearchOptions
    from index.engines.elasticsearch.query import RankingQuery
    from index.engines.elasticsearch.requests import SearchRequests
    from index.engines.elasticsearch.tiers import Tier1
    from index.semantic import SemanticOptions
    from index.signals import Ranker

__all__ = ["EsSearch"]

_FACET_AGGS = {name: {"terms": {"field": field, "size": FACET_SIZE}}
               for name, field in FACET_FIELDS.items()}


def _facets(aggregations: dict) -> dict[str, list[tuple[str, int]]]:
    return {name: [(b["key"], b["doc_count"])
                   for b in aggregations.get(name, {}).get("buckets", []) if b["key"]]
            for name in FACET_FIELDS}


class EsSearch:
    """The search path of the Elasticsearch engine: executes a :class:`SearchPlan` with the
    engine's options (read at each search, so they can be tuned live), ranker, ranked
    query and semantic matching, its read requests, the full index's pager and tier 1."""

    def __init__(self, options: ElasticsearchOptions, ranker: Ranker, ranking: RankingQuery,
                 semantic: SemanticOptions, requests: SearchRequests, pager: Pager,
                 tier1: Tier1, uses_rank_feature: Callable[[], bool]):
        self.options = options
        self.ranker = ranker
        self.ranking = ranking
        self.semantic = semantic
        self.requests = requests
        self.pager = pager
        self.tier1 = tier1
        self.uses_rank_feature = uses_rank_feature

    @property
    def alias(self) -> str:
        """The full index's alias."""
        return self.pager.alias

    def plan(self, parsed: Query) -> SearchPlan:
        """The search plan of a parsed query with the engine's thresholds now."""
        o = self.options
        return SearchPlan.of(parsed, Thresholds.of(o), self.ranker, o.language,
                             self.semantic.match())

    def run(self, parsed: Query, page: int, size: int, explain: bool, facets: bool,
            started: float) -> Results:
        """One page of results for a parsed query: its plan, executed."""
        return self.plan(parsed).execute(
            lambda plan, pg, sz: self.search(plan, pg, sz, explain, facets, started), page, size)

    def body(self, plan: SearchPlan, relaxed: bool = False,
             idf: list[float] | None = None, top: float = 1.0) -> dict:
        """The search request body (see ``ElasticsearchBackend.search_body``); ``top`` the
        best text score of the pages it ranks (:meth:`top`)."""
        context = plan.context
        rank_feature = bool(self.ranker.weight("pagerank")) and self.uses_rank_feature()
        return {
            "query": self.ranking.query(context, relaxed, idf, rank_feature, top),
            "timeout": self.options.query_timeout,
            "track_total_hits": self.options.track_total_hits,
            "_source": HIT_SOURCE,
        }

    def top(self, alias: str, plan: SearchPlan, relaxed: bool = False,
            idf: list[float] | None = None) -> float:
        """The best text score of the pages a pass ranks (its text query's first hit):
        the scale of the ``bm25`` signal, a page's text score over the best candidate's, as
        the embedded engine's ranker reads it (``TextRelevance``); 0 when nothing
        matches."""
        response = self.requests.search(
            index=alias, query=self.ranking.text_query(plan.context, relaxed, idf), size=1,
            _source=False, stored_fields=["_none_"], track_total_hits=False,
            timeout=self.options.query_timeout)
        hits = response["hits"]["hits"]
        return float(hits[0]["_score"] or 0.0) if hits else 0.0

    def search(self, plan: SearchPlan, page: int, size: int, explain: bool, facets: bool,
               started: float) -> Results:
        """One page of ranked hits for a search plan (see ``ElasticsearchBackend.search``);
        ``took_ms`` counts from ``started`` (a ``perf_counter`` reading)."""
        parsed = plan.query
        results = Results(query=parsed.raw, hits=[], total=0, page=page, size=size)
        if parsed.matches_nothing:
            results.suggestion = self.suggest(parsed)
            results.took_ms = (time.perf_counter() - started) * 1000
            return results
        offset = (page - 1) * size
        aggs = _FACET_AGGS if facets else None
        tier1 = self.tier1
        if tier1.enabled and tier1.pager is not None and tier1.min_rank() is not None:
            ranked = self._strict_page(tier1.pager, plan, offset, size, aggs)
            response = ranked.response
            # good results: pages holding every word, enough for this page
            if response["hits"]["total"]["value"] >= max(tier1.min_hits, offset + size):
                tier1.count("tier1")
                results.extra["tier"] = 1
                found = tier1.pager.fill(ranked)
                return self._finish(results, plan, response, found, partial(response),
                                    explain, aggs, False, None, started, ranked.top)
            tier1.count("fallthrough")
            results.extra["tier"] = 2
        ranked = self._strict_page(self.pager, plan, offset, size, aggs)
        response = ranked.response
        was_partial = partial(response)
        # Every match holds every word, bar the home pages of sites the query names.
        strict = response["hits"]["total"]["value"]
        idf = None
        # no page has every word: pages with some of them, those with more first
        relaxed = plan.relaxes(strict)
        if not relaxed and plan.blends(strict):
            docs, df = self.requests.term_stats(self.alias, IDF_FIELD, blend_terms(parsed))
            idf = word_idf(parsed, df, docs)
        top = ranked.top
        if relaxed or idf:
            first = response
            top = self.top(self.alias, plan, relaxed, idf)
            body = self.body(plan, relaxed=relaxed, idf=idf, top=top)
            if aggs:
                body["aggs"] = aggs
            ranked = self.pager.rank(body, offset, size, self.text(plan, relaxed, idf),
                                     self.language(plan))
            response = ranked.response
            response["suggest"] = first.get("suggest")
        if relaxed:  # in one pass: the plan ranks the pages of plan.first before the rest
            results.extra[ANY_WORD] = strict
        found = self.pager.fill(ranked)
        return self._finish(results, plan, response, found, was_partial, explain, aggs,
                            relaxed, idf, started, top)

    def text(self, plan: SearchPlan, relaxed: bool = False,
             idf: list[float] | None = None) -> dict:
        """The text query of ``body``'s ranked query (its first phase): the same pages,
        scored by BM25 with compounds, no signal."""
        return self.ranking.text_query(plan.context, relaxed, idf, first_phase=True)

    def _strict_page(self, pager: Pager, plan: SearchPlan, offset: int, size: int,
                     aggs: dict | None) -> Ranked:
        """The strict pass: one page of the pages holding every word ranked, with "did you
        mean" (and the facets) in the same request; its hits not yet read (the best text
        score it ranked by in ``top``)."""
        top = self.top(pager.alias, plan)
        body = self.body(plan, top=top)
        suggest = suggest_request(plan.query)
        if suggest:
            body["suggest"] = suggest
        if aggs:
            body["aggs"] = aggs
        ranked = pager.rank(body, offset, size, self.text(plan), self.language(plan))
        ranked.top = top
        return ranked

    def language(self, plan: SearchPlan) -> str:
        """The language whose page stands for a page's translations: the query's, when the
        ``lang`` signal is weighted ("": the best by score)."""
        return plan.context.language if self.ranker.weight("lang") else ""

    def _finish(self, results: Results, plan: SearchPlan, response: dict, found: list,
                was_partial: bool, explain: bool, aggs: dict | None, relaxed: bool,
                idf: list[float] | None, started: float, top: float) -> Results:
        """``results`` filled from the page's final response and its hits."""
        parsed = plan.query
        results.suggestion = suggestion(parsed, response.get("suggest"))
        results.total = response["hits"]["total"]["value"]
        results.partial = was_partial or partial(response)
        if aggs:
            results.facets = _facets(response.get("aggregations", {}))
        explained = (self._explain(plan, [h for h, *_ in found], relaxed, idf, top)
                     if explain else {})
        for hit, similar, languages in found:
            source = hit["_source"]
            plan.take(results, hit["_id"], source["doc"].get(VECTORS_FIELD, ""),
                      functools.partial(make_hit, source["doc"], hit["_score"] or 0.0,
                                        similar, parsed, self.options.snippet_chars,
                                        explained.get(hit["_id"]),
                                        text=source.get("snippet", ""), languages=languages,
                                        sections=source.get("sections", "")),
                      hit["_score"] or 0.0)
        results.took_ms = (time.perf_counter() - started) * 1000
        return results

    def suggest(self, parsed: Query) -> str | None:
        """The query with words the index lacks replaced by the term suggester's best."""
        request = suggest_request(parsed)
        if request is None:
            return None
        response = self.requests.search(index=self.alias, size=0, suggest=request)
        return suggestion(parsed, response.get("suggest"))

    def _explain(self, plan: SearchPlan, hits: list[dict], relaxed: bool,
                 idf: list[float] | None, top: float) -> dict[str, dict]:
        return explain_hits(self.requests, self.alias, self.ranking, plan.context, hits,
                            relaxed, idf, top)
