"""Rebuilding an Elasticsearch index behind its alias: a new version, then an atomic swap.

Also the alias's first index (``ensure_alias``), the walk for ids by host, and the steps
every build of a new version takes, here and for tier 1 (``tiers.py``):
``create_next_version``, ``copy_documents``, ``open_for_serving``.

Searches keep answering from the old index until the swap. Writes made during the copy are
caught up after it: the old index is then write-blocked (writes in flight are retried by
their bulk writer and land in the new index) and every document it has in a newer version
than the new index is copied again. Deletions made during the copy are not carried over.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from elasticsearch import ApiError, Elasticsearch, NotFoundError, helpers

from index.base import Document, host_matches, host_pattern_suffix
from index.engines.elasticsearch.bulk import BulkWriter, Stats
from index.engines.elasticsearch.mapping import (
    ADDED_FIELDS,
    BULK_LOAD_SETTINGS,
    bulk_action,
    document_source,
    index_has_rank_feature,
    merge_for_serving,
    serving_settings,
)

__all__ = ["AliasReindexer", "copy_documents", "create_next_version", "current_index",
           "ensure_alias", "host_ids", "open_for_serving", "version_of"]

logger = logging.getLogger(__name__)


def version_of(index_name: str) -> int:
    """The version number of ``<prefix>-v<N>`` (0 when the name has none)."""
    match = re.search(r"-v(\d+)$", index_name)
    return int(match.group(1)) if match else 0


def current_index(client: Elasticsearch, alias: str) -> str | None:
    """The concrete index ``alias`` points to, or ``None`` when it does not exist."""
    try:
        names = list(client.indices.get_alias(name=alias))
    except NotFoundError:
        return None
    return max(names, key=version_of) if names else None


def create_next_version(client: Elasticsearch, alias: str, current: str | None,
                        index_body: Callable[[], dict]) -> str:
    """Create ``<alias>-v<N+1>`` after ``current`` (``-v1`` without one), set for a bulk
    load: no replicas or refreshes and an async translog, which is faster (what a failed
    build left under that name is deleted first). Its name."""
    new = f"{alias}-v{(version_of(current) if current else 0) + 1}"
    client.options(ignore_status=404).indices.delete(index=new)
    body = index_body()
    body["settings"].update(number_of_replicas=0, **BULK_LOAD_SETTINGS)
    client.indices.create(index=new, wait_for_active_shards="1", **body)
    return new


def move_alias(alias: str, old: str | None, new: str) -> list[dict]:
    """The ``update_aliases`` actions that move ``alias`` from ``old`` (when there is one)
    to ``new``, its write index."""
    add = {"add": {"index": new, "alias": alias, "is_write_index": True}}
    return [{"remove": {"index": old, "alias": alias}}, add] if old is not None else [add]


def copy_documents(client: Elasticsearch, target: str, docs: Iterable[tuple[Document, int]],
                   *, spool_dir: Path, stats: Stats, suggest_body_chars: int) -> int:
    """Index ``docs`` (documents with their versions) into ``target`` through a lossless
    bulk writer spooling under ``spool_dir``; how many."""
    writer = BulkWriter(client, spool_dir, stats=stats)
    rank_feature = index_has_rank_feature(client, target)
    count = 0
    try:
        for doc, version in docs:
            source = document_source(doc, rank_feature, suggest_body_chars)
            source["indexed_at"] = version
            writer.add(bulk_action("index", target, doc.id, version, require_alias=False),
                       source)
            count += 1
    finally:
        writer.close(timeout_s=None)
    return count


def open_for_serving(client: Elasticsearch, index: str, replicas: int,
                     refresh_interval: str) -> None:
    """Make a bulk-loaded ``index`` ready to serve: merged before the replicas are made (so
    they copy the merged segments), then its replicas and serving settings, refreshed, and
    green (or 60 s waited for it) when it has replicas."""
    merge_for_serving(client, index)
    client.indices.put_settings(
        index=index,
        settings={"number_of_replicas": replicas, **serving_settings(refresh_interval)},
    )
    client.indices.refresh(index=index)
    if replicas:
        client.options(ignore_status=408).cluster.health(
            index=index, wait_for_status="green", timeout="60s"
        )


class AliasReindexer:
    """Builds ``<alias>-v<N+1>`` from the stored documents of ``<alias>-v<N>`` and swaps."""

    def __init__(self, client: Elasticsearch, alias: str, *, index_body: Callable[[], dict],
                 replicas: int, refresh_interval: str, spool_dir: Path, stats: Stats,
                 suggest_body_chars: int):
        self.client = client
        self.alias = alias
        self.index_body = index_body
        self.replicas = replicas
        self.refresh_interval = refresh_interval
        self.spool_dir = spool_dir
        self.stats = stats
        self.suggest_body_chars = suggest_body_chars

    def reindex(self, old: str, progress: Callable[[int], Any] | None = None,
                also: Callable[[str], list[dict]] | None = None) -> str:
        """Copy ``old`` into the next version, swap the alias, delete ``old``; the new name.
        ``also(new)``, called once the new index is ready, returns more alias actions to
        publish in the same atomic ``update_aliases`` call (a tier 1 built from it)."""
        new = create_next_version(self.client, self.alias, old, self.index_body)
        self.client.indices.refresh(index=old)
        copied = self._copy(new, self.documents(old), progress)
        open_for_serving(self.client, new, self.replicas, self.refresh_interval)
        self.client.indices.update_aliases(
            actions=[*move_alias(self.alias, old, new), *(also(new) if also is not None else [])]
        )
        self.client.indices.add_block(index=old, block="write")
        self.client.indices.refresh(index=old)
        caught_up = self._copy(new, self.documents(old, self._newer_in(old, new)))
        self.client.indices.refresh(index=new)
        self.client.indices.delete(index=old)
        logger.info("reindex: %s -> %s (%d documents, %d caught up)", old, new, copied, caught_up)
        return new

    def _copy(self, target: str, docs: Iterable[tuple[Document, int]],
              progress: Callable[[int], Any] | None = None) -> int:
        """Index ``docs`` (documents with their versions) into ``target``; ``progress(n)``
        every 10,000 documents."""
        def counted() -> Iterator[tuple[Document, int]]:
            for count, item in enumerate(docs, 1):
                yield item
                if progress is not None and count % 10_000 == 0:
                    progress(count)

        return copy_documents(self.client, target, counted(), spool_dir=self.spool_dir / "reindex",
                              stats=self.stats, suggest_body_chars=self.suggest_body_chars)

    def _scan(self, index: str, source: list[str] | bool, query: dict | None = None,
              batch: int = 1000) -> Iterator[dict]:
        """Every hit of ``index`` (optionally matching ``query``) in id order, with versions."""
        request: dict = {
            "size": batch,
            "sort": [{"id": "asc"}],
            "_source": source,
            "version": True,
            "query": query or {"match_all": {}},
        }
        while True:
            hits = self.client.search(index=index, **request)["hits"]["hits"]
            yield from hits
            if len(hits) < batch:
                return
            request["search_after"] = hits[-1]["sort"]

    def documents(self, index: str, ids: list[str] | None = None
                  ) -> Iterator[tuple[Document, int]]:
        """The stored documents of ``index`` (all, or those of ``ids``) with their versions."""
        if ids is None:
            hits = self._scan(index, ["doc"])
        else:
            hits = (
                hit
                for start in range(0, len(ids), 1000)
                for hit in self._scan(
                    index, ["doc"], {"ids": {"values": ids[start : start + 1000]}}
                )
            )
        for hit in hits:
            yield Document.from_dict(hit["_source"]["doc"]), hit["_version"]

    def _newer_in(self, old: str, new: str) -> list[str]:
        """Ids whose version in ``old`` is newer than in ``new`` (or missing there)."""
        theirs = ((h["_id"], h["_version"]) for h in self._scan(new, False))
        current = next(theirs, None)
        stale = []
        for hit in self._scan(old, False):
            doc_id, version = hit["_id"], hit["_version"]
            while current is not None and current[0] < doc_id:
                current = next(theirs, None)
            if current is None or current[0] != doc_id or current[1] < version:
                stale.append(doc_id)
        return stale


def ensure_alias(client: Elasticsearch, alias: str, index_body: Callable[[], dict]) -> None:
    """Create ``<alias>-v1`` behind ``alias`` unless the alias exists (then add the fields
    made since the index was, in place); idempotent, safe against a concurrent creator."""
    if current_index(client, alias) is not None:
        client.indices.put_mapping(index=alias, properties=ADDED_FIELDS)
        return
    try:
        client.indices.create(
            index=f"{alias}-v1",
            aliases={alias: {"is_write_index": True}},
            wait_for_active_shards="1",
            **index_body(),
        )
    except ApiError as exc:
        if exc.error != "resource_already_exists_exception":
            raise


def host_ids(client: Elasticsearch, alias: str, pattern: str) -> list[str]:
    """Ids of the documents whose host matches ``pattern`` (a ``site`` term, then the
    exact match on the stored host)."""
    suffix = host_pattern_suffix(pattern)
    query = {"term": {"site": suffix}} if suffix else {"match_all": {}}
    return [
        hit["_id"]
        for hit in helpers.scan(client, index=alias, query={"query": query}, _source=["host"])
        if host_matches(hit["_source"].get("host", ""), pattern)
    ]
