"""A result cache in front of any search backend, keyed by the normalized query.

The design's serving trick: popular queries repeat (a Zipf head), so a page of results is
kept for a short TTL (``SEARCH_CACHE_TTL``) under a key made of the query's normalized AST
(``str(parse(q))``: ``Python  Tutorial`` and ``python tutorial`` share it), page, size and
explain, plus the **index version**. Publishing a new version of the index (a reindex alias
swap, an ``update_rank`` batch, ``delete_by_host`` when a host is blocked) increments the
version, so every older entry is unreachable at once, in every process: no scan, no
delete storm, the entries simply expire.

Where the entries and the version live:

- **Redis** when ``REDIS_URL`` is set: one cache for every web worker, and the version
  counter shared by every process that publishes (the ranking batch, ``manage.py reindex``,
  the control plane blocking a host).
- **Local memory** otherwise: a bounded LRU (``SEARCH_CACHE_SIZE`` entries) per process, its
  version bumped by this process's own publications and by its own ``refresh()``; a
  publication made by another process is seen once the TTL has passed.

Partial results (a shard timed out) are never cached. :class:`CachedBackend` wraps a
backend and forwards everything else to it; ``index.get_backend`` returns one whenever the
TTL is positive, so both engines share this one definition.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from index.base import Document, Hit, Results, SearchBackend
from index.query import Query, parse

__all__ = ["CachedBackend", "LocalResultCache", "RedisResultCache", "ResultCache", "cache_key"]

logger = logging.getLogger(__name__)
_FORMAT = 1  # bumped when the stored form of Results changes


def cache_key(parsed: Query, page: int, size: int, explain: bool,
              facets: bool = False) -> str:
    """The part of a cache key that names a page of a query (the version comes on top)."""
    digest = hashlib.blake2b(str(parsed).encode(), digest_size=16).hexdigest()
    return f"{digest}:{page}:{size}:{int(explain)}:{int(facets)}"


def dump_results(results: Results) -> str:
    """``results`` as JSON (without the parsed query, which the caller has)."""
    data = asdict(results)
    data.pop("parsed", None)
    return json.dumps(data, separators=(",", ":"))


def load_results(text: str | bytes) -> Results:
    """The ``Results`` stored by ``dump_results``."""
    data = json.loads(text)
    data["hits"] = [Hit(**hit) for hit in data["hits"]]
    return Results(**data)


class ResultCache(ABC):
    """Pages of results by key for ``ttl`` seconds, under an index version."""

    def __init__(self, ttl: float):
        self.ttl = ttl
        self.hits = 0
        self.misses = 0

    @abstractmethod
    def version(self) -> int:
        """The current index version (part of every key)."""

    @abstractmethod
    def bump(self) -> int:
        """Publish a new index version: every entry cached so far is no longer served."""

    @abstractmethod
    def _get(self, key: str) -> str | bytes | None:
        """The stored text under ``key`` if it has not expired."""

    @abstractmethod
    def _put(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` for ``ttl`` seconds."""

    def get(self, key: str) -> Results | None:
        """The cached results under ``key`` at the current version, or ``None``."""
        stored = self._get(f"{self.version()}:{key}")
        if stored is None:
            self.misses += 1
            return None
        self.hits += 1
        return load_results(stored)

    def put(self, key: str, results: Results, version: int) -> None:
        """Keep ``results`` under ``key`` at ``version`` (the version read before searching,
        so a publication during the search does not let stale results in)."""
        self._put(f"{version}:{key}", dump_results(results))

    def stats(self) -> dict:
        """``cache/hits``, ``cache/misses``, ``cache/hit_rate`` of this process."""
        asked = self.hits + self.misses
        return {"cache/hits": self.hits, "cache/misses": self.misses,
                "cache/hit_rate": round(self.hits / asked, 4) if asked else 0.0}

    def close(self) -> None:
        """Release connections."""


