"""The relevance loop's data: an anonymous log of first-page searches and their clicks.

On by default (``SEARCH_QUERY_LOG``), kept ``SEARCH_QUERY_LOG_DAYS`` days. Each first
page of results, from the search page or the API, writes one row: the query, its parsed
form, how many documents matched, when (to the minute); a click on a result of the search
page (the link's ``ping``, sent by the browser, no JavaScript) sets the rank clicked; the
ping names its search by a reference signed with the site's key (``click_ref``), issued
with the results, so nobody can mark other people's searches clicked by counting ids. The
dashboard shows the zero-result and no-click rates and the top zero-result queries.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.core import signing
from django.db import DatabaseError
from django.db.models import Count, Max
from django.utils import timezone

from index.base import Results

logger = logging.getLogger(__name__)

#: A row is pruned of old ones every this many writes (a cheap, bounded delete).
_PRUNE_EVERY = 500
_CLICK_SIGNER = signing.Signer(salt="webui.search.click")


def record(results: Results, source: str) -> int | None:
    """Log a first page of ``results``; its row id (for click pings), or None when the log
    is off, the page is not the first, or the database refused (searching goes on)."""
    from webui.search.models import QueryLogEntry

    if not settings.SEARCH_QUERY_LOG or results.page != 1:
        return None
    parsed = results.parsed
    try:
        entry = QueryLogEntry.objects.create(
            query=results.query.strip()[:500],
            normalized=(str(parsed) if parsed is not None else results.query)[:1000],
            results=results.total,
            source=source,
            at=timezone.now().replace(second=0, microsecond=0),
        )
    except DatabaseError as exc:
        logger.warning("query log unavailable (%s); searches are not logged", exc)
        return None
    if entry.pk % _PRUNE_EVERY == 0:
        prune()
    return entry.pk


def click_ref(entry_id: int) -> str:
    """The reference a results page's click pings carry for its logged search."""
    return _CLICK_SIGNER.sign(str(entry_id))


def entry_of(ref: str) -> int | None:
    """The logged search a click reference names, or None if it was not issued here."""
    try:
        entry_id = int(_CLICK_SIGNER.unsign(ref))
    except (signing.BadSignature, ValueError):
        return None
    return entry_id if entry_id > 0 else None


def clicked(entry_id: int, rank: int) -> bool:
    """Record the first click on a result of a logged search; False if unknown."""
    from webui.search.models import QueryLogEntry

    return bool(QueryLogEntry.objects.filter(pk=entry_id, clicked_rank__isnull=True)
                .update(clicked_rank=max(1, min(rank, 1000))))


def prune() -> int:
    """Delete the rows older than ``SEARCH_QUERY_LOG_DAYS``; how many."""
    from webui.search.models import QueryLogEntry

    cutoff = timezone.now() - dt.timedelta(days=settings.SEARCH_QUERY_LOG_DAYS)
    deleted, _ = QueryLogEntry.objects.filter(at__lt=cutoff).delete()
    return deleted


def summary(window_s: float, top: int = 20) -> dict:
    """Over the last ``window_s`` seconds: searches, the zero-result rate, the no-click
    rate (of the search page's searches that found something) and the top zero-result
    queries, most frequent first."""
    from webui.search.models import QueryLogEntry

    since = timezone.now() - dt.timedelta(seconds=window_s)
    rows = QueryLogEntry.objects.filter(at__gte=since)
    searches = rows.count()
    zero = rows.filter(results=0)
    answered = rows.filter(source="page", results__gt=0)
    answered_n = answered.count()
    return {
        "searches": searches,
        "zero_result_rate": zero.count() / searches if searches else None,
        "no_click_rate": (answered.filter(clicked_rank__isnull=True).count() / answered_n
                          if answered_n else None),
        "top_zero_result": list(
            zero.values("normalized").annotate(n=Count("id"), example=Max("query"))
            .order_by("-n", "normalized")[:top].values_list("example", "n")),
    }
