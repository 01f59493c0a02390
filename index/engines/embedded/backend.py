"""The embedded search backend: a tantivy index in a local directory.

Text is analyzed in Python (:mod:`index.analysis`) and reaches tantivy as space-joined terms
through its whitespace tokenizer, so this index and Elasticsearch hold the same terms.
The whole :class:`~index.base.Document` is stored as JSON (like Elasticsearch's
``_source``): hits, snippets, ``get`` and ``update_rank`` (which re-adds documents, since
tantivy has no partial update) read it back.

The backend is this class (lifecycle, writes, reads) plus one module per role:

- :mod:`index.engines.embedded.schema`: the schema and each document's fields, from the shared field
  declarations of :mod:`index.fields`;
- :mod:`index.engines.embedded.query`: the query AST compiled to tantivy queries;
- :mod:`index.engines.embedded.search`: the two-phase ranked search (BM25 candidates from tantivy,
  re-scored by the :class:`~index.signals.Ranker`'s signals, collapsed on ``cluster_id``);
- :mod:`index.completion`: title completion from the ``title_key`` term dictionary.

One process writes (the crawler); any number read. A reader sees new commits through
tantivy's on-commit reload, which watches the index's ``meta.json``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import tantivy

from crawler.config import Config, get_config
from index.base import (
    Document,
    Results,
    SearchBackend,
    host_matches,
    host_pattern_suffix,
)
from index.completion import PrefixIndex, RebuiltPrefixIndex
from index.engines.embedded.options import EmbeddedOptions
from index.engines.embedded.schema import (
    EMBEDDED_BY,
    TOKENIZER,
    open_index,
    stored_document,
    stored_shown,
    terms_analyzer,
    to_tantivy,
)
from index.engines.embedded.search import SearchMemo, TantivySearch
from index.engines.embedded.suggest import EditSuggester
from index.engines.embedded.vectors import VECTORS_AT, VectorFile, compact
from index.fields import completion_prefix, completion_text
from index.hits import VECTORS_FIELD
from index.plan import SearchPlan, Thresholds
from index.query import Query, parse
from index.semantic import SectionMatch, SemanticOptions, vectors_version
from index.signals import Ranker, Signal, weights_file_of

__all__ = ["EmbeddedBackend", "EmbeddedOptions"]

logger = logging.getLogger(__name__)

#: The completion index is rebuilt at most once every this many times its build time.
_COMPLETION_REBUILD_SHARE = 50


class EmbeddedBackend(SearchBackend):
    """A tantivy index under ``path`` (default ``DATA_DIR/index``); one writer process."""

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        options: EmbeddedOptions | None = None,
        signals: Sequence[Signal] | None = None,
        config: Config | None = None,
        **overrides: Any,
    ):
        """``options`` (default: those of the settings' defaults), ``overrides`` (fields of
        :class:`EmbeddedOptions`) on top."""
        if path is None:
            config = config or get_config()
            path = config.data_dir / "index"
        self.path = Path(path)
        self.options = (dataclasses.replace(options, **overrides) if options is not None
                        else EmbeddedOptions.from_settings(None, **overrides))
        o = self.options
        # A configured engine loads the weights train-ranker fitted under DATA_DIR.
        weights_file = weights_file_of(o.weights_file, config.data_dir if config else None)
        self.ranker = Ranker.for_engine("embedded", signals, o.rank_weights, weights_file)
        self.semantic = SemanticOptions(o.semantic, o.semantic_sections, o.semantic_depth,
                                        o.semantic_model, o.semantic_queries)
        self._index: tantivy.Index | None = None
        #: Whether the index has the ``embedded_by`` field (one written before it has not).
        self._embedded_by = True
        #: The file of the pages' section vectors (``None``: an index written before it,
        #: whose stored fields hold them).
        self._vectors: VectorFile | None = None
        self._writer: tantivy.IndexWriter | None = None
        self._pending = 0
        self._last_commit = time.monotonic()
        self._lock = threading.RLock()
        self._completion = RebuiltPrefixIndex(_COMPLETION_REBUILD_SHARE)
        self._search = TantivySearch(self.options, self.ranker, self._tantivy, self.suggest,
                                     self._vector_file)

    @classmethod
    def from_config(cls, config: Config, settings: Any = None, **options) -> EmbeddedBackend:
        """The backend under ``config.data_dir``, tuned by the ``EMBEDDED_*`` settings."""
        return cls(config=config, options=EmbeddedOptions.from_settings(settings), **options)

    # --- lifecycle --------------------------------------------------------------------

    def ensure_index(self) -> None:
        """Create the index directory and schema if missing, then open it; idempotent."""
        with self._lock:
            if self._index is not None:
                return
            self.path.mkdir(parents=True, exist_ok=True)
            index, self._embedded_by, vectors_at = open_index(self.path)
            self._vectors = VectorFile(self.path) if vectors_at else None
            index.register_tokenizer(TOKENIZER, terms_analyzer())
            index.config_reader(reload_policy="OnCommit")
            self._index = index

    def _tantivy(self) -> tantivy.Index:
        """The open tantivy index (opened on first use)."""
        if self._index is None:
            self.ensure_index()
        return self._index

    def _vector_file(self) -> VectorFile | None:
        """The open index's file of section vectors (``None``: an index written before
        it)."""
        self._tantivy()
        return self._vectors

    def _writer_(self) -> tantivy.IndexWriter:
        """This process's writer, taking tantivy's one-writer lock on first use."""
        if self._writer is None:
            try:
                self._writer = self._tantivy().writer(
                    self.options.writer_heap_bytes, self.options.writer_threads
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
            if self._vectors is not None:
                self._vectors.close()
            self._index = None

    # --- writes -----------------------------------------------------------------------

    def index(self, docs: Iterable[Document]) -> int:
        """Add or replace documents by id; committed every N docs or T seconds and on refresh."""
        count = 0
        with self._lock:
            writer = self._writer_()
            for doc in docs:
                writer.delete_documents_by_term("id", doc.id)
                writer.add_document(to_tantivy(doc, self._vectors))
                count += 1
                self._pending += 1
                if self._pending >= self.options.commit_every_docs:
                    self._commit()
            if (
                self._pending
                and time.monotonic() - self._last_commit >= self.options.commit_interval_s
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
                tantivy.Query.term_query(self._tantivy().schema, "site", suffix)
                if suffix
                else tantivy.Query.all_query()
            )
            found = searcher.search(query, limit=max(1, searcher.num_docs), count=False)
            ids = [doc.id for doc in (stored_document(searcher, a) for _, a in found.hits)
                   if host_matches(doc.host, pattern)]
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
            self.compact_vectors()  # a pass over the pages already: the check is cheap
        return changed

    def write_vectors(self, docs: Sequence[Document]) -> int:
        """:meth:`SearchBackend.write_vectors`, then :meth:`compact_vectors` when due."""
        count = super().write_vectors(docs)
        if self._vectors is not None and self._vectors.due():
            self.compact_vectors()
        return count

    def compact_vectors(self, force: bool = False) -> dict:
        """Drop the section vectors' records no page points at, when due or ``force``d
        (:func:`index.engines.embedded.vectors.compact`: its report)."""
        with self._lock:
            self.refresh()
            searcher = self._tantivy().searcher()
            return compact(self._vector_file(), lambda: searcher.fast_field_values(
                VECTORS_AT, _addresses(searcher)), lambda ids: self.index(
                    list(self._get_many(ids))), self.refresh, force)

    def _commit(self) -> None:
        if self._writer is not None and self._pending:
            if self._vectors is not None:  # the records the pages point at, first
                self._vectors.sync()
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
        query = tantivy.Query.term_set_query(self._tantivy().schema, "id", list(ids))
        for _, address in searcher.search(query, limit=len(ids), count=False).hits:
            yield stored_document(searcher, address, self._vectors)

    def get(self, doc_id: str) -> Document | None:
        """The stored document with this id (committed and refreshed), or ``None``."""
        return next(self._get_many([doc_id]), None)

    def get_many(self, ids: Sequence[str]) -> list[Document]:
        """The stored documents of ``ids`` that exist (committed and refreshed)."""
        return list(self._get_many(list(ids)))

    def unembedded(self, limit: int, version: str) -> list[str]:
        """Ids of up to ``limit`` documents stored without section vectors of model
        ``version`` (none, or another model's), in index order: the documents without that
        ``embedded_by`` term; in an index written before the field, a walk of the stored
        hit fields."""
        with self._lock:
            self.refresh()
            searcher = self._tantivy().searcher()
            if limit < 1 or not searcher.num_docs:
                return []
            if not self._embedded_by:
                return _walk_unembedded(searcher, limit, version)
            index = self._tantivy()
            query = tantivy.Query.boolean_query([
                (tantivy.Occur.Must, tantivy.Query.all_query()),
                (tantivy.Occur.MustNot, tantivy.Query.term_query(index.schema, EMBEDDED_BY,
                                                                 version))])
            found = searcher.search(query, limit=limit, count=False)
            return [stored_shown(searcher, address)["id"] for _, address in found.hits]

    def iter_documents(self) -> Iterator[Document]:
        """Every searchable document (committed and refreshed), in index order."""
        searcher = self._tantivy().searcher()
        for address in _addresses(searcher):
            yield stored_document(searcher, address, self._vectors)

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
        """The completion index over the ``title_key`` terms, rebuilt after the index's
        document or segment count changes (at most 1/``_COMPLETION_REBUILD_SHARE`` of the
        time)."""
        searcher = self._tantivy().searcher()
        return self._completion.get((searcher.num_docs, searcher.num_segments),
                                    lambda: searcher.terms_with_prefix("title_key", ""))

    def _section_match(self, parsed: Query) -> SectionMatch | None:
        """The semantic match for ``parsed``; ``None`` when no page holds its model's
        vectors (no ``embedded_by`` term of its version, deleted pages counted): the plan
        then reads the page shown, not the match's depth (an index written before that
        field is not asked)."""
        match = self.semantic.match()
        if match is None or not match.applies(parsed):
            return match
        searcher = self._tantivy().searcher()  # the index open: whether it has the field
        if not self._embedded_by:
            return match
        return match if searcher.doc_freq(EMBEDDED_BY, match.version) else None

    def search(self, query: str | Query, page: int = 1, size: int = 10,
               explain: bool = False, facets: bool = False) -> Results:
        """Top hits by BM25 then signals, collapsed on cluster; ``total`` counts all matches;
        facets count the pages with every word (or, in the fallback, any word)."""
        started = time.perf_counter()
        parsed = query if isinstance(query, Query) else parse(query)
        page, size = max(1, int(page)), max(1, min(int(size), 100))
        plan = SearchPlan.of(parsed, Thresholds.of(self.options), self.ranker,
                             self.options.language, self._section_match(parsed))
        memo = SearchMemo()  # one searcher and each check searched once, for all readings
        return plan.execute(lambda p, pg, sz: self._search.search(p, pg, sz, explain, facets,
                                                                  started, memo), page, size)


def _addresses(searcher: tantivy.Searcher) -> list:
    """The address of every document ``searcher`` sees, in index order."""
    found = searcher.search(tantivy.Query.all_query(), limit=max(1, searcher.num_docs),
                            count=False)
    return [address for _, address in found.hits]


def _walk_unembedded(searcher: tantivy.Searcher, limit: int, version: str) -> list[str]:
    """:meth:`EmbeddedBackend.unembedded` by reading every document's stored hit fields in
    turn (an index written before the ``embedded_by`` field)."""
    ids = []
    for address in _addresses(searcher):
        shown = stored_shown(searcher, address)
        if vectors_version(shown.get(VECTORS_FIELD) or "") != version:
            ids.append(shown["id"])
            if len(ids) >= limit:
                break
    return ids
