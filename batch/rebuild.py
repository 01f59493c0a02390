"""Rebuild the index from WARC files alone: read responses, extract, dedup, link, index.

The crawl's pipelines are replayed in the order the responses were written, so exact
aliases and cluster ids come out as they did in the crawl, and anchor text is collected
from every page's links before the documents are written.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from warcio.archiveiterator import ArchiveIterator

from crawler.items import PageItem
from crawler.options import settings_to_options
from crawler.quality.dedup.core import Deduplicator
from crawler.urls import doc_id_for
from index.base import Document, SearchBackend

if TYPE_CHECKING:
    from pipelines.linkgraph import LinkStore

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
    #: The body was cut at the crawl's size limit (the record's ``WARC-Truncated: length``).
    truncated: bool = False

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


def _response(record, name: str, offset: Callable[[], int],
              max_body: int | None = None) -> WarcResponse:
    http = record.http_headers
    # before ``offset()``, which skips to the record end
    body = record.content_stream().read(max_body) if max_body != 0 else b""
    return WarcResponse(
        url=record.rec_headers.get_header("WARC-Target-URI"),
        status=int(http.get_statuscode() or 0),
        headers=list(http.headers),
        body=body,
        fetched_at=_timestamp(record.rec_headers.get_header("WARC-Date")),
        warc_file=name,
        warc_offset=offset(),
        truncated=bool(record.rec_headers.get_header("WARC-Truncated")),
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
                yield _response(record, path.name, records.get_record_offset)


def read_response(directory: str | os.PathLike, warc_file: str, offset: int,
                  max_body: int | None = None) -> WarcResponse:
    """The response record at ``offset`` of ``warc_file`` (a document's ``warc_*`` fields),
    with at most ``max_body`` bytes of its body (all of it when None; none when 0)."""
    path = Path(directory) / warc_file
    with open(path, "rb") as fh:
        fh.seek(offset)
        record = next(iter(ArchiveIterator(fh)))
        if record.rec_type != "response":
            raise ValueError(f"{warc_file}@{offset} is a {record.rec_type} record, not a response")
        if record.http_headers is None:  # what a misread offset can parse as (as iter_responses)
            raise ValueError(f"{warc_file}@{offset} is a response record without HTTP headers")
        return _response(record, warc_file, lambda: offset, max_body)


def page_item_from_response(response: WarcResponse) -> PageItem | None:
    """The ``PageItem`` the ``web`` spider makes of this response, or None if it makes none:
    2xx only, then the crawl's own ``crawler.extract.item_from_response``. A page the crawl
    rendered with a browser was fetched again as rendered; that later record wins, as the
    latest fetch of its URL.
    """
    from crawler.extract import NotAPage, item_from_response

    if not 200 <= response.status < 300:
        return None
    try:
        _page, item = item_from_response(
            response.url,
            response.status,
            response.body,
            response.fetched_at,
            content_type=response.header("Content-Type"),
            x_robots=response.header("X-Robots-Tag"),
            language=response.header("Content-Language"),
            truncated=response.truncated,
            warc_file=response.warc_file,
            warc_offset=response.warc_offset,
        )
    except NotAPage:
        return None
    return item


@dataclass
class RebuildReport:
    """What a rebuild read and wrote; ``aliases`` maps each exact duplicate to its document."""

    files: int = 0
    responses: int = 0
    pages: int = 0
    documents: int = 0
    noindex: int = 0
    aliases: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0


def rebuild_index(
    warc_dir: str | os.PathLike,
    backend: SearchBackend,
    link_store: LinkStore | None = None,
    dedup: Deduplicator | None = None,
    batch_size: int = 500,
    progress: Callable[[str], None] | None = None,
    anchors: bool = True,
) -> RebuildReport:
    """Index every page of the WARC files under ``warc_dir`` into ``backend``.

    Pass 1 replays dedup and the link graph in writing order and remembers, per document,
    where its latest fetch is; pass 2 reads the files again and indexes those fetches that
    are neither aliases nor ``noindex``, with their anchor text, each shown or not as its
    cluster's election ended. Memory stays bounded by the
    number of documents, not their size. ``link_store`` receives the replayed graph (a
    temporary SQLite store if None); ``dedup`` defaults to a fresh in-memory MinHash one
    (the ``DEDUP_*`` defaults).
    With ``anchors`` off, documents get no anchor text (as a crawl whose index writer adds
    none), so the rebuilt index can be compared with such a crawl's exactly.
    """
    from crawler.quality.dedup.pipeline import DedupPipeline
    from pipelines.index import document_from_item
    from pipelines.linkgraph import SQLiteLinkStore

    started = time.monotonic()
    say = progress or (lambda message: None)
    files = warc_files(warc_dir)
    report = RebuildReport(files=len(files))
    dedupe = DedupPipeline(dedup or Deduplicator.from_settings(None, method="minhash"),
                           **settings_to_options(None, DedupPipeline.SETTINGS))
    tmp = None
    if link_store is None:
        tmp = tempfile.TemporaryDirectory(prefix="rebuild-links-")
        link_store = SQLiteLinkStore(Path(tmp.name) / "links.sqlite")
    try:
        latest: dict[str, tuple[str, int]] = {}
        state: dict[tuple[str, int], tuple[str, str, bool]] = {}
        for response in iter_responses(files):
            report.responses += 1
            item = page_item_from_response(response)
            if item is None:
                continue
            report.pages += 1
            dedupe.process_item(item)
            link_store.add(item.doc_id, item.host, item.links)
            location = (item.warc_file, item.warc_offset)
            state.pop(latest.get(item.doc_id), None)
            latest[item.doc_id] = location
            state[location] = (item.cluster_id, item.dup_of, item.noindex)
            if report.pages % 1000 == 0:
                say(f"pass 1: {report.pages} pages read")
        link_store.flush()
        backend.ensure_index()
        batch: list[Document] = []
        for response in iter_responses(files):
            known = state.get((response.warc_file, response.warc_offset))
            if known is None:
                continue
            cluster_id, dup_of, noindex = known
            item = page_item_from_response(response)
            if dup_of:
                report.aliases[item.doc_id or doc_id_for(item.url)] = dup_of
                continue
            if noindex:
                report.noindex += 1
                continue
            item.doc_id = doc_id_for(item.url)
            item.cluster_id = cluster_id
            # the page its cluster shows after every fetch was replayed, as the crawl's
            # index holds it once the swaps it was sent are written
            item.shown = dedupe.election.shown(cluster_id or item.doc_id) in (None, item.doc_id)
            document = document_from_item(item)
            if anchors:
                document.anchors = link_store.anchor_text(document.id)
            batch.append(document)
            if len(batch) >= batch_size:
                report.documents += backend.index(batch)
                batch = []
                say(f"pass 2: {report.documents} documents indexed")
        if batch:
            report.documents += backend.index(batch)
        backend.refresh()
    finally:
        if tmp is not None:
            link_store.close()
            tmp.cleanup()
    report.seconds = time.monotonic() - started
    return report
