"""The link graph: edges from source documents to target URLs, with anchor text.

Embedded, edges go to SQLite under ``DATA_DIR`` (``SQLiteLinkStore``). Distributed, each
worker appends to its own JSON-lines file in a shared directory (``SharedFileLinkStore``)
and readers merge those files into a local SQLite copy, reading only what is new since their
last merge. Both answer the ranking batch and the index writer through the same methods.

A page fetched again replaces its earlier edges (the latest ``add`` by wall-clock time wins,
whichever worker's file it comes from). ``rel=nofollow`` links are kept but pass
neither rank nor anchor text.

In a crawl (``crawler_link_store``) a store writes its batches on a writer thread of its own
(``background``): ``add`` only stages a page's links, and the reactor never waits for a
write. On the reactor a 500-page SQLite batch (the links turned into rows, old edges
deleted, new ones inserted) stopped every download for 0.1-0.3 s every ~10 s of a
``bench/realweb.py`` crawl (docs/crawl-speed.md). Every store is safe to use from several threads:
staging takes a short lock of its own, and writes and reads take the store's I/O lock, so
the index writer's anchor lookups run on its own thread too. A batch whose write fails is logged,
counted (``on_error``) and staged again, so the next write retries it; ``close`` waits for
the writer thread, writes what is staged and raises if that fails.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from scrapy.exceptions import NotConfigured

from crawler import sqlitedb
from crawler.config import Config, config_from_settings, get_config
from crawler.items import Link, PageItem
from crawler.options import enabled, setting
from crawler.urls import doc_id_for, host_of

_SCHEMA = """
CREATE TABLE IF NOT EXISTS edges (
    src TEXT NOT NULL,
    dst TEXT NOT NULL,
    src_host TEXT NOT NULL,
    dst_host TEXT NOT NULL,
    anchor TEXT NOT NULL,
    nofollow INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS edges_src ON edges (src);
CREATE INDEX IF NOT EXISTS edges_dst ON edges (dst);
CREATE TABLE IF NOT EXISTS sources (src TEXT PRIMARY KEY, fetched REAL NOT NULL);
CREATE TABLE IF NOT EXISTS merged_files (name TEXT PRIMARY KEY, offset INTEGER NOT NULL);
"""

logger = logging.getLogger(__name__)

Row = tuple[str, str, str, bool]  # dst id, dst host, anchor, nofollow


def _rows(links: Sequence[Link] | Sequence[Row]) -> list[Row]:
    """Rows of a page's links (staged as ``Link``s, turned into rows when written)."""
    if not links or not isinstance(links[0], Link):
        return list(links)  # already rows (a merged file's)
    return [
        (doc_id_for(link.url), host_of(link.url), link.text or "", link.nofollow) for link in links
    ]


class LinkStore(ABC):
    """Edges (source document id -> target document id) with anchor text and hosts.

    ``add`` stages pages; every ``batch_size`` pages the staged batch is written, by the
    caller or, with ``background``, by the store's writer thread (one write at a time, in
    order). Reads write what is staged first, so they see every page added before them.
    """

    def __init__(
        self,
        batch_size: int,
        background: bool = False,
        on_error: Callable[[BaseException], None] | None = None,
    ):
        self.batch_size = batch_size
        self.on_error = on_error
        self._stage_lock = threading.Lock()  # held only to stage or take a batch
        self._io_lock = threading.RLock()  # held while writing or reading the store
        self._writer = (
            ThreadPoolExecutor(1, thread_name_prefix="linkgraph-writer") if background else None
        )
        self._write_asked = False
        self._users = 0

    def add(self, src_id: str, src_host: str, links: Iterable[Link]) -> None:
        """Record the outlinks of a page, replacing those recorded for ``src_id`` before."""
        with self._stage_lock:
            full = self._stage(src_id, src_host, list(links), time.time())
            if not full or self._write_asked:
                return
            self._write_asked = self._writer is not None
        if self._writer is None:
            self.flush()
        else:
            self._writer.submit(self._background_flush)

    @abstractmethod
    def _stage(self, src_id: str, src_host: str, links: list, fetched: float) -> bool:
        """Stage a page (under the stage lock); True when a batch is full."""

    @abstractmethod
    def _take(self) -> Any:
        """The staged batch, emptied from the stage (under the stage lock); falsy if none."""

    @abstractmethod
    def _write(self, batch: Any) -> None:
        """Write a taken batch (under the I/O lock)."""

    @abstractmethod
    def _restage(self, batch: Any) -> None:
        """Stage a batch whose write failed again, behind nothing newer (stage lock)."""

    def flush(self) -> None:
        """Make everything added so far durable and visible to readers."""
        with self._io_lock:
            with self._stage_lock:
                batch = self._take()
                self._write_asked = False
            if not batch:
                return
            try:
                self._write(batch)
            except BaseException:
                with self._stage_lock:
                    self._restage(batch)
                raise

    def _background_flush(self) -> None:
        try:
            self.flush()
        except Exception as exc:
            logger.error("link graph write failed (the batch is kept for the next write): %s",
                         exc, exc_info=True)
            if self.on_error is not None:
                self.on_error(exc)

    def _stop_writer(self) -> None:
        """Wait for the writer thread's writes; later batches are written by the caller."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
            self._writer = None

    def retain(self) -> LinkStore:
        """Count one more user of a shared store (``crawler_link_store``)."""
        self._users += 1
        return self

    def release(self) -> None:
        """One user is done; the last one closes the store."""
        self._users -= 1
        if self._users <= 0:
            self.close()

    @abstractmethod
    def iter_edges(self) -> Iterator[tuple[str, str]]:
        """Distinct followed ``(src_doc_id, dst_doc_id)`` pairs; no self-links.

        ``dst_doc_id`` is ``doc_id_for(canonical target URL)``, whether or not it was fetched.
        """

    @abstractmethod
    def iter_host_edges(self) -> Iterator[tuple[str, str, int]]:
        """``(src_host, dst_host, links)`` for followed links between different hosts."""

    @abstractmethod
    def anchors_for(self, doc_id: str, limit: int = 100) -> list[str]:
        """Anchor texts of followed links to ``doc_id`` from other documents, each distinct
        (source host, text) once, at most ``limit``."""

    def anchor_text(self, doc_id: str, limit: int = 100) -> str:
        """``anchors_for`` as the text of a document's ``anchors`` field (one per line)."""
        return "\n".join(self.anchors_for(doc_id, limit))

    def anchor_texts(self, doc_ids: Iterable[str], limit: int = 100) -> dict[str, str]:
        """``anchor_text`` of several documents, read in one hold of the store."""
        with self._io_lock:
            self.flush()
            return {doc_id: self.anchor_text(doc_id, limit) for doc_id in doc_ids}

    def close(self) -> None:
        """Wait for the writer thread, flush and release files and connections."""
        self._stop_writer()
        self.flush()

    @staticmethod
    def open(
        config: Config | None = None, directory: str | os.PathLike | None = None, **options
    ) -> LinkStore:
        """The configured store: shared files when distributed (``REDIS_URL`` set), else
        SQLite. ``directory`` defaults to ``DATA_DIR/linkgraph``."""
        config = config or get_config()
        directory = Path(directory) if directory else config.data_dir / "linkgraph"
        if config.distributed:
            options.setdefault("merged_path", config.data_dir / "links-merged.sqlite")
            return SharedFileLinkStore(directory, **options)
        return SQLiteLinkStore(directory / "links.sqlite", **options)


class SQLiteLinkStore(LinkStore):
    """The link graph in one SQLite file (WAL, so a batch can read while the crawl writes).

    ``add`` is buffered and written every ``batch_size`` pages; reads flush first. The one
    connection is used under the store's I/O lock, from whichever thread holds it.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        batch_size: int = 500,
        background: bool = False,
        on_error: Callable[[BaseException], None] | None = None,
    ):
        super().__init__(batch_size, background, on_error)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlitedb.connect(self.path, timeout=5.0, synchronous="NORMAL",
                                    isolation_level="", check_same_thread=False)
        self._db.executescript(_SCHEMA)
        # src -> (src host, its links or rows, fetched at)
        self._pending: dict[str, tuple[str, list, float]] = {}

    def _stage(self, src_id: str, src_host: str, links: list, fetched: float) -> bool:
        known = self._pending.get(src_id)
        if known is None or known[2] <= fetched:
            self._pending[src_id] = (src_host, links, fetched)
        return len(self._pending) >= self.batch_size

    def _take(self) -> dict[str, tuple[str, list, float]]:
        pending, self._pending = self._pending, {}
        return pending

    def _restage(self, batch: dict[str, tuple[str, list, float]]) -> None:
        for src_id, (src_host, links, fetched) in batch.items():
            known = self._pending.get(src_id)
            if known is None or known[2] < fetched:
                self._pending[src_id] = (src_host, links, fetched)

    def _newer(self, pending: dict[str, tuple[str, list, float]]) -> dict:
        """The pending pages not older than what is stored for them."""
        srcs = list(pending)
        stored: dict[str, float] = {}
        for i in range(0, len(srcs), 500):
            chunk = srcs[i : i + 500]
            marks = ",".join("?" * len(chunk))
            stored.update(
                self._db.execute(f"SELECT src, fetched FROM sources WHERE src IN ({marks})", chunk)
            )
        return {k: v for k, v in pending.items() if stored.get(k, float("-inf")) <= v[2]}

    def _write(self, batch: dict[str, tuple[str, list, float]]) -> None:
        with self._db:
            pending = self._newer(batch)
            self._db.executemany(
                "INSERT OR REPLACE INTO sources VALUES (?, ?)",
                ((src, fetched) for src, (_, _, fetched) in pending.items()),
            )
            self._db.executemany("DELETE FROM edges WHERE src = ?", ((s,) for s in pending))
            self._db.executemany(
                "INSERT INTO edges VALUES (?, ?, ?, ?, ?, ?)",
                (
                    (src, dst, src_host, dst_host, anchor, int(nofollow))
                    for src, (src_host, links, _) in pending.items()
                    for dst, dst_host, anchor, nofollow in _rows(links)
                ),
            )

    def iter_edges(self) -> Iterator[tuple[str, str]]:
        with self._io_lock:
            self.flush()
            rows = self._db.execute(
                "SELECT DISTINCT src, dst FROM edges WHERE nofollow = 0 AND src != dst"
            )
        yield from rows

    def iter_host_edges(self) -> Iterator[tuple[str, str, int]]:
        with self._io_lock:
            self.flush()
            rows = self._db.execute(
                "SELECT src_host, dst_host, COUNT(*) FROM edges "
                "WHERE nofollow = 0 AND src_host != dst_host GROUP BY src_host, dst_host"
            )
        yield from rows

    def anchors_for(self, doc_id: str, limit: int = 100) -> list[str]:
        with self._io_lock:
            self.flush()
            rows = self._db.execute(
                "SELECT DISTINCT src_host, anchor FROM edges "
                "WHERE dst = ? AND src != dst AND nofollow = 0 AND anchor != '' LIMIT ?",
                (doc_id, limit),
            ).fetchall()
        return [anchor for _, anchor in rows]

    def edge_count(self) -> int:
        """How many links are stored (followed or not, duplicates included)."""
        with self._io_lock:
            self.flush()
            return self._db.execute("SELECT COUNT(*) FROM edges").fetchone()[0]

    def merge_files(self, directory: Path) -> int:
        """Append what is new in the workers' files under ``directory``; return pages read.

        Remembers how far each file was read, so a merge only reads new lines; a line cut
        short by a writer still writing is left for the next merge.
        """
        with self._io_lock:
            self.flush()
            done = dict(self._db.execute("SELECT name, offset FROM merged_files"))
            pages = 0
            for path in sorted(directory.glob("links-*.jsonl")):
                start = done.get(path.name, 0)
                with open(path, "rb") as fh:
                    fh.seek(start)
                    data = fh.read()
                end = data.rfind(b"\n") + 1
                for line in data[:end].splitlines():
                    page = json.loads(line)
                    rows = [tuple(r) for r in page["links"]]
                    with self._stage_lock:
                        full = self._stage(page["src"], page["host"], rows, page["fetched"])
                    if full:
                        self.flush()
                    pages += 1
                self.flush()
                with self._db:
                    self._db.execute(
                        "INSERT OR REPLACE INTO merged_files VALUES (?, ?)",
                        (path.name, start + end),
                    )
            return pages

    def close(self) -> None:
        try:
            super().close()
        finally:
            with self._io_lock:
                self._db.close()


class SharedFileLinkStore(LinkStore):
    """Writes to ``directory/links-<worker>.jsonl``; reads from a merged local SQLite copy.

    Each worker appends whole lines (one per page) and flushes every ``batch_size`` pages,
    so no two processes write the same file. Readers merge new lines at most every
    ``merge_interval`` seconds (``iter_*`` always merge first).
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        worker: str | None = None,
        batch_size: int = 500,
        merged_path: str | os.PathLike | None = None,
        merge_interval: float = 30.0,
        background: bool = False,
        on_error: Callable[[BaseException], None] | None = None,
    ):
        super().__init__(batch_size, background, on_error)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.worker = worker or f"{socket.gethostname()}-{os.getpid()}"
        self.merge_interval = merge_interval
        self.merged_path = (
            Path(merged_path)
            if merged_path
            else self.directory.parent / f"links-merged-{self.worker}.sqlite"
        )
        self._merged: SQLiteLinkStore | None = None
        self._merged_at = float("-inf")
        self._file = None
        # (src, src host, fetched at, links), in the order added
        self._pending: list[tuple[str, str, float, list]] = []

    def _stage(self, src_id: str, src_host: str, links: list, fetched: float) -> bool:
        self._pending.append((src_id, src_host, fetched, links))
        return len(self._pending) >= self.batch_size

    def _take(self) -> list[tuple[str, str, float, list]]:
        pending, self._pending = self._pending, []
        return pending

    def _restage(self, batch: list[tuple[str, str, float, list]]) -> None:
        self._pending[:0] = batch

    def _write(self, batch: list[tuple[str, str, float, list]]) -> None:
        lines = [
            json.dumps(
                {"src": src, "host": host, "fetched": fetched, "links": _rows(links)},
                ensure_ascii=False,
                separators=(",", ":"),
            ).encode("utf-8")
            + b"\n"
            for src, host, fetched, links in batch
        ]
        if self._file is None:
            self._file = open(self.directory / f"links-{self.worker}.jsonl", "ab")  # noqa: SIM115
        self._file.write(b"".join(lines))
        self._file.flush()

    def merged(self, force: bool = True) -> SQLiteLinkStore:
        """The local SQLite copy, with the workers' new lines merged in (unless merged less
        than ``merge_interval`` seconds ago and not ``force``)."""
        with self._io_lock:
            self.flush()
            if self._merged is None:
                self._merged = SQLiteLinkStore(self.merged_path)
            now = time.monotonic()
            if force or now - self._merged_at >= self.merge_interval:
                self._merged.merge_files(self.directory)
                self._merged_at = now
            return self._merged

    def iter_edges(self) -> Iterator[tuple[str, str]]:
        return self.merged().iter_edges()

    def iter_host_edges(self) -> Iterator[tuple[str, str, int]]:
        return self.merged().iter_host_edges()

    def anchors_for(self, doc_id: str, limit: int = 100) -> list[str]:
        with self._io_lock:
            return self.merged(force=False).anchors_for(doc_id, limit)

    def close(self) -> None:
        try:
            super().close()
        finally:
            with self._io_lock:
                if self._file is not None:
                    self._file.close()
                    self._file = None
                if self._merged is not None:
                    self._merged.close()
                    self._merged = None


