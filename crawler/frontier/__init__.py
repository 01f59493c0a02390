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
    """The Redis frontier when ``config.redis_url`` is set (partitioned by host hash over
    ``config.frontier_redis_urls`` when that lists several primaries), else the local one.

    ``options`` are the keyword arguments both backends accept (``bloom_capacity``,
    ``bloom_fpr``, ``tiers``, ``lease_s``, ``ip_limit``, ``politeness``...).
    """
    if config.frontier_urls:
        from scrapy_redis.connection import get_redis

        from crawler.frontier.redis_backend import redis_frontier

        return redis_frontier([get_redis(url=url) for url in config.frontier_urls], crawl,
                              **options)
    from crawler.frontier.local import LocalFrontier

    return LocalFrontier(config.path("frontier", f"{crawl}.sqlite3"), **options)
