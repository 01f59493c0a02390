""""Why this result" on Elasticsearch: each signal's value for the hits of a page.

The values come from the signals' own :meth:`~index.signals.Signal.value`, the definition
the embedded engine ranks with, over what one request tells of the hits: their text score
alone (the text query of :class:`~index.engines.elasticsearch.query.RankingQuery`, no signal), their
ranking fields (doc values) and which of the strict, label and site-home filters they match
(named queries, which score nothing).
"""

from __future__ import annotations

from elasticsearch import Elasticsearch

from index.engines.elasticsearch.query import RankingQuery
from index.fields import DOC_FIELDS, KEYWORD, keyword_key
from index.signals import Candidate, RankContext, SiteHome

__all__ = ["explain_hits"]


def explain_hits(client: Elasticsearch, alias: str, ranking: RankingQuery,
                 context: RankContext, hits: list[dict], relaxed: bool,
                 idf: list[float] | None, top: float) -> dict[str, dict]:
    """Each signal's value, weight and contribution for ``hits`` (search hits), by id;
    ``top`` the best text score of the pages they were ranked among."""
    if not hits:
        return {}
    parsed = context.query
    compiler = ranking.compiler_for(parsed)
    ids = [h["_id"] for h in hits]
    named = {"strict": compiler.compile(parsed.matching)}
    defining = compiler.defining(parsed)
    if defining is not None:
        named["defines"] = defining
    near = compiler.near(parsed)
    named.update({f"near{i}": q for i, q in enumerate(near)})
    home = SiteHome.es_filter(context)
    if home is not None:
        named["home"] = home
    lacking = (ranking.lacking(parsed, idf) if idf and parsed.coordinated is None
               and not (relaxed and parsed.relaxable) else ())
    named.update({f"lacking{i}": clause for i, (clause, _) in enumerate(lacking)})
    if parsed.label_words:
        named["label"] = {"bool": {"filter": [compiler.label(w) for w in parsed.label_words]}}
    fields = sorted(DOC_FIELDS)
    response = client.search(
        index=alias, size=len(ids), _source=False, docvalue_fields=fields,
        query={"bool": {
            "must": [ranking.text_query(context, relaxed, idf)],
            "filter": [{"ids": {"values": ids}}],
            # filters score nothing: the text score stays BM25's alone
            "should": [{"bool": {"filter": [q], "_name": name}} for name, q in named.items()],
        }},
    ).body
    found = response["hits"]["hits"]
    out = {}
    for hit in found:
        values = {}
        for name in fields:
            value = (hit.get("fields", {}).get(name) or [None])[0]
            values[name] = keyword_key(value or "") if DOC_FIELDS[name].kind == KEYWORD else value
        matched = set(hit.get("matched_queries", []))
        candidate = Candidate(hit["_id"], hit["_score"] or 0.0, values,
                              labelled="label" in matched,
                              near=sum(f"near{i}" in matched for i in range(len(near)))
                              / (len(near) or 1),
                              defines="defines" in matched,
                              home="home" in matched,
                              coverage=_coverage(matched, lacking,
                                                 ranking.partial_coverage(parsed, relaxed)),
                              text_top=top)
        out[hit["_id"]] = ranking.ranker.explain(candidate, context)
    return out


def _coverage(matched: set[str], lacking: tuple[tuple[dict, float], ...],
              partial: float = 0.0) -> float:
    """``Candidate.coverage`` of a hit from the named queries it matched (``partial``:
    that of a page matching by coordination alone, ``Query.partial_coverage``)."""
    if matched & {"strict", "home"}:
        return 1.0
    return next((1.0 - share for i, (_, share) in enumerate(lacking)
                 if f"lacking{i}" in matched), partial)
