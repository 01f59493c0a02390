"""A tiered Elasticsearch index: the best pages by static rank in a small tier 1, searched
first; the full index (tier 2) when tier 1 has too few good results.

Tier 1 is its own versioned index, ``<alias>-tier1-v<N>``, behind the alias
``<alias>-tier1``: a copy of the top ``share`` (``ES_TIER1_SHARE``, 10%) of the pages of
the full alias by PageRank (``Document.pagerank``, what ``update_rank`` wrote), ties broken
by id. The static-rank floor it was cut at is kept in its mapping's ``_meta``
(``tier1_min_rank``), so every writer knows which new pages belong in it.

Publishing is atomic: a new tier 1 is built aside, then one ``update_aliases`` call moves
the tier-1 alias to it (and, during ``reindex``, the full alias to the new full index in
the same call), so a search sees either the old pair or the new pair, never one of each.
Between builds, writes keep tier 1 true: a page at or above the floor is indexed into both,
a deletion reaches both (tier 1 is rebuilt after each rank publication and reindex,
``ElasticsearchBackend.publish_tiers``).

A query is answered by tier 1 when tier 1 holds at least ``min_hits``
(``ES_TIER1_MIN_HITS``) good results for it: pages holding every word of the query (its
strict pass), and at least as many as the requested page reaches. Otherwise it falls
through to the full index: the strict pass found too few, a relaxed or blended pass would
be needed. The page's total, near-copy counts (counted on the full index) and facets then
come from the tier that answered; ``Results.extra["tier"]`` says which.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from elasticsearch import Elasticsearch

from index.base import Document
from index.engines.elasticsearch.bulk import BulkWriter, Stats
from index.engines.elasticsearch.mapping import bulk_action
from index.engines.elasticsearch.paging import Pager
from index.engines.elasticsearch.reindex import (
    AliasReindexer,
    copy_documents,
    create_next_version,
    current_index,
    move_alias,
    open_for_serving,
)

if TYPE_CHECKING:
    from index.engines.elasticsearch.options import ElasticsearchOptions

__all__ = ["TIER1_SUFFIX", "Tier1"]

logger = logging.getLogger(__name__)

TIER1_SUFFIX = "-tier1"
# How long a search trusts what it last read about tier 1 (whether it exists, its floor).
_STATE_TTL_S = 10.0


class Tier1:
    """Tier 1 of ``alias``: its alias, its rank floor, and how to build and publish it."""

    def __init__(self, client: Elasticsearch, alias: str, share: float, *,
                 index_body: Callable[[], dict], replicas: Callable[[], int],
                 refresh_interval: str, spool_dir: Path, stats: Stats,
                 suggest_body_chars: int, enabled: bool = True, min_hits: int = 10):
        if not 0 < share < 1:
            raise ValueError(f"ES_TIER1_SHARE must be between 0 and 1, not {share!r}")
        #: Whether searches try tier 1 first and writes keep it true (``ES_TIERED``).
        self.enabled = enabled
        #: Good results tier 1 needs to answer a query (``ES_TIER1_MIN_HITS``).
        self.min_hits = min_hits
        self.pager: Pager | None = None
        self.client = client
        self.full_alias = alias
        self.alias = alias + TIER1_SUFFIX
        self.share = share
        self.index_body = index_body
        self.replicas = replicas
        self.refresh_interval = refresh_interval
        self.spool_dir = spool_dir
        self.bulk_stats = stats
        self.suggest_body_chars = suggest_body_chars
        self._state: tuple[float, float | None] | None = None  # (read at, floor)
        self._lock = threading.Lock()
        self._counts = {"tier1": 0, "fallthrough": 0}

    @classmethod
    def of(cls, options: ElasticsearchOptions, client: Elasticsearch, full: Pager,
           index_body: Callable[[], dict], replicas: Callable[[], int], spool_dir: Path,
           stats: Stats) -> Tier1:
        """Tier 1 of the full index ``full`` pages (its alias), built with the engine's
        index settings and searched with its pager's (near-copies counted on the full
        index)."""
        o = options
        tier1 = cls(client, full.alias, o.tier1_share, index_body=index_body,
                    replicas=replicas, refresh_interval=o.refresh_interval,
                    spool_dir=spool_dir, stats=stats, suggest_body_chars=o.suggest_body_chars,
                    enabled=o.tiered, min_hits=o.tier1_min_hits)
        tier1.pager = Pager(full.client, tier1.alias, full.max_window, full.query_timeout,
                            full.near_copies, counts_alias=full.alias,
                            rerank_depth=full.rerank_depth)
        return tier1

    def write_floor(self, available: bool) -> float | None:
        """The static rank from which a page written now goes into tier 1 too; ``None``
        when tiers are off, tier 1 does not exist or the cluster is unreachable (writes
        are spooled, to the full index only)."""
        if not self.enabled or not available:
            return None
        return self.min_rank()

    def mirror(self, writer: BulkWriter, op: str, doc_id: str, version: int,
               source: dict | None = None, rank: float = 0.0) -> None:
        """Queue the same write for tier 1 when it exists (``write_floor``): a deletion
        always, a page (``op`` "index") when its static ``rank`` reaches the floor."""
        floor = self.write_floor(writer.available)
        if floor is None or (op == "index" and rank < floor):
            return
        writer.add(bulk_action(op, self.alias, doc_id, version), source)

    def refresh(self, available: bool) -> None:
        """Make tier 1's writes searchable (when tiers are on and it exists)."""
        if self.write_floor(available) is not None:
            self.client.indices.refresh(index=self.alias)

    def drop(self) -> None:
        """Delete every tier-1 index of this alias (tests, benchmarks)."""
        self.client.options(ignore_status=404).indices.delete(
            index=self.index_pattern(), expand_wildcards="all")
        self.forget()

    def count(self, outcome: str) -> None:
        """Count one search ``"tier1"`` answered, or one that ``"fallthrough"`` sent on."""
        with self._lock:
            self._counts[outcome] += 1

    def stats(self) -> dict:
        """``tier/tier1`` (searches tier 1 answered), ``tier/fallthrough`` (sent on to the
        full index) and ``tier/fallthrough_rate``."""
        with self._lock:
            answered, fell = self._counts["tier1"], self._counts["fallthrough"]
        tried = answered + fell
        return {"tier/tier1": answered, "tier/fallthrough": fell,
                "tier/fallthrough_rate": round(fell / tried, 4) if tried else 0.0}

    def min_rank(self, fresh: bool = False) -> float | None:
        """The static rank a page needs to be in tier 1, or ``None`` when there is no tier 1
        or it is empty (no page ranked yet); read again after a few seconds, or now with
        ``fresh``."""
        now = time.monotonic()
        if fresh or self._state is None or now - self._state[0] > _STATE_TTL_S:
            self._state = (now, self._read_floor())
        return self._state[1]

    def _read_floor(self) -> float | None:
        index = current_index(self.client, self.alias)
        if index is None:
            return None
        meta = self.client.indices.get_mapping(index=index)[index]["mappings"].get("_meta", {})
        floor = meta.get("tier1_min_rank")
        return None if floor is None else float(floor)

    def forget(self) -> None:
        """Read tier 1's state again at the next use (it was dropped or replaced)."""
        self._state = None

    def index_pattern(self) -> str:
        """Every versioned tier-1 index of this alias (for ``drop``)."""
        return f"{self.alias}-v*"

    def build(self, source: str) -> tuple[str, list[dict]]:
        """Copy the top ``share`` of ``source``'s pages by static rank into a new tier-1
        index, ready to serve; returns its name and the alias actions that publish it
        (to be sent in one ``update_aliases`` call, maybe with others)."""
        old = current_index(self.client, self.alias)
        new = create_next_version(self.client, self.alias, old, self.index_body)
        self.client.indices.refresh(index=source)
        total = self.client.count(index=source)["count"]
        wanted = math.ceil(total * self.share) if total else 0
        floor = self._copy(new, self._best(source, wanted))
        self.client.indices.put_mapping(index=new, meta={"tier1_min_rank": floor,
                                                          "tier1_share": self.share})
        open_for_serving(self.client, new, self.replicas(), self.refresh_interval)
        actions = move_alias(self.alias, old, new)
        logger.info("tier 1: %s built from %s (top %d of %d pages, static rank >= %s)",
                    new, source, wanted, total, floor)
        return new, actions

    def retire(self, published: str) -> None:
        """Delete the tier-1 indexes other than ``published`` (after the alias moved)."""
        names = self.client.options(ignore_status=404).indices.get(
            index=self.index_pattern(), expand_wildcards="all")
        for name in getattr(names, "body", names) or {}:
            if name != published:
                self.client.options(ignore_status=404).indices.delete(index=name)
        self.forget()

    def publish(self, source: str) -> str | None:
        """Build tier 1 from ``source`` and move the tier-1 alias to it at once; the new
        tier-1 index, or ``None`` when tiers are off."""
        if not self.enabled:
            return None
        new, actions = self.build(source)
        self.client.indices.update_aliases(actions=actions)
        self.retire(new)
        return new

    def reindex_with(self, reindexer: AliasReindexer, old: str,
                     progress: Callable[[int], Any] | None = None) -> str:
        """``reindexer.reindex(old)``; with tiers on, a tier 1 built from the new full index
        and both aliases moved in its one swap. The new full index."""
        if not self.enabled:
            return reindexer.reindex(old, progress)
        built: list[str] = []

        def tier1_of(new_index: str) -> list[dict]:
            name, actions = self.build(new_index)
            built.append(name)
            return actions

        new = reindexer.reindex(old, progress, also=tier1_of)
        self.retire(built[0])
        return new

    def _best(self, index: str, wanted: int, batch: int = 1000
              ) -> Iterator[tuple[Document, int]]:
        """The ``wanted`` pages of ``index`` with the highest static rank (ties by id),
        best first, with their versions."""
        request: dict = {"sort": [{"pagerank": {"order": "desc", "missing": "_last"}},
                                  {"id": "asc"}],
                         "_source": ["doc"], "version": True,
                         # pages not ranked yet are never "the best by static rank"
                         "query": {"range": {"pagerank": {"gt": 0}}}}
        left = wanted
        while left > 0:
            hits = self.client.search(index=index, size=min(batch, left),
                                      **request)["hits"]["hits"]
            for hit in hits:
                yield Document.from_dict(hit["_source"]["doc"]), hit["_version"]
            left -= len(hits)
            if len(hits) < min(batch, left + len(hits)):
                return
            request["search_after"] = hits[-1]["sort"]

    def _copy(self, target: str, docs: Iterator[tuple[Document, int]]) -> float | None:
        """Index ``docs`` (best first) into ``target``; the lowest static rank copied
        (``None``: nothing was)."""
        floor = math.inf

        def ranked() -> Iterator[tuple[Document, int]]:
            nonlocal floor
            for doc, version in docs:
                floor = min(floor, float(doc.pagerank))
                yield doc, version

        copy_documents(self.client, target, ranked(), spool_dir=self.spool_dir / "tier1",
                       stats=self.bulk_stats, suggest_body_chars=self.suggest_body_chars)
        return None if floor == math.inf else floor
