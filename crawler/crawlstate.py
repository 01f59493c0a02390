"""Per-URL crawl state (``crawler.recrawl.CrawlState``) kept between fetches and crawls.

A store of its own beside the frontier, not inside it (see docs/freshness.md): the frontier
holds *work* (queued and leased entries, gone once done), this store holds *knowledge*
about every URL ever fetched, read on each fetch for its validators and scanned for due
URLs. Local: one SQLite file under ``DATA_DIR/crawlstate``; distributed: a Redis hash of
states plus a sorted set of URLs by ``next_fetch_at``.
"""

from __future__ import annotations

import email.utils
import json
import re
import struct
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import xxhash

from crawler import sqlitedb
from crawler.config import Config
from crawler.options import setting
from crawler.recrawl import CrawlState, RecrawlPolicy

#: Due URLs read per slot asked for, before ordering them by priority.
DUE_SCAN_FACTOR = 4
#: States a crawl's store (``WriteBehind``) holds before it writes them in one call.
WRITE_BATCH = 100
#: Seconds a state put may wait in a crawl's store before it is written.
WRITE_DELAY_S = 1.0


#: The fields of a ``CrawlState``, in order.
_FIELDS = tuple(f.name for f in fields(CrawlState))


def _dump(state: CrawlState) -> str:
    # its fields read as they are: the JSON dataclasses.asdict(state) gave, without a deep
    # copy of each value
    return json.dumps({name: getattr(state, name) for name in _FIELDS}, separators=(",", ":"))


def _load(data: str | bytes) -> CrawlState:
    return CrawlState(**json.loads(data))


# -- the packed state of the Redis store ---------------------------------------------------
#: URL prefixes kept as one byte (index + 1; 0 = none).
_URL_PREFIXES = ("http://", "https://", "http://www.", "https://www.")
_DOUBLE = struct.Struct("<d")
_HEX40 = re.compile(r"[0-9a-f]{40}")


