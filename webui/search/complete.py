"""Completions for the search box: queries people searched that found pages, then page
titles from the index (``SearchBackend.complete``).

Logged queries come from the query log (:mod:`webui.search.querylog`): those with results,
searched at least ``SEARCH_COMPLETE_LOG_MIN`` times (a query one person typed, a name for
instance, is never offered to others), the ``SEARCH_COMPLETE_LOG_QUERIES`` most searched.
They are read with one grouped query at most every ``SEARCH_COMPLETE_LOG_REFRESH_S``
seconds into a :class:`~index.completion.PrefixIndex`, so a request costs two prefix-index
lookups, never a scan of the log or of the documents.
"""

from __future__ import annotations

import functools
import logging
import time

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count

from index.completion import PrefixIndex
from index.fields import completion_key, completion_prefix, completion_text
from webui.search.backend import get_search_backend

logger = logging.getLogger(__name__)


def completions(text: str, limit: int) -> list[str]:
    """Up to ``limit`` completions of ``text``: logged queries first (most searched), then
    titles (most pages), without repeats (compared normalized)."""
    prefix = completion_prefix(text)
    if not prefix.strip() or limit < 1:
        return []
    logged = [completion_text(key) for key, _ in logged_queries().top(prefix, limit)]
    out: dict[str, str] = {}
    for shown in [*logged, *get_search_backend().complete(text, limit)]:
        out.setdefault(completion_key(shown).partition("\t")[0], shown)
    return list(out.values())[:limit]


def logged_queries() -> PrefixIndex:
    """The prefix index of logged queries, rebuilt every ``SEARCH_COMPLETE_LOG_REFRESH_S``."""
    return _logged_queries(int(time.time() // max(1, settings.SEARCH_COMPLETE_LOG_REFRESH_S)))


@functools.lru_cache(maxsize=1)
def _logged_queries(period: int) -> PrefixIndex:
    from webui.search.models import QueryLogEntry

    if not settings.SEARCH_QUERY_LOG:
        return PrefixIndex([])
    try:
        rows = list(
            QueryLogEntry.objects.filter(results__gt=0)
            .values("query").annotate(n=Count("id"))
            .filter(n__gte=settings.SEARCH_COMPLETE_LOG_MIN)
            .order_by("-n")[: settings.SEARCH_COMPLETE_LOG_QUERIES]
            .values_list("query", "n")
        )
    except DatabaseError as exc:
        logger.warning("query log unavailable for completion (%s); titles only", exc)
        return PrefixIndex([])
    counts: dict[str, int] = {}
    for query, n in rows:
        key = completion_key(query)
        if key:
            counts[key] = counts.get(key, 0) + n
    return PrefixIndex(counts.items())

