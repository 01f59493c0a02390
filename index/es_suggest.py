""""Did you mean" on Elasticsearch: its term suggester over the unstemmed ``suggest`` field.

The request rides along with the search request (no extra round trip); the words checked
and how a fix is put back into the query text come from the parsed query, as for the
embedded engine's suggester (:mod:`index.suggest`).
"""

from __future__ import annotations

from index.query import Query

__all__ = ["suggest_request", "suggestion"]


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