class LocalResultCache(ResultCache):
    """A bounded LRU in this process's memory, with a per-process version counter."""

    def __init__(self, ttl: float, max_entries: int = 10_000,
                 clock: Callable[[], float] = time.monotonic):
        super().__init__(ttl)
        self.max_entries = max(1, max_entries)
        self.clock = clock
        self._entries: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._version = 0
        self._lock = threading.Lock()

    def version(self) -> int:
        return self._version

    def bump(self) -> int:
        with self._lock:
            self._version += 1
            self._entries.clear()  # unreachable now; free the memory at once
            return self._version

    def _get(self, key: str) -> str | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= self.clock():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def _put(self, key: str, value: str) -> None:
        with self._lock:
            self._entries[key] = (self.clock() + self.ttl, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


class RedisResultCache(ResultCache):
    """Entries in Redis with its own expiry (``SET … PX``); the version is a Redis counter
    shared by every process of the deployment."""

    def __init__(self, client: Any, ttl: float, prefix: str = "search-cache"):
        # imported here, not with the module: a process without a Redis cache (a local
        # crawl, which imports this module through index.open_backend) loads no redis
        from redis.exceptions import RedisError

        super().__init__(ttl)
        self.client = client
        self._down = RedisError
        self.prefix = f"{prefix}:v{_FORMAT}"
        self._version_key = f"{self.prefix}:version"

    @classmethod
    def from_url(cls, url: str, ttl: float, prefix: str = "search-cache") -> RedisResultCache:
        """A cache on the Redis server at ``url``."""
        from redis import Redis

        return cls(Redis.from_url(url, socket_timeout=1.0), ttl, prefix)

    # Redis down: every lookup misses and nothing is stored, searches still answer.

    def version(self) -> int:
        try:
            return int(self.client.get(self._version_key) or 0)
        except self._down:
            return -1

    def bump(self) -> int:
        try:
            return int(self.client.incr(self._version_key))
        except self._down:
            logger.warning("result cache: Redis unreachable, version not bumped; cached pages "
                           "may be served until they expire (%.0f s)", self.ttl)
            return -1

    def _get(self, key: str) -> bytes | None:
        if key.startswith("-1:"):
            return None
        try:
            return self.client.get(f"{self.prefix}:{key}")
        except self._down:
            return None

    def _put(self, key: str, value: str) -> None:
        if key.startswith("-1:"):
            return
        try:
            self.client.set(f"{self.prefix}:{key}", value, px=max(1, int(self.ttl * 1000)))
        except self._down:
            pass

    def close(self) -> None:
        self.client.close()


class CachedBackend(SearchBackend):
    """``backend`` with a result cache in front of ``search``; publications bump the
    cache's version. Every other attribute is the wrapped backend's."""

    def __init__(self, backend: SearchBackend, cache: ResultCache):
        self.backend = backend
        self.cache = cache

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["backend"], name)

    def search(self, query: str | Query, page: int = 1, size: int = 10,
               explain: bool = False, facets: bool = False) -> Results:
        """The backend's page of results, from the cache while it is fresh."""
        started = time.perf_counter()
        parsed = query if isinstance(query, Query) else parse(query)
        key = cache_key(parsed, page, size, explain, facets)
        version = self.cache.version()
        cached = self.cache.get(key)
        if cached is not None:
            if cached.query != parsed.raw and cached.suggestion is not None:
                # "did you mean" rewrites the text as typed, which may differ
                cached.suggestion = self.backend.suggest(parsed)
            cached.query = parsed.raw
            cached.parsed = parsed
            cached.extra["cached"] = True
            cached.took_ms = (time.perf_counter() - started) * 1000
            return cached
        results = self.backend.search(parsed, page=page, size=size, explain=explain,
                                      facets=facets)
        if not results.partial:
            self.cache.put(key, results, version)
        return results

    def publish(self) -> int:
        """A new index version is visible: results cached so far are not served again."""
        return self.cache.bump()

    # --- publications --------------------------------------------------------------

    def update_rank(self, scores: Mapping[str, float]) -> int:
        """The backend's ``update_rank``, then a new cache version."""
        changed = self.backend.update_rank(scores)
        self.publish()
        return changed

    def delete_by_host(self, pattern: str) -> int:
        """The backend's ``delete_by_host`` (a blocked host), then a new cache version."""
        removed = self.backend.delete_by_host(pattern)
        self.publish()
        return removed

    def publish_tiers(self) -> str | None:
        """The backend's ``publish_tiers`` (a new tier 1), then a new cache version."""
        published = self.backend.publish_tiers()
        if published is not None:
            self.publish()
        return published

    def write_vectors(self, docs: Sequence[Document]) -> int:
        """The backend's ``write_vectors`` (the embedding batch), then a new cache version:
        questions over those pages rank otherwise now."""
        written = self.backend.write_vectors(docs)
        self.publish()
        return written

    def unembedded(self, limit: int, version: str) -> list[str]:
        """The backend's ``unembedded``."""
        return self.backend.unembedded(limit, version)

    def get_many(self, ids: Sequence[str]) -> list[Document]:
        """The backend's ``get_many``."""
        return self.backend.get_many(ids)

    def reindex(self, *args: Any, **kwargs: Any) -> Any:
        """The backend's ``reindex`` (a new index behind the alias), then a new version."""
        new = self.backend.reindex(*args, **kwargs)
        self.publish()
        return new

    def refresh(self) -> None:
        """The backend's ``refresh``; this process's local cache starts afresh."""
        self.backend.refresh()
        if isinstance(self.cache, LocalResultCache):
            self.cache.bump()

    # --- forwarded ------------------------------------------------------------------

    def ensure_index(self) -> None:
        """The backend's ``ensure_index``."""
        self.backend.ensure_index()

    def index(self, docs: Iterable[Document]) -> int:
        """The backend's ``index`` (visible in the cache within its TTL)."""
        return self.backend.index(docs)

    def delete(self, ids: Iterable[str]) -> int:
        """The backend's ``delete`` (visible in the cache within its TTL)."""
        return self.backend.delete(ids)

    def suggest(self, query: str | Query) -> str | None:
        """The backend's ``suggest``."""
        return self.backend.suggest(query)

    def complete(self, prefix: str, limit: int = 8) -> list[str]:
        """The backend's ``complete`` (its own prefix index answers in microseconds)."""
        return self.backend.complete(prefix, limit)

    def get(self, doc_id: str) -> Document | None:
        """The backend's ``get``."""
        return self.backend.get(doc_id)

    def stats(self) -> dict:
        """The backend's stats plus the cache's (``cache/*``)."""
        return {**self.backend.stats(), **self.cache.stats()}

    def close(self) -> None:
        """Close the backend and the cache's connections."""
        self.backend.close()
        self.cache.close()


def result_cache(redis_url: str | None, ttl: float, max_entries: int) -> ResultCache:
    """Redis when ``redis_url`` is set, else a local LRU of ``max_entries``."""
    if redis_url:
        return RedisResultCache.from_url(redis_url, ttl)
    return LocalResultCache(ttl, max_entries)
