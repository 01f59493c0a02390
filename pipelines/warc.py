"""The raw store: every downloaded request and response in rotating WARC.gz files (warcio).

Responses are recorded as the downloader received them (signal ``response_downloaded``:
before decompression, redirects and retries are handled), so the files hold every fetch,
robots.txt and redirects included. The item pipeline then puts the location of the
page's response record on the item (``warc_file``, ``warc_offset``), the record whose URL
is the item's ``fetched_url``; an item whose response was not seen (built outside a crawl)
is written from its ``raw_headers`` and ``raw_body``.
"""

from __future__ import annotations

import logging
import os
import socket
from collections import OrderedDict
from collections.abc import Iterable
from datetime import UTC, datetime
from io import BytesIO
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawler.config import config_from_settings
from crawler.items import PageItem

logger = logging.getLogger(__name__)

# Twisted has already undone the chunking; the stored body is one block.
_HOP_HEADERS = frozenset(("transfer-encoding", "content-length"))


def _warc_date(timestamp: float | None) -> str:
    moment = datetime.fromtimestamp(timestamp, UTC) if timestamp else datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _header_pairs(headers: Any) -> list[tuple[str, str]]:
    """(name, value) pairs from Scrapy ``Headers`` or a plain mapping of str/bytes/lists."""
    pairs = []
    for name, values in headers.items():
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

    def __init__(
        self,
        directory: str | os.PathLike,
        worker: str | None = None,
        prefix: str = "crawl",
        max_bytes: int = 100 * 1024 * 1024,
        software: str = "websearch",
    ):
        self.directory = Path(directory)
        self.worker = worker or f"{socket.gethostname()}-{os.getpid()}"
        self.prefix = prefix
        self.max_bytes = max_bytes
        self.software = software
        self._serial = 0
        self._file = None
        self._writer: WARCWriter | None = None
        self.name = ""
        self.files: list[str] = []

    def _open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
        while True:
            self._serial += 1
            name = f"{self.prefix}-{stamp}-{self._serial:05d}-{self.worker}.warc.gz"
            path = self.directory / name
            if not path.exists():
                break
        self._file = open(path, "xb")
        self._writer = WARCWriter(self._file, gzip=True)
        self.name = name
        self.files.append(name)
        info = self._writer.create_warcinfo_record(
            name, {"software": self.software, "format": "WARC File Format 1.1"}
        )
        self._writer.write_record(info)

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
    ) -> tuple[str, int]:
        """Write a response record and its request record; return (file name, offset)."""
        if self._file is not None and self._file.tell() >= self.max_bytes:
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
            http_headers=StatusAndHeaders(f"{status} {_reason(status)}", headers, protocol),
            warc_headers_dict={"WARC-Date": _warc_date(fetched_at)},
        )
        target = url.split("://", 1)[-1]
        path = "/" + target.split("/", 1)[1] if "/" in target else "/"
        request = self._writer.create_warc_record(
            url,
            "request",
            payload=BytesIO(request_body),
            http_headers=StatusAndHeaders(
                f"{method} {path} {protocol}", list(request_headers), is_http_request=True
            ),
        )
        offset = self._file.tell()
        self._writer.write_request_response_pair(request, response)
        self._file.flush()
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
    """Records every download in WARC files and the page's record location on its item."""

    def __init__(self, writer: RotatingWarcWriter, stats=None, remember: int = 10_000):
        self.writer = writer
        self.stats = stats
        self._remember = remember
        self._locations: OrderedDict[str, tuple[str, int]] = OrderedDict()

    @classmethod
    def from_crawler(cls, crawler) -> WarcPipeline:
        settings = crawler.settings
        if not settings.getbool("WARC_ENABLED", True):
            raise NotConfigured("WARC_ENABLED is off")
        directory = settings.get("WARC_DIR") or config_from_settings(settings).data_dir / "warc"
        writer = RotatingWarcWriter(
            directory,
            worker=settings.get("WARC_WORKER_ID") or None,
            prefix=settings.get("WARC_PREFIX", "crawl"),
            max_bytes=settings.getint("WARC_MAX_BYTES", 100 * 1024 * 1024),
            software=settings.get("BOT_NAME", "websearch"),
        )
        pipeline = cls(writer, crawler.stats)
        crawler.signals.connect(pipeline.response_downloaded, signal=signals.response_downloaded)
        return pipeline

    def response_downloaded(self, response, request, spider=None) -> None:
        """Record a download as received (signal handler)."""
        location = self.writer.write(
            response.url,
            response.status,
            _header_pairs(response.headers),
            response.body,
            method=request.method,
            request_headers=_header_pairs(request.headers),
            request_body=request.body,
            protocol=getattr(response, "protocol", None) or "HTTP/1.1",
        )
        self._locations[response.url] = location
        self._locations.move_to_end(response.url)
        while len(self._locations) > self._remember:
            self._locations.popitem(last=False)
        self._inc("warc/records", 2)
        self._inc("warc/bytes", len(response.body))

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        location = self._locations.pop(item.fetched_url, None)
        if location is None:
            location = self.writer.write(
                item.fetched_url,
                item.status,
                _header_pairs(item.raw_headers),
                item.raw_body,
                fetched_at=item.fetched_at,
            )
            self._inc("warc/records", 2)
            self._inc("warc/from_item")
        item.warc_file, item.warc_offset = location
        return item

    def close_spider(self) -> None:
        self.writer.close()

    def _inc(self, key: str, n: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, n)
