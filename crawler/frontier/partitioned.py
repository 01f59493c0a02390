"""A frontier split over several backends (Redis primaries) by a stable hash of the host.

Everything the frontier keeps about a host (its queue, lease, politeness state, budget,
robots.txt) and the seen-filter bits of its URLs live on the host's partition, so every
operation on one host is one script on one primary, with that primary's atomicity: the
invariants of :class:`~crawler.frontier.base.Frontier` hold per partition and so for the
whole. A worker leases from all partitions in turn. The per-IP concurrency limit is kept
per partition (an address's hosts may sit on several partitions, each counting its own).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import xxhash

from crawler.frontier.base import Entry, Frontier, HostState, Lease, Outcome
from crawler.urls import netloc_of


def partition_of(host: str, partitions: int) -> int:
    """The partition of ``host`` (a netloc, as in ``Entry.host``): stable across processes,
    machines and Python versions (xxh64 of the UTF-8 name, not ``hash()``)."""
    return xxhash.xxh64_intdigest(host.encode("utf-8")) % partitions


class PartitionedFrontier(Frontier):
    """``Frontier`` over ``partitions`` (one per Redis primary), routed by host hash.

    The order of ``partitions`` is part of the crawl's state: every worker must list the
    same backends in the same order. The first partition also holds the crawl-wide
    counters of ``count`` and the seed list (``client``, ``seeds_key``).
    """

    def __init__(self, partitions: Sequence[Frontier]):
        if not partitions:
            raise ValueError("a partitioned frontier needs at least one partition")
        self.partitions = list(partitions)
        self.max_attempts = self.partitions[0].max_attempts
        self._start = 0

    def _of(self, host: str) -> Frontier:
        return self.partitions[partition_of(host, len(self.partitions))]

    @property
    def client(self):
        """The first partition's Redis client (the seed list lives there), if it has one."""
        return getattr(self.partitions[0], "client", None)

    @property
    def seeds_key(self) -> str | None:
        """The first partition's seed list key, if it has one."""
        return getattr(self.partitions[0], "seeds_key", None)

    def add(self, entries: Iterable[Entry]) -> dict[str, int]:
        groups: dict[int, list[Entry]] = defaultdict(list)
        n = len(self.partitions)
        for e in entries:
            groups[partition_of(e.host, n)].append(e)
        counts = {"added": 0, "seen": 0, "budget": 0, "waiting": 0, "moved": 0}
        for index, group in groups.items():
            for name, value in self.partitions[index].add(group).items():
                counts[name] = counts.get(name, 0) + value
        return counts

    def next_ready(self, n: int, ahead: float = 0.0) -> list[Lease]:
        """Leases from every partition in turn, starting one further each call: each gets
        an equal share of ``n``, then partitions that filled theirs get what others left."""
        count = len(self.partitions)
        order = [(self._start + i) % count for i in range(count)]
        self._start = (self._start + 1) % count
        leases: list[Lease] = []
        full = []
        for i, index in enumerate(order):
            share = n // count + (1 if i < n % count else 0)
            if share <= 0:
                full.append(index)
                continue
            got = self.partitions[index].next_ready(share, ahead)
            leases += got
            if len(got) == share:
                full.append(index)
        for index in full:
            if len(leases) >= n:
                break
            leases += self.partitions[index].next_ready(n - len(leases), ahead)
        return leases

    def due_in(self) -> float | None:
        """The soonest of every partition's."""
        waits = [w for w in (p.due_in() for p in self.partitions) if w is not None]
        return min(waits) if waits else None

    def done(self, lease: Lease, outcome: Outcome) -> bool:
        return self._of(lease.host).done(lease, outcome)

    def done_many(self, reports: Sequence[tuple[Lease, Outcome]]) -> list[bool]:
        """Each partition's reports in one call to it; answers in the order given."""
        return self._scatter([lease.host for lease, _ in reports], reports,
                             lambda part, group: part.done_many(group))

    def release_expired(self) -> int:
        return sum(p.release_expired() for p in self.partitions)

    def stats(self) -> dict[str, float]:
        """Every partition's counters and gauges, summed."""
        total: dict[str, float] = defaultdict(int)
        for p in self.partitions:
            for name, value in p.stats().items():
                total[name] += value
        return dict(total)

    def set_host_budget(self, host: str, budget: int) -> None:
        self._of(host).set_host_budget(host, budget)

    def drop_queue(self, host: str) -> int:
        return self._of(host).drop_queue(host)

    def set_host_values(self, values: dict[str, float]) -> None:
        groups: dict[int, dict[str, float]] = defaultdict(dict)
        for host, value in values.items():
            groups[partition_of(host, len(self.partitions))][host] = value
        for index, group in groups.items():
            self.partitions[index].set_host_values(group)

    def seen(self, urls: Sequence[str]) -> list[bool]:
        return self._scatter([netloc_of(url) for url in urls], urls,
                             lambda part, group: part.seen(group))

    def _scatter(self, hosts: list[str], items: Sequence, call) -> list[bool]:
        """``call(partition, its items)`` once for each partition of ``hosts`` (one host an
        item), the answers put back in the order of ``items``."""
        groups: dict[int, list[int]] = defaultdict(list)
        for i, host in enumerate(hosts):
            groups[partition_of(host, len(self.partitions))].append(i)
        out = [False] * len(items)
        for index, positions in groups.items():
            answers = call(self.partitions[index], [items[i] for i in positions])
            for i, answer in zip(positions, answers, strict=True):
                out[i] = answer
        return out

    def robots_get(self, host: str) -> tuple[int, bytes, float] | None:
        return self._of(host).robots_get(host)

    def robots_set(self, host: str, status: int, body: bytes, expires_at: float) -> None:
        self._of(host).robots_set(host, status, body, expires_at)

    def count(self, key: str, n: int = 1) -> None:
        self.partitions[0].count(key, n)

    def host_state(self, host: str) -> HostState | None:
        return self._of(host).host_state(host)

    def pending(self) -> int:
        return sum(p.pending() for p in self.partitions)

    def clear(self) -> None:
        for p in self.partitions:
            p.clear()

    def close(self) -> None:
        for p in self.partitions:
            p.close()

    def now(self) -> float:
        """The first partition's clock."""
        return self.partitions[0].now()
