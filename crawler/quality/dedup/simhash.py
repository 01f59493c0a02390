"""64-bit SimHash (Charikar) and a permuted-table index for Hamming distance <= k (Manku et al.).

The fingerprint is the sign of the weighted sum of the features' hash bits, computed for
all features at once with NumPy. The index splits the 64 bits into ``blocks`` blocks; two
fingerprints within distance ``k`` differ in at most ``k`` blocks, so they agree exactly on
some choice of ``blocks - k`` blocks. One table per such choice, keyed by those blocks
(the masked fingerprint), finds every candidate with exact lookups; candidates are then
checked with a popcount.
"""

from __future__ import annotations

from itertools import combinations, pairwise

import numpy as np

_BIT_WEIGHTS = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))


def simhash(features: np.ndarray, weights: np.ndarray | None = None) -> int:
    """The 64-bit SimHash of 64-bit feature hashes (each weighted 1 unless ``weights``)."""
    if len(features) == 0:
        return 0
    bits = np.unpackbits(
        features.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little"
    )
    if weights is None:
        ones = bits.sum(axis=0, dtype=np.int64)
        positive = 2 * ones > len(features)
    else:
        w = weights.astype(np.float64)
        positive = 2 * (w @ bits) > w.sum()
    return int((_BIT_WEIGHTS[positive]).sum()) if positive.any() else 0


def hamming(a: int, b: int) -> int:
    """The number of differing bits of two 64-bit fingerprints."""
    return (a ^ b).bit_count()


def _block_masks(blocks: int) -> list[int]:
    edges = np.linspace(0, 64, blocks + 1).round().astype(int)
    return [((1 << int(hi)) - 1) ^ ((1 << int(lo)) - 1) for lo, hi in pairwise(edges)]


class SimHashIndex:
    """Fingerprints by key; ``match`` finds the nearest within Hamming distance ``k``.

    Uses C(blocks, k) tables; every fingerprint within distance ``k`` is found (no misses
    from the index itself). With ``redis`` (a ``redis.Redis``) the tables live in Redis
    under ``basename`` and are shared by every worker.
    """

    def __init__(self, k: int = 3, blocks: int = 6, redis=None, basename: str = "dedup:simhash"):
        if not 0 <= k < blocks <= 64:
            raise ValueError("need 0 <= k < blocks <= 64")
        self.k = k
        block_masks = _block_masks(blocks)
        self.masks = [
            sum(block_masks[i] for i in chosen)
            for chosen in combinations(range(blocks), blocks - k)
        ]
        self._redis = redis
        self._basename = basename
        self._tables: list[dict[int, list[tuple[int, str]]]] = [{} for _ in self.masks]
        self._keys: set[str] = set()

    def _candidates(self, fingerprint: int) -> set[tuple[int, str]]:
        if self._redis is None:
            found: set[tuple[int, str]] = set()
            for mask, table in zip(self.masks, self._tables, strict=True):
                found.update(table.get(fingerprint & mask, ()))
            return found
        pipe = self._redis.pipeline(transaction=False)
        for t, mask in enumerate(self.masks):
            pipe.smembers(f"{self._basename}:{t}:{fingerprint & mask:x}")
        found = set()
        for members in pipe.execute():
            for member in members:
                fp, _, key = member.decode("utf-8").partition(":")
                found.add((int(fp, 16), key))
        return found

    def match(self, fingerprint: int) -> tuple[str, int] | None:
        """The indexed key with the nearest fingerprint if within ``k`` bits, else None."""
        best: tuple[str, int] | None = None
        for fp, key in self._candidates(fingerprint):
            distance = hamming(fp, fingerprint)
            if distance <= self.k and (best is None or (distance, key) < (best[1], best[0])):
                best = (key, distance)
        return best

    def match_and_add(self, key: str, fingerprint: int) -> tuple[str, int] | None:
        """``match(fingerprint)``, then ``add(key, fingerprint)``."""
        found = self.match(fingerprint)
        self.add(key, fingerprint)
        return found

    def add(self, key: str, fingerprint: int) -> None:
        """Index ``fingerprint`` under ``key``; a key already indexed is left as it was."""
        if self._redis is None:
            if key in self._keys:
                return
            self._keys.add(key)
            for mask, table in zip(self.masks, self._tables, strict=True):
                table.setdefault(fingerprint & mask, []).append((fingerprint, key))
            return
        if not self._redis.sadd(f"{self._basename}:keys", key):
            return
        member = f"{fingerprint:x}:{key}"
        pipe = self._redis.pipeline(transaction=False)
        for t, mask in enumerate(self.masks):
            pipe.sadd(f"{self._basename}:{t}:{fingerprint & mask:x}", member)
        pipe.execute()

    def __len__(self) -> int:
        if self._redis is None:
            return len(self._keys)
        return self._redis.scard(f"{self._basename}:keys")
