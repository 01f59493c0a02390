"""Cached copies: a result's page as the crawl stored it in WARC, made safe to show.

The index keeps each document's WARC location (``warc_file``, ``warc_offset``: the record's
gzip member), so a copy is one seek and one record read, with no CDXJ index to keep in
step with the crawl (``batch.rebuild.read_response`` reads it, as the rebuild does).

What is shown is not the page's own markup but a cleaned copy: scripts, event handlers,
``javascript:`` URLs, frames, embeds, forms, ``<meta>`` refreshes, ``<base>``, external
style sheets and image sources other than ``data:`` are removed (lxml's cleaner), and every
link is made absolute against the page's URL so it leads to the live web. The copy is then
served under its own policy (``CACHE_CONTENT_SECURITY_POLICY``: no scripts, no network but
inline images, framed only by this site) into an ``<iframe sandbox>`` without
``allow-scripts``: either layer alone keeps the page's scripts from running.

Bounded: the banner page reads only the record's headers (``stored_copy``), and the copy
itself is the first ``CACHED_COPY_MAX_BYTES`` of the body (``cached_copy``), decoded like
the crawl decodes it (``crawler.extract.decode_html``), so a 9 MB page costs what 1 MB does.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import lxml.html
from lxml_html_clean import Cleaner
from warcio.exceptions import ArchiveLoadFailed

from batch.rebuild import WarcResponse, read_response
from crawler.extract import decode_html
from index.base import Document

__all__ = ["CachedCopy", "NoCachedCopy", "cached_copy", "is_doc_id", "stored_copy"]

_DOC_ID = re.compile(r"[0-9a-f]{16}")
_CLEANER = Cleaner(
    scripts=True, javascript=True, comments=True, style=False, inline_style=False,
    links=True, meta=True, page_structure=False, processing_instructions=True,
    embedded=True, frames=True, forms=True, annoying_tags=True, remove_unknown_tags=False,
    safe_attrs_only=False,
)


class NoCachedCopy(LookupError):
    """There is no stored copy to show; the message says why (shown with a 404)."""


@dataclass(frozen=True)
class CachedCopy:
    """A page's stored copy: its URL, when it was fetched, its cleaned HTML (empty when
    only the record's headers were read), and whether the HTML stops short of the page."""

    url: str
    fetched_at: float
    html: str = ""
    truncated: bool = False


def is_doc_id(value: str) -> bool:
    """Whether ``value`` has the form of a document id (``doc_id_for``)."""
    return bool(_DOC_ID.fullmatch(value))


def _record(doc: Document, warc_dir: Path, max_body: int) -> WarcResponse:
    if not doc.warc_file or doc.warc_offset < 0:
        raise NoCachedCopy("This page has no stored copy.")
    name = Path(doc.warc_file)
    if name.is_absolute() or ".." in name.parts:
        raise NoCachedCopy("This page's stored copy is outside the WARC directory.")
    try:
        return read_response(warc_dir, doc.warc_file, doc.warc_offset, max_body=max_body)
    except (ArchiveLoadFailed, OSError, EOFError, ValueError, StopIteration, zlib.error) as exc:
        raise NoCachedCopy(f"The stored copy of this page cannot be read ({exc}).") from None


def stored_copy(doc: Document, warc_dir: str | Path) -> CachedCopy:
    """``doc``'s stored copy, its URL and fetch time only, read from the record's headers;
    raises :class:`NoCachedCopy` when there is none."""
    response = _record(doc, Path(warc_dir), max_body=0)
    return CachedCopy(url=response.url or doc.url,
                      fetched_at=response.fetched_at or doc.fetched_at)


def cached_copy(doc: Document, warc_dir: str | Path, max_bytes: int) -> CachedCopy:
    """The cleaned stored copy of ``doc``, from at most ``max_bytes`` of its body; raises
    :class:`NoCachedCopy` when there is none."""
    response = _record(doc, Path(warc_dir), max_body=max_bytes + 1)
    truncated = len(response.body) > max_bytes
    text, _ = decode_html(response.body[:max_bytes], response.header("Content-Type"))
    html = clean_html(text, response.url or doc.url)
    if truncated:
        html += (f"\n<p><em>(The stored page goes on; this copy shows its first "
                 f"{max_bytes // 1024:,} KB.)</em></p>")
    return CachedCopy(url=response.url or doc.url,
                      fetched_at=response.fetched_at or doc.fetched_at, html=html,
                      truncated=truncated)


def clean_html(text: str, base_url: str) -> str:
    """``text`` without anything active, its links absolute and leading out of the frame."""
    if not text.strip():
        return "<!doctype html><p>(The stored page is empty.)</p>"
    root = lxml.html.document_fromstring(text)
    root = _CLEANER.clean_html(root)
    for element in list(root.iter("base")):
        element.drop_tree()
    for element in root.iter("a", "area"):
        raw = (element.get("href") or "").strip()
        href = urljoin(base_url, raw)
        if raw and urlsplit(href).scheme in ("http", "https"):
            element.set("href", href)
            element.set("target", "_blank")
            element.set("rel", "noopener noreferrer")
        else:
            element.attrib.pop("href", None)
    for element in root.iter("img", "source"):
        # Nothing is fetched from the network: the image shows as its alt text.
        if not (element.get("src") or "").startswith("data:"):
            element.attrib.pop("src", None)
        element.attrib.pop("srcset", None)
    return "<!doctype html>\n" + lxml.html.tostring(root, encoding="unicode")
