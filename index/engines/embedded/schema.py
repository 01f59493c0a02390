"""The embedded backend's tantivy schema and documents, from the shared field declarations.

Text is analyzed in Python (:mod:`index.analysis`) and reaches tantivy as space-joined terms
through its whitespace tokenizer (``TOKENIZER``), so this index and Elasticsearch hold the
same terms. The tokenizer drops the block breaks (``analysis.BLOCK_BREAK``) between a body's
blocks and keeps their positions empty: no phrase matches across two blocks, and a page's
length (BM25's) counts its terms only. The ranking fields of :mod:`index.fields` are fast
columns (keywords as their 64-bit keys).

``embedded_by`` holds the version of the model that made the page's section vectors
(:func:`index.semantic.vectors_version`; none without vectors), so the embedding batch asks
tantivy for the pages without the current model's (:data:`EMBEDDED_BY`).

``vectors_at`` points at the page's section vectors in the file beside the index
(:mod:`index.engines.embedded.vectors`), read by address without the document store; an
index written before the field holds them in its stored fields, as it always did.

Two stored fields: ``hit``, what a hit shows (:data:`index.hits.HIT_FIELDS`) and the
:class:`~index.snippets.SnippetSource` its snippets are drawn from, prepared here once; and
``source``, the whole :class:`~index.base.Document` as zlib-compressed JSON, for ``get``
and re-adding. A hit reads a few KB, never a whole page (a real page may be hundreds of
KB of text): tantivy hands back a document's stored fields together, and compressed, the
page costs little to hand over and nothing to parse.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import tantivy

from index.analysis import BLOCK_BREAK
from index.base import Document
from index.engines.embedded.vectors import VECTORS_AT
from index.fields import (
    DOC_FIELDS,
    DOUBLE,
    FLOAT,
    KEYWORD,
    TEXT_FIELDS,
    document_fields,
    keyword_key,
)
from index.hits import HIT_FIELDS, VECTORS_FIELD
from index.semantic import vectors_version
from index.snippets import SnippetSource

if TYPE_CHECKING:
    from index.engines.embedded.vectors import VectorFile

__all__ = ["EMBEDDED_BY", "TOKENIZER", "address_key", "fast_name", "open_index", "schema",
           "stored_document", "stored_hit", "stored_shown", "terms_analyzer", "to_tantivy"]

#: The name the whitespace tokenizer of the text fields is registered under.
TOKENIZER = "terms"
#: The tantivy name of a ranking field where it is not the field's own (kept from the
#: first schema, so existing indexes open).
_FAST_NAMES = {"site_name": "site_key", "lang": "lang_key", "cluster": "cluster_key"}
#: Ranking fields that can be searched as terms, not only read per document.
_INDEXED_FAST = frozenset({"site_name", "url_depth", "lang"})
#: The model version of a page's section vectors, as a term (added to the schema after
#: indexes were written without it: such an index opens with the schema it has).
EMBEDDED_BY = "embedded_by"


def terms_analyzer() -> tantivy.TextAnalyzer:
    """The analyzer of the text fields (registered as ``TOKENIZER``): terms split at spaces,
    a block break a position left empty."""
    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace())
            .filter(tantivy.Filter.custom_stopword([BLOCK_BREAK])).build())


def fast_name(field: str) -> str:
    """The tantivy column of a ranking field of :data:`index.fields.DOC_FIELDS`."""
    return _FAST_NAMES.get(field, field)


def schema(embedded_by: bool = True, vectors_at: bool | None = None) -> tantivy.Schema:
    """The index schema (``vectors_at`` false: the one before ``VECTORS_AT``;
    ``embedded_by`` false: the one before :data:`EMBEDDED_BY`, which had neither); an
    index written with another one does not open."""
    if vectors_at is None:
        vectors_at = embedded_by
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("site", tokenizer_name="raw", index_option="basic")
    # Facets (terms aggregations over fast columns) and the completion prefix index.
    builder.add_text_field("host", tokenizer_name="raw", index_option="basic", fast=True)
    builder.add_text_field("lang", tokenizer_name="raw", index_option="basic", fast=True)
    builder.add_text_field("title_key", tokenizer_name="raw", index_option="basic")
    for name in TEXT_FIELDS:
        builder.add_text_field(name, tokenizer_name=TOKENIZER, index_option="position")
    for name, f in DOC_FIELDS.items():
        indexed = name in _INDEXED_FAST
        if f.kind in (FLOAT, DOUBLE):
            builder.add_float_field(fast_name(name), fast=True, indexed=indexed)
        else:  # keywords are stored as their 64-bit keys
            builder.add_unsigned_field(fast_name(name), fast=True, indexed=indexed)
    builder.add_bytes_field("hit", stored=True)
    builder.add_bytes_field("source", stored=True)
    if embedded_by:
        builder.add_text_field(EMBEDDED_BY, tokenizer_name="raw", index_option="basic")
    if vectors_at:
        builder.add_unsigned_field(VECTORS_AT, fast=True)
    return builder.build()


def open_index(path: Path) -> tuple[tantivy.Index, bool, bool]:
    """The index at ``path`` (created when there is none) and whether its schema has
    :data:`EMBEDDED_BY` and ``VECTORS_AT``: an index written before a field is read and
    written with the schema it has; one of another schema is an error saying what to do."""
    errors = []
    for embedded_by, vectors_at in ((True, True), (True, False), (False, False)):
        try:
            index = tantivy.Index(schema(embedded_by, vectors_at), path=str(path), reuse=True)
            return index, embedded_by, vectors_at
        except ValueError as exc:
            errors.append(exc)
    error = errors[0]
    raise RuntimeError(f"The search index at {path} was written with another schema "
                       f"({error}); move it away and rebuild it (re-crawl or reindex).") from error


def to_tantivy(doc: Document, vectors: VectorFile | None = None) -> tantivy.Document:
    """The tantivy document for ``doc``: its analyzed fields and its JSON ``source``. The
    snippet source (of ``index.hits.snippet_text``, the body's first ``SCAN_CHARS``) analyzes the
    body's words for the body field too where it can (``SnippetSource.with_terms``). With
    ``vectors`` (an index with ``VECTORS_AT``), the page's section vectors are a record
    there, not stored fields."""
    snippet, body_terms = SnippetSource.with_terms(doc.body or doc.description or "")
    fields = document_fields(doc, body_terms)
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
            tdoc.add_float(fast_name(name), value)
        else:
            tdoc.add_unsigned(fast_name(name), keyword_key(value) if kind == KEYWORD else value)
    shown = {name: getattr(doc, name) for name in HIT_FIELDS}
    shown["sections"] = fields.sections
    # vars(), not to_dict(): asdict() deep-copies and costs more than the JSON encoding.
    fields = vars(doc)
    if doc.vectors:
        # an index without the field (``schema(embedded_by=False)``) drops it
        tdoc.add_text(EMBEDDED_BY, vectors_version(doc.vectors))
        if vectors is None:
            shown[VECTORS_FIELD] = doc.vectors
        else:
            tdoc.add_unsigned(VECTORS_AT, vectors.append(doc.id, doc.vectors))
            fields = {**fields, "vectors": ""}
    tdoc.add_bytes("hit", _stored_hit_bytes(shown, snippet))
    tdoc.add_bytes("source", zlib.compress(json.dumps(fields, ensure_ascii=False).encode(), 1))
    return tdoc


def stored_document(searcher: tantivy.Searcher, address: tantivy.DocAddress,
                    vectors: VectorFile | None = None) -> Document:
    """The stored :class:`~index.base.Document` at ``address`` (its section vectors read
    from ``vectors`` in an index with ``VECTORS_AT``)."""
    source = searcher.doc(address).get_first("source")
    doc = Document.from_dict(json.loads(zlib.decompress(source)))
    if vectors is not None:
        doc.vectors = vectors.packed(searcher.fast_field_values(VECTORS_AT, [address])[0])
    return doc


#: The first byte of a ``hit`` field: its format (an index of the first format, a JSON
#: object, still opens: its snippet sources are prepared again as its hits are read).
_HIT_FORMAT = b"\x01"
_HIT_HEADER = struct.Struct("<I")


def _stored_hit_bytes(shown: dict, snippet: SnippetSource) -> bytes:
    """The ``hit`` field: the format byte, the length of the shown fields' JSON, that JSON,
    then the encoded snippet source (``SnippetSource.encode``: text and offsets as they
    are, so a hit parses a few hundred bytes of JSON whatever the page's length)."""
    meta = json.dumps(shown, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return _HIT_FORMAT + _HIT_HEADER.pack(len(meta)) + meta + snippet.encode()


def stored_hit(searcher: tantivy.Searcher,
               address: tantivy.DocAddress) -> tuple[dict, SnippetSource]:
    """The stored fields a hit at ``address`` shows, and its snippet source."""
    data = searcher.doc(address).get_first("hit")
    if data[:1] != _HIT_FORMAT:  # the first format: JSON with the snippet text
        hit = json.loads(data)
        hit.pop("snippet_terms", None)
        return hit, SnippetSource.of(hit.pop("snippet"))
    (size,) = _HIT_HEADER.unpack_from(data, 1)
    at = 1 + _HIT_HEADER.size
    hit = json.loads(data[at : at + size].decode("utf-8", "surrogatepass"))
    return hit, SnippetSource.decode(data[at + size :])


def stored_shown(searcher: tantivy.Searcher, address: tantivy.DocAddress) -> dict:
    """The stored fields a hit at ``address`` shows, without its snippet source."""
    data = searcher.doc(address).get_first("hit")
    if data[:1] != _HIT_FORMAT:
        return json.loads(data)
    (size,) = _HIT_HEADER.unpack_from(data, 1)
    at = 1 + _HIT_HEADER.size
    return json.loads(data[at : at + size].decode("utf-8", "surrogatepass"))


def address_key(address: tantivy.DocAddress) -> tuple[int, int]:
    """A hashable key for a document address (``DocAddress`` is not hashable)."""
    return address.segment_ord, address.doc
