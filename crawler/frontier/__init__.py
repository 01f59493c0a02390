"""Mercator URL frontier: interface, local (SQLite) and Redis backends, Bloom seen-filter."""

from __future__ import annotations

from typing import Any

from crawler.config import Config
from crawler.frontier.base import (
    ROBOTS_RANK,
    Entry,
    Frontier,
    FrontierOptions,
    HostState,
    Lease,
    Outcome,
    Politeness,
    TierSelector,
)
from crawler.options import Option, settings_to_options

__all__ = [
    "ROBOTS_RANK",
    "Entry",
    "Frontier",
    "FrontierOptions",
    "HostState",
    "Lease",
    "Outcome",
    "Politeness",
    "TierSelector",
    "SETTINGS",
    "frontier_options",
    "open_frontier",
]

#: Setting -> field of ``FrontierOptions``; the defaults are in crawler/settings.py.
SETTINGS: dict[str, Option] = {
    "FRONTIER_BLOOM_CAPACITY": ("bloom_capacity", int),
    "FRONTIER_BLOOM_FPR": ("bloom_fpr", float),
    "FRONTIER_TIERS": ("tiers", int),
    "FRONTIER_LEASE_S": ("lease_s", float),
    "FRONTIER_MAX_ATTEMPTS": ("max_attempts", int),
    "FRONTIER_IP_CONCURRENCY": ("ip_limit", int),
    "FRONTIER_ROBOTS": ("robots_first", bool),
    "FRONTIER_BUDGET_WAITING": ("budget_waiting", int),
}


def frontier_options(settings: Any, **overrides: Any) -> dict[str, Any]:
    """The backends' keyword options from ``settings`` (Scrapy or Django settings, a mapping
    or None; unset names get their defaults): ``SETTINGS`` and the ``Politeness`` policy,
    ``overrides`` on top."""
    overrides.setdefault("politeness", Politeness.from_settings(settings))
    return settings_to_options(settings, SETTINGS, **overrides)


def open_frontier(config: Config, crawl: str, **options: Any) -> Frontier:
    """The Redis frontier when ``config.redis_url`` is set (partitioned by host hash over
    ``config.frontier_redis_urls`` when that lists several primaries), else the local one.

    ``options`` are the keyword arguments both backends accept, usually
    ``frontier_options(settings)``.
    """
    if config.frontier_urls:
        from scrapy_redis.connection import get_redis

        from crawler.frontier.redis_backend import redis_frontier

        return redis_frontier([get_redis(url=url) for url in config.frontier_urls], crawl,
                              **options)
    from crawler.frontier.local import LocalFrontier

    return LocalFrontier(config.path("frontier", f"{crawl}.sqlite3"), **options)
