"""Exact and near-duplicate detection as the first item pipeline, with feedback to the frontier.

Every item gets ``doc_id`` and ``cluster_id``; an exact duplicate also gets ``dup_of`` (the
first document's id) and goes on, so the WARC store and the link graph still see it; the
index pipeline skips it and records the alias.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, ClassVar

from scrapy.exceptions import NotConfigured

from crawler.config import get_config
from crawler.items import PageItem
from crawler.options import Option, enabled, setting, settings_to_options
from crawler.signals import host_budget_cut
from crawler.urls import doc_id_for, netloc_of
from dedup.core import METHODS, Deduplicator

logger = logging.getLogger(__name__)


def signal_budget_cut(crawler) -> Callable[[str, int], bool]:
    """Cut a host's budget through the ``host_budget_cut`` signal; True when a frontier
    scheduler received it."""

    def cut(host: str, budget: int) -> bool:
        replies = crawler.signals.send_catch_log(host_budget_cut, host=host, budget=budget)
        return any(not isinstance(result, Exception) for _, result in replies)

    return cut


class DedupPipeline:
    """Sets ``doc_id``, ``cluster_id`` and ``dup_of`` on each ``PageItem``; never drops one.

    A host with at least ``host_min_pages`` pages of which a share ``host_copy_ratio`` are
    copies of its own other pages is a trap: its budget is cut once to the pages it already
    has, through ``cut_budget(netloc, pages)`` (in a crawl: the scheduler's
    ``host_budget_cut`` signal, keyed like the frontier by ``netloc_of(url)``).
    """

    #: Setting -> option; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "DEDUP_HOST_MIN_PAGES": ("host_min_pages", int),
        "DEDUP_HOST_COPY_RATIO": ("host_copy_ratio", float),
    }

    def __init__(
        self,
        dedup: Deduplicator,
        stats=None,
        cut_budget: Callable[[str, int], bool] | None = None,
        *,
        host_min_pages: int,
        host_copy_ratio: float,
    ):
        self.dedup = dedup
        self.stats = stats
        self._cut_budget = cut_budget
        self.host_min_pages = host_min_pages
        self.host_copy_ratio = host_copy_ratio
        self._cut_hosts: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler) -> DedupPipeline:
        settings = crawler.settings
        if not enabled(settings, "DEDUP_ENABLED"):
            raise NotConfigured("DEDUP_ENABLED is off")
        method = setting(settings, "DEDUP_METHOD")
        if method not in METHODS:
            raise NotConfigured(f"DEDUP_METHOD must be one of {METHODS}, not {method!r}")
        redis_url = settings.get("REDIS_URL") or get_config().redis_url
        dedup = Deduplicator.from_settings(settings, redis_url=redis_url)
        return cls(dedup, stats=crawler.stats, cut_budget=signal_budget_cut(crawler),
                   **settings_to_options(settings, cls.SETTINGS))

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        if not item.doc_id:
            item.doc_id = doc_id_for(item.url)
        verdict = self.dedup.check(item.doc_id, item.host, item.text)
        item.cluster_id = verdict.cluster_id
        self._inc("dedup/checked")
        if verdict.kind == "exact":
            item.dup_of = verdict.match
            self._inc("dedup/exact")
        elif verdict.kind == "near":
            self._inc("dedup/near")
        if verdict.kind != "known":
            own_copy = verdict.kind in ("exact", "near") and verdict.match_host == item.host
            self._watch_host(item.host, netloc_of(item.url), own_copy)
        return item

    def _watch_host(self, host: str, netloc: str, own_copy: bool) -> None:
        pages, copies = self.dedup.store.count_host(host, own_copy)
        if (
            host in self._cut_hosts
            or pages < self.host_min_pages
            or copies < self.host_copy_ratio * pages
        ):
            return
        self._cut_hosts.add(host)
        self._inc("dedup/host_trap")
        if self._cut_budget is None or not self._cut_budget(netloc, pages):
            logger.info(
                "host %s is mostly near-copies (%d of %d pages); no frontier to cut its budget",
                host,
                copies,
                pages,
            )
            return
        self._inc("dedup/host_budget_cut")
        logger.info("cut the budget of %s to %d pages: %d are copies", host, pages, copies)

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)
