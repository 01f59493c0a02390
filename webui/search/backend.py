"""The search backend this process serves from, opened once."""

from __future__ import annotations

import functools
import time

from django.conf import settings

from crawler.config import get_config
from index.base import Results, SearchBackend
from index.query import MAX_QUERY_CHARS, parse
from webui.monitoring.metrics import observe_search


class QueryError(ValueError):
    """A query the user should rephrase; the message says how."""


@functools.cache
def get_search_backend() -> SearchBackend:
    """The configured backend (embedded unless ELASTICSEARCH_URL is set)."""
    from index import get_backend

    return get_backend(get_config(), settings=settings)


def run_search(query: str, page: int = 1, size: int | None = None,
               explain: bool = False, facets: bool = False) -> Results:
    """Validate, parse once and run a user query (``results.parsed`` is the parsed query);
    raises QueryError with a helpful message."""
    query = (query or "").strip()
    size = settings.SEARCH_PAGE_SIZE if size is None else size
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(f"Queries are limited to {MAX_QUERY_CHARS} characters.")
    if not 1 <= page <= settings.SEARCH_MAX_PAGE:
        raise QueryError(f"Pages run from 1 to {settings.SEARCH_MAX_PAGE}.")
    if not 1 <= size <= settings.SEARCH_MAX_SIZE:
        raise QueryError(f"Page size runs from 1 to {settings.SEARCH_MAX_SIZE}.")
    if page * size > settings.SEARCH_MAX_RESULTS:
        raise QueryError(f"Results are served up to the {settings.SEARCH_MAX_RESULTS:,}th; "
                         "narrow the query (site:, lang:, more words) to see others.")
    started = time.perf_counter()
    try:
        parsed = parse(query)
        results = get_search_backend().search(parsed, page=page, size=size, explain=explain,
                                                facets=facets)
    except ValueError as exc:  # the query parser's errors
        raise QueryError(str(exc)) from None
    results.parsed = parsed
    results.took_ms = (time.perf_counter() - started) * 1000
    observe_search(_backend_name(), results.took_ms / 1000)
    return results


def _backend_name() -> str:
    """The metrics label of the configured backend."""
    return "elasticsearch" if get_config().elasticsearch_url else "embedded"
