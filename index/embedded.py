"""The embedded search backend: a tantivy index in a local directory.

Text is analyzed in Python (:mod:`index.analysis`) and reaches tantivy as space-joined terms
through its whitespace tokenizer, so this index and Elasticsearch hold the same terms.
The whole :class:`~index.base.Document` is stored as JSON (like Elasticsearch's
``_source``): hits, snippets, ``get`` and ``update_rank`` (which re-adds documents, since
tantivy has no partial update) read it back.

Ranking is two-phase: tantivy returns the top candidates by BM25 over title, anchors, URL
and body (per-field weights, best field plus a tie-break share of the others), then a
:class:`~index.scoring.Ranker` re-scores them with its signals and results collapse on
``cluster_id``.

One process writes (the crawler); any number read. A reader sees new commits through
tantivy's on-commit reload, which watches the index's ``meta.json``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import tantivy
import xxhash

from crawler.config import Config, get_config
from index.analysis import (
    analyze_joined,
    compound_terms,
    host_suffixes,
    normalize_host,
    query_language,
)
from index.base import (
    Document,
    Hit,
    Results,
    SearchBackend,
    host_matches,
    host_pattern_suffix,
)
from index.query import And, Node, Not, Or, Phrase, Query, Site, Term, parse
from index.scoring import Candidate, Ranker, Signal
from index.snippets import build_snippet

__all__ = ["DEFAULT_FIELD_WEIGHTS", "EmbeddedBackend", "FieldWeights"]

logger = logging.getLogger(__name__)

_TOKENIZER = "terms"
_TEXT_FIELDS = ("title", "body", "anchors", "url")
#: Longest query whose pages lacking one word are looked for (one clause per word left out).
MAX_BLEND_WORDS = 6


@dataclass(frozen=True)
class FieldWeights:
    """BM25 weight of each text field, and the share of the non-best fields' scores."""

    title: float = 3.0
    anchors: float = 2.0
    url: float = 1.5
    body: float = 1.0
    tie_breaker: float = 0.3

    def items(self) -> list[tuple[str, float]]:
        return [(f, getattr(self, f)) for f in _TEXT_FIELDS if getattr(self, f) > 0]


DEFAULT_FIELD_WEIGHTS = FieldWeights()
#: Signal weights of the embedded ranker where they differ from the signals' defaults: it
#: scores text relative to the best candidate (0..1), so PageRank weighs on that scale
#: (measured in docs/relevance.md).
DEFAULT_RANK_WEIGHTS = {"pagerank": 0.1}
_LABEL_FIELDS = FieldWeights(title=1.0, anchors=1.0, url=1.0, body=0.0, tie_breaker=0.0)
#: Where a compound of the query's words scores (names are written as one word in titles,
#: URLs and link text, rarely in running text), and how much.
DEFAULT_COMPOUND_FIELDS = FieldWeights(title=3.0, anchors=2.0, url=1.5, body=0.0,
                                       tie_breaker=0.3)


@dataclass(frozen=True)
class _Context:
    """What a query tells the signals: the sites it names (navigational) or mentions, the
    best pages labelled with its words, and the key of its language."""

    named: frozenset[int] = frozenset()
    mentioned: frozenset[int] = frozenset()
    labelled: set[tuple] | frozenset = frozenset()
    lang_key: int = 0


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("site", tokenizer_name="raw", index_option="basic")
    for name in _TEXT_FIELDS:
        builder.add_text_field(name, tokenizer_name=_TOKENIZER, index_option="position")
    builder.add_float_field("pagerank", fast=True)
    builder.add_float_field("fetched_at", fast=True)
    builder.add_unsigned_field("cluster_key", fast=True)
    builder.add_unsigned_field("url_depth", indexed=True, fast=True)
    builder.add_unsigned_field("site_key", indexed=True, fast=True)
    builder.add_unsigned_field("lang_key", indexed=True, fast=True)
    builder.add_bytes_field("source", stored=True)
    return builder.build()


def _cluster_key(doc: Document) -> int:
    """A 64-bit key shared by a near-duplicate cluster (the document's own id if none)."""
    return xxhash.xxh64_intdigest((doc.cluster_id or doc.id).encode())


