"""The embedded search backend: a tantivy index in a local directory.

Text is analyzed in Python (:mod:`index.analysis`) and reaches tantivy as space-joined terms
through its whitespace tokenizer, so this index and Elasticsearch hold the same terms.
The whole :class:`~index.base.Document` is stored as JSON (like Elasticsearch's
``_source``): hits, snippets, ``get`` and ``update_rank`` (which re-adds documents, since
tantivy has no partial update) read it back.

Ranking is two-phase: tantivy returns the top candidates by BM25 over title, anchors, URL
and body (per-field weights, best field plus a tie-break share of the others), then a
:class:`~index.signals.Ranker` re-scores them with its signals and results collapse on
``cluster_id``.

One process writes (the crawler); any number read. A reader sees new commits through
tantivy's on-commit reload, which watches the index's ``meta.json``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import tantivy

from crawler.config import Config, get_config
from crawler.options import settings_to_options
from index.base import (
    FACET_SIZE,
    Document,
    Results,
    SearchBackend,
    host_matches,
    host_pattern_suffix,
)
from index.completion import PrefixIndex
from index.fields import (
    DEFAULT_COMPOUND_FIELDS,
    DEFAULT_FIELD_WEIGHTS,
    DOC_FIELDS,
    DOUBLE,
    FACET_FIELDS,
    FLOAT,
    KEYWORD,
    TEXT_FIELDS,
    FieldWeights,
    completion_prefix,
    completion_text,
    document_fields,
    keyword_key,
)
from index.hits import collapse, group_languages, make_hit
from index.query import Query, parse
from index.signals import Candidate, RankContext, Ranker, Signal
from index.suggest import EditSuggester
from index.tantivy_query import TantivyCompiler

__all__ = ["EmbeddedBackend", "options_from_settings"]

logger = logging.getLogger(__name__)

_TOKENIZER = "terms"
#: The completion index is rebuilt at most once every this many times its build time.
_COMPLETION_REBUILD_SHARE = 50
#: The tantivy name of a ranking field where it is not the field's own (kept from the
#: first schema, so existing indexes open).
_FAST_NAMES = {"site_name": "site_key", "lang": "lang_key", "cluster": "cluster_key"}
#: Ranking fields that can be searched as terms, not only read per document.
_INDEXED_FAST = frozenset({"site_name", "url_depth", "lang"})


def _fast_name(field: str) -> str:
    return _FAST_NAMES.get(field, field)


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("site", tokenizer_name="raw", index_option="basic")
    # Facets (terms aggregations over fast columns) and the completion prefix index.
    builder.add_text_field("host", tokenizer_name="raw", index_option="basic", fast=True)
    builder.add_text_field("lang", tokenizer_name="raw", index_option="basic", fast=True)
    builder.add_text_field("title_key", tokenizer_name="raw", index_option="basic")
    for name in TEXT_FIELDS:
        builder.add_text_field(name, tokenizer_name=_TOKENIZER, index_option="position")
    for name, f in DOC_FIELDS.items():
        indexed = name in _INDEXED_FAST
        if f.kind in (FLOAT, DOUBLE):
            builder.add_float_field(_fast_name(name), fast=True, indexed=indexed)
        else:  # keywords are stored as their 64-bit keys
            builder.add_unsigned_field(_fast_name(name), fast=True, indexed=indexed)
    builder.add_bytes_field("source", stored=True)
    return builder.build()


def _to_tantivy(doc: Document) -> tantivy.Document:
    fields = document_fields(doc)
    tdoc = tantivy.Document()
    tdoc.add_text("id", doc.id)
    for suffix in fields.site:
        tdoc.add_text("site", suffix)
    for name, text in fields.text.items():
        tdoc.add_text(name, text)
    for name, value in fields.keywords.items():
        if value:
            tdoc.add_text(name, value)
    for name, value in fields.ranking.items():
        kind = DOC_FIELDS[name].kind
        if kind in (FLOAT, DOUBLE):
            tdoc.add_float(_fast_name(name), value)
        else:
            tdoc.add_unsigned(_fast_name(name), keyword_key(value) if kind == KEYWORD else value)
    # vars(), not to_dict(): asdict() deep-copies and costs more than the JSON encoding.
    tdoc.add_bytes("source", json.dumps(vars(doc), ensure_ascii=False).encode())
    return tdoc


# Settings (Scrapy or Django settings, or a mapping) -> constructor option and type.
SETTINGS = {
    "EMBEDDED_COMMIT_DOCS": ("commit_every_docs", int),
    "EMBEDDED_COMMIT_INTERVAL_S": ("commit_interval_s", float),
    "EMBEDDED_FIELD_WEIGHTS": ("field_weights", FieldWeights.of),
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
    "SEARCH_WEIGHTS_FILE": ("weights_file", str),
}


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
        weights_file: str | None = None,
        config: Config | None = None,
    ):
        if path is None:
            path = (config or get_config()).data_dir / "index"
        self.path = Path(path)
        self.field_weights = field_weights
        self.ranker = Ranker.for_engine("embedded", signals, rank_weights, weights_file or None)
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
        # (index generation, prefix index, built at, seconds the build took)
        self._completion: tuple[tuple[int, int], PrefixIndex, float, float] | None = None
        self._completion_lock = threading.Lock()

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

    def index(self, docs: Iterable[Document]) -> int:
        """Add or replace documents by id; committed every N docs or T seconds and on refresh."""
        count = 0
        with self._lock:
            writer = self._writer_()
            for doc in docs:
                writer.delete_documents_by_term("id", doc.id)
                writer.add_document(_to_tantivy(doc))
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

    def doc_freq(self, term: str) -> int:
        """Documents holding an index term in their title or body."""
        searcher = self._tantivy().searcher()
        return max(searcher.doc_freq("title", term), searcher.doc_freq("body", term))

    def suggest(self, query: str | Query) -> str | None:
        """The query with unknown words corrected from the index's own words (one edit)."""
        parsed = query if isinstance(query, Query) else parse(query)
        return EditSuggester(self.doc_freq).suggest(parsed)

    def complete(self, prefix: str, limit: int = 8) -> list[str]:
        """Titles starting with ``prefix``: a :class:`~index.completion.PrefixIndex` over
        the ``title_key`` term dictionary (its terms and document counts), built from one
        walk of it and again after the index's document or segment count changes."""
        key = completion_prefix(prefix)
        if not key.strip() or limit < 1:
            return []
        return [completion_text(term) for term, _ in self._prefix_index().top(key, limit)]

    def _prefix_index(self) -> PrefixIndex:
        """The completion index; after the index changes it is rebuilt once the last
        build is ``_COMPLETION_REBUILD_SHARE`` builds' time old, so rebuilding takes at most
        1/that of a process's time (a 1.2 s build at 100,000 titles: once a minute)."""
        searcher = self._tantivy().searcher()
        generation = (searcher.num_docs, searcher.num_segments)
        now = time.monotonic()
        with self._completion_lock:
            current = self._completion
            if current is None or (
                current[0] != generation
                and now - current[2] >= current[3] * _COMPLETION_REBUILD_SHARE
            ):
                terms = searcher.terms_with_prefix("title_key", "")
                built = PrefixIndex(terms)
                current = (generation, built, now, time.monotonic() - now)
                self._completion = current
            return current[1]

    def _facets(self, searcher: tantivy.Searcher, query: tantivy.Query) -> dict:
        """Matches per host and per language: tantivy terms aggregations over the fast
        columns, visiting every match once (as the total count does)."""
        aggs = {name: {"terms": {"field": field, "size": FACET_SIZE}}
                for name, field in FACET_FIELDS.items()}
        found = searcher.aggregate(query, aggs)
        return {name: sorted(((b["key"], b["doc_count"]) for b in found[name]["buckets"]
                              if b["key"]), key=lambda kv: (-kv[1], kv[0]))
                for name in FACET_FIELDS}

    def _compiler(self) -> TantivyCompiler:
        return TantivyCompiler(self._schema, self.field_weights, self.compound_fields,
                               self.max_missing_share)

    def search(self, query: str | Query, page: int = 1, size: int = 10,
               explain: bool = False, facets: bool = False) -> Results:
        """Top hits by BM25 then signals, collapsed on cluster; ``total`` counts all matches;
        facets count the pages with every word (or, in the fallback, any word)."""
        started = time.perf_counter()
        parsed = query if isinstance(query, Query) else parse(query)
        page, size = max(1, int(page)), max(1, min(int(size), 100))
        results = Results(query=parsed.raw, hits=[], total=0, page=page, size=size)
        if parsed.matches_nothing:
            results.took_ms = (time.perf_counter() - started) * 1000
            return results
        searcher = self._tantivy().searcher()
        compiler = self._compiler()
        context = RankContext.of(parsed, self.language)
        offset = (page - 1) * size
        depth = min(offset + size + self.rerank_depth, self.max_window)
        matching = compiler.compile(parsed.matching)
        found = searcher.search(compiler.scored(matching, parsed), limit=depth, count=True)
        results.total = found.count
        marks = self._marks(searcher, compiler, parsed, depth)
        hits = found.hits + self._named_homes(searcher, compiler, context, found.hits)
        candidates = self._candidates(searcher, hits, marks)
        # Pages lacking one word of a longer query compete with those having them all,
        # when few pages have them all; those of a long query lacking a few, always.
        blended = (compiler.all_but_one(parsed, searcher, self.blend_words)
                   if found.count < self.blend_below else None)
        if blended is None:
            blended = compiler.coordinated(parsed)
        if blended is not None:
            # Not counted in full (a count visits every match): the total grows by the
            # pages ranked.
            more = searcher.search(compiler.scored(blended, parsed),
                                   limit=min(depth, offset + size + self.blend_depth),
                                   count=False)
            results.total += len(more.hits)
            extra = self._candidates(searcher, more.hits, marks)
            for candidate in extra:
                candidate.all_words = False
            candidates += extra
        ranked = self.ranker.rank(candidates, context)
        relaxed = compiler.relaxed(parsed)
        if found.count < self.min_strict_hits and relaxed is not None:
            # Pages with every word stay first; pages with some of them follow.
            more = searcher.search(compiler.scored(relaxed, parsed), limit=depth,
                                   count=True)
            results.total = more.count
            matching = relaxed
            known = {_key(a) for _, a in hits}
            extra = self._candidates(searcher, [h for h in more.hits if _key(h[1]) not in known],
                                     marks)
            for candidate in extra:
                candidate.all_words = False
            ranked += self.ranker.rank(extra, context)
        def group(candidate: Candidate) -> Any:
            return candidate.get("cluster")

        languages = group_languages(ranked, group, lambda c: c.get("lang"))
        for candidate, similar in collapse(ranked, group)[offset : offset + size]:
            doc = vars(self._source(searcher, candidate.ref))
            why = self.ranker.explain(candidate, context) if explain else None
            others = languages[group(candidate)] - {candidate.get("lang")}
            results.hits.append(make_hit(doc, candidate.score, similar, parsed,
                                         self.snippet_chars, why, languages=len(others)))
        if page == 1 and results.total < size:
            results.suggestion = self.suggest(parsed)
        if facets:
            results.facets = self._facets(searcher, matching)
        results.took_ms = (time.perf_counter() - started) * 1000
        return results

    def _named_homes(self, searcher: tantivy.Searcher, compiler: TantivyCompiler,
                     context: RankContext, hits: list, limit: int = 5) -> list:
        """(0.0, address) of home pages of sites the query names that ``hits`` lack, so a
        navigational query finds the home page even when its text does not match."""
        if not context.named_keys or not self.ranker.weight("sitehome"):
            return []
        known = {_key(a) for _, a in hits}
        return [
            (0.0, address)
            for _, address in searcher.search(
                compiler.named_homes(context.named_keys), limit=limit, count=False
            ).hits
            if _key(address) not in known
        ]

    def _marks(self, searcher: tantivy.Searcher, compiler: TantivyCompiler,
               parsed: Query, limit: int) -> dict[str, set[tuple]]:
        """Addresses of the best pages (up to ``limit`` each) whose title, anchor text or
        URL hold every label word of the query (``label``), of those holding its required
        words near each other (``near``) and of those whose headings hold its defined
        words (``defines``), for the signals that weigh them."""
        queries = {"label": compiler.label(parsed), "near": compiler.near(parsed),
                   "defines": compiler.defines(parsed)}
        return {
            name: {_key(a) for _, a in searcher.search(query, limit=limit, count=False).hits}
            if query is not None and self.ranker.weight(name) else set()
            for name, query in queries.items()
        }

    def _candidates(self, searcher: tantivy.Searcher, hits: list,
                    marks: dict[str, set[tuple]]) -> list[Candidate]:
        """Candidates for ``(score, address)`` hits with the ranking fields the signals
        read (and the collapse key) from tantivy's fast fields, and the marks of
        ``_marks``."""
        addresses = [address for _, address in hits]
        if not addresses:
            return []
        names = dict.fromkeys((*self.ranker.fields, "cluster", "lang"))
        columns = [searcher.fast_field_values(_fast_name(n), addresses) for n in names]
        return [
            Candidate(address, score, dict(zip(names, values, strict=True)),
                      labelled=_key(address) in marks["label"],
                      near=_key(address) in marks["near"],
                      defines=_key(address) in marks["defines"])
            for (score, address), *values in zip(hits, *columns, strict=True)
        ]


def _key(address: tantivy.DocAddress) -> tuple[int, int]:
    return address.segment_ord, address.doc
