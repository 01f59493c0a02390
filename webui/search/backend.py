"""The search backend this process serves from, opened once."""

from __future__ import annotations

import functools
import time

from django.conf import settings

from crawler.config import get_config
from index.base import Results, SearchBackend
from webui.monitoring.metrics import observe_search


class QueryError(ValueError):
    """A query the user should rephrase; the message says how."""


@functools.cache
def get_search_backend() -> SearchBackend:
    """The configured backend (embedded unless ELASTICSEARCH_URL is set)."""
    from index import get_backend

    return get_backend(get_config(), settings=settings)


def run_search(query: str, page: int = 1, size: int | None = None) -> Results:
    """Validate and run a user query; raises QueryError with a helpful message."""
    query = (query or "").strip()
    size = size or settings.SEARCH_PAGE_SIZE
    if len(query) > settings.SEARCH_MAX_QUERY_LENGTH:
        raise QueryError(f"Queries are limited to {settings.SEARCH_MAX_QUERY_LENGTH} characters.")
    if not 1 <= page <= settings.SEARCH_MAX_PAGE:
        raise QueryError(f"Pages run from 1 to {settings.SEARCH_MAX_PAGE}.")
    if not 1 <= size <= 100:
        raise QueryError("Page size runs from 1 to 100.")
    started = time.perf_counter()
    try:
        results = get_search_backend().search(query, page=page, size=size)
    except ValueError as exc:  # the query parser's errors
        raise QueryError(str(exc)) from None
    if results.suggestion is None and page == 1 and results.total < size:
        results.suggestion = _fallback_suggestion(query)
    results.took_ms = (time.perf_counter() - started) * 1000
    observe_search(_backend_name(), results.took_ms / 1000)
    return results


def _backend_name() -> str:
    """The metrics label of the configured backend."""
    return "elasticsearch" if get_config().elasticsearch_url else "embedded"


def _fallback_suggestion(query: str) -> str | None:
    """Did-you-mean for the embedded index (Elasticsearch suggests by itself)."""
    from index.embedded import EmbeddedBackend
    from webui.search.suggest import EditSuggester, embedded_doc_freq

    backend = get_search_backend()
    if not isinstance(backend, EmbeddedBackend):
        return None
    return EditSuggester(embedded_doc_freq(backend)).suggest(query)
