"""The raw store: every downloaded request and response in rotating WARC.gz files (warcio).

Responses are recorded as the downloader received them (signal ``response_downloaded``:
before decompression, redirects and retries are handled), so the files hold every fetch,
robots.txt and redirects included. The item pipeline then puts the location of the
page's response record on the item (``warc_file``, ``warc_offset``), the record whose URL
is the item's ``fetched_url``; an item whose response was not seen (built outside a crawl)
is written from its ``raw_headers`` and ``raw_body``.

In a crawl the records are serialized, compressed and written on one writer thread of their
own, in the order the downloads arrived (as ``pipelines/index.py`` writes the index): on the
reactor thread gzip took ~9% of its time in a 44-host real-web crawl (py-spy), time every
download and every scheduler wake-up waited for; zlib releases the GIL, so the thread
compresses on the other core. An item waits for its page's record (it needs the location).

A full disk (ENOSPC, EDQUOT, or less free space than ``WARC_MIN_FREE_BYTES``) pauses the
crawl instead of losing records: the failed write is rolled back, the engine is paused, the
records of the downloads still arriving wait in memory (with their items), and every
``WARC_DISK_RETRY_S`` the pipeline tries again; when they are all written the crawl resumes.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import socket
import time
import zlib
from collections import OrderedDict, deque
from collections.abc import Iterable
from datetime import UTC, datetime
from io import BytesIO
from pathlib import Path
from typing import Any, ClassVar

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.http.headers import Headers
from twisted.internet import defer, task, threads
from twisted.python.threadpool import ThreadPool
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import GzippingWrapper, WARCWriter

from crawler.config import config_from_settings
from crawler.fetch import TRUNCATED
from crawler.items import PageItem
from crawler.options import Option, enabled, setting, settings_to_options
from pipelines import awaited

logger = logging.getLogger(__name__)

# Twisted has already undone the chunking; the stored body is one block.
_HOP_HEADERS = frozenset(("transfer-encoding", "content-length"))
_DISK_FULL = frozenset((errno.ENOSPC, errno.EDQUOT))


class WarcDiskFull(OSError):
    """The WARC directory has no room for the next record; nothing of it was written."""


#: zlib level of a record (warcio's is 9): on 300 pages of the real documentation sites
#: (80 KB of HTML on average) level 9 took 2.34 ms of CPU a page, level 6 1.41 ms, for
#: files 0.8% larger (level 5: 1.01 ms, 3% larger; level 1: 0.54 ms, 24% larger).
GZIP_LEVEL = 6
#: Records longer than this are compressed at zlib level 1: on a 9 MiB page of short words
#: level 9 took 1.8 s of CPU, level 1 0.18 s (a record up to 1 MiB stays under ~0.2 s).
FAST_GZIP_BYTES = 1024 * 1024


class _Gzip(GzippingWrapper):
    """warcio's gzip member writer at a given compression ``level``."""

    def __init__(self, out, level: int):
        # not warcio's __init__: it makes a level 9 compressor first, and making one costs
        # ~0.1-0.2 ms (each allocates and clears ~256 KB), twice a page for nothing
        self.out = out
        self.compressor = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS + 16)


class _BoundedWARCWriter(WARCWriter):
    """warcio's writer, one gzip member a record as ever, at ``GZIP_LEVEL`` for records up
    to ``FAST_GZIP_BYTES`` and level 1 for longer ones, so no record costs seconds of CPU."""

    def __init__(self, out):
        super().__init__(out, gzip=False)

    def _write_warc_record(self, out, record):
        length = record.length
        if length is None:  # a payload of unknown length: warcio measures it while writing
            stream = record.raw_stream
            length = stream.seek(0, os.SEEK_END) - stream.seek(0) if stream.seekable() else 0
        level = GZIP_LEVEL if length <= FAST_GZIP_BYTES else 1
        super()._write_warc_record(_Gzip(out, level), record)


def _warc_date(timestamp: float | None) -> str:
    moment = datetime.fromtimestamp(timestamp, UTC) if timestamp else datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _header_pairs(headers: Any) -> list[tuple[str, str]]:
    """(name, value) pairs from Scrapy ``Headers`` or a plain mapping of str/bytes/lists."""
    pairs = []
    # Headers keeps its names normalized and each value a list: read as stored, not through
    # Headers.items, which normalizes each name again (3.7-3.9 -> 2.0-2.1 us a response)
    items = dict.items(headers) if isinstance(headers, Headers) else headers.items()
    for name, values in items:
        if not isinstance(values, list | tuple):
            values = [values]
        name = name.decode("latin-1") if isinstance(name, bytes) else str(name)
        for value in values:
            value = value.decode("latin-1") if isinstance(value, bytes) else str(value)
            pairs.append((name, value))
    return pairs


