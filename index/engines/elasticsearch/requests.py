"""The read requests of one Elasticsearch backend: counted, and outages named as such.

Every search-plane request (the page, its re-ranked or relaxed second pass, suggestions,
explain, deep-page walks) goes through :class:`SearchRequests`, so ``stats()`` can say how
many round trips a query costs (``bench/search.py`` reports ``es_requests_per_query``), and
an unreachable cluster or index becomes :class:`~index.base.SearchUnavailable` (the web UI
answers 503 with ``Retry-After``) instead of a transport error. With a
:class:`~index.engines.elasticsearch.hedge.Hedger`, each goes to one data node's copies and, when it
is slow, to another's (hedged requests; ``ES_HEDGE``, ``ES_HEDGE_DELAY_S``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, TransportError
from elasticsearch import ApiError, Elasticsearch

from index.base import SearchUnavailable


class Hedger(Protocol):
    """What a search is hedged through (:class:`~index.engines.elasticsearch.hedge.Hedger`,
    which imports this module's :func:`is_outage`)."""

    def search(self, kwargs: dict) -> Any: ...

    def stats(self) -> dict: ...

    def close(self) -> None: ...

__all__ = ["RETRY_AFTER_S", "SearchRequests", "is_outage", "outages_unavailable"]

#: Seconds a client is asked to wait before trying again while the index is unreachable.
RETRY_AFTER_S = 5
#: Errors below 500 that still mean "no copy of the data can answer now", not "this request
#: is wrong" (every 5xx counts too; a failed search phase is a 400 when the query is bad).
_OUTAGE_ERRORS = frozenset({
    "no_shard_available_action_exception",
    "cluster_block_exception",
    "master_not_discovered_exception",
    "index_not_found_exception",
})


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the cluster or the index cannot be reached right now."""
    if isinstance(exc, (TransportConnectionError, ConnectionTimeout)):
        return True
    if isinstance(exc, ApiError):
        return exc.status_code >= 500 or exc.error in _OUTAGE_ERRORS
    return isinstance(exc, TransportError)


@contextmanager
def outages_unavailable() -> Iterator[None]:
    """Raise an outage of the cluster or index inside the block as ``SearchUnavailable``."""
    try:
        yield
    except (ApiError, TransportError) as exc:
        if is_outage(exc):
            raise SearchUnavailable(
                f"The search index is unreachable ({exc.__class__.__name__}); try again "
                f"in a few seconds.", RETRY_AFTER_S) from exc
        raise


class SearchRequests:
    """``search`` on one client, counted, hedged when a ``hedger`` is given; outages raised
    as ``SearchUnavailable``."""

    def __init__(self, client: Elasticsearch, hedger: Hedger | None = None):
        self.client = client
        self.hedger = hedger
        self._lock = threading.Lock()
        self.requests = 0
        self.searches = 0
        #: Sum of the ``took`` of every answer: the time Elasticsearch says it spent.
        self.took_ms = 0

    def search(self, **kwargs: Any) -> Any:
        """``client.search(**kwargs)``; raises ``SearchUnavailable`` during an outage."""
        with self._lock:
            self.requests += 1
        with outages_unavailable():
            if self.hedger is not None:
                response = self.hedger.search(kwargs)
            else:
                response = self.client.search(**kwargs)
        with self._lock:
            self.took_ms += response.body.get("took", 0) if hasattr(response, "body") else 0
        return response

    def term_stats(self, index: str, field: str, terms: list[str]) -> tuple[int, dict[str, int]]:
        """How many documents have ``field`` and each term's document frequency in it, from
        one shard's term statistics (``_termvectors`` of an artificial document): read from
        the term dictionary, not counted over the postings, so it costs the same on any
        index size. One shard's statistics are what BM25 scores that shard's hits with."""
        with self._lock:
            self.requests += 1
        with outages_unavailable():
            response = self.client.termvectors(
                index=index, doc={field: " ".join(terms)}, fields=[field],
                term_statistics=True, field_statistics=True, positions=False,
                offsets=False, payloads=False, realtime=False,
            ).body
        vector = response.get("term_vectors", {}).get(field, {})
        docs = int(vector.get("field_statistics", {}).get("doc_count", 0))
        return docs, {t: int(v.get("doc_freq", 0)) for t, v in vector.get("terms", {}).items()}

    def count_search(self) -> None:
        """Count one ``search()`` call of the backend (the denominator of the ratio)."""
        with self._lock:
            self.searches += 1

    def stats(self) -> dict:
        """``search/requests``, ``search/queries``, their ratio (round trips per query;
        a hedge's second attempt is not counted there), ``search/took_ms`` (the sum of
        Elasticsearch's own ``took``), with the hedger's counts."""
        with self._lock:
            requests, searches, took = self.requests, self.searches, self.took_ms
        return {
            "search/requests": requests,
            "search/queries": searches,
            "search/took_ms": took,
            "search/requests_per_query": round(requests / searches, 3) if searches else 0.0,
            **(self.hedger.stats() if self.hedger is not None else {}),
        }

    def close(self) -> None:
        """Close the hedger's per-node clients (the shared client is the caller's)."""
        if self.hedger is not None:
            self.hedger.close()
