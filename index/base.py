"""The search-backend contract shared by the embedded index and Elasticsearch."""

from __future__ import annotations

import fnmatch
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crawler.items import PageRecord, PageSummary

if TYPE_CHECKING:
    from index.query import Query


#: Most values a facet returns.
FACET_SIZE = 10


def host_pattern_suffix(pattern: str) -> str:
    """The trailing labels of a host glob that hold no wildcard: ``*.a.example`` → ``a.example``.

    Every host matching ``pattern`` ends with it, so a ``site:`` lookup narrows the candidates
    (``""`` when the last label is already a wildcard).
    """
    labels = pattern.strip().lower().split(".")
    fixed: list[str] = []
    for label in reversed(labels):
        if any(c in label for c in "*?["):
            break
        fixed.append(label)
    return ".".join(reversed(fixed))


def host_matches(host: str, pattern: str) -> bool:
    """Whether ``host`` matches a host name or glob (case-insensitive, like host rules)."""
    return fnmatch.fnmatchcase(host.lower(), pattern.strip().lower())


class SearchUnavailable(RuntimeError):
    """The index cannot answer right now (its cluster or shards are unreachable); the query
    itself is fine and may be sent again in ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int = 5):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(kw_only=True)
class Document(PageRecord, PageSummary):
    """One indexed page: the crawl's ``PageRecord`` and ``PageSummary`` of it (declared in
    ``crawler.items``), its text as ``body`` and what the index adds. ``id`` is
    ``doc_id_for(url)``; ``url`` is canonical."""

    id: str
    body: str = ""
    anchors: str = ""
    #: The sections of the body, in order, as ``(start, anchor, heading)``: where each
    #: begins in ``body``, the fragment that shows it, its heading (``index.sections``).
    sections: tuple[tuple[int, str, str], ...] = ()
    #: The sentence vectors of the page's sections when semantic matching is on
    #: (``SEARCH_SEMANTIC``; ``index.semantic.pack``), set at index time; ``""``: none.
    vectors: str = ""
    pagerank: float = 0.0
    dup_count: int = 0

    def to_dict(self) -> dict:
        """The fields by name (scalars and tuples, so a shallow copy is a deep one)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: Mapping) -> Document:
        known = cls.__dataclass_fields__
        doc = cls(**{k: v for k, v in data.items() if k in known})
        doc.sections = tuple(tuple(s) for s in doc.sections)  # JSON gives lists
        return doc


@dataclass
class Hit:
    """One search result; ``snippet`` is HTML-safe with query terms in ``<mark>``."""

    id: str
    url: str
    title: str
    snippet: str
    score: float
    host: str = ""
    cluster_id: str = ""
    similar: int = 0
    #: How many languages other than the hit's own its group holds (translations of the
    #: page, collapsed into it): "also in N languages".
    languages: int = 0
    pagerank: float = 0.0
    #: Whether the crawl stored a copy of the page (in WARC) to show as the cached copy.
    cached: bool = False
    #: With ``search(..., explain=True)``: each signal's value, weight and contribution.
    explain: dict | None = None
    #: The anchor of the section that answers the query (the result links to
    #: ``url#anchor``; ``""``: the page itself, ``index.sections``).
    anchor: str = ""
    #: The heading of that section.
    section: str = ""
    #: Other sections to jump to, at most ``index.sections.JUMPS``, as
    #: ``{"anchor": ..., "heading": ...}``.
    jumps: list[dict] = field(default_factory=list)


@dataclass
class Results:
    """A page of hits plus the total match count and timing."""

    query: str
    hits: list[Hit]
    total: int
    page: int
    size: int
    took_ms: float = 0.0
    partial: bool = False
    suggestion: str | None = None
    #: With ``search(..., facets=True)``: per facet (``site``, ``lang``) the most common
    #: values over the query's matches, as ``(value, count)``, most matches first.
    facets: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    #: The parsed query, for what callers derive from it (looser versions, for one).
    parsed: Query | None = field(default=None, repr=False, compare=False)