_INDEX_FILES = frozenset({"index.html", "index.htm", "index.php", "default.aspx"})
_GENERIC_LABELS = frozenset({"www", "m", "web", "docs", "doc", "home"})
_WORDS = re.compile(r"[^\W_]+")
#: Words that, next to a site's name, still ask for the site itself.
NAVIGATIONAL_WORDS = frozenset(
    "doc docs documentation manual home homepage site website official page web".split()
)


def url_depth(url: str) -> int:
    """Path segments of a URL, an index file not counted: 0 for a site's home page."""
    parts = urlsplit(url)
    segments = [p for p in parts.path.split("/") if p]
    if segments and segments[-1].lower() in _INDEX_FILES:
        segments.pop()
    return len(segments) + (1 if parts.query else 0)


def site_name(host: str) -> str:
    """The name a site is searched by: the label before the top-level domain, letters and
    digits only (``docs.python.org`` -> ``python``, ``debian-handbook.info`` ->
    ``debianhandbook``)."""
    labels = [label for label in host.lower().split(":")[0].strip(".").split(".") if label]
    if len(labels) > 1:
        labels = labels[:-1]
    named = [label for label in labels if label not in _GENERIC_LABELS] or labels
    return "".join(_WORDS.findall(named[-1])) if named else ""


def site_key(name: str) -> int:
    """A 64-bit key of a site name (0 for none)."""
    return xxhash.xxh64_intdigest(name.encode()) if name else 0


def _query_words(raw: str) -> list[str]:
    """The words of a query's text, operators (``-word``, ``site:``, ``OR``) left out."""
    words: list[str] = []
    for token in raw.lower().replace('"', " ").split():
        if token.startswith("-") or token.startswith("site:") or token == "or":
            continue
        words.extend(_WORDS.findall(token))
    return words


def query_site_names(raw: str, max_words: int = 3) -> frozenset[str]:
    """The site names a navigational query names: the query is a run of up to
    ``max_words`` words that joined make the name, plus only words like ``docs`` or
    ``home`` (``django docs`` -> ``django``, ``debian handbook`` -> ``debianhandbook``).
    Operators (``-word``, ``site:``) are not words; other queries name no site."""
    words = _query_words(raw)
    names = set()
    for i in range(len(words)):
        for j in range(i + 1, min(len(words), i + max_words) + 1):
            if all(w in NAVIGATIONAL_WORDS for w in words[:i] + words[j:]):
                names.add("".join(words[i:j]))
    return frozenset(names)


def query_site_keys(raw: str, max_words: int = 3) -> frozenset[int]:
    """Keys (``site_key``) of the site names a navigational query names."""
    return frozenset(site_key(name) for name in query_site_names(raw, max_words))


def mentioned_site_names(raw: str, max_words: int = 3) -> frozenset[str]:
    """The site names a query may mention: its words, alone or up to ``max_words``
    adjacent words joined (``requests session`` -> ``requests``)."""
    words = _query_words(raw)
    return frozenset(
        "".join(words[i:j])
        for i in range(len(words))
        for j in range(i + 1, min(len(words), i + max_words) + 1)
    )


def mentioned_site_keys(raw: str, max_words: int = 3) -> frozenset[int]:
    """Keys (``site_key``) of the site names a query may mention."""
    return frozenset(site_key(name) for name in mentioned_site_names(raw, max_words))


def language_key(lang: str) -> int:
    """A 64-bit key of a language's primary subtag (``en-US`` -> ``en``); 0 for none."""
    primary = lang.strip().lower().replace("_", "-").split("-")[0]
    return xxhash.xxh64_intdigest(primary.encode()) if primary else 0


def language_match(key: int, wanted: int) -> float:
    """1 for a page in the wanted language, 0.5 for one of unknown language, else 0."""
    if not key:
        return 0.5
    return 1.0 if key == wanted else 0.0


def _url_terms(url: str) -> str:
    return analyze_joined(url.split("://", 1)[-1])


