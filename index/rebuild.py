"""Rebuild the index from WARC files alone: read responses, extract, dedup, link, index.

The crawl's pipelines are replayed in the order the responses were written, so exact
aliases and cluster ids come out as they did in the crawl, and anchor text is collected
from every page's links before the documents are written.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from crawler.items import PageItem

logger = logging.getLogger(__name__)

WARC_SUFFIXES = (".warc.gz", ".warc")


@dataclass
class WarcResponse:
    """A response record: ``body`` with transfer and content encodings undone."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    fetched_at: float
    warc_file: str
    warc_offset: int

    def header(self, name: str, default: str = "") -> str:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), default)


def warc_files(directory: str | os.PathLike) -> list[Path]:
    """The WARC files under ``directory`` (recursively), in writing order (name order)."""
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"no WARC directory at {root}: pass the crawl's DATA_DIR/warc")
    found = [p for p in root.rglob("*") if p.is_file() and p.name.endswith(WARC_SUFFIXES)]
    return sorted(found, key=lambda p: (p.name, str(p)))


def _timestamp(warc_date: str | None) -> float:
    if not warc_date:
        return 0.0
    return datetime.fromisoformat(warc_date.replace("Z", "+00:00")).timestamp()


def _response(record, name: str, offset: int) -> WarcResponse:
    http = record.http_headers
    return WarcResponse(
        url=record.rec_headers.get_header("WARC-Target-URI"),
        status=int(http.get_statuscode() or 0),
        headers=list(http.headers),
        body=record.content_stream().read(),
        fetched_at=_timestamp(record.rec_headers.get_header("WARC-Date")),
        warc_file=name,
        warc_offset=offset,
    )


def iter_responses(paths: Iterable[str | os.PathLike]) -> Iterator[WarcResponse]:
    """Every response record of the files, in file order then record order."""
    for path in paths:
        path = Path(path)
        with open(path, "rb") as fh:
            records = ArchiveIterator(fh)
            for record in records:
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                yield _response(record, path.name, records.get_record_offset())


def read_response(directory: str | os.PathLike, warc_file: str, offset: int) -> WarcResponse:
    """The response record at ``offset`` of ``warc_file`` (a document's ``warc_*`` fields)."""
    path = Path(directory) / warc_file
    with open(path, "rb") as fh:
        fh.seek(offset)
        record = next(iter(ArchiveIterator(fh)))
        if record.rec_type != "response":
            raise ValueError(f"{warc_file}@{offset} is a {record.rec_type} record, not a response")
        return _response(record, warc_file, offset)


def page_item_from_response(response: WarcResponse) -> PageItem | None:
    """The ``PageItem`` the ``web`` spider makes of this response, or None if it makes none.

    Mirrors ``spiders.web.WebSpider.parse``: 2xx HTML only, the same extractor, and the
    same-host ``rel=canonical`` rule for the document URL.
    """
    from crawler.extract import extract
    from crawler.urls import canonicalize, host_of
    from spiders.web import HTML_TYPES

    if not 200 <= response.status < 300:
        return None
    ctype = response.header("Content-Type").split(";")[0].strip().lower()
    if ctype and ctype.encode("latin-1") not in HTML_TYPES:
        return None
    from scrapy.http import HtmlResponse, Request

    scrapy_response = HtmlResponse(
        url=response.url,
        status=response.status,
        headers=response.headers,
        body=response.body,
        request=Request(response.url),
    )
    page = extract(scrapy_response.text, response.url, response.header("X-Robots-Tag"))
    url = canonicalize(response.url)
    if page.canonical and host_of(page.canonical) == host_of(url):
        url = page.canonical
    return PageItem(
        url=url,
        fetched_url=response.url,
        host=host_of(url),
        status=response.status,
        fetched_at=response.fetched_at,
        title=page.title,
        text=page.text,
        description=page.description,
        lang=page.lang,
        canonical=page.canonical,
        links=page.links,
        noindex=page.noindex,
        nofollow=page.nofollow,
        content_type=ctype,
        warc_file=response.warc_file,
        warc_offset=response.warc_offset,
    )
