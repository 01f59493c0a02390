"""Where dedup state lives: exact-text owners, each document's cluster and host, cluster sizes.

``MemoryDedupStore`` serves one process; ``RedisDedupStore`` is shared by all workers.
Both promise the same thing: the first document to claim a text or to be assigned a
cluster keeps it, and a cluster's size counts each document once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod


class DedupStore(ABC):
    """The shared state of the deduplicator."""

    @abstractmethod
    def claim_exact(self, text_key: str, doc_id: str) -> str:
        """The first document id that claimed ``text_key`` (``doc_id`` if it is the first)."""

    @abstractmethod
    def assign(self, doc_id: str, cluster_id: str, host: str) -> str:
        """Put ``doc_id`` in ``cluster_id`` unless it already has a cluster; return its cluster."""

    @abstractmethod
    def lookup(self, doc_id: str) -> tuple[str, str] | None:
        """``(cluster_id, host)`` of an assigned document, or None."""

    @abstractmethod
    def cluster_size(self, cluster_id: str) -> int:
        """How many documents are in the cluster (the first one included)."""

    def claim(
        self, text_key: str | None, doc_id: str
    ) -> tuple[str | None, tuple[str, str] | None]:
        """``claim_exact(text_key, doc_id)`` (None without a key) and ``lookup(doc_id)``
        together (one round trip in Redis)."""
        owner = self.claim_exact(text_key, doc_id) if text_key is not None else None
        return owner, self.lookup(doc_id)

    @abstractmethod
    def count_host(self, host: str, copy: bool) -> tuple[int, int]:
        """Count one more page of ``host`` (a copy of one of its own pages if ``copy``).

        Returns the host's totals ``(pages, copies)``.
        """

    @abstractmethod
    def host_pages(self, host: str) -> int:
        """How many pages of ``host`` were counted by ``count_host``."""

    @abstractmethod
    def count_shared(self, host: str, other: str, backlink: bool,
                     other_backlink: bool = False) -> PairCounts:
        """A page of ``host`` arrived as a copy of a page of ``other`` (another host); it
        links to that page if ``backlink``, that page links to it if ``other_backlink``.
        Returns both directions' totals."""


class PairCounts(tuple):
    """Evidence about two hosts that share pages, as seen from ``host``'s side:
    ``(shared, shared_back, backlinks, backlinks_back, later, later_back)``: pages of each
    in a cluster with the other's, pages of each linking to their twin on the other, and
    copies of each that arrived after their twin."""

    __slots__ = ()

    shared = property(lambda self: self[0])
    other_shared = property(lambda self: self[1])
    backlinks = property(lambda self: self[2])
    other_backlinks = property(lambda self: self[3])
    later = property(lambda self: self[4])
    other_later = property(lambda self: self[5])

    def flipped(self) -> PairCounts:
        """The same evidence seen from the other host."""
        return PairCounts((self[1], self[0], self[3], self[2], self[5], self[4]))


class MemoryDedupStore(DedupStore):
    """Dedup state in dictionaries of this process."""

    def __init__(self) -> None:
        self._exact: dict[str, str] = {}
        self._docs: dict[str, tuple[str, str]] = {}
        self._sizes: dict[str, int] = {}
        self._hosts: dict[str, tuple[int, int]] = {}
        self._pairs: dict[tuple[str, str, str], int] = {}

    def claim_exact(self, text_key: str, doc_id: str) -> str:
        return self._exact.setdefault(text_key, doc_id)

    def assign(self, doc_id: str, cluster_id: str, host: str) -> str:
        known = self._docs.get(doc_id)
        if known is not None:
            return known[0]
        self._docs[doc_id] = (cluster_id, host)
        self._sizes[cluster_id] = self._sizes.get(cluster_id, 0) + 1
        return cluster_id

    def lookup(self, doc_id: str) -> tuple[str, str] | None:
        return self._docs.get(doc_id)

    def cluster_size(self, cluster_id: str) -> int:
        return self._sizes.get(cluster_id, 0)

    def count_host(self, host: str, copy: bool) -> tuple[int, int]:
        pages, copies = self._hosts.get(host, (0, 0))
        totals = (pages + 1, copies + int(copy))
        self._hosts[host] = totals
        return totals

    def host_pages(self, host: str) -> int:
        return self._hosts.get(host, (0, 0))[0]

    def count_shared(self, host: str, other: str, backlink: bool,
                     other_backlink: bool = False) -> PairCounts:
        pairs = self._pairs
        for key, n in (((host, other, "shared"), 1), ((other, host, "shared"), 1),
                       ((host, other, "back"), int(backlink)),
                       ((other, host, "back"), int(other_backlink)),
                       ((host, other, "later"), 1)):
            pairs[key] = pairs.get(key, 0) + n
        return PairCounts(pairs.get((a, b, kind), 0) for kind in ("shared", "back", "later")
                          for a, b in ((host, other), (other, host)))


