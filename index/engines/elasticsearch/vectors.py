"""What the embedding batch (batch/embed.py) reads of an Elasticsearch index: the pages
indexed without section vectors of the current model (``embedded_by`` another version, or
none) and the stored copies to embed,
each with the version it was read at, so writing it back one version later loses to any
write of the crawl in between (external versions: the newer write wins)."""

from __future__ import annotations

from collections.abc import Sequence

from elasticsearch import Elasticsearch

from index.base import Document

__all__ = ["read_versioned", "unembedded_ids"]


def unembedded_ids(client: Elasticsearch, alias: str, limit: int, version: str) -> list[str]:
    """Ids of up to ``limit`` documents of ``alias`` whose ``embedded_by`` is not
    ``version``: indexed without vectors, with another model's, or before the field
    existed (the batch writes such a page back, which records its model), in id order."""
    if limit < 1:
        return []
    response = client.search(
        index=alias, size=limit, source=False, sort=[{"id": "asc"}],
        query={"bool": {"must_not": [{"term": {"embedded_by": version}}]}})
    return [hit["_id"] for hit in response["hits"]["hits"]]


def read_versioned(client: Elasticsearch, alias: str,
                   ids: Sequence[str]) -> list[tuple[Document, int]]:
    """The stored documents of ``ids`` that exist, each with its version (``indexed_at``)."""
    if not ids:
        return []
    response = client.mget(index=alias, ids=list(ids), source=["doc", "indexed_at"])
    return [(Document.from_dict(found["_source"]["doc"]),
             int(found["_source"].get("indexed_at") or 0))
            for found in response["docs"] if found.get("found")]
