"""MinHash signatures over word shingles and a MinHash LSH index.

Signatures are the ``affine32`` MinHash of datasketch, computed for a whole shingle array in
one NumPy expression instead of datasketch's per-value Python hashing; ``MinHasher`` gives
the same values as ``datasketch.MinHash.update_batch`` fed the 32-bit folded shingle hashes.

datasketch itself is imported only by the index with datasketch's Redis layout: its package
imports SciPy (``scipy.integrate``, for the LSH bands), 0.34 s of CPU at every crawl's
start. The in-memory index has the same bands and candidates without it
(``lsh_params``, ``MemoryLSH``), and a ``Signature`` is datasketch's ``Signature``
reduced to what the index reads (``tests/test_dedup.py`` checks all three against
datasketch).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable

import numpy as np

from crawler.quality.dedup.text import minhash_values

SCHEME = "affine32"


class Signature:
    """A page's MinHash: its ``hashvalues`` (``num_perm`` unsigned 32-bit values) under
    the permutations of ``seed``; datasketch's ``Signature`` as the index reads it."""

    __slots__ = ("hashvalues", "seed")
    scheme = SCHEME

    def __init__(self, seed: int, hashvalues: np.ndarray):
        self.seed = seed
        self.hashvalues = np.asarray(hashvalues).astype(np.uint32)

    def __len__(self) -> int:
        return len(self.hashvalues)

    def jaccard(self, other: Signature) -> float:
        """The estimated Jaccard similarity of the two sets (the share of equal values)."""
        if other.seed != self.seed or len(other) != len(self):
            raise ValueError("signatures of different permutations")
        return float(np.count_nonzero(self.hashvalues == other.hashvalues)) / float(len(self))


class MinHasher:
    """Computes ``num_perm``-value MinHash signatures of shingle-hash arrays."""

    def __init__(self, num_perm: int = 128, seed: int = 1):
        self.num_perm = num_perm
        self.seed = seed
        # datasketch's affine32 permutations of ``seed``: odd multipliers, any offsets
        gen = np.random.RandomState(seed)
        self.a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
        self.b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)

    def signature(self, shingles: np.ndarray) -> Signature:
        """The MinHash of a set given as 64-bit element hashes (duplicates are harmless)."""
        return self.from_values(minhash_values(shingles, self.a, self.b))

    def from_values(self, values: np.ndarray) -> Signature:
        """The signature of ``minhash_values`` computed with this hasher's ``a`` and ``b``."""
        return Signature(self.seed, values)

    def from_bytes(self, data: bytes) -> Signature:
        """A signature stored with ``signature(...).hashvalues.tobytes()``."""
        return Signature(self.seed, np.frombuffer(data, dtype=np.uint32))


