"""Exact and near-duplicate detection as the first item pipeline, with feedback to the frontier.

Every item gets ``doc_id`` and ``cluster_id``; an exact duplicate also gets ``dup_of`` (the
first document's id) and goes on, so the WARC store and the link graph still see it; the
index pipeline skips it and records the alias.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from scrapy.exceptions import NotConfigured

from crawler.config import get_config
from crawler.items import PageItem
from crawler.urls import netloc_of
from dedup.core import METHODS, Deduplicator
from index.base import doc_id_for

logger = logging.getLogger(__name__)


def signal_budget_cut(crawler) -> Callable[[str, int], bool]:
    """Cut a host's budget through the scheduler's ``host_budget_cut`` signal; True when a
    frontier scheduler received it."""
    from crawler.scheduler import host_budget_cut

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

    def __init__(
        self,
        dedup: Deduplicator,
        stats=None,
        cut_budget: Callable[[str, int], bool] | None = None,
        host_min_pages: int = 20,
        host_copy_ratio: float = 0.8,
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
        if not settings.getbool("DEDUP_ENABLED", True):
            raise NotConfigured("DEDUP_ENABLED is off")
        method = settings.get("DEDUP_METHOD", "minhash")
        if method not in METHODS:
            raise NotConfigured(f"DEDUP_METHOD must be one of {METHODS}, not {method!r}")
        dedup = Deduplicator.create(
            method=method,
            redis_url=settings.get("REDIS_URL") or get_config().redis_url,
            prefix=settings.get("DEDUP_REDIS_PREFIX", "dedup"),
            threshold=settings.getfloat("DEDUP_MINHASH_THRESHOLD", 0.7),
            num_perm=settings.getint("DEDUP_MINHASH_PERMUTATIONS", 128),
            hamming_k=settings.getint("DEDUP_SIMHASH_DISTANCE", 3),
            shingle_size=settings.getint("DEDUP_SHINGLE_SIZE", 3),
            min_tokens=settings.getint("DEDUP_MIN_TOKENS", 20),
            redis_layout=settings.get("DEDUP_REDIS_LAYOUT", "compact"),
            compact_options={
                "bands": settings.getint("DEDUP_COMPACT_BANDS", 6),
                "rows": settings.getint("DEDUP_COMPACT_ROWS", 3),
                "signature_bits": settings.getint("DEDUP_COMPACT_SIGNATURE_BITS", 2),
                "partition_bits": settings.getint("DEDUP_COMPACT_PARTITION_BITS", 16),
            },
        )
        return cls(
            dedup,
            stats=crawler.stats,
            cut_budget=signal_budget_cut(crawler),
            host_min_pages=settings.getint("DEDUP_HOST_MIN_PAGES", 20),
            host_copy_ratio=settings.getfloat("DEDUP_HOST_COPY_RATIO", 0.8),
        )

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
            self._watch_host(item.host, netloc_of(item.url), own_copy, verdict.host_totals)
        return item

    def _watch_host(
        self, host: str, netloc: str, own_copy: bool, totals: tuple[int, int] | None
    ) -> None:
        pages, copies = totals or self.dedup.store.count_host(host, own_copy)
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
