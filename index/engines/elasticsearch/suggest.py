""""Did you mean" on Elasticsearch: its term suggester over the unstemmed ``suggest`` field.

The request rides along with the search request (no extra round trip); the words checked
and how a fix is put back into the query text come from the parsed query, as for the
embedded engine's suggester (:mod:`index.engines.embedded.suggest`). Title completion is here too.
"""

from __future__ import annotations

from elasticsearch import Elasticsearch

from index.fields import completion_text
from index.query import Query

__all__ = ["completions", "suggest_request", "suggestion"]


def suggest_request(parsed: Query) -> dict | None:
    """The ``suggest`` section for the query's words (``None`` when there are none)."""
    if not parsed.suggest_words:
        return None
    return {
        "did_you_mean": {
            "text": " ".join(parsed.suggest_words),
            "term": {"field": "suggest", "suggest_mode": "missing", "size": 1},
        }
    }


def suggestion(parsed: Query, suggest: dict | None) -> str | None:
    """The query with each word the index lacks replaced by the suggester's best option."""
    if not suggest:
        return None
    fixes = {
        entry["text"]: entry["options"][0]["text"]
        for entry in suggest.get("did_you_mean", [])
        if entry["options"]
    }
    return parsed.with_words_replaced(fixes)


def completions(client: Elasticsearch, alias: str, key: str, limit: int,
                timeout: str) -> list[str]:
    """Titles whose ``title_key`` starts with ``key`` (a ``completion_prefix``): a
    ``prefix`` query on the keyword (a walk of its term dictionary) and a ``terms``
    aggregation, most pages first."""
    response = client.search(
        index=alias, size=0, timeout=timeout,
        query={"prefix": {"title_key": key}},
        aggs={"titles": {"terms": {"field": "title_key", "size": limit,
                                   "order": [{"_count": "desc"}, {"_key": "asc"}]}}},
    )
    return [completion_text(b["key"]) for b in response["aggregations"]["titles"]["buckets"]]