def lsh_params(threshold: float, num_perm: int, false_positive_weight: float = 0.5,
               false_negative_weight: float = 0.5) -> tuple[int, int]:
    """The bands ``b`` and rows ``r`` (``b * r <= num_perm``) datasketch's ``MinHashLSH``
    picks for ``threshold``: least weighted sum of the false positive probability (the
    integral of ``1 - (1 - s^r)^b`` below the threshold) and the false negative one (of
    ``(1 - s^r)^b`` above it). Integrated by Gauss-Legendre, exact for these polynomials
    (degree ``b * r``), where datasketch calls SciPy's ``quad``."""
    nodes, weights = np.polynomial.legendre.leggauss(num_perm // 2 + 1)
    below = threshold * (nodes + 1) / 2
    above = threshold + (1 - threshold) * (nodes + 1) / 2
    best, params = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = threshold / 2 * float(weights @ (1 - (1 - below**r) ** b))
            fn = (1 - threshold) / 2 * float(weights @ ((1 - above**r) ** b))
            error = fp * false_positive_weight + fn * false_negative_weight
            if error < best:
                best, params = error, (b, r)
    return params


#: A bucket of the in-memory LSH holds up to this many keys as a tuple, more as a set.
SMALL_BUCKET = 16


class MemoryLSH:
    """datasketch's in-memory ``MinHashLSH``: ``b`` bands of ``r`` values each
    (``lsh_params``); the keys whose signature has one band equal to a query's are its
    candidates.

    A bucket of up to ``SMALL_BUCKET`` keys is a tuple, not a set: nearly every bucket
    holds one key, and a tuple of strings is not tracked by the garbage collector, where a
    set is. A crawl keeps ``b`` buckets a page, and as sets they were a third of what its
    full collections walked, each of which stops the reactor (docs/crawl-speed.md)."""

    def __init__(self, threshold: float, num_perm: int):
        self.h = num_perm
        self.b, self.r = lsh_params(threshold, num_perm)
        self.hashranges = [(i * self.r, (i + 1) * self.r) for i in range(self.b)]
        self.byteranges = [(4 * start, 4 * end) for start, end in self.hashranges]
        self.hashtables: list[dict[bytes, tuple[str, ...] | set[str]]] = [
            {} for _ in range(self.b)]

    def _bands(self, signature: Signature) -> list[bytes]:
        if len(signature) != self.h:
            raise ValueError(f"expecting a signature of {self.h} values, got {len(signature)}")
        # the bytes of each band, sliced from the signature's bytes (the same bytes as each
        # band's array's tobytes(), without a NumPy view a band)
        data = signature.hashvalues.tobytes()
        return [data[start:end] for start, end in self.byteranges]

    def insert(self, key: str, signature: Signature) -> None:
        for band, table in zip(self._bands(signature), self.hashtables, strict=True):
            bucket = table.get(band, ())
            if key in bucket:
                continue
            if len(bucket) < SMALL_BUCKET:
                table[band] = (*bucket, key)
            elif type(bucket) is tuple:
                table[band] = {*bucket, key}
            else:
                bucket.add(key)

    def query(self, signature: Signature) -> list[str]:
        found: set[str] = set()
        for band, table in zip(self._bands(signature), self.hashtables, strict=True):
            found.update(table.get(band, ()))
        return list(found)


def redis_storage_config(redis_url: str, basename: bytes) -> dict:
    """A datasketch ``storage_config`` keeping LSH buckets in the Redis at ``redis_url``.

    datasketch builds its client from ``redis.Redis(**params)``, so the URL is turned into
    keyword arguments (unix sockets and TLS included).
    """
    from redis.connection import SSLConnection, UnixDomainSocketConnection, parse_url

    params = parse_url(redis_url)
    connection_class = params.pop("connection_class", None)
    if connection_class is UnixDomainSocketConnection:
        params["unix_socket_path"] = params.pop("path")
    elif connection_class is SSLConnection:
        params["ssl"] = True
    return {"type": "redis", "basename": basename, "redis": params}


class MinHashIndex:
    """MinHash LSH over signatures; ``match`` returns the most similar indexed key or None.

    LSH bands are tuned for ``candidate_threshold`` (default ``threshold - 0.1``, so copies
    near the threshold are not lost to band misses) and candidates are confirmed by the
    estimated Jaccard similarity (>= ``threshold``): a bucket collision alone never matches.
    With a ``redis_url`` the buckets and the stored signatures live in Redis under
    ``basename`` and are shared by every worker.
    """

    def __init__(
        self,
        threshold: float = 0.7,
        num_perm: int = 128,
        candidate_threshold: float | None = None,
        redis_url: str | None = None,
        basename: str = "dedup:minhash",
        hasher: MinHasher | None = None,
    ):
        self.threshold = threshold
        self.hasher = hasher or MinHasher(num_perm=num_perm)
        storage = None
        self._redis = None
        self._sig_key = f"{basename}:sig"
        if redis_url:
            import redis

            storage = redis_storage_config(redis_url, basename.encode("utf-8"))
            self._redis = redis.Redis.from_url(redis_url)
        if candidate_threshold is None:
            candidate_threshold = max(0.05, threshold - 0.1)
        if storage is None:
            self.lsh = MemoryLSH(candidate_threshold, self.hasher.num_perm)
        else:  # datasketch's Redis layout, written and read by datasketch's own keys
            from datasketch import MinHashLSH

            self.lsh = MinHashLSH(threshold=candidate_threshold, num_perm=self.hasher.num_perm,
                                  storage_config=storage)
        self._signatures: dict[str, Signature] = {}

    def _stored(self, keys: Iterable[str]) -> dict[str, Signature]:
        keys = list(keys)
        if self._redis is None:
            return {k: self._signatures[k] for k in keys if k in self._signatures}
        values = self._redis.hmget(self._sig_key, keys) if keys else []
        return {
            k: self.hasher.from_bytes(v) for k, v in zip(keys, values, strict=True) if v is not None
        }

    def _band_keys(self, signature: Signature) -> list[bytes]:
        return [self.lsh._H(signature.hashvalues[start:end]) for start, end in self.lsh.hashranges]

    def _redis_query(self, signature: Signature) -> list[str]:
        # datasketch asks Redis one band at a time; one pipeline asks for all bands at once
        pipe = self._redis.pipeline(transaction=False)
        for band, table in zip(self._band_keys(signature), self.lsh.hashtables, strict=True):
            pipe.smembers(table.redis_key(band))
        found: set[bytes] = set().union(*pipe.execute())
        return [pickle.loads(key) for key in found]

    def _redis_insert(self, key: str, signature: Signature) -> None:
        pipe = self._redis.pipeline(transaction=False)
        self._queue_insert(pipe, key, signature, self._band_keys(signature))
        pipe.execute()

    def _queue_insert(self, pipe, key: str, signature: Signature, bands: list[bytes]) -> None:
        # the same keys and values as datasketch's Redis storage, written in one round trip
        pickled = pickle.dumps(key)
        pipe.hset(self._sig_key, key, signature.hashvalues.tobytes())
        keys = self.lsh.keys
        pipe.hset(keys._name, pickled, keys.redis_key(pickled))
        pipe.rpush(keys.redis_key(pickled), *bands)
        for band, table in zip(bands, self.lsh.hashtables, strict=True):
            pipe.hset(table._name, band, table.redis_key(band))
            pipe.sadd(table.redis_key(band), pickled)

    def match(self, signature: Signature) -> tuple[str, float] | None:
        """The indexed key most similar to ``signature`` if at least ``threshold``, else None.

        Of equally similar keys, the smallest wins, so every worker picks the same one.
        """
        if self._redis is None:
            candidates = self.lsh.query(signature)
        else:
            candidates = self._redis_query(signature)
        return self._best(signature, candidates)

    def match_and_add(self, key: str, signature: Signature) -> tuple[str, float] | None:
        """``match(signature)``, then ``add(key, signature)``: in Redis the bucket reads and
        the writes go in one round trip (plus one to read the candidates' signatures)."""
        if self._redis is None:
            found = self.match(signature)
            self.add(key, signature)
            return found
        bands = self._band_keys(signature)
        pipe = self._redis.pipeline(transaction=False)
        for band, table in zip(bands, self.lsh.hashtables, strict=True):
            pipe.smembers(table.redis_key(band))
        self._queue_insert(pipe, key, signature, bands)
        found: set[bytes] = set().union(*pipe.execute()[: len(bands)])
        candidates = [k for k in map(pickle.loads, found) if k != key]
        return self._best(signature, candidates)

    def _best(self, signature: Signature, candidates: Iterable[str]) -> tuple[str, float] | None:
        best: tuple[str, float] | None = None
        for key, stored in self._stored(candidates).items():
            similarity = signature.jaccard(stored)
            if similarity < self.threshold:
                continue
            if best is None or similarity > best[1] or (similarity == best[1] and key < best[0]):
                best = (key, similarity)
        return best

    def add(self, key: str, signature: Signature) -> None:
        """Index ``signature`` under ``key`` (callers add a key once: ``Deduplicator`` adds
        only documents it has not seen)."""
        if self._redis is None:
            if key in self._signatures:
                return
            self._signatures[key] = signature
            self.lsh.insert(key, signature)
            return
        self._redis_insert(key, signature)

    def __len__(self) -> int:
        if self._redis is None:
            return len(self._signatures)
        return self._redis.hlen(self._sig_key)
