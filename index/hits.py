"""Hits as every engine returns them: stored fields, a snippet for the query, near-copies."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TypeVar

from index import sections as page_sections
from index.base import Hit
from index.query import Query
from index.snippets import SCAN_CHARS, SnippetSource, build_snippet, located_snippet

__all__ = ["HIT_FIELDS", "PENDING", "VECTORS_FIELD", "Pending", "collapse", "group_languages",
           "make_hit", "snippet_for", "snippet_text"]

#: The stored fields a hit shows (its WARC file for the cached-copy link); an engine may
#: store just these (and the snippet text) for its hits.
HIT_FIELDS = ("id", "url", "host", "title", "cluster_id", "pagerank", "warc_file")
#: What the search plan's semantic step reads of a hit besides (``index.semantic``).
VECTORS_FIELD = "vectors"
#: The key of ``Results.extra`` under which an engine hands the plan its ranked results as
#: :class:`Pending` ones (``SearchPlan.take``), their hits not made yet.
PENDING = "pending"

T = TypeVar("T")


class Pending:
    """A ranked result whose hit is not made yet: its id, the section vectors stored with
    it (``""``: none; ``bytes``: in binary, :func:`index.semantic.vectors_version`), how
    to make its hit and the engine's score of it. The snippet and sections are most of
    what a hit costs, so a plan that re-orders more results than it shows makes only the
    hits it shows. One made by :meth:`stored` reads the result's
    stored fields only when its id, vectors or hit is first asked for: the words reading
    asks for more results than it shows past those it follows (``SearchPlan._filled``)."""

    __slots__ = ("_fields", "_id", "_read", "_vectors", "score")

    def __init__(self, id: str, vectors: str | bytes, make: Callable[[], Hit],
                 score: float = 0.0):
        self._fields: tuple[str, str | bytes, Callable[[], Hit]] | None = (id, vectors, make)
        self._read: Callable[[], tuple[str, str, Callable[[], Hit]]] | None = None
        self._vectors: str | bytes | None = None
        self._id: str | None = None
        self.score = score

    @classmethod
    def stored(cls, read: Callable[[], tuple[str, str, Callable[[], Hit]]],
               score: float = 0.0, vectors: str | bytes | None = None,
               id: str | None = None) -> Pending:
        """A pending result whose id, vectors and hit maker ``read()`` gives, called once,
        when one of them is first asked for; ``vectors``: its vectors when the engine knows
        them without the read (``""``: none), so asking for them reads nothing; ``id``:
        its id when the engine knows it (a result an earlier reading read)."""
        pending = cls.__new__(cls)
        pending._fields, pending._read, pending.score = None, read, score
        pending._vectors, pending._id = vectors, id
        return pending

    def _stored(self) -> tuple[str, str, Callable[[], Hit]]:
        if self._fields is None:
            self._fields, self._read = self._read(), None
        return self._fields

    @property
    def id(self) -> str:
        """The result's document id."""
        if self._id is not None and self._fields is None:
            return self._id
        return self._stored()[0]

    @property
    def vectors(self) -> str | bytes:
        """The section vectors stored with it (``""``: none)."""
        if self._vectors is not None and self._fields is None:
            return self._vectors
        return self._stored()[1]

    @property
    def make(self) -> Callable[[], Hit]:
        """Makes its hit."""
        return self._stored()[2]

    def __repr__(self) -> str:
        shown = self._fields[0] if self._fields is not None else "(not read)"
        return f"Pending({shown!r}, score={self.score!r})"


def snippet_text(doc: Mapping) -> str:
    """The text a document's snippets are drawn from: its body (its description when the
    body is empty), cut at ``SCAN_CHARS``; an engine may store just this for its hits."""
    return (doc.get("body") or doc.get("description") or "")[:SCAN_CHARS]


def snippet_for(doc: Mapping, query: Query, max_chars: int,
                text: str | SnippetSource | None = None) -> str:
    """The snippet of a stored document for ``query``: its words marked anywhere, its
    phrases only where the whole phrase occurs. ``text``: its ``snippet_text`` (or the
    :class:`~index.snippets.SnippetSource` of it), when the engine stored that instead of
    the body."""
    if text is None:
        text = snippet_text(doc)
    return build_snippet(text, query.words(), max_chars, query.phrases())


def make_hit(doc: Mapping, score: float, similar: int, query: Query, snippet_chars: int,
             explain: dict | None = None, text: str | SnippetSource | None = None,
             languages: int = 0, sections: str = "") -> Hit:
    """The hit for a stored document (a ``Document``'s fields as a mapping); ``text`` as
    for ``snippet_for``; ``languages``: how many other languages its group is in;
    ``sections``: its stored hit sections (``index.sections.encode``): the one its snippet
    is from gives the hit its anchor, others whose headings name the query its jumps."""
    if text is None:
        text = snippet_text(doc)
    words, phrases = query.words(), query.phrases()
    snippet, at = located_snippet(text, words, snippet_chars, phrases)
    terms = {*words, *(t for phrase in phrases for t in phrase)}
    found = page_sections.answer_stored(sections, at, terms)
    return Hit(
        id=doc["id"],
        url=doc["url"],
        title=doc.get("title", ""),
        snippet=snippet,
        score=round(score, 6),
        host=doc.get("host", ""),
        cluster_id=doc.get("cluster_id", ""),
        similar=similar,
        languages=languages,
        pagerank=doc.get("pagerank", 0.0),
        cached=bool(doc.get("warc_file")),
        explain=explain,
        anchor=found.section.anchor if found and found.section else "",
        section=found.section.heading if found and found.section else "",
        jumps=[{"anchor": s.anchor, "heading": s.heading} for s in found.jumps] if found else [],
    )


def group_languages(ranked: Iterable[T], key: Callable[[T], Hashable],
                    language: Callable[[T], Hashable]) -> dict[Hashable, set]:
    """The languages of each group (by ``key``) among ``ranked``, for "also in N
    languages"; an unknown language (``""`` or 0) is left out."""
    out: dict[Hashable, set] = {}
    for item in ranked:
        lang = language(item)
        group = out.setdefault(key(item), set())
        if lang:
            group.add(lang)
    return out


def collapse(ranked: Iterable[T], key: Callable[[T], Hashable],
             shown: Callable[[T], bool] | None = None,
             prefer: Callable[[T], bool] | None = None) -> list[tuple[T, int]]:
    """The best of each cluster (by ``key``), in rank order, with how many others it
    stands for. With ``shown``, a page it rejects (a copy that lost its cluster's election,
    ``Document.shown``) is never kept, it only counts; a cluster whose shown page is not
    among ``ranked`` is left out. With ``prefer`` (a page in the query's language), the
    cluster's best page it accepts stands for the cluster, at the cluster's place: of a
    page's translations, the one the query is in, whichever scored more."""
    items = list(ranked)
    keys = [key(item) for item in items]
    sizes = Counter(keys)
    allowed = [True] * len(items) if shown is None else [shown(item) for item in items]
    preferred: dict[Hashable, T] = {}
    if prefer is not None:
        for item, k, ok in zip(items, keys, allowed, strict=True):
            if ok and k not in preferred and prefer(item):
                preferred[k] = item
    kept: list[tuple[T, int]] = []
    done: set[Hashable] = set()
    for item, k, ok in zip(items, keys, allowed, strict=True):
        if not ok or k in done:
            continue
        done.add(k)
        kept.append((preferred.get(k, item), sizes[k] - 1))
    return kept