class SearchBackend(ABC):
    """Where documents are indexed and searched. One contract suite covers every backend."""

    @abstractmethod
    def ensure_index(self) -> None:
        """Create the index if missing; idempotent."""

    @abstractmethod
    def index(self, docs: Iterable[Document]) -> int:
        """Add or replace documents by id; searchable after ``refresh``. Returns the count."""

    @abstractmethod
    def delete(self, ids: Iterable[str]) -> int:
        """Remove documents by id; unknown ids are ignored. Returns how many were asked."""

    @abstractmethod
    def delete_by_host(self, pattern: str) -> int:
        """Remove every document whose host matches ``pattern`` (a host or a glob such as
        ``*.example.org``, as in host rules); visible at once. Returns how many."""

    @abstractmethod
    def update_rank(self, scores: Mapping[str, float]) -> int:
        """Set the static rank (PageRank) of documents by id; unknown ids are ignored."""

    def set_shown(self, shown: Mapping[str, bool]) -> int:
        """Set which documents their duplicate cluster shows (``Document.shown``) by id,
        after a new election; unknown ids are ignored. Returns how many changed."""
        self.refresh()  # documents still queued must be read back
        docs = []
        for doc_id, flag in shown.items():
            doc = self.get(doc_id)
            if doc is not None and doc.shown != bool(flag):
                doc.shown = bool(flag)
                docs.append(doc)
        return self.index(docs) if docs else 0

    def unembedded(self, limit: int, version: str) -> list[str]:
        """The ids of up to ``limit`` stored documents without section vectors of model
        ``version`` (``index.semantic.MODEL_VERSIONS``): ``Document.vectors`` empty
        (indexed, or indexed again, since the embedding batch, ``batch.embed``, last wrote
        theirs) or another model's; after the writes so far."""
        raise NotImplementedError(f"{type(self).__name__} does not store section vectors")

    def get_many(self, ids: Sequence[str]) -> list[Document]:
        """The stored documents of ``ids`` that exist (in no particular order)."""
        return [doc for doc in map(self.get, ids) if doc is not None]

    def write_vectors(self, docs: Sequence[Document]) -> int:
        """Store ``docs`` (as the last :meth:`get_many` read them) with the section vectors
        set on them, visible at once; a document written again since it was read keeps the
        newer write (it is embedded at the next run). Returns how many were sent."""
        count = self.index(docs)
        self.refresh()
        return count

    @abstractmethod
    def refresh(self) -> None:
        """Make all writes so far visible to searches."""

    @abstractmethod
    def search(self, query: str | Query, page: int = 1, size: int = 10,
               explain: bool = False, facets: bool = False) -> Results:
        """Run a query in the shared query language; ``page`` counts from 1. A page with
        few results carries a "did you mean" ``suggestion`` when a word is unknown; with
        ``explain`` every hit says what each ranking signal gave it; with ``facets`` the
        results count their matches per host and per language (``Results.facets``, at
        most ``FACET_SIZE`` values each). Raises :class:`SearchUnavailable` while the index
        cannot be reached."""

    @abstractmethod
    def complete(self, prefix: str, limit: int = 8) -> list[str]:
        """Up to ``limit`` page titles whose normalized text starts with ``prefix``'s,
        the titles most pages share first; one walk of a prefix index (a term
        dictionary), never a scan of the documents."""

    @abstractmethod
    def suggest(self, query: str | Query) -> str | None:
        """The query with each word no document holds replaced by its likeliest correction
        from the index's own words, or ``None`` when there is nothing to correct."""

    @abstractmethod
    def get(self, doc_id: str) -> Document | None:
        """The stored document with this id, or ``None``."""

    @abstractmethod
    def stats(self) -> dict:
        """At least ``docs`` (count) and ``bytes`` (size on disk or in the cluster)."""

    def publish_tiers(self) -> str | None:
        """Rebuild the serving tiers from the static ranks now stored and publish them at
        once (after a rank publication); what was published, or ``None`` for an engine
        without tiers (the default)."""
        return None

    def close(self) -> None:
        """Release files and connections."""
