"""Sitemaps: ``Sitemap:`` lines of robots.txt, sitemap indexes, urlsets, gzipped files.

Pure functions; the spider (``spiders/web.py``) turns their output into requests. Sizes
are bounded: a gzipped sitemap inflates to at most ``max_size`` bytes, and at most
``max_entries`` entries are read from one file (the protocol's limit is 50,000).
"""

from __future__ import annotations

import re
import zlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from io import BytesIO

import lxml.etree
from scrapy.utils.gz import gunzip

SITEMAP_LINE = re.compile(rb"^\s*sitemap\s*:\s*(\S+)", re.I | re.M)
MAX_ENTRIES = 50_000
#: Sitemap URLs per compressed chunk of a host's backlog (``SitemapBacklog``).
BACKLOG_CHUNK = 32
#: Separators of a backlog chunk: characters XML 1.0 cannot carry, so no ``<loc>`` or
#: ``<lastmod>`` of a parsed sitemap contains them.
_FIELD, _ENTRY = "\x01", "\x00"


@dataclass(frozen=True)
class SitemapEntry:
    """One ``<loc>`` of a sitemap: a page (urlset) or another sitemap (index)."""

    loc: str
    lastmod: str = ""


def robots_sitemaps(body: bytes) -> list[str]:
    """The URLs of the ``Sitemap:`` lines of a robots.txt body, in order, without repeats."""
    seen: dict[str, None] = {}
    for match in SITEMAP_LINE.finditer(body):
        seen.setdefault(match.group(1).decode("utf-8", "replace"), None)
    return list(seen)


def parse_sitemap(
    body: bytes, max_size: int = 50 * 1024 * 1024, max_entries: int = MAX_ENTRIES
) -> tuple[str, list[SitemapEntry]]:
    """``(kind, entries)`` of a sitemap body, gzipped or not; kind is ``"urlset"``,
    ``"sitemapindex"`` or ``""`` when the body is not a sitemap."""
    if body[:2] == b"\x1f\x8b":
        try:
            body = gunzip(body, max_size=max_size)
        except (OSError, ValueError, EOFError):
            return "", []
    if b"<" not in body[:1024]:
        return "", []
    # Scrapy's Sitemap parses the same way (iterparse, entities not resolved, each entry
    # cleared once read) but builds a dict of every child of every entry; reading only
    # <loc> and <lastmod> of the entries lxml picks by tag takes ~half the time (1,000
    # entries: ~5 ms against ~11 ms), and this runs on the reactor thread.
    events = lxml.etree.iterparse(
        BytesIO(body), events=("end",), tag=_ENTRY_TAGS, recover=True,
        remove_comments=True, resolve_entities=False, remove_blank_text=True,
        collect_ids=False, remove_pis=True)
    entries: list[SitemapEntry] = []
    elem = None
    try:
        for _, elem in events:
            loc, lastmod = _loc_and_lastmod(elem)
            elem.clear()
            parent = elem.getparent()
            if parent is not None:
                while elem.getprevious() is not None:
                    del parent[0]
            loc = (loc or "").strip()
            if loc:
                entries.append(SitemapEntry(loc, (lastmod or "").strip()))
                if len(entries) >= max_entries:
                    break
        root = events.root if elem is None else elem.getroottree().getroot()
    except Exception:  # lxml's XMLSyntaxError and friends: not a sitemap
        return "", []
    kind = "" if root is None else _local_name(root.tag)
    if kind not in ("urlset", "sitemapindex"):
        return "", []
    return kind, entries


#: The elements that are entries: ``<url>`` of a urlset, ``<sitemap>`` of an index, in any
#: namespace or none.
_ENTRY_TAGS = ("{*}url", "{*}sitemap", "url", "sitemap")


def _local_name(tag) -> str:
    """The name of ``tag`` without its namespace ("" for a comment or entity)."""
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def _loc_and_lastmod(entry) -> tuple[str | None, str | None]:
    """The texts of an entry's ``<loc>`` and ``<lastmod>`` (the last of each, as Scrapy's
    Sitemap reads them)."""
    loc = lastmod = None
    for child in entry:
        name = _local_name(child.tag)
        if name == "loc":
            loc = child.text
        elif name == "lastmod":
            lastmod = child.text
    return loc, lastmod


class SitemapBacklog:
    """Sitemap URLs waiting for their host's crawl to pull them, at most ``max_pending``
    in all, kept compressed.

    A worker learns of a host's sitemap entries long before it fetches them (they are
    released a few per response of the host), so the backlog holds entries of every host
    whose sitemap it has read; as plain ``(loc, lastmod)`` tuples in deques that is ~200
    bytes per entry, up to 200 MB per worker at a million. Here each host's entries are
    zlib-compressed chunks of ``chunk`` entries (``BACKLOG_CHUNK``), the URLs of one host
    sharing their prefix: ~10 bytes per entry on the test web. ``pop`` inflates one chunk;
    the part a release did not use goes back with ``push_front``.
    """

    def __init__(self, max_pending: int, chunk: int = BACKLOG_CHUNK):
        if chunk < 1:
            raise ValueError("chunk must be >= 1")
        self.max_pending = max_pending
        self.chunk = chunk
        self.pending = 0
        self._hosts: dict[str, deque[tuple[int, bytes]]] = {}

    def __bool__(self) -> bool:
        return bool(self._hosts)

    def __len__(self) -> int:
        return self.pending

    def __contains__(self, host: str) -> bool:
        return host in self._hosts

    def add(self, host: str, entries: Iterable[tuple[str, str]]) -> int:
        """Queue ``(loc, lastmod)`` entries of ``host`` after its others while the total
        stays within ``max_pending``; returns how many were queued (entries with a
        separator character, which no parsed sitemap has, are skipped)."""
        room = self.max_pending - self.pending
        batch: list[tuple[str, str]] = []
        added = 0
        for loc, lastmod in entries:
            if added >= room:
                break
            if _FIELD in loc or _ENTRY in loc or _FIELD in lastmod or _ENTRY in lastmod:
                continue
            batch.append((loc, lastmod))
            added += 1
            if len(batch) == self.chunk:
                self._append(host, batch)
                batch = []
        if batch:
            self._append(host, batch)
        self.pending += added
        return added

    def pop(self, host: str) -> list[tuple[str, str]]:
        """The next chunk of ``host``'s entries, oldest first (``[]`` when it has none);
        they are no longer pending."""
        chunks = self._hosts.get(host)
        if not chunks:
            return []
        count, blob = chunks.popleft()
        if not chunks:
            del self._hosts[host]
        self.pending -= count
        return [tuple(line.split(_FIELD, 1))  # type: ignore[misc]
                for line in zlib.decompress(blob).decode("utf-8").split(_ENTRY)]

    def push_front(self, host: str, entries: list[tuple[str, str]]) -> None:
        """Put entries taken with ``pop`` and not used back at the head of ``host``'s."""
        if not entries:
            return
        self._hosts.setdefault(host, deque()).appendleft((len(entries), _pack(entries)))
        self.pending += len(entries)

    def _append(self, host: str, batch: list[tuple[str, str]]) -> None:
        self._hosts.setdefault(host, deque()).append((len(batch), _pack(batch)))


def _pack(entries: list[tuple[str, str]]) -> bytes:
    return zlib.compress(_ENTRY.join(f"{loc}{_FIELD}{lastmod}" for loc, lastmod in entries)
                         .encode("utf-8"), 1)