_crawler_stores: weakref.WeakKeyDictionary[Any, LinkStore] = weakref.WeakKeyDictionary()


def crawler_link_store(crawler) -> LinkStore:
    """The one link store of a crawler, shared by the link-graph and index pipelines, which
    each ``retain`` it and ``release`` it when done (the last one closes it). Its batches
    are written on its writer thread; a failed write counts ``linkgraph/write_failed``.

    Settings: ``LINKGRAPH_DIR`` (default ``DATA_DIR/linkgraph``), ``LINKGRAPH_BATCH_SIZE``.
    """
    store = _crawler_stores.get(crawler)
    if store is None:
        settings = crawler.settings
        stats = crawler.stats
        store = LinkStore.open(
            config_from_settings(settings),
            settings.get("LINKGRAPH_DIR") or None,
            batch_size=setting(settings, "LINKGRAPH_BATCH_SIZE", int),
            background=True,
            on_error=lambda exc: stats.inc_value("linkgraph/write_failed"),
        )
        _crawler_stores[crawler] = store
    return store


class LinkGraphPipeline:
    """Records every page's outlinks (aliases' too) in the link store; never drops an item.

    With the crawler's store the reactor only stages the links: the store's writer thread
    writes them, and ``close_spider`` waits for it and writes the rest.
    """

    def __init__(self, store: LinkStore, stats=None):
        self.store = store
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler) -> LinkGraphPipeline:
        if not enabled(crawler.settings, "LINKGRAPH_ENABLED"):
            raise NotConfigured("LINKGRAPH_ENABLED is off")
        return cls(crawler_link_store(crawler).retain(), crawler.stats)

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        if not item.doc_id:
            item.doc_id = doc_id_for(item.url)
        self.store.add(item.doc_id, item.host, item.links)
        if self.stats is not None:
            self.stats.inc_value("linkgraph/pages")
            self.stats.inc_value("linkgraph/links", len(item.links))
        return item

    def close_spider(self) -> None:
        self.store.release()
