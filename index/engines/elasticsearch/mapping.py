"""The Elasticsearch index mapping and the ``_source`` of each document.

Both come from the shared declarations of :mod:`index.fields`: the analyzed text fields
(``whitespace``-analyzed, since analysis happens in Python), ``site`` (the host and its
parent domains, for ``site:``) and each ranking field in its Elasticsearch type. ``doc``
keeps the whole :class:`~index.base.Document` (not indexed) for ``get`` and rebuilds;
``snippet`` (not indexed) the bounded text snippets are drawn from
(:func:`index.hits.snippet_text`) and ``sections`` (not indexed) the sections within it
(:func:`index.sections.encode`), so a hit reads a few fields and at most
``index.snippets.SCAN_CHARS`` of text, never a whole page. The analyzed fields are left out
of ``_source`` to keep it small. A text field whose terms hold block breaks
(``analysis.BLOCK_BREAK``: a body's cells, items, paragraphs) is an array of its blocks, so
Elasticsearch leaves its ``position_increment_gap`` (100 positions, a text field's default)
between two and no phrase matches across them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

from elasticsearch import Elasticsearch

from index.analysis import BLOCK_BREAK, normalize, words
from index.base import Document
from index.fields import (
    DOC_FIELDS,
    DOUBLE,
    FLOAT,
    INTEGER,
    KEYWORD,
    LEAD_FIELD,
    TEXT_FIELDS,
    document_fields,
)
from index.hits import snippet_text
from index.semantic import vectors_version

__all__ = ["ADDED_FIELDS", "BULK_LOAD_SETTINGS", "HIT_SOURCE", "bulk_action", "bulk_loading",
           "cluster_sizing", "document_source", "index_body", "index_has_rank_feature",
           "mappings", "merge_for_serving", "serving_settings"]

_ANALYZED = [*TEXT_FIELDS, "suggest", "site", "title_key"]
_ES_TYPES = {KEYWORD: {"type": "keyword"}, INTEGER: {"type": "integer"},
             FLOAT: {"type": "float"}, DOUBLE: {"type": "double"}}
#: What a hit reads back: the stored fields a result shows (its WARC file for the cached
#: copy link) and the bounded snippet text.
HIT_SOURCE = [*(f"doc.{f}" for f in ("id", "url", "host", "title", "cluster_id", "pagerank",
                                     "warc_file", "lang", "vectors")),
              "snippet", "sections"]
#: Fields added to the mapping after indexes were made with it: put into an existing
#: index's mapping when the backend opens it (documents indexed before lack them until
#: ``manage.py reindex``).
ADDED_FIELDS = {"title_key": {"type": "keyword", "ignore_above": 1024},
                "idents": {"type": "text", "analyzer": "whitespace", "similarity": "BM25"},
                "headings": {"type": "text", "analyzer": "whitespace", "similarity": "BM25"},
                LEAD_FIELD: {"type": "text", "analyzer": "whitespace", "norms": False,
                             "index_options": "docs"},
                "lang_copy": {"type": "integer"},
                "changelog": {"type": "integer"},
                "snippet": {"type": "text", "index": False, "norms": False},
                "sections": {"type": "text", "index": False, "norms": False},
                "embedded_by": {"type": "keyword"}}


#: An index's settings while it is bulk loaded (Elasticsearch's "tune for indexing speed"):
#: no refreshes, and the translog fsynced every 5 s instead of after every bulk request
#: (a crash loses at most those seconds, which a bulk load sends again).
BULK_LOAD_SETTINGS = {"refresh_interval": "-1", "translog.durability": "async"}


def serving_settings(refresh_interval: str) -> dict:
    """The settings :data:`BULK_LOAD_SETTINGS` are restored to."""
    return {"refresh_interval": refresh_interval, "translog.durability": "request"}


@contextmanager
def bulk_loading(client: Elasticsearch, index: str, refresh_interval: str) -> Iterator[None]:
    """``index`` under :data:`BULK_LOAD_SETTINGS` for the ``with`` block, then back to
    serving (``refresh_interval``, a durable translog) and refreshed."""
    client.indices.put_settings(index=index, settings=BULK_LOAD_SETTINGS)
    try:
        yield
    finally:
        client.indices.put_settings(index=index, settings=serving_settings(refresh_interval))
        client.indices.refresh(index=index)


#: The merge policy's largest merged segment (``index.merge.policy.max_merged_segment``,
#: 5 GB by default): a bulk-loaded index is merged down to segments no larger, which the
#: policy still merges (and rids of deleted pages) as pages are written again.
MAX_MERGED_SEGMENT_BYTES = 5 * 1024**3
#: How long a force merge may take (a million pages: minutes on two cores).
MERGE_TIMEOUT_S = 3 * 3600


def merge_for_serving(client: Elasticsearch, index: str) -> int:
    """Force-merge a bulk-loaded ``index`` before it serves, to the fewest segments per shard
    that stay within :data:`MAX_MERGED_SEGMENT_BYTES`; the segments per shard asked for.

    A bulk load leaves tens of segments (one per indexing-buffer flush) and merges still
    to run: every query pays each segment's term lookups and scorers, and the merges that
    run in the background once it serves take the queries' CPU. Elasticsearch's advice
    for an index that is written once and then searched is a force merge."""
    stats = client.indices.stats(index=index, metric="store")["_all"]["primaries"]
    settings = client.indices.get_settings(index=index, name="index.number_of_shards")
    shards = max(1, int(next(iter(settings.values()))["settings"]["index"]["number_of_shards"]))
    per_shard = stats["store"]["size_in_bytes"] / shards
    segments = max(1, math.ceil(per_shard / MAX_MERGED_SEGMENT_BYTES))
    client.options(request_timeout=MERGE_TIMEOUT_S).indices.forcemerge(
        index=index, max_num_segments=segments, wait_for_completion=True)
    return segments


def mappings(rank_feature: bool) -> dict:
    """The index mapping; ``rank_feature`` adds ``pagerank_rf`` (needs mapper-extras)."""
    text = {"type": "text", "analyzer": "whitespace", "similarity": "BM25"}
    properties: dict[str, dict] = {name: dict(text) for name in TEXT_FIELDS}
    properties["suggest"] = {"type": "text", "analyzer": "whitespace", "norms": False}
    properties.update({name: dict(_ES_TYPES[f.kind]) for name, f in DOC_FIELDS.items()})
    properties.update(
        {
            "id": {"type": "keyword"},
            "site": {"type": "keyword", "norms": False},
            "host": {"type": "keyword"},
            **ADDED_FIELDS,
            "cluster_id": {"type": "keyword"},
            "indexed_at": {"type": "long"},
            "doc": {"type": "object", "enabled": False},
            **ADDED_FIELDS,
        }
    )
    if rank_feature:
        properties["pagerank_rf"] = {"type": "rank_feature"}
    return {
        "dynamic": "strict",
        "_source": {"excludes": _ANALYZED},
        "properties": properties,
    }


def suggest_words(doc: Document, body_chars: int) -> list[str]:
    """Normalized, unstemmed words for "did you mean": what users can be offered."""
    text = " ".join((doc.title, doc.anchors, (doc.body or doc.description)[:body_chars]))
    return words(normalize(text))


def blocks(terms: str) -> str | list[str]:
    """Analyzed text as Elasticsearch indexes it: as it is, or, where it holds block breaks,
    the array of its blocks."""
    if BLOCK_BREAK not in terms:
        return terms
    return [block for block in terms.split(BLOCK_BREAK) if not block.isspace() and block]


def document_source(doc: Document, rank_feature: bool, suggest_body_chars: int) -> dict:
    """The ``_source`` Elasticsearch indexes for ``doc``."""
    fields = document_fields(doc)
    stored = doc.to_dict()
    source = {
        "id": doc.id,
        **{name: blocks(terms) for name, terms in fields.text.items()},
        "suggest": " ".join(suggest_words(doc, suggest_body_chars)),
        "site": fields.site,
        "host": doc.host,
        "title_key": fields.keywords["title_key"],
        "cluster_id": doc.cluster_id,
        **fields.ranking,
        "doc": stored,
        "snippet": snippet_text(stored),
        "sections": fields.sections,
    }
    if fields.lead:  # a home page's (``SiteHome.es_filter``)
        source[LEAD_FIELD] = fields.lead
    if doc.vectors:  # the embedding batch looks for the pages without the model's
        source["embedded_by"] = vectors_version(doc.vectors)
    if rank_feature and doc.pagerank > 0:
        source["pagerank_rf"] = float(doc.pagerank)
    return source


def cluster_has_rank_feature(client: Elasticsearch) -> bool:
    """Whether every node has the mapper-extras module (the ``rank_feature`` type)."""
    nodes = client.nodes.info(metric="plugins")["nodes"].values()
    return all(
        any(m["name"] == "mapper-extras" for m in node.get("modules", [])) for node in nodes
    )


def index_has_rank_feature(client: Elasticsearch, index: str) -> bool:
    """Whether ``index`` (or an index behind this alias) scores static rank with a
    ``rank_feature`` field (``pagerank_rf``)."""
    mapping = client.indices.get_mapping(index=index)
    return any("pagerank_rf" in m["mappings"].get("properties", {}) for m in mapping.values())


def cluster_sizing(client: Elasticsearch, shards: int | None,
                   replicas: int | None) -> tuple[int, int]:
    """Primary shards and replicas of a new index: the given ones, or, where ``None`` (or 0
    shards), sized from the cluster's data nodes: one primary per data node and one replica
    when there is more than one (a single node keeps 1 and 0, where a replica could not be
    placed)."""
    if not shards:  # None or 0
        shards = None
    if shards is not None and replicas is not None:
        return shards, replicas
    data_nodes = max(1, int(client.cluster.health()["number_of_data_nodes"]))
    if shards is None:
        shards = data_nodes
    if replicas is None:
        replicas = 1 if data_nodes > 1 else 0
    return shards, replicas


def index_body(client: Elasticsearch, shards: int | None, replicas: int | None,
               refresh_interval: str) -> dict:
    """Settings and mapping of a new versioned index on this cluster (``None`` shards or
    replicas: sized from the cluster, :func:`cluster_sizing`)."""
    shards, replicas = cluster_sizing(client, shards, replicas)
    return {
        "settings": {
            "number_of_shards": shards,
            "number_of_replicas": replicas,
            "refresh_interval": refresh_interval,
        },
        "mappings": mappings(cluster_has_rank_feature(client)),
    }


def bulk_action(op: str, index: str, doc_id: str, version: int,
                require_alias: bool = True) -> dict:
    """The bulk action line for ``op`` ("index" or "delete") of a document, versioned
    externally so a replayed or reordered write never overwrites a newer one."""
    action = {"_index": index, "_id": doc_id, "version": version, "version_type": "external"}
    if require_alias:
        action["require_alias"] = True
    return {op: action}
