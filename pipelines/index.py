"""Index writer: PageItem -> Document -> search backend, in batches.

In a crawl the backend's writes (analysis, snippet sources, tantivy commits, Elasticsearch
bulk requests) run on one writer thread of their own, in the order they were asked, as
Scrapy's feed storages do with ``deferToThread``: on the reactor thread a 200-document
write stopped every download for 0.3-2 s (py-spy, ``bench/realweb.py --quick``). The
reactor only builds the documents; at most ``MAX_QUEUED_WRITES`` batches wait for the
thread before an item waits for them (backpressure through Scrapy's pipeline). The
documents' anchor texts are looked up in the link store on that thread too, just before
their batch is written: on the reactor, 200 lookups (and the link store's pending batch,
which a read writes first) held every download up at each flush.

The writer thread's Python code (a document's analysis and snippet source: 3.5-4.2 ms a
real page) holds the GIL that the reactor thread needs: written at once, a 200-document
batch takes much of the reactor's share of the interpreter for 1-4 s every ~5 s of a polite
crawl, and the requests of the hosts due then go out late in bursts. With
``INDEX_WRITER_PACE`` (``pace`` > 0) the thread writes a batch ``PACE_CHUNK`` documents at a
time and, after each chunk, sleeps ``pace`` times the thread CPU the chunk took, unless a
later write already waits for it: a batch is spread over the time until the next one.
With ``INDEX_WRITER_PACE_WHEN`` ``"slack"`` it pauses only while the crawl has slack
(``crawler.feedback.Slack``: the scheduler's last poll found hosts waiting on politeness
and none filled every free slot in the last second), asked before each pause; a
throughput-bound crawl (``bench/crawl.py``), where pacing costs pages/s and CPU a page,
writes its batches at once (docs/crawl-speed.md). ``"always"`` pauses whatever the crawl.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import fields
from typing import ClassVar

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import defer, threads
from twisted.python.threadpool import ThreadPool

from crawler.config import config_from_settings
from crawler.feedback import crawl_feedback
from crawler.items import PageItem, PageRecord, PageSummary
from crawler.options import Option, enabled, settings_to_options
from crawler.signals import cluster_elected, documents_removed, host_condemned
from crawler.urls import doc_id_for
from index.base import Document, SearchBackend
from pipelines import awaited

logger = logging.getLogger(__name__)

#: Ids of removed documents remembered, so that the first copy found later is indexed.
REMOVED_KEPT = 100_000
#: Writes that may wait for the writer thread before the next item waits for them.
MAX_QUEUED_WRITES = 2
#: Documents the writer thread writes between two pauses (``INDEX_WRITER_PACE``).
PACE_CHUNK = 4
#: When the writer thread pauses (``INDEX_WRITER_PACE_WHEN``).
PACE_WHEN = ("slack", "always")


def document_from_item(item: PageItem) -> Document:
    """The index document for a page item (its id from the canonical URL): the item's
    ``PageRecord`` and ``PageSummary`` fields as they are, its text as the body."""
    shared = {f.name: getattr(item, f.name) for f in (*fields(PageRecord), *fields(PageSummary))}
    return Document(
        id=item.doc_id or doc_id_for(item.url),
        body=item.text,
        sections=tuple((s.start, s.anchor, s.heading) for s in item.sections),
        **shared,
    )


class IndexPipeline:
    """Streams indexable pages to the search backend; skips noindex pages and duplicates.

    Documents the crawl finds gone or moved (``crawler.signals.documents_removed``) are
    deleted. Writes are flushed every ``batch_size`` pages, ``flush_interval`` seconds, and
    made visible when the spider goes idle (continuous crawls) and at the end. With
    ``background`` (a crawl: ``from_crawler``) the backend is written by one thread, in
    order, off the reactor; without, each write is made at once.
    """

    #: Setting -> option; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "INDEX_BATCH_SIZE": ("batch_size", int),
        "INDEX_FLUSH_INTERVAL": ("flush_interval", float),
        "INDEX_WRITER_PACE": ("pace", float),
        "INDEX_WRITER_PACE_WHEN": ("pace_when", str),
    }

    def __init__(
        self, backend: SearchBackend, stats=None, link_store=None, *, batch_size: int,
        flush_interval: float, pace: float, pace_when: str, background: bool = False,
        release_link_store: bool = False, slack: Callable[[], bool] | None = None,
    ):
        self.backend = backend
        self.batch_size = batch_size
        self.stats = stats
        self.link_store = link_store
        self._release_link_store = release_link_store
        self.flush_interval = flush_interval
        self.pace = pace
        if pace_when not in PACE_WHEN:
            raise ValueError(f"INDEX_WRITER_PACE_WHEN: {pace_when!r}, not one of {PACE_WHEN}")
        self.pace_when = pace_when
        # whether the crawl has slack now (``Feedback.has_slack``); None: unknown (never)
        self.slack = slack
        self.pending: list[Document] = []
        self._last_flush = time.monotonic()
        # documents removed by this crawl: a copy of one (a moved page) is no duplicate
        self.removed: OrderedDict[str, None] = OrderedDict()
        # doc id -> shown, for indexed pages a cluster election changed (sent at the flush)
        self.shown_changes: dict[str, bool] = {}
        self.background = background
        self._pool: ThreadPool | None = None
        self._writes: list[defer.Deferred] = []

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

            link_store = crawler_link_store(crawler).retain()
        pipeline = cls(backend, crawler.stats, link_store, background=True,
                       release_link_store=link_store is not None,
                       slack=crawl_feedback(crawler).has_slack,
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
        if self.background:
            self._pool = ThreadPool(1, 1, name="index-writer")
            self._pool.start()

    def _write(self, fn, *args, done=None) -> None:
        """Run the backend call ``fn(*args)`` on the writer thread (in order), or at once
        without one; ``done(result)`` runs on the caller's thread after it."""
        if self._pool is None:
            result = fn(*args)
            if done is not None:
                done(result)
            return
        from twisted.internet import reactor

        d = threads.deferToThreadPool(reactor, self._pool, fn, *args)
        if done is not None:
            d.addCallback(done)
        d.addErrback(self._write_failed, getattr(fn, "__name__", "write"))
        d.addBoth(self._written, d)
        self._writes.append(d)

    def _write_failed(self, failure, name: str) -> None:
        self._inc("index/write_failed")
        logger.error("index write (%s) failed: %s", name, failure.getErrorMessage(),
                     exc_info=failure.value)

    def _written(self, result, d: defer.Deferred):
        self._writes.remove(d)
        return result

    def _backlog(self):
        """None, or a Deferred that fires once no more than ``MAX_QUEUED_WRITES`` writes
        wait for the writer thread."""
        if len(self._writes) <= MAX_QUEUED_WRITES:
            return None
        return defer.DeferredList(self._writes[:-MAX_QUEUED_WRITES], consumeErrors=True)

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
            backlog = self._backlog()
            if backlog is not None:
                return awaited(backlog.addCallback(lambda _: item))
        return item

    def remove(self, ids, reason: str = "", **kwargs) -> None:
        """Delete documents by id (pages gone or moved), pending ones included."""
        ids = set(ids)
        self.pending = [doc for doc in self.pending if doc.id not in ids]
        for doc_id in ids:
            self.removed[doc_id] = None
        while len(self.removed) > REMOVED_KEPT:
            self.removed.popitem(last=False)
        self._write(self.backend.delete, ids)
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
        self._write(self.backend.delete_by_host, host, done=lambda removed: self._inc(
            f"index/removed/{reason or 'condemned'}", removed))

    def publish(self, spider=None) -> None:
        """Write what is pending and make every write searchable (the spider is idle)."""
        self.flush()
        self._write(self.backend.refresh)

    def flush(self) -> None:
        self._last_flush = time.monotonic()
        if not self.pending:
            self._send_shown()
            return
        batch, self.pending = self.pending, []
        self._write(self._timed_index, batch, done=self._count_batch)
        self._send_shown()

    def _timed_index(self, batch: list[Document]) -> tuple[int, float]:
        """Write a batch with the anchor texts known so far (later links reach a document
        at the next rank or reindex); on the writer thread in a crawl."""
        started = time.monotonic()
        if self.link_store is not None:
            anchors = self.link_store.anchor_texts(doc.id for doc in batch)
            for doc in batch:
                doc.anchors = anchors[doc.id]
        if self._pool is None or self.pace <= 0:
            return self.backend.index(batch), time.monotonic() - started
        written = start = 0
        while start < len(batch):
            if len(self._writes) > 1 or not self._paced():
                # a later write waits for the thread, or the crawl has no slack: keep up
                written += self.backend.index(batch[start:])
                break
            cpu = time.thread_time()
            written += self.backend.index(batch[start:start + PACE_CHUNK])
            start += PACE_CHUNK
            if start < len(batch):  # give the reactor the interpreter
                time.sleep(self.pace * (time.thread_time() - cpu))
        return written, time.monotonic() - started

    def _paced(self) -> bool:
        """Whether the writer thread pauses now: always, or while the crawl has slack."""
        if self.pace_when == "always":
            return True
        return self.slack is not None and self.slack()

    def _count_batch(self, result: tuple[int, float]) -> None:
        written, seconds = result
        self._inc("index/indexed", written)
        self._inc("index/batches")
        if self.stats is not None:
            self.stats.max_value("index/write_longest_ms", round(seconds * 1000))

    def _send_shown(self) -> None:
        """Hand the elections' changes to pages already written to the index."""
        if self.shown_changes:
            changes, self.shown_changes = self.shown_changes, {}
            self._write(self.backend.set_shown, changes,
                        done=lambda n: self._inc("index/reelected", n))

    def close_spider(self, spider=None):
        """Write what is pending, make it visible and close the backend; in a crawl, a
        coroutine that ends once the writer thread is done."""
        try:
            self.flush()
            self._write(self.backend.refresh)
        except BaseException:
            self._close()
            raise
        if not self._writes:
            self._close()
            return None
        return awaited(defer.DeferredList(list(self._writes), consumeErrors=True).addBoth(
            lambda _: self._close()))

    def _close(self) -> None:
        if self._pool is not None:
            self._pool.stop()
            self._pool = None
        try:
            self.backend.close()
        finally:
            if self._release_link_store:
                self._release_link_store = False
                self.link_store.release()
