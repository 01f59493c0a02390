"""The embedded engine's options: one dataclass, its values from the ``EMBEDDED_*`` settings.

Every setting's default is in ``crawler/settings.py``; :meth:`EmbeddedOptions.from_settings`
reads the given settings (Scrapy or Django settings, a mapping, or None for the defaults)
and keyword overrides win. The backend holds one instance and hands it to the helpers that
need it, so a value changed on it is used by the next search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from crawler.options import Option, setting
from index.fields import DEFAULT_COMPOUND_FIELDS, FieldWeights

__all__ = ["EmbeddedOptions"]


@dataclass
class EmbeddedOptions:
    """What the embedded engine is tuned by (see the settings of ``SETTINGS``)."""

    commit_every_docs: int
    commit_interval_s: float
    writer_heap_bytes: int
    field_weights: FieldWeights
    rank_weights: dict
    rerank_depth: int
    max_window: int
    snippet_chars: int
    min_strict_hits: int
    blend_words: int
    blend_below: int
    blend_depth: int
    language: str
    weights_file: str
    semantic: bool
    semantic_sections: int
    semantic_depth: int
    #: Where a compound of the query's words scores, and how much.
    compound_fields: FieldWeights = DEFAULT_COMPOUND_FIELDS
    #: Indexing threads of the writer (0: tantivy's choice).
    writer_threads: int = 0

    #: Setting -> field; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "EMBEDDED_COMMIT_DOCS": ("commit_every_docs", int),
        "EMBEDDED_COMMIT_INTERVAL_S": ("commit_interval_s", float),
        "EMBEDDED_WRITER_HEAP_BYTES": ("writer_heap_bytes", int),
        "EMBEDDED_FIELD_WEIGHTS": ("field_weights", FieldWeights.of),
        "EMBEDDED_RANK_WEIGHTS": ("rank_weights", dict),
        "EMBEDDED_RERANK_DEPTH": ("rerank_depth", int),
        "EMBEDDED_MAX_WINDOW": ("max_window", int),
        "EMBEDDED_SNIPPET_CHARS": ("snippet_chars", int),
        "EMBEDDED_MIN_STRICT_HITS": ("min_strict_hits", int),
        "EMBEDDED_BLEND_WORDS": ("blend_words", int),
        "EMBEDDED_BLEND_BELOW": ("blend_below", int),
        "EMBEDDED_BLEND_DEPTH": ("blend_depth", int),
        "SEARCH_LANGUAGE": ("language", str),
        "SEARCH_WEIGHTS_FILE": ("weights_file", str),
        "SEARCH_SEMANTIC": ("semantic", bool),
        "SEARCH_SEMANTIC_SECTIONS": ("semantic_sections", int),
        "SEARCH_SEMANTIC_DEPTH": ("semantic_depth", int),
    }

    @classmethod
    def from_settings(cls, settings: Any = None, **overrides: Any) -> EmbeddedOptions:
        """The options of ``settings`` (unset names: their defaults), ``overrides`` on top."""
        values = {option: setting(settings, name, kind)
                  for name, (option, kind) in cls.SETTINGS.items()}
        return cls(**{**values, **overrides})
