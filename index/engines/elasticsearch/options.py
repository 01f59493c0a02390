"""The Elasticsearch engine's options: one dataclass, its values from the ``ES_*`` settings
and the shared ``SEARCH_*`` ones (``index.options.SearchOptions``: their fields and
``from_settings``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from crawler.options import Option
from index.fields import FieldWeights
from index.options import SearchOptions

__all__ = ["ElasticsearchOptions"]


@dataclass(kw_only=True)
class ElasticsearchOptions(SearchOptions):
    """What the Elasticsearch engine is tuned by (see the settings of ``SETTINGS``)."""

    index_prefix: str
    refresh_interval: str
    query_timeout: str
    request_timeout_s: float
    hedge: bool
    hedge_delay_s: float
    max_window: int
    rerank_depth: int
    near_copies: str
    track_total_hits: int
    field_weights: FieldWeights
    rank_weights: dict
    suggest_body_chars: int
    snippet_chars: int
    min_strict_hits: int
    blend_words: int
    blend_below: int
    tiered: bool
    tier1_share: float
    tier1_min_hits: int
    bulk_docs: int
    bulk_bytes: int
    bulk_interval_s: float
    bulk_queue_bytes: int
    bulk_max_retries: int
    #: Primary shards and replicas of a new index (None: sized from the cluster).
    shards: int | None
    replicas: int | None

    #: Setting -> field; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        **SearchOptions.SETTINGS,
        "ES_INDEX_PREFIX": ("index_prefix", str),
        "ES_SHARDS": ("shards", int),
        "ES_REPLICAS": ("replicas", int),
        "ES_REFRESH_INTERVAL": ("refresh_interval", str),
        "ES_QUERY_TIMEOUT": ("query_timeout", str),
        "ES_REQUEST_TIMEOUT_S": ("request_timeout_s", float),
        "ES_HEDGE": ("hedge", bool),
        "ES_HEDGE_DELAY_S": ("hedge_delay_s", float),
        "ES_MAX_WINDOW": ("max_window", int),
        "ES_RERANK_DEPTH": ("rerank_depth", int),
        "ES_NEAR_COPY_COUNTS": ("near_copies", str),
        "ES_TRACK_TOTAL_HITS": ("track_total_hits", int),
        "ES_FIELD_WEIGHTS": ("field_weights", FieldWeights.of),
        "ES_RANK_WEIGHTS": ("rank_weights", dict),
        "ES_SUGGEST_BODY_CHARS": ("suggest_body_chars", int),
        "ES_SNIPPET_CHARS": ("snippet_chars", int),
        "ES_MIN_STRICT_HITS": ("min_strict_hits", int),
        "ES_BLEND_WORDS": ("blend_words", int),
        "ES_BLEND_BELOW": ("blend_below", int),
        "ES_TIERED": ("tiered", bool),
        "ES_TIER1_SHARE": ("tier1_share", float),
        "ES_TIER1_MIN_HITS": ("tier1_min_hits", int),
        "ES_BULK_DOCS": ("bulk_docs", int),
        "ES_BULK_BYTES": ("bulk_bytes", int),
        "ES_BULK_INTERVAL_S": ("bulk_interval_s", float),
        "ES_BULK_QUEUE_BYTES": ("bulk_queue_bytes", int),
        "ES_BULK_MAX_RETRIES": ("bulk_max_retries", int),
    }
