"""Ranked search on Elasticsearch: the request bodies, the passes, facets and explain.

One request for the strict page, "did you mean" and, for a short plain query, the word IDF
and full-match count as aggregations; the near-copy counts in it or in one more
(``ES_NEAR_COPY_COUNTS``, :mod:`index.es_paging`). A second pass only when that shows pages
lacking a word must compete (few full matches) or that no page holds every word (any word).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from index.base import FACET_SIZE, Results
from index.es_explain import explain_hits
from index.es_mapping import HIT_SOURCE
from index.es_paging import partial
from index.es_query import blend_aggs, word_idf
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
        body = self.body(parsed)
        suggest = suggest_request(parsed)
        aggs = _FACET_AGGS if facets else None
        if suggest:
            body["suggest"] = suggest
        blendable = parsed.blendable(b.blend_words)
        if blendable or aggs:
            body["aggs"] = {**(blend_aggs(b.compiler, parsed) if blendable else {}),
                            **(aggs or {})}
        response, found = b.pager.page(body, offset, size)
        results.suggestion = suggestion(parsed, response.get("suggest"))
        was_partial = partial(response)
        idf = None
        if blendable:
            idf, strict = word_idf(response, parsed, b.blend_below)
        else:  # no page lacking a word competes: every match has them all
            strict = response["hits"]["total"]["value"]
        relaxed = strict < b.min_strict_hits and parsed.relaxable
        if relaxed:  # no page has every word: pages with some of them, those with more first
            idf = None
        if relaxed or idf:
            body = self.body(parsed, relaxed=relaxed, idf=idf)
            if aggs:
                body["aggs"] = aggs
            response, found = b.pager.page(body, offset, size)
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
                                         text=source.get("snippet", ""), languages=languages))
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
