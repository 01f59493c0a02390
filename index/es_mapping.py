"""The Elasticsearch index mapping and the ``_source`` of each document.

Both come from the shared declarations of :mod:`index.fields`: the analyzed text fields
(``whitespace``-analyzed, since analysis happens in Python), ``site`` (the host and its
parent domains, for ``site:``) and each ranking field in its Elasticsearch type. ``doc``
keeps the whole :class:`~index.base.Document` (not indexed) for hits, ``get`` and rebuilds;
the analyzed fields are left out of ``_source`` to keep it small.
"""

from __future__ import annotations

from elasticsearch import Elasticsearch

from index.analysis import WORD_RE, normalize
from index.base import Document
from index.fields import (
    DOC_FIELDS,
    DOUBLE,
    FLOAT,
    INTEGER,
    KEYWORD,
    TEXT_FIELDS,
    document_fields,
)

__all__ = ["ADDED_FIELDS", "HIT_SOURCE", "bulk_action", "document_source", "index_body", "mappings"]

_ANALYZED = [*TEXT_FIELDS, "suggest", "site", "title_key"]
_ES_TYPES = {KEYWORD: {"type": "keyword"}, INTEGER: {"type": "integer"},
             FLOAT: {"type": "float"}, DOUBLE: {"type": "double"}}
#: What a hit reads back: the stored fields a result shows (the body for its snippet).
HIT_SOURCE = [f"doc.{f}" for f in ("id", "url", "host", "title", "body", "description",
                                   "cluster_id", "pagerank", "warc_file")]


#: Fields added to the mapping after indexes were made with it: put into an existing
#: index's mapping when the backend opens it (documents indexed before lack them until
#: ``manage.py reindex``).
ADDED_FIELDS = {"title_key": {"type": "keyword", "ignore_above": 1024}}


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
    return WORD_RE.findall(normalize(text))


def document_source(doc: Document, rank_feature: bool, suggest_body_chars: int) -> dict:
    """The ``_source`` Elasticsearch indexes for ``doc``."""
    fields = document_fields(doc)
    source = {
        "id": doc.id,
        **fields.text,
        "suggest": " ".join(suggest_words(doc, suggest_body_chars)),
        "site": fields.site,
        "host": doc.host,
        "title_key": fields.keywords["title_key"],
        "cluster_id": doc.cluster_id,
        **fields.ranking,
        "doc": doc.to_dict(),
    }
    if rank_feature and doc.pagerank > 0:
        source["pagerank_rf"] = float(doc.pagerank)
    return source


def cluster_has_rank_feature(client: Elasticsearch) -> bool:
    """Whether every node has the mapper-extras module (the ``rank_feature`` type)."""
    nodes = client.nodes.info(metric="plugins")["nodes"].values()
    return all(
        any(m["name"] == "mapper-extras" for m in node.get("modules", [])) for node in nodes
    )


def index_body(client: Elasticsearch, shards: int, replicas: int,
               refresh_interval: str) -> dict:
    """Settings and mapping of a new versioned index on this cluster."""
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
