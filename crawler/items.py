"""What the spider yields for each fetched page, which pipelines enrich and consume, and the
page fields the index's ``Document`` shares with it (``PageSummary``, ``PageRecord``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Link:
    """An outlink: canonical absolute URL, anchor text, and rel=nofollow."""

    url: str
    text: str = ""
    nofollow: bool = False

    def __reduce__(self):
        # pickled as its fields, not as an instance dict: an extraction worker sends a
        # page's links (~50 on the test web) to the crawl process, which then reads them
        # in a third of the time (19 against 55 us for 53 links)
        return (Link, (self.url, self.text, self.nofollow))


class Links(list):
    """A page's links (``Link``): a list pickled as three columns, its URLs, its anchor
    texts and its nofollow flags, not one object a link. An extraction worker sends each
    page's list to the crawl process (~40 links a page on the test web); a page and its
    item share the list, and so does its copy."""

    __slots__ = ()

    def __reduce__(self):
        return (_links, (tuple([link.url for link in self]),
                         tuple([link.text for link in self]),
                         bytes([bool(link.nofollow) for link in self])))


def _links(urls: tuple[str, ...], texts: tuple[str, ...], nofollow: bytes) -> Links:
    """The ``Links`` of their pickled columns."""
    return Links(map(Link, urls, texts, map(bool, nofollow)))


@dataclass(frozen=True)
class Section:
    """A part of a page a result can link to: a heading and the text up to the next one,
    a definition term with an id (an API entry, a glossary term) and its definition, or a
    man page's option. ``start`` is where it begins in the page's text (its heading's
    line); ``anchor`` the fragment that shows it (``""``: none, the page itself)."""

    start: int
    anchor: str = ""
    heading: str = ""


@dataclass(kw_only=True)
class PageSummary:
    """The short fields that name and describe a page, as the extractor reads them and the
    index stores them: declared once, for ``PageContent`` (and so the extractor's result and
    the ``PageItem``) and ``index.base.Document``."""

    title: str = ""
    description: str = ""
    lang: str = ""
    #: The text of the main content's headings (h1-h6) and definition terms (``<dt>``),
    #: one a line: where a page names what it defines.
    headings: str = ""


@dataclass(kw_only=True)
class PageRecord:
    """What the crawl records of a fetched page and the index keeps with its document:
    declared once, for ``PageItem`` and ``index.base.Document``.

    ``url`` is the canonical URL the document is known by; ``cluster_id`` its duplicate
    cluster; ``shown`` whether it is the page its cluster shows
    (``crawler.quality.dedup.election``; a page not shown is never a result, it only counts
    among its cluster's near-copies); ``spam_score`` the crawl's spam score (0 = no spam
    rule tripped .. 1); ``warc_*`` where its response is stored (``warc_offset`` -1: not
    stored).
    """

    url: str
    host: str
    fetched_at: float = 0.0
    cluster_id: str = ""
    shown: bool = True
    spam_score: float = 0.0
    warc_file: str = ""
    warc_offset: int = -1


@dataclass(kw_only=True)
class PageContent(PageSummary):
    """What a page says about itself, as the extractor reads it: its ``PageSummary``, its
    text, sections and links; declared once, for the extractor's result
    (``crawler.extract.Extracted``) and the ``PageItem`` made of it."""

    text: str = ""
    #: Where the main text's sections begin, in order.
    sections: list[Section] = field(default_factory=list)
    canonical: str = ""
    links: list[Link] = field(default_factory=Links)
    noindex: bool = False
    nofollow: bool = False


@dataclass(kw_only=True)
class PageItem(PageContent, PageRecord):
    """A fetched, extracted page: its ``PageContent`` and what the crawl knows of it (its
    ``PageRecord`` and more).

    ``url`` is the canonical URL the document is known by (rel=canonical when it is on the
    same host, else the fetched URL canonicalized); ``fetched_url`` is what was downloaded.
    Pipelines fill ``doc_id``, ``cluster_id``, ``dup_of``, ``shown`` (whether the page is
    the one its duplicate cluster shows, ``crawler.quality.dedup.election``), ``warc_*``, and
    the quality pipeline ``spam_score`` (0..1) and ``skip_index`` (why the index must skip
    the page: ``soft_404``, ``template``, ``spam``, ``mirror``; empty: index it);
    ``crawler.extract.item_from_response`` sets ``hidden_words`` (words hidden with CSS,
    ``crawler.quality.judges.hidden_words``) and ``truncated``.
    """

    fetched_url: str
    status: int
    depth: int = 0
    content_type: str = ""
    truncated: bool = False
    doc_id: str = ""
    dup_of: str = ""
    skip_index: str = ""
    hidden_words: int = 0
    raw_headers: dict = field(default_factory=dict)
    raw_body: bytes = b""
    #: What the dedup and quality pipelines read of the text, computed by the extraction
    #: worker (``crawler.quality.features.TextFeatures``); None: they compute it.
    text_features: Any = field(default=None, compare=False, repr=False)