class RedisDedupStore(DedupStore):
    """Dedup state in Redis hashes under ``prefix``, shared by every worker."""

    def __init__(self, client, prefix: str = "dedup"):
        self.redis = client
        self._exact = f"{prefix}:exact"
        self._docs = f"{prefix}:docs"
        self._sizes = f"{prefix}:sizes"
        self._hosts = f"{prefix}:hosts"
        self._pairs = f"{prefix}:pairs"
        self._assign = client.register_script(_ASSIGN)

    @classmethod
    def from_url(cls, redis_url: str, prefix: str = "dedup") -> RedisDedupStore:
        import redis

        return cls(redis.Redis.from_url(redis_url), prefix)

    def claim_exact(self, text_key: str, doc_id: str) -> str:
        pipe = self.redis.pipeline()
        pipe.hsetnx(self._exact, text_key, doc_id)
        pipe.hget(self._exact, text_key)
        return pipe.execute()[1].decode("utf-8")

    def claim(
        self, text_key: str | None, doc_id: str
    ) -> tuple[str | None, tuple[str, str] | None]:
        pipe = self.redis.pipeline()
        if text_key is not None:
            pipe.hsetnx(self._exact, text_key, doc_id)
            pipe.hget(self._exact, text_key)
        pipe.hget(self._docs, doc_id)
        *claimed, known = pipe.execute()
        owner = claimed[1].decode("utf-8") if claimed else None
        return owner, _parse_doc(known)

    def assign(self, doc_id: str, cluster_id: str, host: str) -> str:
        value = self._assign(keys=[self._docs, self._sizes],
                             args=[doc_id, f"{cluster_id} {host}", cluster_id])
        return _parse_doc(value)[0]

    def lookup(self, doc_id: str) -> tuple[str, str] | None:
        return _parse_doc(self.redis.hget(self._docs, doc_id))

    def cluster_size(self, cluster_id: str) -> int:
        return int(self.redis.hget(self._sizes, cluster_id) or 0)

    def count_host(self, host: str, copy: bool) -> tuple[int, int]:
        pipe = self.redis.pipeline()
        pipe.hincrby(self._hosts, f"{host} pages", 1)
        pipe.hincrby(self._hosts, f"{host} copies", int(copy))
        pages, copies = pipe.execute()
        return int(pages), int(copies)

    def host_pages(self, host: str) -> int:
        return int(self.redis.hget(self._hosts, f"{host} pages") or 0)

    def count_shared(self, host: str, other: str, backlink: bool,
                     other_backlink: bool = False) -> PairCounts:
        pipe = self.redis.pipeline()
        pipe.hincrby(self._pairs, f"{host} {other} shared", 1)
        pipe.hincrby(self._pairs, f"{other} {host} shared", 1)
        pipe.hincrby(self._pairs, f"{host} {other} back", int(backlink))
        pipe.hincrby(self._pairs, f"{other} {host} back", int(other_backlink))
        pipe.hincrby(self._pairs, f"{host} {other} later", 1)
        pipe.hget(self._pairs, f"{other} {host} later")
        return PairCounts(int(v or 0) for v in pipe.execute())


#: assign in one round trip: the first cluster given to a document stays, sizes count it once
_ASSIGN = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
  return ARGV[2]
end
return redis.call('HGET', KEYS[1], ARGV[1])
"""


def _parse_doc(value: bytes | None) -> tuple[str, str] | None:
    """``(cluster_id, host)`` from a stored ``"cluster host"`` value."""
    if value is None:
        return None
    cluster_id, _, host = value.decode("utf-8").partition(" ")
    return cluster_id, host