def _varint(out: bytearray, n: int) -> None:
    n = n * 2 if n >= 0 else -n * 2 - 1  # zigzag
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _str(out: bytearray, text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    _varint(out, len(data))
    out += data


def _http_date(text: str) -> int | None:
    """``text`` as epoch seconds when it is an IMF-fixdate that formats back to itself."""
    try:
        when = email.utils.parsedate_to_datetime(text)
        if when.tzinfo is None or when.utcoffset():
            return None
        seconds = int(when.timestamp())
        back = datetime.fromtimestamp(seconds, UTC)
        return seconds if email.utils.format_datetime(back, usegmt=True) == text else None
    except (TypeError, ValueError, OverflowError, IndexError):
        return None


def pack(state: CrawlState) -> bytes:
    """``state`` (all but ``next_fetch_at``, which is the due score) in a few bytes: a
    16-bit mask of the fields that differ from their defaults, those fields (integers as
    varints, floats as doubles, an HTTP date as epoch seconds, a SHA-1 hex digest as its
    20 bytes), then the URL with its scheme as one byte. ~60 bytes where JSON took ~300."""
    mask, out = 0, bytearray(2)
    if state.tier:
        mask |= 1 << 0
        _varint(out, state.tier)
    if state.last_fetch:
        mask |= 1 << 1
        out += _DOUBLE.pack(state.last_fetch)
    if state.status:
        mask |= 1 << 2
        _varint(out, state.status)
    if state.etag:
        mask |= 1 << 3
        _str(out, state.etag)
    if state.last_modified:
        seconds = _http_date(state.last_modified)
        if seconds is None:
            mask |= 1 << 4
            _str(out, state.last_modified)
        else:
            mask |= 1 << 5
            _varint(out, seconds)
    if state.content_hash:
        if _HEX40.fullmatch(state.content_hash):
            mask |= 1 << 6
            out += bytes.fromhex(state.content_hash)
        else:
            mask |= 1 << 7
            _str(out, state.content_hash)
    if state.interval:
        mask |= 1 << 8
        out += _DOUBLE.pack(state.interval)
    if state.changes:
        mask |= 1 << 9
        _varint(out, len(state.changes))
        for when in state.changes:
            out += _DOUBLE.pack(when)
    if state.failures:
        mask |= 1 << 10
        _varint(out, state.failures)
    if state.gone:
        mask |= 1 << 11
        _varint(out, state.gone)
    if state.tombstone:
        mask |= 1 << 12
    if state.moved_to:
        mask |= 1 << 13
        _str(out, state.moved_to)
    url = state.url
    code = 0
    for n, prefix in enumerate(_URL_PREFIXES, 1):
        if url.startswith(prefix):
            code = n  # the longest matching prefix: it comes later in the tuple
    out.append(code)
    out += url[len(_URL_PREFIXES[code - 1]) if code else 0:].encode("utf-8", "surrogatepass")
    out[0], out[1] = mask & 0xFF, mask >> 8
    return bytes(out)


def unpack(data: bytes) -> CrawlState:
    """The state ``pack`` wrote (``next_fetch_at`` 0: the caller sets the due score)."""
    pos = 2

    def varint() -> int:
        nonlocal pos
        n = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            n |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return (n >> 1) ^ -(n & 1)

    def double() -> float:
        nonlocal pos
        pos += 8
        return _DOUBLE.unpack_from(data, pos - 8)[0]

    def text() -> str:
        nonlocal pos
        size = varint()
        pos += size
        return data[pos - size:pos].decode("utf-8", "surrogatepass")

    mask = data[0] | data[1] << 8
    fields: dict[str, Any] = {}
    if mask & 1 << 0:
        fields["tier"] = varint()
    if mask & 1 << 1:
        fields["last_fetch"] = double()
    if mask & 1 << 2:
        fields["status"] = varint()
    if mask & 1 << 3:
        fields["etag"] = text()
    if mask & 1 << 4:
        fields["last_modified"] = text()
    if mask & 1 << 5:
        fields["last_modified"] = email.utils.format_datetime(
            datetime.fromtimestamp(varint(), UTC), usegmt=True)
    if mask & 1 << 6:
        pos += 20
        fields["content_hash"] = data[pos - 20:pos].hex()
    if mask & 1 << 7:
        fields["content_hash"] = text()
    if mask & 1 << 8:
        fields["interval"] = double()
    if mask & 1 << 9:
        fields["changes"] = [double() for _ in range(varint())]
    if mask & 1 << 10:
        fields["failures"] = varint()
    if mask & 1 << 11:
        fields["gone"] = varint()
    if mask & 1 << 12:
        fields["tombstone"] = True
    if mask & 1 << 13:
        fields["moved_to"] = text()
    code = data[pos]
    url = data[pos + 1:].decode("utf-8", "surrogatepass")
    return CrawlState(_URL_PREFIXES[code - 1] + url if code else url, **fields)


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


class WriteBehind(CrawlStateStore):
    """A crawl's ``store``, its puts written ``batch`` states at a time.

    The crawl puts one state a fetch (``crawler.freshness.FreshnessMiddleware``): on
    SQLite each put was a write transaction of its own on the reactor thread, 29 us of CPU
    a state against 12 us written 50 at a time (get and put, ``LocalCrawlStateStore``).
    States put wait here until ``batch`` of them do, the oldest has waited ``delay``
    seconds (checked at each put), or ``flush``; a read sees them: ``get`` answers from
    them first (the state put, the same object), and every other read or claim writes them
    first. Another process (another worker, the URL inspector) sees a state up to
    ``delay`` seconds later, or at the next ``flush`` (the crawl's on ``spider_idle``);
    ``close`` writes them. A crawl killed without closing loses the states of its last
    ``delay`` seconds, as the link store and the index lose their pending batches.
    """

    def __init__(self, store: CrawlStateStore, batch: int = WRITE_BATCH,
                 delay: float = WRITE_DELAY_S, clock=time.monotonic):
        self.store = store
        self.batch = batch
        self.delay = delay
        self.clock = clock
        self._pending: dict[str, CrawlState] = {}
        self._since = 0.0  # when the oldest pending state was put

    def get(self, url: str) -> CrawlState | None:
        state = self._pending.get(url)
        return state if state is not None else self.store.get(url)

    def put(self, states: Iterable[CrawlState]) -> None:
        if not self._pending:
            self._since = self.clock()
        for state in states:
            self._pending[state.url] = state
        if len(self._pending) >= self.batch or self.clock() - self._since >= self.delay:
            self.flush()

    def flush(self) -> None:
        """Write the pending states in one call."""
        if self._pending:
            pending, self._pending = self._pending, {}
            try:
                self.store.put(pending.values())
            except BaseException:
                self._pending = {**pending, **self._pending}  # kept for the next try
                raise

    def due_urls(self, now: float, limit: int) -> list[CrawlState]:
        self.flush()
        return self.store.due_urls(now, limit)

    def claim(self, urls: Sequence[str], now: float, until: float) -> list[str]:
        self.flush()
        return self.store.claim(urls, now, until)

    def count_due(self, now: float) -> int:
        self.flush()
        return self.store.count_due(now)

    def clear(self) -> None:
        self._pending.clear()
        self.store.clear()

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.store.close()


class LocalCrawlStateStore(CrawlStateStore):
    """``CrawlStateStore`` on SQLite (``path``; None = in memory), safe across processes."""

    def __init__(self, path: str | Path | None):
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlitedb.connect(path or None, synchronous="NORMAL", check_same_thread=False)
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


_LUA_COMMON = """
local prefix = ARGV[1]
local function fix_min(part)
  local first = redis.call('ZRANGE', prefix .. ':d:' .. part, 0, 0, 'WITHSCORES')
  if first[1] then
    redis.call('ZADD', prefix .. ':dmin', first[2], part)
  else
    redis.call('ZREM', prefix .. ':dmin', part)
  end
end
local function chunks_of(skey, key)
  local head = redis.call('HGET', skey, key)
  if not head then return 0, false end
  return string.byte(head, 1), head
end
local function read(part, key)
  local skey = prefix .. ':s:' .. part
  local n, head = chunks_of(skey, key)
  if not head then return false end
  local out = {string.sub(head, 2)}
  for i = 1, n - 1 do
    out[#out + 1] = redis.call('HGET', skey, key .. string.char(i)) or ''
  end
  return table.concat(out)
end
"""

#: ARGV: prefix, part, key -> {record or false, due score or false}
_GET_LUA = _LUA_COMMON + """
return {read(ARGV[2], ARGV[3]), redis.call('ZSCORE', prefix .. ':d:' .. ARGV[2], ARGV[3])}
"""

#: ARGV: prefix, then (part, key, record, score) per state.
_PUT_LUA = _LUA_COMMON + """
for i = 2, #ARGV, 4 do
  local part, key, record, score = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local skey = prefix .. ':s:' .. part
  local n = math.max(1, math.ceil((#record + 1) / 64))
  local old = chunks_of(skey, key)
  redis.call('HSET', skey, key, string.char(n) .. string.sub(record, 1, 63))
  for c = 1, n - 1 do
    redis.call('HSET', skey, key .. string.char(c), string.sub(record, c * 64, c * 64 + 63))
  end
  for c = n, old - 1 do redis.call('HDEL', skey, key .. string.char(c)) end
  redis.call('ZADD', prefix .. ':d:' .. part, score, key)
  fix_min(part)
end
return 1
"""

#: ARGV: prefix, now, limit -> key, score, record, ... of the due entries, soonest first.
#: Parts are read in the order of their soonest entry, until no later part can hold one
#: sooner than the ``limit``-th found.
_DUE_LUA = _LUA_COMMON + """
local now, limit = ARGV[2], tonumber(ARGV[3])
local found, offset, done = {}, 0, false
while not done do
  local parts = redis.call('ZRANGEBYSCORE', prefix .. ':dmin', '-inf', now, 'WITHSCORES',
                           'LIMIT', offset, 100)
  if #parts == 0 then break end
  for i = 1, #parts, 2 do
    local part, low = parts[i], tonumber(parts[i + 1])
    if #found >= limit and low >= found[limit][1] then done = true break end
    local items = redis.call('ZRANGEBYSCORE', prefix .. ':d:' .. part, '-inf', now,
                             'WITHSCORES', 'LIMIT', 0, limit)
    for j = 1, #items, 2 do
      found[#found + 1] = {tonumber(items[j + 1]), items[j], items[j + 1], part}
    end
    table.sort(found, function(a, b) return a[1] < b[1] end)
    for j = #found, limit + 1, -1 do found[j] = nil end
  end
  offset = offset + 100
end
local out = {}
for _, f in ipairs(found) do
  out[#out + 1] = f[3]
  out[#out + 1] = read(f[4], f[2]) or ''
end
return out
"""

#: ARGV: prefix, now, until, then (part, key) per URL -> the 0-based indexes claimed: each
#: URL still due (score <= now) moves to ``until``.
_CLAIM_LUA = _LUA_COMMON + """
local now, till, claimed = tonumber(ARGV[2]), ARGV[3], {}
for i = 4, #ARGV, 2 do
  local part, key = ARGV[i], ARGV[i + 1]
  local dkey = prefix .. ':d:' .. part
  local score = redis.call('ZSCORE', dkey, key)
  if score and tonumber(score) <= now then
    redis.call('ZADD', dkey, till, key)
    fix_min(part)
    claimed[#claimed + 1] = (i - 4) / 2
  end
end
return claimed
"""

#: ARGV: prefix, now -> entries due at ``now``.
_COUNT_LUA = _LUA_COMMON + """
local total = 0
for _, part in ipairs(redis.call('ZRANGEBYSCORE', prefix .. ':dmin', '-inf', ARGV[2])) do
  total = total + redis.call('ZCOUNT', prefix .. ':d:' .. part, '-inf', ARGV[2])
end
return total
"""


class RedisCrawlStateStore(CrawlStateStore):
    """``CrawlStateStore`` in Redis, in hashes and sorted sets small enough to stay in
    Redis' compact *listpack* encoding (at most 128 entries of at most 64 bytes), as the
    dedup state is (``crawler/quality/dedup/compact.py``). A URL is its 8-byte key (xxh64 of
    the URL), in the partition of its top ``partition_bits``:

        crawlstate:<crawl>:s:<part>  key (+ chunk number) -> the packed state (``pack``),
                                     in 64-byte chunks (the first: chunk count + 63 bytes)
        crawlstate:<crawl>:d:<part>  key by ``next_fetch_at``  (the due order)
        crawlstate:<crawl>:dmin      part by its soonest ``next_fetch_at``

    About 150 bytes a fetched URL, where a hash of URL -> JSON and a sorted set of URLs
    took ~550 (CHANGELOG.md, 2026-12-02). Each call is one round trip (a Lua script). Two URLs
    whose keys collide (~1 in 2**64 a pair) share a state: a read checks the URL and
    answers None for the other one."""

    def __init__(self, client: Any, crawl: str, partition_bits: int | None = None):
        if partition_bits is None:
            partition_bits = setting(None, "CRAWLSTATE_PARTITION_BITS", int)
        if not 0 <= partition_bits <= 32:
            raise ValueError("partition_bits must be within 0..32")
        self.client = client
        self.prefix = f"crawlstate:{crawl}"
        self.partition_bits = partition_bits
        self._get = client.register_script(_GET_LUA)
        self._put = client.register_script(_PUT_LUA)
        self._due = client.register_script(_DUE_LUA)
        self._claim = client.register_script(_CLAIM_LUA)
        self._count = client.register_script(_COUNT_LUA)

    def _where(self, url: str) -> tuple[int, bytes]:
        key = xxhash.xxh64_digest(url.encode("utf-8"))
        return int.from_bytes(key[:4], "big") >> (32 - self.partition_bits), key

    def get(self, url: str) -> CrawlState | None:
        part, key = self._where(url)
        record, score = self._get(args=[self.prefix, part, key])
        if not record:
            return None
        state = unpack(record)
        if state.url != url:
            return None
        if score is not None:
            state.next_fetch_at = float(score)
        return state

    def put(self, states: Iterable[CrawlState]) -> None:
        args: list[Any] = [self.prefix]
        for s in states:
            part, key = self._where(s.url)
            args += [part, key, pack(s), repr(float(s.next_fetch_at))]
        if len(args) > 1:
            self._put(args=args)

    def due_urls(self, now: float, limit: int) -> list[CrawlState]:
        if limit <= 0:
            return []
        flat = self._due(args=[self.prefix, repr(float(now)), limit])
        states = []
        for score, record in zip(flat[::2], flat[1::2], strict=True):
            if record:
                state = unpack(record)
                state.next_fetch_at = float(score)
                states.append(state)
        return states

    def claim(self, urls: Sequence[str], now: float, until: float) -> list[str]:
        if not urls:
            return []
        args: list[Any] = [self.prefix, repr(float(now)), repr(float(until))]
        for url in urls:
            args += list(self._where(url))
        return [urls[int(i)] for i in self._claim(args=args)]

    def count_due(self, now: float) -> int:
        return int(self._count(args=[self.prefix, repr(float(now))]))

    def clear(self) -> None:
        batch = []
        for key in self.client.scan_iter(match=f"{self.prefix}:*", count=1000):
            batch.append(key)
            if len(batch) >= 1000:
                self.client.delete(*batch)
                batch = []
        if batch:
            self.client.delete(*batch)


def open_crawl_state(config: Config, crawl: str,
                     partition_bits: int | None = None) -> CrawlStateStore:
    """The Redis store when ``config.redis_url`` is set, else SQLite under ``DATA_DIR``."""
    if config.redis_url:
        from scrapy_redis.connection import get_redis

        return RedisCrawlStateStore(get_redis(url=config.redis_url), crawl, partition_bits)
    return LocalCrawlStateStore(config.path("crawlstate", f"{crawl}.sqlite3"))

