"""The embedded engine's options: one dataclass, its values from the ``EMBEDDED_*`` settings
and the shared ``SEARCH_*`` ones (``index.options.SearchOptions``: their fields and
``from_settings``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from crawler.options import Option
from index.fields import FieldWeights
from index.options import SearchOptions

__all__ = ["EmbeddedOptions"]


@dataclass(kw_only=True)
class EmbeddedOptions(SearchOptions):
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
    writer_threads: int
    question_one_search: bool
    question_proximity: bool

    #: Setting -> field; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        **SearchOptions.SETTINGS,
        "EMBEDDED_COMMIT_DOCS": ("commit_every_docs", int),
        "EMBEDDED_COMMIT_INTERVAL_S": ("commit_interval_s", float),
        "EMBEDDED_WRITER_HEAP_BYTES": ("writer_heap_bytes", int),
        "EMBEDDED_WRITER_THREADS": ("writer_threads", int),
        "EMBEDDED_FIELD_WEIGHTS": ("field_weights", FieldWeights.of),
        "EMBEDDED_RANK_WEIGHTS": ("rank_weights", dict),
        "EMBEDDED_RERANK_DEPTH": ("rerank_depth", int),
        "EMBEDDED_MAX_WINDOW": ("max_window", int),
        "EMBEDDED_SNIPPET_CHARS": ("snippet_chars", int),
        "EMBEDDED_MIN_STRICT_HITS": ("min_strict_hits", int),
        "EMBEDDED_BLEND_WORDS": ("blend_words", int),
        "EMBEDDED_BLEND_BELOW": ("blend_below", int),
        "EMBEDDED_BLEND_DEPTH": ("blend_depth", int),
        "EMBEDDED_QUESTION_ONE_SEARCH": ("question_one_search", bool),
        "EMBEDDED_QUESTION_PROXIMITY": ("question_proximity", bool),
    }
