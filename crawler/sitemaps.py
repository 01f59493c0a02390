"""Sitemaps: ``Sitemap:`` lines of robots.txt, sitemap indexes, urlsets, gzipped files.

Pure functions; the spider (``spiders/web.py``) turns their output into requests. Sizes
are bounded: a gzipped sitemap inflates to at most ``max_size`` bytes, and at most
``max_entries`` entries are read from one file (the protocol's limit is 50,000).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

SITEMAP_LINE = re.compile(rb"^\s*sitemap\s*:\s*(\S+)", re.I | re.M)
MAX_ENTRIES = 50_000


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
    try:
        sitemap = Sitemap(body)
    except Exception:  # lxml's XMLSyntaxError and friends: not a sitemap
        return "", []
    kind = sitemap.type or ""
    if kind not in ("urlset", "sitemapindex"):
        return "", []
    entries = []
    for item in sitemap:
        loc = (item.get("loc") or "").strip()
        if loc:
            entries.append(SitemapEntry(loc, (item.get("lastmod") or "").strip()))
            if len(entries) >= max_entries:
                break
    return kind, entries