class RotatingWarcWriter:
    """Appends request/response pairs to ``<prefix>-<time>-<serial>-<worker>.warc.gz`` files.

    A new file is started when the current one reaches ``max_bytes``; each file begins with
    a warcinfo record. Every record is a separate gzip member, so a reader can seek straight
    to a returned offset. File names sort in writing order for one worker.
    """

    #: Setting -> option; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "WARC_PREFIX": ("prefix", str),
        "WARC_MAX_BYTES": ("max_bytes", int),
        "BOT_NAME": ("software", str),
        "WARC_MIN_FREE_BYTES": ("min_free_bytes", int),
    }

    def __init__(
        self,
        directory: str | os.PathLike,
        worker: str | None = None,
        *,
        prefix: str,
        max_bytes: int,
        software: str,
        min_free_bytes: int,
    ):
        self.directory = Path(directory)
        self.min_free_bytes = min_free_bytes
        self.worker = worker or f"{socket.gethostname()}-{os.getpid()}"
        self.prefix = prefix
        self.max_bytes = max_bytes
        self.software = software
        self._serial = 0
        self._file = None
        self._writer: WARCWriter | None = None
        self._size = 0
        self.name = ""
        self.files: list[str] = []


    @classmethod
    def from_settings(
        cls, settings: Any, directory: str | os.PathLike, **overrides: Any
    ) -> RotatingWarcWriter:
        """A writer into ``directory`` with the ``WARC_*`` settings, ``overrides`` on top."""
        return cls(directory, **settings_to_options(settings, cls.SETTINGS, **overrides))
    def _open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
        while True:
            self._serial += 1
            name = f"{self.prefix}-{stamp}-{self._serial:05d}-{self.worker}.warc.gz"
            path = self.directory / name
            if not path.exists():
                break
        # Unbuffered: each record is one write() that is either on disk or rolled back.
        self._file = open(path, "xb", buffering=0)
        self._size = 0
        self._writer = WARCWriter(self._file, gzip=True)
        self.name = name
        self.files.append(name)
        info = self._writer.create_warcinfo_record(
            name, {"software": self.software, "format": "WARC File Format 1.1"}
        )
        try:
            self._append(lambda w: w.write_record(info))
        except WarcDiskFull:
            self._file.close()
            self._file = self._writer = None
            self.files.pop()
            path.unlink(missing_ok=True)
            raise

    def _append(self, write) -> int:
        """Serialize with ``write(warc_writer)`` and append it in one write; return its offset.
        On a full disk the file is cut back to where it was and WarcDiskFull is raised."""
        buf = BytesIO()
        write(_BoundedWARCWriter(buf))
        data = buf.getvalue()
        offset = self._size
        if self.min_free_bytes:
            free = shutil.disk_usage(self.directory).free
            if free - len(data) < self.min_free_bytes:
                raise WarcDiskFull(
                    errno.ENOSPC,
                    f"{free} bytes free, WARC_MIN_FREE_BYTES is {self.min_free_bytes}",
                    str(self.directory),
                )
        try:
            view = memoryview(data)
            while view:
                view = view[self._file.write(view):]
        except OSError as exc:
            if exc.errno not in _DISK_FULL:
                raise
            self._file.truncate(offset)
            self._file.seek(offset)
            raise WarcDiskFull(exc.errno, exc.strerror, str(self.directory)) from exc
        self._size = offset + len(data)
        return offset

    def write(
        self,
        url: str,
        status: int,
        response_headers: Iterable[tuple[str, str]],
        body: bytes,
        method: str = "GET",
        request_headers: Iterable[tuple[str, str]] = (),
        request_body: bytes = b"",
        fetched_at: float | None = None,
        protocol: str = "HTTP/1.1",
        truncated: bool = False,
    ) -> tuple[str, int]:
        """Write a response record and its request record; return (file name, offset).
        A ``truncated`` body (cut at the size limit) is marked ``WARC-Truncated: length``.

        Raises WarcDiskFull, having written nothing, when the disk is full."""
        if self._file is not None and self._size >= self.max_bytes:
            self.close()
        if self._file is None:
            self._open()
        assert self._writer is not None
        headers = [(k, v) for k, v in response_headers if k.lower() not in _HOP_HEADERS]
        headers.append(("Content-Length", str(len(body))))
        response = self._writer.create_warc_record(
            url,
            "response",
            payload=BytesIO(body),
            length=len(body),  # known: warcio copies a payload of unknown length to a
            # temporary file and digests it twice
            http_headers=StatusAndHeaders(f"{status} {_reason(status)}", headers, protocol),
            warc_headers_dict={"WARC-Date": _warc_date(fetched_at),
                               **({"WARC-Truncated": "length"} if truncated else {})},
        )
        target = url.split("://", 1)[-1]
        path = "/" + target.split("/", 1)[1] if "/" in target else "/"
        request = self._writer.create_warc_record(
            url,
            "request",
            payload=BytesIO(request_body),
            length=len(request_body),
            http_headers=StatusAndHeaders(
                f"{method} {path} {protocol}", list(request_headers), is_http_request=True
            ),
        )
        # digested again when written, after the WARC-Concurrent-To the pair adds, where a
        # record of unknown length has it
        request.rec_headers.remove_header("WARC-Payload-Digest")
        offset = self._append(lambda w: w.write_request_response_pair(request, response))
        return self.name, offset

    def close(self) -> None:
        """Finish the current file; the next write starts a new one."""
        if self._file is not None:
            self._file.close()
        self._file = self._writer = None


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


