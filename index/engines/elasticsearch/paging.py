"""Paging and collapse for Elasticsearch: one page of a ranked body, near-copies counted.

Two phases, as on the embedded engine (:mod:`index.engines.embedded.search`): the text query
(``RankingQuery.text_query``: BM25 with compounds, no signal) finds the top
``offset + size + rerank_depth`` matches of each shard (``ES_RERANK_DEPTH``, the embedded
engine's depth by default), and a ``rescore`` gives each of them the
score of the ranked query (the signals' ``function_score``) with ``query_weight`` 0 and
``rescore_query_weight`` 1, so a rescored page scores exactly what the one-pass query
gives it. The signals' cost no longer grows with the number of matches, and the text
query keeps Lucene's dynamic pruning (a ``function_score`` has no score bound, so every
match was scored). Elasticsearch collapses before it rescores (the group's best by text,
not by rank, would stand for it) and sorts a rescored request by ``_score`` only, so the
window comes back as ids, scores and collapse keys (doc values only), is ordered here as
``RANK_ORDER`` (ties by id) and collapsed here (:func:`index.hits.collapse`); a window that
collapses to fewer groups than the page needs is searched again four times deeper. The
page's hits then come in one more request that also counts their near-copies: the page's
ids as a ``post_filter`` over the matches of the page's clusters, whose terms aggregation
counts each cluster's members and their languages.

``ES_RERANK_DEPTH`` 0 scores every match with the signals in one pass (from/size with
server-side collapse on ``cluster``), as does ``ES_NEAR_COPY_COUNTS=inner_hits``: the
collapse's ``inner_hits`` with size 0 give the group sizes in the same request, and
inner hits need the server-side collapse. Measured on 20,000 bench pages with crawl-like
cluster ids (5% near-copies), one pass, 350 queries after a warm-up on the loaded 2-core
box, p50 / p95 ms in two runs: aggregation 17 / 52 and 22 / 75, inner hits 31 / 90 and
57 / 174: the expand phase re-runs the scored query once per group, which costs more than
a loopback round trip. Pages past ``max_window`` (two-phase: whose window would not fit in
it) walk the one-pass ranking with ``search_after`` and collapse here, their near-copies
counted by the aggregation.
"""

from __future__ import annotations

from dataclasses import dataclass

from index.analysis import language_of
from index.engines.elasticsearch.mapping import HIT_SOURCE
from index.engines.elasticsearch.requests import SearchRequests
from index.hits import collapse

__all__ = ["NEAR_COPY_COUNTS", "RANK_ORDER", "Pager", "Ranked", "partial", "shown_only"]

# Ties in score break by id, so from/size pages and search_after walks agree.
RANK_ORDER = [{"_score": "desc"}, {"id": "asc"}]
#: How ``Hit.similar`` is counted (``ES_NEAR_COPY_COUNTS``).
NEAR_COPY_COUNTS = frozenset({"aggregation", "inner_hits"})
# One group per cluster; its inner hits' total (no documents fetched) counts its members.
COLLAPSE = {"field": "cluster",
            "inner_hits": {"name": "members", "size": 0, "_source": False}}
# What a rescored window reads of each hit, from doc values alone (no stored field: reading
# ``_id`` for each of a hundred hits cost more than the rescore): its id, its collapse key
# whether it has near-copies and its language (of a page's translations, the one in the
# query's language stands for them: ``index.hits.collapse``).
_WINDOW_FIELDS = ["id", "cluster", "cluster_id", "lang"]


def _group_size(hit: dict) -> int:
    """How many matches share the collapsed ``hit``'s cluster, itself included."""
    total = hit.get("inner_hits", {}).get("members", {}).get("hits", {}).get("total")
    if isinstance(total, dict):
        return max(1, int(total.get("value", 1)))
    return max(1, int(total or 1))


def _cluster(hit: dict) -> str:
    """The collapse key of a hit read with ``docvalue_fields`` including ``cluster``."""
    return hit["fields"]["cluster"][0]


def _language(hit: dict) -> str:
    """The language of a hit read with ``docvalue_fields`` including ``lang``."""
    return (hit.get("fields", {}).get("lang") or [""])[0]


def _shares_cluster(hit: dict) -> bool:
    """Whether other pages may share the hit's cluster: it has a near-copy cluster id, or
    its key groups translations (``fields.collapse_key``)."""
    if "_source" in hit:
        cluster_id = hit["_source"]["doc"].get("cluster_id")
    else:
        cluster_id = (hit.get("fields", {}).get("cluster_id") or [""])[0]
    return bool(cluster_id) or _cluster(hit).startswith("t:")


def shown_only(body: dict) -> dict:
    """``body`` without the pages their duplicate cluster does not show (``shown`` 0);
    documents indexed before the field existed have none and stay."""
    return {**body, "query": {"bool": {"must": [body["query"]],
                                       "must_not": [{"term": {"shown": 0}}]}}}


def partial(response: dict) -> bool:
    """Whether a search response misses results: a shard timed out or failed."""
    return bool(response.get("timed_out")) or response["_shards"].get("failed", 0) > 0


