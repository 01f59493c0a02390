"""Per-URL crawl state (``crawler.recrawl.CrawlState``) kept between fetches and crawls.

A store of its own beside the frontier, not inside it (see docs/freshness.md): the frontier
holds *work* (queued and leased entries, gone once done), this store holds *knowledge*
about every URL ever fetched, read on each fetch for its validators and scanned for due
URLs. Local: one SQLite file under ``DATA_DIR/crawlstate``; distributed: a Redis hash of
states plus a sorted set of URLs by ``next_fetch_at``.
"""

from __future__ import annotations

import json
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from crawler.config import Config
from crawler.recrawl import CrawlState, RecrawlPolicy

#: Due URLs read per slot asked for, before ordering them by priority.
DUE_SCAN_FACTOR = 4


def _dump(state: CrawlState) -> str:
    return json.dumps(asdict(state), separators=(",", ":"))


def _load(data: str | bytes) -> CrawlState:
    return CrawlState(**json.loads(data))


class CrawlStateStore(ABC):
    """Crawl state by canonical URL, shared by every worker of one crawl."""

    @abstractmethod
    def get(self, url: str) -> CrawlState | None:
        """The state of ``url``, or None if it was never fetched."""

    @abstractmethod
    def put(self, states: Iterable[CrawlState]) -> None:
        """Store (replace) these states."""

    @abstractmethod
    def due_urls(self, now: float, limit: int) -> list[CrawlState]:
        """Up to ``limit`` states with ``next_fetch_at <= now``, soonest first."""

    @abstractmethod
    def claim(self, urls: Sequence[str], now: float, until: float) -> list[str]:
        """Of ``urls``, those still due at ``now``, now postponed to ``until`` (so no other
        worker queues them again before the fetch updates them)."""

    @abstractmethod
    def count_due(self, now: float) -> int:
        """How many URLs are due at ``now``."""

    @abstractmethod
    def clear(self) -> None:
        """Forget every URL."""

    def close(self) -> None:
        """Release resources; the state stays."""

    def take_due(self, now: float, limit: int, policy: RecrawlPolicy,
                 hold: float) -> list[CrawlState]:
        """Claim the ``limit`` due URLs of highest ``policy.priority`` for ``hold`` seconds."""
        if limit <= 0:
            return []
        due = self.due_urls(now, limit * DUE_SCAN_FACTOR)
        due.sort(key=lambda s: policy.priority(s, now), reverse=True)
        chosen = {s.url: s for s in due[:limit]}
        claimed = self.claim(list(chosen), now, now + hold)
        return [chosen[url] for url in claimed]


class LocalCrawlStateStore(CrawlStateStore):
    """``CrawlStateStore`` on SQLite (``path``; None = in memory), safe across processes."""

    def __init__(self, path: str | Path | None):
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path) if path else ":memory:", timeout=30,
                                  isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS state (url TEXT PRIMARY KEY, "
                        "next REAL NOT NULL, data TEXT NOT NULL)")
        self.db.execute("CREATE INDEX IF NOT EXISTS state_next ON state (next)")

    def get(self, url: str) -> CrawlState | None:
        row = self.db.execute("SELECT data FROM state WHERE url = ?", (url,)).fetchone()
        return _load(row[0]) if row else None

    def put(self, states: Iterable[CrawlState]) -> None:
        rows = [(s.url, s.next_fetch_at, _dump(s)) for s in states]
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.executemany("INSERT OR REPLACE INTO state (url, next, data) VALUES (?, ?, ?)",
                                rows)

    def due_urls(self, now: float, limit: int) -> list[CrawlState]:
        rows = self.db.execute("SELECT data FROM state WHERE next <= ? ORDER BY next LIMIT ?",
                               (now, limit)).fetchall()
        return [_load(data) for (data,) in rows]

    def claim(self, urls: Sequence[str], now: float, until: float) -> list[str]:
        claimed = []
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            for url in urls:
                row = self.db.execute("SELECT data FROM state WHERE url = ? AND next <= ?",
                                      (url, now)).fetchone()
                if row is None:
                    continue
                state = _load(row[0])
                state.next_fetch_at = until
                self.db.execute("UPDATE state SET next = ?, data = ? WHERE url = ?",
                                (until, _dump(state), url))
                claimed.append(url)
        return claimed

    def count_due(self, now: float) -> int:
        return self.db.execute("SELECT COUNT(*) FROM state WHERE next <= ?", (now,)).fetchone()[0]

    def clear(self) -> None:
        self.db.execute("DELETE FROM state")

    def close(self) -> None:
        self.db.close()


#: Claim each URL still due: ZADD it to ``until`` only if its score is <= ``now``.
CLAIM_LUA = """
local claimed = {}
for i, url in ipairs(ARGV) do
  if i > 2 then
    local score = redis.call('ZSCORE', KEYS[1], url)
    if score and tonumber(score) <= tonumber(ARGV[1]) then
      redis.call('ZADD', KEYS[1], ARGV[2], url)
      claimed[#claimed + 1] = url
    end
  end
end
return claimed
"""


class RedisCrawlStateStore(CrawlStateStore):
    """``CrawlStateStore`` in Redis: hash ``{prefix}:state`` (url -> JSON) and sorted set
    ``{prefix}:due`` (url by ``next_fetch_at``)."""

    def __init__(self, client: Any, crawl: str):
        self.client = client
        self.state_key = f"crawlstate:{crawl}:state"
        self.due_key = f"crawlstate:{crawl}:due"
        self._claim = client.register_script(CLAIM_LUA)

    def get(self, url: str) -> CrawlState | None:
        data = self.client.hget(self.state_key, url)
        if data is None:
            return None
        state = _load(data)
        score = self.client.zscore(self.due_key, url)
        if score is not None:  # a claim moves only the score
            state.next_fetch_at = float(score)
        return state

    def put(self, states: Iterable[CrawlState]) -> None:
        pipe = self.client.pipeline(transaction=True)
        for s in states:
            pipe.hset(self.state_key, s.url, _dump(s))
            pipe.zadd(self.due_key, {s.url: s.next_fetch_at})
        pipe.execute()

    def due_urls(self, now: float, limit: int) -> list[CrawlState]:
        urls = self.client.zrangebyscore(self.due_key, "-inf", now, start=0, num=limit,
                                         withscores=True)
        if not urls:
            return []
        datas = self.client.hmget(self.state_key, [u for u, _ in urls])
        states = []
        for (_, score), data in zip(urls, datas, strict=True):
            if data is not None:
                state = _load(data)
                state.next_fetch_at = float(score)
                states.append(state)
        return states

    def claim(self, urls: Sequence[str], now: float, until: float) -> list[str]:
        if not urls:
            return []
        claimed = self._claim(keys=[self.due_key], args=[now, until, *urls])
        return [u.decode() if isinstance(u, bytes) else u for u in claimed]

    def count_due(self, now: float) -> int:
        return int(self.client.zcount(self.due_key, "-inf", now))

    def clear(self) -> None:
        self.client.delete(self.state_key, self.due_key)


def open_crawl_state(config: Config, crawl: str) -> CrawlStateStore:
    """The Redis store when ``config.redis_url`` is set, else SQLite under ``DATA_DIR``."""
    if config.redis_url:
        from scrapy_redis.connection import get_redis

        return RedisCrawlStateStore(get_redis(url=config.redis_url), crawl)
    return LocalCrawlStateStore(config.path("crawlstate", f"{crawl}.sqlite3"))

