"""The shared frontier: Redis data structures driven by Lua scripts (EVALSHA).

Every state change is one script, so it is atomic across any number of workers on any
number of boxes. Times come from the Redis server clock unless a ``clock`` is given (tests).
Keys live under ``frontier:<crawl>:``; a script touches keys computed from host names, so
one ``RedisFrontier`` runs on a single Redis (or a replicated primary), not on Redis Cluster.
Several primaries share a crawl through ``redis_frontier``: hosts are partitioned by a hash
of their name (crawler/frontier/partitioned.py), so each script still runs on one primary.

A host's queue is a head and a tail: the sorted set ``q:<host>`` of at most ``HOST_HEAD``
entries (ids scored by rank then arrival, blobs in the hash ``e``), exactly ordered, and
past it one list ``t:<host>:<tier>`` per tier, in arrival order, that refills the head as
it drains (crawler/frontier/lua/common.lua has the invariants). A blob is the URL without
``<scheme>://<host>`` and the compact payload (crawler/frontier/codec.py): docs/frontier-redis.md,
"Memory in Redis", has the figures. Pages a host's budget refused wait in the sorted set
``w:<host>`` (``Frontier.add``; common.lua ``set_aside`` and ``promote``).

Redis must run with ``appendonly yes``; ``appendfsync everysec`` bounds the loss on a power
cut to about a second of acknowledged operations, which costs far less than ``always`` (an
fsync per command). A Redis process crash loses what the kernel does not hold yet: nothing
while the disk keeps up, up to two seconds when a slow background fsync makes Redis put
off its AOF writes (its log says "Asynchronous AOF fsync is taking too long"). A lost
``done`` only means a page is crawled again, a lost ``add`` one link; ``always`` loses
neither.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from redis import Redis
from redis.commands.core import Script

from crawler.frontier.base import (
    HOST_AGE_S,
    HOST_WINDOW,
    ROBOTS_RANK,
    Entry,
    Frontier,
    FrontierOptions,
    HostState,
    Lease,
    Outcome,
)
from crawler.frontier.bloom import BloomHasher
from crawler.frontier.codec import pack_url, unpack_url

_LUA = Path(__file__).with_name("lua")
_RANK_SCALE = 10**12
#: Entries per ``add`` script call, so one call never blocks Redis for long.
ADD_CHUNK = 500
#: Entries of a host's queue kept in its sorted set (the head); the rest wait in one list
#: per tier (the tail). Below Redis's ``zset-max-listpack-entries`` (128), so a head is a
#: listpack (~19 bytes an entry against ~100 in a skiplist), and a tail entry costs its
#: record and ~3 bytes; the head refills from the tail as it drains.
HOST_HEAD = 64


def _script(client: Redis, name: str) -> Script:
    common = (_LUA / "common.lua").read_text()
    return client.register_script(common + "\n" + (_LUA / f"{name}.lua").read_text())


class RedisFrontier(Frontier):
    """``Frontier`` shared through one Redis server; keys namespaced by ``crawl``.

    Its options are ``FrontierOptions`` (``crawler.frontier.frontier_options(settings)``).
    """

    def __init__(
        self,
        client: Redis,
        crawl: str,
        *,
        clock: Callable[[], float] | None = None,
        host_head: int = HOST_HEAD,
        **options: Any,
    ):
        """``options``: the fields of ``FrontierOptions``; ``clock`` None: Redis' own time."""
        if host_head < 2:
            raise ValueError(f"host_head must be at least 2, got {host_head}")
        self._take_options(FrontierOptions(**options))
        self.client = client
        self.host_head = host_head
        self.crawl = crawl
        self.prefix = f"frontier:{crawl}:"
        self.clock = clock
        self.hasher = BloomHasher(self.options.bloom_capacity, self.options.bloom_fpr)
        if self.hasher.bits >= 2**32:  # a Redis string holds at most 2**32 bits
            raise ValueError("Bloom filter above 2**32 bits: lower capacity or raise fpr")
        self._check_bloom_size()
        self._scripts = {
            name: _script(client, name)
            for name in ("add", "lease", "due", "done", "expire", "stats", "budget",
                         "drop")
        }

    def _check_bloom_size(self) -> None:
        key = self.prefix + "bloom:bits"
        stored = self.client.get(key)
        if stored is None:
            self.client.set(key, self.hasher.bits)
        elif int(stored) != self.hasher.bits:
            raise ValueError(
                f"the Redis seen filter of crawl {self.crawl!r} has {int(stored)} bits, this "
                f"process wants {self.hasher.bits}: use the same FRONTIER_BLOOM_CAPACITY and "
                "FRONTIER_BLOOM_FPR on every worker, or clear the crawl"
            )

    def _call(self, name: str, *args, client=None) -> object:
        now = "" if self.clock is None else f"{self.clock():.6f}"
        return self._scripts[name](args=[self.prefix, now, self.tiers, self.host_head, *args],
                                   client=client)

    @property
    def bloom_key(self) -> str:
        return self.prefix + "bloom"

    @property
    def seeds_key(self) -> str:
        """The list workers pop seed URLs from (like scrapy-redis ``<spider>:start_urls``)."""
        return f"{self.crawl}:start_urls"

    def add(self, entries: Iterable[Entry]) -> dict[str, int]:
        # a copy with ``was`` is queued as a copy: queues hold packed URLs, not found by URL
        counts = {"added": 0, "seen": 0, "budget": 0, "waiting": 0, "moved": 0}
        batch: list = []
        size = 0
        pack = struct.Struct(f">{self.hasher.hashes}I").pack
        for e in entries:
            positions = pack(*self.hasher.positions(e.url)) if e.filter else b""
            batch += [e.host, e.ip or e.host, e.rank, "" if e.budget is None else e.budget,
                      "1" if e.filter else "0", self._blob(e), positions]
            size += 1
            if size >= ADD_CHUNK:
                self._add_batch(batch, counts)
                batch, size = [], 0
        if batch:
            self._add_batch(batch, counts)
        return counts

    def _blob(self, entry: Entry) -> bytes:
        """What the queue stores for ``entry``: its packed URL, a newline, its payload."""
        return pack_url(entry.url, entry.host) + b"\n" + entry.payload

    def _add_batch(self, batch: list, counts: dict[str, int]) -> None:
        added, seen, over, waiting = self._call("add", self.hasher.hashes,
                                                "1" if self.robots_first else "0",
                                                self.budget_waiting, *batch)
        counts["added"] += added
        counts["seen"] += seen
        counts["budget"] += over
        counts["waiting"] += waiting

    def next_ready(self, n: int, ahead: float = 0.0) -> list[Lease]:
        raw = self._call("lease", n, self.lease_s, self.ip_limit, self.ip_wait, HOST_WINDOW,
                         HOST_AGE_S, f"{ahead:.6f}")
        leases = []
        for i in range(0, len(raw), 10):
            lid, host, eid, blob, score, deadline, att, lat, bo, wait = raw[i:i + 10]
            url, _, payload = blob.partition(b"\n")
            score = float(score)
            rank = ROBOTS_RANK if score < 0 else int(score // _RANK_SCALE)
            host = host.decode()
            leases.append(Lease(lid.decode(), host, eid.decode(), unpack_url(url, host),
                                payload, rank, float(deadline), int(att), float(lat),
                                int(bo), float(wait)))
        return leases

    def due_in(self) -> float | None:
        wait = self._call("due")
        return None if wait is None else float(wait)

    def done(self, lease: Lease, outcome: Outcome) -> bool:
        return bool(self._call("done", *self._done_args(lease, outcome)))

    def done_many(self, reports: Sequence[tuple[Lease, Outcome]]) -> list[bool]:
        """Every report's script in one pipeline: one round trip."""
        if not reports:
            return []
        pipe = self.client.pipeline(transaction=False)
        for lease, outcome in reports:
            self._call("done", *self._done_args(lease, outcome), client=pipe)
        return [bool(answer) for answer in pipe.execute()]

    def _done_args(self, lease: Lease, outcome: Outcome) -> tuple:
        """The ``done`` script's arguments after the common ones; the delay is shortened by
        the report's ``age``, so it runs from the response's arrival."""
        delay, latency, backoff = self.politeness.next_delay(
            lease.latency, lease.backoff, outcome
        )
        return (lease.id, f"{max(0.0, delay - outcome.age):.6f}", f"{latency:.6f}", backoff,
                "1" if outcome.requeue else "0", "1" if outcome.fetched else "0",
                outcome.ip or "", "1" if outcome.refund and not outcome.fetched else "0")

    def release_expired(self) -> int:
        total = 0
        while True:
            n = int(self._call("expire", self.max_attempts, 1000))
            total += n
            if n < 1000:
                return total

    def stats(self) -> dict[str, float]:
        counters, depth, leases, ready, cooldown, waiting = self._call("stats")
        out: dict[str, float] = {
            counters[i].decode(): int(counters[i + 1]) for i in range(0, len(counters), 2)
        }
        out.setdefault("hosts", 0)
        out.update(queue_depth=depth, leases=leases, hosts_active=leases, hosts_ready=ready,
                   hosts_cooldown=cooldown, waiting=waiting)
        return out

    def set_host_budget(self, host: str, budget: int) -> None:
        self._call("budget", host, budget)

    def drop_queue(self, host: str) -> int:
        return int(self._call("drop", host))

    def set_host_values(self, values: dict[str, float]) -> None:
        if values:
            self.client.hset(self.prefix + "val",
                             mapping={host: repr(float(v)) for host, v in values.items()})

    def seen(self, urls: Sequence[str]) -> list[bool]:
        pipe = self.client.pipeline(transaction=False)
        for url in urls:
            for p in self.hasher.positions(url):
                pipe.getbit(self.bloom_key, p)
        bits = pipe.execute()
        k = self.hasher.hashes
        return [all(bits[i * k:(i + 1) * k]) for i in range(len(urls))]

    def robots_get(self, host: str) -> tuple[int, bytes, float] | None:
        raw = self.client.hget(self.prefix + "robots", host)
        if raw is None:
            return None
        status, expires, body = raw.split(b"\n", 2)
        return int(status), body, float(expires)

    def robots_set(self, host: str, status: int, body: bytes, expires_at: float) -> None:
        self.client.hset(self.prefix + "robots", host,
                         f"{status}\n{expires_at:.3f}\n".encode() + body)

    def count(self, key: str, n: int = 1) -> None:
        self.client.hincrby(self.prefix + "stats", key, n)

    def host_state(self, host: str) -> HostState | None:
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(self.prefix + "h:" + host)
        pipe.zcard(self.prefix + "q:" + host)
        pipe.zcard(self.prefix + "w:" + host)
        fields, queued, waiting = pipe.execute()
        if not fields:
            return None
        f = {k.decode(): v.decode() for k, v in fields.items()}
        return HostState(
            host,
            int(queued) + int(f.get("tail") or 0),
            bool(f.get("lease")),
            float(f.get("next") or 0),
            int(f.get("added") or 0),
            int(f["cut"]) if f.get("cut") else None,
            float(f.get("lat") or 0),
            int(f.get("bo") or 0),
            int(waiting),
        )

    def pending(self) -> int:
        pipe = self.client.pipeline(transaction=True)
        pipe.hlen(self.prefix + "e")
        pipe.get(self.prefix + "tailn")
        head, tail = pipe.execute()
        return int(head) + int(tail or 0)

    def clear(self) -> None:
        for batch in _chunks(self.client.scan_iter(match=self.prefix + "*", count=1000), 500):
            self.client.delete(*batch)
        self._check_bloom_size()

    def close(self) -> None:
        self.client.close()

    def now(self) -> float:
        """The frontier's clock (the Redis server's unless a test clock is set)."""
        if self.clock is not None:
            return self.clock()
        sec, usec = self.client.time()
        return sec + usec / 1e6


def _chunks(items: Iterable, size: int):
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch




def redis_frontier(clients: Sequence[Redis], crawl: str, **options) -> Frontier:
    """A ``RedisFrontier`` on one primary, or a ``PartitionedFrontier`` of one per primary.

    Partitioned, each primary's seen filter is sized for its share of ``bloom_capacity``
    (same false-positive rate), and the per-IP limit ``ip_limit`` is split between the
    primaries (at least 1 each), since each counts its own hosts' requests to an address:
    the crawl never exceeds ``max(ip_limit, partitions)`` requests in flight per address.
    """
    if len(clients) == 1:
        return RedisFrontier(clients[0], crawl, **options)
    from crawler.frontier.partitioned import PartitionedFrontier

    n = len(clients)
    if "bloom_capacity" in options:
        options["bloom_capacity"] = -(-options["bloom_capacity"] // n)
    if options.get("ip_limit"):
        options["ip_limit"] = max(1, options["ip_limit"] // n)
    return PartitionedFrontier([RedisFrontier(c, crawl, **options) for c in clients])