@dataclass
class Ranked:
    """One page ranked: the search response (total, suggestions, facets) and either the
    page's (hit, near-copies, other languages) already (``found``) or its hits still to
    be read with their near-copy counts over the matches of ``matching``
    (:meth:`Pager.fill`)."""

    response: dict
    hits: list[dict]
    matching: dict
    found: list | None = None
    #: The best text score of the pages ranked (the scale of the ``bm25`` signal).
    top: float = 1.0


class Pager:
    """Pages of ranked results of one alias, collapsed on ``cluster``."""

    def __init__(self, client: SearchRequests, alias: str, max_window: int,
                 query_timeout: str, near_copies: str, *, rerank_depth: int,
                 counts_alias: str | None = None):
        if near_copies not in NEAR_COPY_COUNTS:
            raise ValueError(f"ES_NEAR_COPY_COUNTS must be one of {sorted(NEAR_COPY_COUNTS)}, "
                             f"not {near_copies!r}")
        if rerank_depth < 0:
            raise ValueError(f"ES_RERANK_DEPTH must be 0 or more, not {rerank_depth!r}")
        self.near_copies = near_copies
        self.client = client
        self.alias = alias
        #: Where near-copies are counted (``aggregation``): ``alias`` unless it holds only
        #: part of the pages (tier 1).
        self.counts_alias = counts_alias or alias
        self.max_window = max_window
        self.query_timeout = query_timeout
        #: Matches past the page each shard rescores (0: every match scored in one pass).
        self.rerank_depth = rerank_depth

    def page(self, body: dict, offset: int, size: int,
             text: dict | None = None) -> tuple[dict, list]:
        """The response and the (hit, near-copies, other languages) of one page of results
        for ``body`` (``rank`` then ``fill``)."""
        ranked = self.rank(body, offset, size, text)
        return ranked.response, self.fill(ranked)

    def rank(self, body: dict, offset: int, size: int, text: dict | None = None,
             language: str = "") -> Ranked:
        """One page of ``body``'s ranking: two-phase when ``text`` (the text query of
        ``body["query"]``, matching the same pages) is given, else in one pass. Pages not
        shown (``Document.shown``) are left out (the aggregation counts them as near-copies,
        inner hits do not; other languages are counted with the aggregation only). Of a
        cluster's pages in a rescored window, the best in ``language`` (the query's) stands
        for it."""
        if offset + size > self.max_window:
            return self._deep_page(body, offset, size)
        if text is None or self.near_copies == "inner_hits" or not self.rerank_depth:
            return self._one_pass(body, offset, size)
        if offset + size + self.rerank_depth > self.max_window:
            return self._deep_page(body, offset, size)  # its window would not fit
        return self._rescored(body, text, offset, size, language)

    def fill(self, ranked: Ranked) -> list:
        """The (hit, near-copies, other languages) of a ranked page; reads its hits (and
        counts their clusters) unless ``rank`` already did."""
        if ranked.found is not None:
            return ranked.found
        hits = ranked.hits
        if not hits:
            return []
        ids = [hit["_id"] for hit in hits]
        shared = sorted({_cluster(h) for h in hits if _shares_cluster(h)})
        request: dict = {"size": len(ids), "_source": HIT_SOURCE, "timeout": self.query_timeout,
                         "track_total_hits": False}
        if shared:
            # the page's hits (post_filter) and its clusters' matches (the aggregation)
            request["query"] = {"bool": {"filter": [ranked.matching, {"bool": {
                "should": [{"ids": {"values": ids}}, {"terms": {"cluster": shared}}],
                "minimum_should_match": 1}}]}}
            request["post_filter"] = {"ids": {"values": ids}}
            request["aggs"] = {"shared": {"filter": {"terms": {"cluster": shared}},
                                          "aggs": _cluster_aggs(len(shared))}}
        else:
            request["query"] = {"ids": {"values": ids}}
        response = self.client.search(index=self.counts_alias, **request).body
        if partial(response):
            ranked.response["timed_out"] = True
        sources = {h["_id"]: h["_source"] for h in response["hits"]["hits"]}
        buckets = _buckets(response.get("aggregations", {}).get("shared", {}))
        found = []
        for hit in hits:
            source = sources.get(hit["_id"])
            if source is None:
                continue  # deleted since the window was ranked
            hit["_source"] = source
            found.append((hit, *_sizes(hit, buckets)))
        return found

    def _one_pass(self, body: dict, offset: int, size: int) -> Ranked:
        """A page of the one-pass ranking: from/size with server-side collapse."""
        response = self.client.search(
            index=self.alias,
            **shown_only(body),
            from_=offset,
            size=size,
            sort=RANK_ORDER,
            collapse=COLLAPSE if self.near_copies == "inner_hits" else {"field": "cluster"},
        ).body
        hits = response["hits"]["hits"]
        if self.near_copies == "inner_hits":
            found = [(hit, _group_size(hit) - 1, 0) for hit in hits]
        else:
            found = [(hit, *sizes) for hit, sizes in
                     zip(hits, self._cluster_sizes(body["query"], hits), strict=True)]
        return Ranked(response, hits, body["query"], found)

    def _rescored(self, body: dict, text: dict, offset: int, size: int,
                  language: str = "") -> Ranked:
        """A page of the two-phase ranking: the text query's top matches rescored by the
        ranked query, collapsed here."""
        window = offset + size + self.rerank_depth
        request = shown_only({**body, "query": text})
        request.update(_source=False, stored_fields=["_none_"], docvalue_fields=_WINDOW_FIELDS,
                       from_=0)
        first: dict | None = None
        while True:
            request.update(size=window, rescore={"window_size": window, "query": {
                "rescore_query": body["query"], "query_weight": 0.0,
                "rescore_query_weight": 1.0, "score_mode": "total"}})
            response = self.client.search(index=self.alias, **request).body
            for hit in response["hits"]["hits"]:
                hit["_id"] = hit["fields"]["id"][0]
            hits = sorted(response["hits"]["hits"], key=lambda h: (-(h["_score"] or 0.0),
                                                                   h["_id"]))
            kept = collapse(hits, _cluster, prefer=(lambda h: _language(h) == language)
                            if language else None)
            if len(kept) >= offset + size or len(hits) < window:
                break
            if window >= self.max_window:
                return self._deep_page(body, offset, size)
            window = min(window * 4, self.max_window)
            request.pop("suggest", None)  # the first answer's are kept
            request.pop("aggs", None)
            first = first or response
        if first is not None:  # deepened: the first answer's total, suggestions and facets
            response = {**response, "suggest": first.get("suggest"),
                        "aggregations": first.get("aggregations"),
                        "hits": {**response["hits"], "total": first["hits"]["total"]}}
        return Ranked(response, [hit for hit, _ in kept[offset : offset + size]], text)

    def _deep_page(self, body: dict, offset: int, size: int) -> Ranked:
        """A page past ``max_window``: walk the ranking with search_after, collapsing here."""
        chunk = min(1000, self.max_window)
        walked: list[dict] = []
        request = dict(shown_only(body), size=chunk, sort=RANK_ORDER)
        request["track_scores"] = True
        first: dict | None = None
        is_partial = False
        while True:
            response = self.client.search(
                index=self.alias, **request, docvalue_fields=["cluster"]
            ).body
            first = first or response
            is_partial = is_partial or partial(response)
            hits = response["hits"]["hits"]
            walked.extend(hits)
            kept = collapse(walked, _cluster)
            if len(kept) >= offset + size or len(hits) < chunk:
                break
            request.update(search_after=hits[-1]["sort"], track_total_hits=False)
            request.pop("suggest", None)
            request.pop("aggs", None)
        page = [hit for hit, _ in kept[offset : offset + size]]
        first["timed_out"] = is_partial
        return Ranked(first, page, body["query"],
                      [(hit, *sizes) for hit, sizes in
                       zip(page, self._cluster_sizes(body["query"], page), strict=True)])

    def _cluster_sizes(self, query: dict, hits: list[dict]) -> list[tuple[int, int]]:
        """For each hit, how many other matches share its cluster (the near-copy count) and
        how many languages other than its own they are in (translations grouped with it)."""
        shared = sorted({_cluster(h) for h in hits if _shares_cluster(h)})
        if not shared:
            return [(0, 0)] * len(hits)
        response = self.client.search(
            index=self.counts_alias,
            size=0,
            query={"bool": {"filter": [query, {"terms": {"cluster": shared}}]}},
            aggs=_cluster_aggs(len(shared)),
            timeout=self.query_timeout,
        )
        buckets = _buckets(response["aggregations"])
        return [_sizes(hit, buckets) for hit in hits]


def _cluster_aggs(clusters: int) -> dict:
    """The aggregation counting the members of ``clusters`` clusters and their languages."""
    # "map": the values of the few matching documents, not the field's global ordinals,
    # which a high-cardinality key (one cluster per page) rebuilds after every refresh
    return {"clusters": {"terms": {"field": "cluster", "size": clusters, "execution_hint": "map"},
                         "aggs": {"langs": {"terms": {"field": "lang", "size": 100}}}}}


def _buckets(aggregations: dict) -> dict[str, dict]:
    """The ``_cluster_aggs`` buckets of an answer, by cluster."""
    return {b["key"]: b for b in aggregations.get("clusters", {}).get("buckets", [])}


def _sizes(hit: dict, buckets: dict[str, dict]) -> tuple[int, int]:
    """A hit's near-copies (other matches in its cluster) and the languages other than its
    own they are in."""
    bucket = buckets.get(_cluster(hit), {"doc_count": 1, "langs": {"buckets": []}})
    own = hit["_source"]["doc"].get("lang", "")
    langs = {b["key"] for b in bucket["langs"]["buckets"]} - {"", language_of(own)}
    return max(0, bucket["doc_count"] - 1), len(langs)
