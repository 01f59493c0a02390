"""Index writer: PageItem -> Document -> search backend, in batches."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import ClassVar

from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler.config import config_from_settings
from crawler.items import PageItem
from crawler.options import Option, enabled, settings_to_options
from crawler.signals import cluster_elected, documents_removed, host_condemned
from crawler.urls import doc_id_for
from index.base import Document, SearchBackend

logger = logging.getLogger(__name__)

#: Ids of removed documents remembered, so that the first copy found later is indexed.
REMOVED_KEPT = 100_000


def document_from_item(item: PageItem) -> Document:
    """The index document for a page item (its id from the canonical URL)."""
    return Document(
        id=item.doc_id or doc_id_for(item.url),
        url=item.url,
        host=item.host,
        title=item.title,
        body=item.text,
        description=item.description,
        lang=item.lang,
        headings=item.headings,
        sections=tuple((s.start, s.anchor, s.heading) for s in item.sections),
        fetched_at=item.fetched_at,
        cluster_id=item.cluster_id,
        shown=item.shown,
        spam_score=item.spam_score,
        warc_file=item.warc_file,
        warc_offset=item.warc_offset,
    )


class IndexPipeline:
    """Streams indexable pages to the search backend; skips noindex pages and duplicates.

    Documents the crawl finds gone or moved (``crawler.signals.documents_removed``) are
    deleted. Writes are flushed every ``batch_size`` pages, ``flush_interval`` seconds, and
    made visible when the spider goes idle (continuous crawls) and at the end.
    """

    #: Setting -> option; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "INDEX_BATCH_SIZE": ("batch_size", int),
        "INDEX_FLUSH_INTERVAL": ("flush_interval", float),
    }

    def __init__(
        self, backend: SearchBackend, stats=None, link_store=None, *, batch_size: int,
        flush_interval: float,
    ):
        self.backend = backend
        self.batch_size = batch_size
        self.stats = stats
        self.link_store = link_store
        self.flush_interval = flush_interval
        self.pending: list[Document] = []
        self._last_flush = time.monotonic()
        # documents removed by this crawl: a copy of one (a moved page) is no duplicate
        self.removed: OrderedDict[str, None] = OrderedDict()
        # doc id -> shown, for indexed pages a cluster election changed (sent at the flush)
        self.shown_changes: dict[str, bool] = {}

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        if not enabled(settings, "INDEX_ENABLED"):
            raise NotConfigured
        from index import get_backend

        config = config_from_settings(settings)
        # Elasticsearch's bulk counters (index/bulk/*) go into the crawl's stats
        extra = {"crawler_stats": crawler.stats} if config.elasticsearch_url else {}
        backend = get_backend(config, settings=settings, **extra)
        link_store = None
        if enabled(settings, "LINKGRAPH_ENABLED") and enabled(settings, "INDEX_ANCHORS"):
            from pipelines.linkgraph import crawler_link_store

            link_store = crawler_link_store(crawler)
        pipeline = cls(backend, crawler.stats, link_store,
                       **settings_to_options(settings, cls.SETTINGS))
        crawler.signals.connect(pipeline.remove, signal=documents_removed)
        crawler.signals.connect(pipeline.remove_host, signal=host_condemned)
        crawler.signals.connect(pipeline.elected, signal=cluster_elected)
        crawler.signals.connect(pipeline.publish, signal=signals.spider_idle)
        return pipeline

    def _inc(self, key: str, n: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, n)

    def open_spider(self, spider=None):
        self.backend.ensure_index()

    def process_item(self, item, spider=None):
        if not isinstance(item, PageItem):
            return item
        if item.noindex:
            self._inc("index/skipped_noindex")
            return item
        if item.skip_index:
            self._inc(f"index/skipped_{item.skip_index}")
            return item
        if item.dup_of and item.dup_of not in self.removed and not item.shown:
            self._inc("index/skipped_duplicate")  # an exact copy that does not win its cluster
            return item
        self.pending.append(document_from_item(item))
        if len(self.pending) >= self.batch_size or (
            time.monotonic() - self._last_flush >= self.flush_interval
        ):
            self.flush()
        return item

    def remove(self, ids, reason: str = "", **kwargs) -> None:
        """Delete documents by id (pages gone or moved), pending ones included."""
        ids = set(ids)
        self.pending = [doc for doc in self.pending if doc.id not in ids]
        for doc_id in ids:
            self.removed[doc_id] = None
        while len(self.removed) > REMOVED_KEPT:
            self.removed.popitem(last=False)
        self.backend.delete(ids)
        self._inc(f"index/removed/{reason or 'other'}", len(ids))

    def elected(self, shown: str, hidden=(), **kwargs) -> None:
        """Handler of ``cluster_elected``: the page shown for a cluster changed; pages
        already written get the change at the next flush, pending ones at once."""
        changes = {doc_id: False for doc_id in hidden}
        changes[shown] = True
        for doc in self.pending:
            if doc.id in changes:
                doc.shown = changes.pop(doc.id)
        self.shown_changes.update(changes)

    def remove_host(self, host: str, reason: str = "", **kwargs) -> None:
        """Handler of ``host_condemned``: delete the pages of a mirror or spam host that are
        already indexed (its later pages come with ``skip_index`` set)."""
        self.pending = [doc for doc in self.pending if doc.host != host]
        removed = self.backend.delete_by_host(host)
        self._inc(f"index/removed/{reason or 'condemned'}", removed)

    def publish(self, spider=None) -> None:
        """Write what is pending and make every write searchable (the spider is idle)."""
        self.flush()
        self.backend.refresh()

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self.pending:
            self._send_shown()
            return
        batch, self.pending = self.pending, []
        if self.link_store is not None:
            # Anchors known so far; later links reach the document at the next rank/reindex.
            for doc in batch:
                doc.anchors = self.link_store.anchor_text(doc.id)
        started = time.monotonic()
        written = self.backend.index(batch)
        self._inc("index/indexed", written)
        self._inc("index/batches")
        if self.stats is not None:  # the crawl waits for this call (analysis, backpressure)
            self.stats.max_value("index/write_longest_ms",
                                 round((time.monotonic() - started) * 1000))
        self._send_shown()

    def _send_shown(self) -> None:
        """Hand the elections' changes to pages already written to the index."""
        if self.shown_changes:
            changes, self.shown_changes = self.shown_changes, {}
            self._inc("index/reelected", self.backend.set_shown(changes))

    def close_spider(self, spider=None):
        try:
            self.flush()
            self.backend.refresh()
        finally:
            self.backend.close()
