"""Readiness checks: can this process serve a search right now?

Each check talks to one dependency the way a request would and raises when it cannot; the
index check is the backend's own ``stats()`` (Elasticsearch: the alias answers; embedded:
the index opens), the database check a ``SELECT 1``, the cache check a read (Redis when
``REDIS_URL`` is set: the rate limiter counts there).
"""

from __future__ import annotations

from collections.abc import Callable

from django.core.cache import cache
from django.db import connections

from webui.search.backend import get_search_backend

#: Longest error text reported per check.
MAX_MESSAGE = 200


def check_database() -> None:
    """The default database answers a query."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()


def check_index() -> None:
    """The search backend answers (its stats need the index itself)."""
    get_search_backend().stats()


def check_cache() -> None:
    """The cache the rate limiter counts in answers."""
    cache.get("readyz")


CHECKS: dict[str, Callable[[], None]] = {
    "database": check_database,
    "index": check_index,
    "cache": check_cache,
}


def readiness(checks: dict[str, Callable[[], None]] | None = None) -> dict[str, str]:
    """``{name: "ok" | "<error type>: <message>"}`` for every check, each run once."""
    results = {}
    for name, check in (CHECKS if checks is None else checks).items():
        try:
            check()
        except Exception as exc:
            results[name] = f"{type(exc).__name__}: {exc}"[:MAX_MESSAGE]
        else:
            results[name] = "ok"
    return results