# Settings (Scrapy or Django settings, or a mapping) -> constructor option and type.
SETTINGS = {
    "EMBEDDED_COMMIT_DOCS": ("commit_every_docs", int),
    "EMBEDDED_COMMIT_INTERVAL_S": ("commit_interval_s", float),
    "EMBEDDED_FIELD_WEIGHTS": ("field_weights", dict),
    "EMBEDDED_RANK_WEIGHTS": ("rank_weights", dict),
    "EMBEDDED_RERANK_DEPTH": ("rerank_depth", int),
    "EMBEDDED_MIN_STRICT_HITS": ("min_strict_hits", int),
    "EMBEDDED_MAX_WINDOW": ("max_window", int),
    "EMBEDDED_WRITER_HEAP_BYTES": ("writer_heap_bytes", int),
    "EMBEDDED_SNIPPET_CHARS": ("snippet_chars", int),
    "EMBEDDED_BLEND_WORDS": ("blend_words", int),
    "EMBEDDED_BLEND_DEPTH": ("blend_depth", int),
    "EMBEDDED_BLEND_BELOW": ("blend_below", int),
    "SEARCH_LANGUAGE": ("language", str),
}


def settings_to_options(settings: Any, table: Mapping[str, tuple[str, Any]]) -> dict:
    """Constructor options from the settings in ``table`` that are set (``name -> (option,
    type)``); ``settings`` is a Scrapy/Django settings object or a mapping."""
    if isinstance(settings, Mapping) or hasattr(settings, "get"):
        get = settings.get
    else:

        def get(name):
            return getattr(settings, name, None)

    options: dict[str, Any] = {}
    for name, (option, kind) in table.items():
        value = get(name)
        if value is None:
            continue
        options[option] = FieldWeights(**dict(value)) if option == "field_weights" else kind(value)
    return options


def options_from_settings(settings: Any) -> dict:
    """Constructor options from the ``EMBEDDED_*`` settings that are set."""
    return settings_to_options(settings, SETTINGS)


