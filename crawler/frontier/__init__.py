"""Mercator URL frontier: interface, local (SQLite) and Redis backends, Bloom seen-filter."""

from __future__ import annotations

from typing import Any

from crawler.config import Config
from crawler.frontier.base import (
    ROBOTS_RANK,
    Entry,
    Frontier,
    HostState,
    Lease,
    Outcome,
    Politeness,
    TierSelector,
)

__all__ = [
    "ROBOTS_RANK",
    "Entry",
    "Frontier",
    "HostState",
    "Lease",
    "Outcome",
    "Politeness",
    "TierSelector",
    "open_frontier",
]


def open_frontier(config: Config, crawl: str, **options: Any) -> Frontier:
    """The Redis frontier when ``config.redis_url`` is set, else the local one.

    ``options`` are the keyword arguments both backends accept (``bloom_capacity``,
    ``bloom_fpr``, ``tiers``, ``lease_s``, ``ip_limit``, ``politeness``...).
    """
    if config.redis_url:
        from scrapy_redis.connection import get_redis

        from crawler.frontier.redis_backend import RedisFrontier

        return RedisFrontier(get_redis(url=config.redis_url), crawl, **options)
    from crawler.frontier.local import LocalFrontier

    return LocalFrontier(config.path("frontier", f"{crawl}.sqlite3"), **options)
