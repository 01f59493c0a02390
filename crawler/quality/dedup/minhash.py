"""MinHash signatures over word shingles and a MinHash LSH index (datasketch).

Signatures are the ``affine32`` MinHash of datasketch, computed for a whole shingle array in
one NumPy expression instead of datasketch's per-value Python hashing; ``MinHasher`` gives
the same values as ``datasketch.MinHash.update_batch`` fed the 32-bit folded shingle hashes.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable

import numpy as np
from datasketch import LeanMinHash, MinHash, MinHashLSH

from crawler.quality.dedup.text import minhash_values

SCHEME = "affine32"


class MinHasher:
    """Computes ``num_perm``-value MinHash signatures of shingle-hash arrays."""

    def __init__(self, num_perm: int = 128, seed: int = 1):
        self.num_perm = num_perm
        self.seed = seed
        a, b = MinHash(num_perm=num_perm, seed=seed, scheme=SCHEME).permutations
        self.a = a.astype(np.uint32)
        self.b = b.astype(np.uint32)

    def signature(self, shingles: np.ndarray) -> LeanMinHash:
        """The MinHash of a set given as 64-bit element hashes (duplicates are harmless)."""
        return self.from_values(minhash_values(shingles, self.a, self.b))

    def from_values(self, values: np.ndarray) -> LeanMinHash:
        """The signature of ``minhash_values`` computed with this hasher's ``a`` and ``b``."""
        return LeanMinHash(seed=self.seed, hashvalues=values, scheme=SCHEME)

    def from_bytes(self, data: bytes) -> LeanMinHash:
        """A signature stored with ``signature(...).hashvalues.tobytes()``."""
        return LeanMinHash(
            seed=self.seed, hashvalues=np.frombuffer(data, dtype=np.uint32), scheme=SCHEME
        )


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
        self.lsh = MinHashLSH(
            threshold=candidate_threshold, num_perm=self.hasher.num_perm, storage_config=storage
        )
        self._signatures: dict[str, LeanMinHash] = {}

    def _stored(self, keys: Iterable[str]) -> dict[str, LeanMinHash]:
        keys = list(keys)
        if self._redis is None:
            return {k: self._signatures[k] for k in keys if k in self._signatures}
        values = self._redis.hmget(self._sig_key, keys) if keys else []
        return {
            k: self.hasher.from_bytes(v) for k, v in zip(keys, values, strict=True) if v is not None
        }

    def _band_keys(self, signature: LeanMinHash) -> list[bytes]:
        return [self.lsh._H(signature.hashvalues[start:end]) for start, end in self.lsh.hashranges]

    def _redis_query(self, signature: LeanMinHash) -> list[str]:
        # datasketch asks Redis one band at a time; one pipeline asks for all bands at once
        pipe = self._redis.pipeline(transaction=False)
        for band, table in zip(self._band_keys(signature), self.lsh.hashtables, strict=True):
            pipe.smembers(table.redis_key(band))
        found: set[bytes] = set().union(*pipe.execute())
        return [pickle.loads(key) for key in found]

    def _redis_insert(self, key: str, signature: LeanMinHash) -> None:
        pipe = self._redis.pipeline(transaction=False)
        self._queue_insert(pipe, key, signature, self._band_keys(signature))
        pipe.execute()

    def _queue_insert(self, pipe, key: str, signature: LeanMinHash, bands: list[bytes]) -> None:
        # the same keys and values as datasketch's Redis storage, written in one round trip
        pickled = pickle.dumps(key)
        pipe.hset(self._sig_key, key, signature.hashvalues.tobytes())
        keys = self.lsh.keys
        pipe.hset(keys._name, pickled, keys.redis_key(pickled))
        pipe.rpush(keys.redis_key(pickled), *bands)
        for band, table in zip(bands, self.lsh.hashtables, strict=True):
            pipe.hset(table._name, band, table.redis_key(band))
            pipe.sadd(table.redis_key(band), pickled)

    def match(self, signature: LeanMinHash) -> tuple[str, float] | None:
        """The indexed key most similar to ``signature`` if at least ``threshold``, else None.

        Of equally similar keys, the smallest wins, so every worker picks the same one.
        """
        if self._redis is None:
            candidates = self.lsh.query(signature)
        else:
            candidates = self._redis_query(signature)
        return self._best(signature, candidates)

    def match_and_add(self, key: str, signature: LeanMinHash) -> tuple[str, float] | None:
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

    def _best(self, signature: LeanMinHash, candidates: Iterable[str]) -> tuple[str, float] | None:
        best: tuple[str, float] | None = None
        for key, stored in self._stored(candidates).items():
            similarity = signature.jaccard(stored)
            if similarity < self.threshold:
                continue
            if best is None or similarity > best[1] or (similarity == best[1] and key < best[0]):
                best = (key, similarity)
        return best

    def add(self, key: str, signature: LeanMinHash) -> None:
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