class WarcPipeline:
    """Records every download in WARC files and the page's record location on its item.

    With ``background`` (a crawl: ``from_crawler``) the records are written by one thread,
    in arrival order, off the reactor; without, each at once. On a full disk it pauses the
    crawl (``pause``/``resume`` callables) until the records waiting in memory are written:
    no download goes unrecorded."""

    def __init__(
        self,
        writer: RotatingWarcWriter,
        stats=None,
        remember: int = 10_000,
        *,
        retry_s: float,
        pause=None,
        resume=None,
        background: bool = False,
    ):
        self.writer = writer
        self.stats = stats
        self._remember = remember
        self.retry_s = retry_s
        self._pause = pause
        self._resume = resume
        self.background = background
        self._pool: ThreadPool | None = None
        self._locations: OrderedDict[str, tuple[str, int] | None] = OrderedDict()
        # records not written yet, in arrival order (for the thread, or for disk space)
        self._backlog: deque[tuple[str, dict]] = deque()
        self._unwritten: dict[str, int] = {}  # url -> its records in the backlog or writing
        self._writing: defer.Deferred | None = None  # the batch on the writer thread
        self._waiting: dict[str, list[defer.Deferred]] = {}
        self._retry: task.LoopingCall | None = None
        self._paused_at = 0.0

    @classmethod
    def from_crawler(cls, crawler) -> WarcPipeline:
        settings = crawler.settings
        if not enabled(settings, "WARC_ENABLED"):
            raise NotConfigured("WARC_ENABLED is off")
        directory = settings.get("WARC_DIR") or config_from_settings(settings).data_dir / "warc"
        writer = RotatingWarcWriter.from_settings(
            settings, directory, worker=settings.get("WARC_WORKER_ID") or None
        )
        pipeline = cls(
            writer,
            crawler.stats,
            retry_s=setting(settings, "WARC_DISK_RETRY_S", float),
            pause=lambda: crawler.engine.pause(),
            resume=lambda: crawler.engine.unpause(),
            background=True,
        )
        crawler.signals.connect(pipeline.response_downloaded, signal=signals.response_downloaded)
        return pipeline

    @property
    def paused(self) -> bool:
        """True while records wait for disk space."""
        return self._retry is not None

    def open_spider(self, spider=None) -> None:
        if self.background:
            self._pool = ThreadPool(1, 1, name="warc-writer")
            self._pool.start()

    def response_downloaded(self, response, request, spider=None) -> None:
        """Record a download as received (signal handler); a cloaking probe (the page again
        as a browser sees it, ``meta["quality_probe"]``) is no record of the page."""
        if request.meta.get("quality_probe"):
            return
        self._record(
            response.url,
            {
                "status": response.status,
                "response_headers": _header_pairs(response.headers),
                "body": response.body,
                "method": request.method,
                "request_headers": _header_pairs(request.headers),
                "request_body": request.body,
                "protocol": getattr(response, "protocol", None) or "HTTP/1.1",
                "truncated": TRUNCATED in response.flags,
            },
        )

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        url = item.fetched_url
        found = url in self._locations
        location = self._locations.pop(url, None)
        if not found and url not in self._unwritten:
            self._inc("warc/from_item")
            self._record(
                url,
                {
                    "status": item.status,
                    "response_headers": _header_pairs(item.raw_headers),
                    "body": item.raw_body,
                    "fetched_at": item.fetched_at,
                    "truncated": item.truncated,
                },
            )
            found = url in self._locations
            location = self._locations.pop(url, None)
        if not found:
            # The record is being written, or waits for disk space: the item waits for it.
            waiter = defer.Deferred()
            self._waiting.setdefault(url, []).append(waiter)
            return awaited(waiter.addCallback(self._locate, item))
        return self._locate(location, item)

    def close_spider(self, spider=None):
        """Write what waits and close the file; in a crawl, a coroutine that ends once the
        writer thread is done."""
        if self._writing is None:
            self._close()
            return None
        closed = defer.Deferred()

        def after_batch(result):
            if self._writing is None:  # no next batch was started: the thread is idle
                self._close()
                closed.callback(None)
            else:
                self._writing.addBoth(after_batch)
            return result

        self._writing.addBoth(after_batch)
        return awaited(closed)

    # -- internals ------------------------------------------------------------------------

    def _close(self) -> None:
        if self._retry is not None and self._retry.running:
            self._retry.stop()
        if self._pool is not None:
            self._pool.stop()
            self._pool = None
        self._write_backlog()
        if self._backlog:
            logger.error(
                "WARC disk still full at close: %d downloads not recorded in %s",
                len(self._backlog), self.writer.directory,
            )
        self.writer.close()

    @staticmethod
    def _locate(location: tuple[str, int] | None, item: PageItem) -> PageItem:
        if location is not None:
            item.warc_file, item.warc_offset = location
        return item

    def _record(self, url: str, record: dict) -> None:
        self._backlog.append((url, record))
        self._unwritten[url] = self._unwritten.get(url, 0) + 1
        if not self.paused:
            self._flush()

    def _flush(self) -> None:
        """Write the waiting records: at once, or on the writer thread (one batch at a
        time, in order)."""
        if self._pool is None:
            self._write_backlog()
            return
        if self._writing is not None or not self._backlog:
            return
        from twisted.internet import reactor

        batch = list(self._backlog)
        self._backlog.clear()
        d = threads.deferToThreadPool(reactor, self._pool, self._write_batch, batch)
        d.addCallbacks(self._batch_written, self._batch_failed, callbackArgs=(batch,),
                       errbackArgs=(batch,))
        self._writing = d

    def _write_backlog(self) -> None:
        """Write the waiting records here, in order, until the disk is full."""
        written, full = self._write_batch(list(self._backlog))
        for _ in written:
            self._backlog.popleft()
        self._settle(written, full)

    def _write_batch(self, batch: list[tuple[str, dict]]):
        """(the records of ``batch`` written, with their locations; the WarcDiskFull that
        stopped the rest, or None). Runs on the writer thread in a crawl."""
        written = []
        for url, record in batch:
            try:
                written.append((url, record, self.writer.write(url, **record)))
            except WarcDiskFull as exc:
                return written, exc
        return written, None

    def _batch_written(self, result, batch: list[tuple[str, dict]]) -> None:
        written, full = result
        self._writing = None
        self._backlog.extendleft(reversed(batch[len(written):]))
        self._settle(written, full)
        if not self.paused:
            self._flush()

    def _batch_failed(self, failure, batch: list[tuple[str, dict]]) -> None:
        """A write failed otherwise than for space: its batch is lost, its items go on."""
        self._writing = None
        logger.error("WARC write failed, %d downloads not recorded: %s", len(batch),
                     failure.getErrorMessage(), exc_info=failure.value)
        self._inc("warc/write_failed", len(batch))
        for url, _record in batch:
            self._located(url, None)
        self._flush()

    def _settle(self, written: list, full: WarcDiskFull | None) -> None:
        """Hand out the locations of ``written``; pause on ``full``, resume when a paused
        crawl's records are all written."""
        for url, record, location in written:
            self._inc("warc/records", 2)
            self._inc("warc/bytes", len(record["body"]))
            self._located(url, location)
        if full is not None:
            if not self.paused:
                self._disk_full(full)
        elif self.paused and not self._backlog:
            self._resumed()

    def _located(self, url: str, location: tuple[str, int] | None) -> None:
        left = self._unwritten.pop(url, 1) - 1
        if left:
            self._unwritten[url] = left
        waiters = self._waiting.pop(url, None)
        if waiters:
            waiter, *rest = waiters
            if rest:
                self._waiting[url] = rest
            waiter.callback(location)
            return
        self._locations[url] = location
        self._locations.move_to_end(url)
        while len(self._locations) > self._remember:
            self._locations.popitem(last=False)

    def _disk_full(self, exc: WarcDiskFull) -> None:
        logger.error(
            "WARC disk full (%s): crawl paused; retrying every %.1f s until space returns",
            exc, self.retry_s,
        )
        self._inc("warc/disk_full")
        self._paused_at = time.monotonic()
        if self._pause is not None:
            self._pause()
        self._retry = task.LoopingCall(self._drain)
        self._retry.start(self.retry_s, now=False)

    def _drain(self) -> None:
        """Try the waiting records again (the crawl resumes when they are all written)."""
        if self._pool is None:
            self._write_backlog()
        else:
            self._flush()

    def _resumed(self) -> None:
        if self._retry is not None and self._retry.running:
            self._retry.stop()
        self._retry = None
        paused_s = time.monotonic() - self._paused_at
        self._inc("warc/paused_s", round(paused_s))
        logger.warning("WARC disk has space again: crawl resumed after %.0f s paused", paused_s)
        if self._resume is not None:
            self._resume()

    def _inc(self, key: str, n: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, n)