class EmbeddedBackend(SearchBackend):
    """A tantivy index under ``path`` (default ``DATA_DIR/index``); one writer process."""

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        field_weights: FieldWeights = DEFAULT_FIELD_WEIGHTS,
        rank_weights: Mapping[str, float] | None = None,
        signals: Sequence[Signal] | None = None,
        rerank_depth: int = 100,
        min_strict_hits: int = 1,
        max_window: int = 10_000,
        commit_every_docs: int = 10_000,
        commit_interval_s: float = 5.0,
        writer_heap_bytes: int = 128_000_000,
        writer_threads: int = 0,
        snippet_chars: int = 220,
        blend_words: int = 3,
        blend_depth: int = 20,
        blend_below: int = 300,
        max_missing_share: float = 0.5,
        compound_fields: FieldWeights = DEFAULT_COMPOUND_FIELDS,
        language: str = "en",
        config: Config | None = None,
    ):
        if path is None:
            path = (config or get_config()).data_dir / "index"
        self.path = Path(path)
        self.field_weights = field_weights
        if not signals:
            rank_weights = {**DEFAULT_RANK_WEIGHTS, **(rank_weights or {})}
        self.ranker = (
            Ranker(signals, rank_weights) if signals else Ranker(weights=rank_weights)
        )
        self.rerank_depth = rerank_depth
        self.min_strict_hits = min_strict_hits
        self.max_window = max_window
        self.commit_every_docs = commit_every_docs
        self.commit_interval_s = commit_interval_s
        self.writer_heap_bytes = writer_heap_bytes
        self.writer_threads = writer_threads
        self.snippet_chars = snippet_chars
        self.language = language
        self.compound_fields = compound_fields
        self.blend_words = blend_words
        self.blend_depth = blend_depth
        self.blend_below = blend_below
        self.max_missing_share = max_missing_share
        self._index: tantivy.Index | None = None
        self._schema: tantivy.Schema | None = None
        self._writer: tantivy.IndexWriter | None = None
        self._pending = 0
        self._last_commit = time.monotonic()
        self._lock = threading.RLock()

    @classmethod
    def from_config(cls, config: Config, settings: Any = None, **options) -> EmbeddedBackend:
        """The backend under ``config.data_dir``, tuned by ``EMBEDDED_*`` settings if given."""
        merged = options_from_settings(settings) if settings is not None else {}
        merged.update(options)
        return cls(config=config, **merged)

    # --- lifecycle --------------------------------------------------------------------

    def ensure_index(self) -> None:
        """Create the index directory and schema if missing, then open it; idempotent."""
        with self._lock:
            if self._index is not None:
                return
            self.path.mkdir(parents=True, exist_ok=True)
            schema = _schema()
            try:
                index = tantivy.Index(schema, path=str(self.path), reuse=True)
            except ValueError as exc:
                raise RuntimeError(
                    f"The search index at {self.path} was written with another schema ({exc}); "
                    "move it away and rebuild it (re-crawl or reindex)."
                ) from exc
            index.register_tokenizer(
                _TOKENIZER,
                tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build(),
            )
            index.config_reader(reload_policy="OnCommit")
            self._index, self._schema = index, schema

    def _tantivy(self) -> tantivy.Index:
        """The open tantivy index (opened on first use)."""
        if self._index is None:
            self.ensure_index()
        return self._index

    @property
    def index_(self) -> tantivy.Index:
        """The open tantivy index, for read-only helpers (webui's "did you mean")."""
        return self._tantivy()

    def _writer_(self) -> tantivy.IndexWriter:
        """This process's writer, taking tantivy's one-writer lock on first use."""
        if self._writer is None:
            try:
                self._writer = self._tantivy().writer(
                    self.writer_heap_bytes, self.writer_threads
                )
            except ValueError as exc:
                raise RuntimeError(
                    f"Cannot write the search index at {self.path}: {exc}. Only one process "
                    "may write it at a time; stop the other writer (a running crawl?) first."
                ) from exc
        return self._writer

    def close(self) -> None:
        """Commit pending writes, wait for merges and release the writer lock."""
        with self._lock:
            if self._writer is not None:
                self._commit()
                self._writer.wait_merging_threads()
                self._writer = None
            self._index = None

    # --- writes -----------------------------------------------------------------------

    def _to_tantivy(self, doc: Document) -> tantivy.Document:
        tdoc = tantivy.Document()
        tdoc.add_text("id", doc.id)
        for suffix in host_suffixes(doc.host):
            tdoc.add_text("site", suffix)
        tdoc.add_text("title", analyze_joined(doc.title))
        tdoc.add_text("body", analyze_joined(doc.body or doc.description))
        tdoc.add_text("anchors", analyze_joined(doc.anchors))
        tdoc.add_text("url", _url_terms(doc.url))
        tdoc.add_float("pagerank", float(doc.pagerank))
        tdoc.add_float("fetched_at", float(doc.fetched_at))
        tdoc.add_unsigned("cluster_key", _cluster_key(doc))
        tdoc.add_unsigned("url_depth", url_depth(doc.url))
        tdoc.add_unsigned("site_key", site_key(site_name(doc.host)))
        tdoc.add_unsigned("lang_key", language_key(doc.lang))
        # vars(), not to_dict(): asdict() deep-copies and costs more than the JSON encoding.
        tdoc.add_bytes("source", json.dumps(vars(doc), ensure_ascii=False).encode())
        return tdoc

    def index(self, docs: Iterable[Document]) -> int:
        """Add or replace documents by id; committed every N docs or T seconds and on refresh."""
        count = 0
        with self._lock:
            writer = self._writer_()
            for doc in docs:
                if not doc.host:
                    doc.host = normalize_host(doc.url)
                writer.delete_documents_by_term("id", doc.id)
                writer.add_document(self._to_tantivy(doc))
                count += 1
                self._pending += 1
                if self._pending >= self.commit_every_docs:
                    self._commit()
            if (
                self._pending
                and time.monotonic() - self._last_commit >= self.commit_interval_s
            ):
                self._commit()
        return count

    def delete(self, ids: Iterable[str]) -> int:
        """Remove documents by id (visible after ``refresh``); returns how many were asked."""
        count = 0
        with self._lock:
            writer = self._writer_()
            for doc_id in ids:
                writer.delete_documents_by_term("id", doc_id)
                count += 1
            self._pending += count
        return count

    def delete_by_host(self, pattern: str) -> int:
        """Remove the documents whose host matches ``pattern``, committed; returns how many."""
        with self._lock:
            self.refresh()
            searcher = self._tantivy().searcher()
            suffix = host_pattern_suffix(pattern)
            query = (
                tantivy.Query.term_query(self._schema, "site", suffix)
                if suffix
                else tantivy.Query.all_query()
            )
            found = searcher.search(query, limit=max(1, searcher.num_docs), count=False)
            ids = [
                doc.id
                for doc in (self._source(searcher, address) for _, address in found.hits)
                if host_matches(doc.host, pattern)
            ]
            self.delete(ids)
            self.refresh()
        return len(ids)

    def update_rank(self, scores: Mapping[str, float]) -> int:
        """Set ``pagerank`` of stored documents by re-adding them; returns how many changed."""
        changed = 0
        with self._lock:
            self.refresh()
            ids = list(scores)
            for start in range(0, len(ids), 1000):
                docs = []
                for doc in self._get_many(ids[start : start + 1000]):
                    doc.pagerank = float(scores[doc.id])
                    docs.append(doc)
                changed += self.index(docs)
            self.refresh()
        return changed

    def _commit(self) -> None:
        if self._writer is not None and self._pending:
            self._writer.commit()
        self._pending = 0
        self._last_commit = time.monotonic()

    def refresh(self) -> None:
        """Commit pending writes and make every commit (of any process) visible here."""
        with self._lock:
            self._commit()
            self._tantivy().reload()

    # --- reads ------------------------------------------------------------------------

    def _get_many(self, ids: Sequence[str]) -> Iterator[Document]:
        if not ids:
            return
        searcher = self._tantivy().searcher()
        query = tantivy.Query.term_set_query(self._schema, "id", list(ids))
        for _, address in searcher.search(query, limit=len(ids), count=False).hits:
            yield self._source(searcher, address)

    @staticmethod
    def _source(searcher: tantivy.Searcher, address: tantivy.DocAddress) -> Document:
        return Document.from_dict(json.loads(searcher.doc(address).get_first("source")))

    def get(self, doc_id: str) -> Document | None:
        """The stored document with this id (committed and refreshed), or ``None``."""
        return next(self._get_many([doc_id]), None)

    def stats(self) -> dict:
        """``docs`` (searchable), ``bytes`` on disk, ``segments`` and ``pending`` writes."""
        searcher = self._tantivy().searcher()
        size = sum(p.stat().st_size for p in self.path.iterdir() if p.is_file())
        return {
            "docs": searcher.num_docs,
            "bytes": size,
            "segments": searcher.num_segments,
            "pending": self._pending,
        }

    def compile(self, node: Node) -> tantivy.Query:
        """The tantivy query for a query-AST node."""
        schema = self._schema
        if isinstance(node, Term | Phrase):
            return self._word_query(node, self.field_weights)
        if isinstance(node, Site):
            return tantivy.Query.term_query(schema, "site", node.host)
        if isinstance(node, Or):
            return tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, self.compile(c)) for c in node.children]
            )
        if isinstance(node, Not):
            return tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Must, tantivy.Query.all_query()),
                    (tantivy.Occur.MustNot, self.compile(node.child)),
                ]
            )
        if isinstance(node, And):
            clauses = [
                (tantivy.Occur.MustNot, self.compile(c.child))
                if isinstance(c, Not)
                else (tantivy.Occur.Must, self.compile(c))
                for c in node.children
            ]
            return tantivy.Query.boolean_query(clauses)
        raise TypeError(f"Not a query node: {node!r}")

    def search(self, query: str | Query, page: int = 1, size: int = 10) -> Results:
        """Top hits by BM25 then signals, collapsed on cluster; ``total`` counts all matches."""
        started = time.perf_counter()
        parsed = query if isinstance(query, Query) else parse(query)
        page, size = max(1, int(page)), max(1, min(int(size), 100))
        results = Results(query=parsed.raw, hits=[], total=0, page=page, size=size)
        if parsed.matches_nothing:
            results.took_ms = (time.perf_counter() - started) * 1000
            return results
        searcher = self._tantivy().searcher()
        offset = (page - 1) * size
        depth = min(offset + size + self.rerank_depth, self.max_window)
        compounds = self._compound_clauses(self._compounds(parsed.root))
        found = searcher.search(
            self._with_compounds(self.compile(parsed.root), compounds), limit=depth, count=True
        )
        results.total = found.count
        context = _Context(
            named=query_site_keys(parsed.raw),
            mentioned=mentioned_site_keys(parsed.raw),
            labelled=self._labelled(searcher, parsed.root, depth),
            lang_key=language_key(query_language(parsed.raw, self.language)),
        )
        hits = found.hits + self._named_homes(searcher, context.named, found.hits)
        candidates = self._candidates(searcher, hits, context)
        # Pages lacking one word of a longer query compete with those having them all,
        # when few pages have them all.
        blended = (
            self._all_but_one(searcher, parsed.root) if found.count < self.blend_below else None
        )
        if blended is not None:
            # Not counted in full (a count visits every match): the total grows by the
            # pages ranked.
            more = searcher.search(self._with_compounds(blended, compounds),
                                   limit=min(depth, offset + size + self.blend_depth),
                                   count=False)
            results.total += len(more.hits)
            extra = self._candidates(searcher, more.hits, context)
            for candidate in extra:
                candidate.all_words = False
            candidates += extra
        ranked = self.ranker.rank(candidates)
        relaxed = self._relaxed(parsed.root)
        if found.count < self.min_strict_hits and relaxed is not None:
            # Pages with every word stay first; pages with some of them follow.
            more = searcher.search(self._with_compounds(relaxed, compounds), limit=depth,
                                   count=True)
            results.total = more.count
            known = {(a.segment_ord, a.doc) for _, a in hits}
            extra = [h for h in more.hits if (h[1].segment_ord, h[1].doc) not in known]
            ranked += self.ranker.rank(self._candidates(searcher, extra, context))
        collapsed = self._collapse(ranked)
        words, phrases = parsed.words(), parsed.phrases()
        for candidate, similar in collapsed[offset : offset + size]:
            doc = self._source(searcher, candidate.ref)
            results.hits.append(
                Hit(
                    id=doc.id,
                    url=doc.url,
                    title=doc.title,
                    snippet=build_snippet(
                        doc.body or doc.description, words, self.snippet_chars, phrases
                    ),
                    score=round(candidate.score, 6),
                    host=doc.host,
                    cluster_id=doc.cluster_id,
                    similar=similar,
                    pagerank=doc.pagerank,
                )
            )
        results.took_ms = (time.perf_counter() - started) * 1000
        return results

    def _named_homes(
        self, searcher: tantivy.Searcher, named: frozenset[int], hits: list, limit: int = 5
    ) -> list:
        """(0.0, address) of home pages of sites the query names that ``hits`` lack, so a
        navigational query finds the home page even when its text does not match."""
        if not named:
            return []
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, tantivy.Query.term_set_query(
                    self._schema, "site_key", sorted(named))),
                (tantivy.Occur.Must, tantivy.Query.term_query(self._schema, "url_depth", 0)),
            ]
        )
        known = {(a.segment_ord, a.doc) for _, a in hits}
        return [
            (0.0, address)
            for _, address in searcher.search(query, limit=limit, count=False).hits
            if (address.segment_ord, address.doc) not in known
        ]

    def _word_query(self, node: Term | Phrase, weights: FieldWeights) -> tantivy.Query:
        """A word or phrase in any text field: the best field's score plus a share of the
        others' (``weights.tie_breaker``)."""
        per_field = []
        for field, weight in weights.items():
            if isinstance(node, Term):
                q = tantivy.Query.term_query(self._schema, field, node.term)
            else:
                q = tantivy.Query.phrase_query(self._schema, field, list(node.terms))
            per_field.append(tantivy.Query.boost_query(q, weight))
        if len(per_field) == 1:
            return per_field[0]
        return tantivy.Query.disjunction_max_query(per_field, weights.tie_breaker)

    def _labelled(self, searcher: tantivy.Searcher, root: Node, limit: int) -> set[tuple]:
        """Addresses of the best pages whose title, anchor text or URL hold every word of
        a plain word query: what a page is called and linked as, not just what it
        mentions."""
        words = [root] if isinstance(root, Term | Phrase) else getattr(root, "children", [])
        words = [w for w in words if isinstance(w, Term | Phrase)]
        if not words or not isinstance(root, Term | Phrase | And):
            return set()
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, self._word_query(w, _LABEL_FIELDS)) for w in words]
        )
        found = searcher.search(query, limit=limit, count=False)
        return {(a.segment_ord, a.doc) for _, a in found.hits}

    def _all_but_one(self, searcher: tantivy.Searcher, root: Node) -> tantivy.Query | None:
        """For a plain query of ``blend_words`` to ``MAX_BLEND_WORDS`` words: the pages
        lacking one word minor enough to leave out (its share of the query's IDF at most
        ``max_missing_share``), scored by their text score times the share of the query
        they cover (Lucene's coordination factor). None for other queries."""
        if (
            not self.blend_words
            or not isinstance(root, And)
            or not self.blend_words <= len(root.children) <= MAX_BLEND_WORDS
            or not all(isinstance(c, Term | Phrase) for c in root.children)
        ):
            return None
        idf = [self._idf(searcher, c) for c in root.children]
        total = sum(idf) or 1.0
        words = [self.compile(c) for c in root.children]
        out = []
        for i, missing in enumerate(words):
            if idf[i] / total > self.max_missing_share:
                continue
            clauses = [(tantivy.Occur.Must, w) for j, w in enumerate(words) if j != i]
            # Each clause lacks its word, so a page matches at most one of them.
            clauses.append((tantivy.Occur.MustNot, missing))
            coverage = 1.0 - idf[i] / total
            out.append((tantivy.Occur.Should, tantivy.Query.boost_query(
                tantivy.Query.boolean_query(clauses), coverage)))
        return tantivy.Query.boolean_query(out) if out else None

    def _idf(self, searcher: tantivy.Searcher, node: Term | Phrase) -> float:
        """BM25's IDF of a query word in the body field (a phrase: its rarest term)."""
        n = searcher.num_docs
        terms = [node.term] if isinstance(node, Term) else list(node.terms)
        df = min(searcher.doc_freq("body", t) for t in terms)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def _relaxed(self, root: Node) -> tantivy.Query | None:
        """Any-word matching for a plain list of words: questions and long queries often
        carry a word the best page does not use. None when the query has operators."""
        if not isinstance(root, And) or not all(
            isinstance(c, Term | Phrase) for c in root.children
        ):
            return None
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, self.compile(c)) for c in root.children]
        )

    def _compounds(self, root: Node) -> list[str]:
        """Compound terms of a plain word query's words (see ``compound_terms``)."""
        children = [root] if isinstance(root, Term) else getattr(root, "children", [])
        if not self.compound_fields.items() or not isinstance(root, Term | And):
            return []
        if not all(isinstance(c, Term) for c in children):
            return []
        return compound_terms([c.word for c in children])

    def _compound_clauses(self, compounds: list[str]) -> list[tuple]:
        """Should clauses scoring pages whose title, anchors or URL hold a compound."""
        return [
            (tantivy.Occur.Should, self._word_query(Term(c, c), self.compound_fields))
            for c in compounds
        ]

    @staticmethod
    def _with_compounds(query: tantivy.Query, clauses: list[tuple]) -> tantivy.Query:
        """``query`` scored up by compound ``clauses``; it matches the same pages."""
        if not clauses:
            return query
        return tantivy.Query.boolean_query([(tantivy.Occur.Must, query), *clauses])

    @staticmethod
    def _candidates(
        searcher: tantivy.Searcher, hits: list, context: _Context | None = None
    ) -> list[Candidate]:
        addresses = [address for _, address in hits]
        if not addresses:
            return []
        context = context or _Context()
        ranks = searcher.fast_field_values("pagerank", addresses)
        fetched = searcher.fast_field_values("fetched_at", addresses)
        clusters = searcher.fast_field_values("cluster_key", addresses)
        depths = searcher.fast_field_values("url_depth", addresses)
        sites = searcher.fast_field_values("site_key", addresses)
        langs = searcher.fast_field_values("lang_key", addresses)
        return [
            Candidate(
                address,
                score,
                rank or 0.0,
                when or 0.0,
                cluster or 0,
                depth=depth or 0,
                site_home=depth == 0 and site in context.named,
                labelled=(address.segment_ord, address.doc) in context.labelled,
                site_named=site in context.mentioned,
                language=language_match(lang or 0, context.lang_key),
            )
            for (score, address), rank, when, cluster, depth, site, lang in zip(
                hits, ranks, fetched, clusters, depths, sites, langs, strict=True
            )
        ]

    @staticmethod
    def _collapse(ranked: list[Candidate]) -> list[tuple[Candidate, int]]:
        """The best candidate of each cluster, in rank order, with how many it stands for."""
        best: dict[int, int] = {}
        kept: list[list] = []
        for c in ranked:
            slot = best.get(c.cluster)
            if slot is None:
                best[c.cluster] = len(kept)
                kept.append([c, 0])
            else:
                kept[slot][1] += 1
        return [(c, n) for c, n in kept]
