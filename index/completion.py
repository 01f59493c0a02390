"""A prefix index for completion: the top ``k`` keys by count among those starting with a
prefix, in ``O(log n + k log n)`` whatever the prefix.

Keys are sorted, so the keys with a prefix are one range (two binary searches); a segment
tree over their counts holds, per node, the position of its largest count, so the top
``k`` of the range come out of a heap of nodes, each popped node pushing at most its two
children. A one-letter prefix that matches most keys costs what a long one does; a plain
walk of the matching keys (the term-dictionary walk alone) costs time in proportion to
how many match (``bench/complete.py``: p95 96 ms at 100,000 titles, against the target
of 20 ms).
"""

from __future__ import annotations

import bisect
import heapq
import threading
import time
from collections.abc import Callable, Hashable, Iterable

__all__ = ["PrefixIndex", "RebuiltPrefixIndex"]


class PrefixIndex:
    """Keys with counts; ``top(prefix, k)``: the ``k`` most counted keys with ``prefix``,
    ties by key, immutable once built."""

    def __init__(self, items: Iterable[tuple[str, int]]):
        pairs = sorted(items)
        self.keys = [k for k, _ in pairs]
        self.counts = [c for _, c in pairs]
        n = len(pairs)
        size = 1
        while size < max(1, n):
            size *= 2
        self._size = size
        # tree[node] = position of the best key under node (-1: empty); best = highest
        # count, then the smaller position (the smaller key).
        tree = [-1] * (2 * size)
        tree[size : size + n] = range(n)
        for node in range(size - 1, 0, -1):
            tree[node] = self._better(tree[2 * node], tree[2 * node + 1])
        self._tree = tree

    def __len__(self) -> int:
        return len(self.keys)

    def _better(self, a: int, b: int) -> int:
        if a < 0:
            return b
        if b < 0:
            return a
        return a if self.counts[a] >= self.counts[b] else b

    def top(self, prefix: str, k: int) -> list[tuple[str, int]]:
        """The ``k`` most counted keys starting with ``prefix``, as ``(key, count)``."""
        lo = bisect.bisect_left(self.keys, prefix)
        hi = bisect.bisect_left(self.keys, prefix + "\U0010ffff")
        if lo >= hi or k < 1:
            return []
        heap: list[tuple[int, int, int]] = []
        for node in self._cover(lo, hi):
            best = self._tree[node]
            heap.append((-self.counts[best], best, node))
        heapq.heapify(heap)
        out: list[tuple[str, int]] = []
        while heap and len(out) < k:
            _, best, node = heapq.heappop(heap)
            if node >= self._size:  # a leaf: one key
                out.append((self.keys[best], self.counts[best]))
                continue
            for child in (2 * node, 2 * node + 1):
                pos = self._tree[child]
                if pos >= 0:
                    heapq.heappush(heap, (-self.counts[pos], pos, child))
        return out

    def _cover(self, lo: int, hi: int) -> list[int]:
        """The tree nodes exactly covering positions ``[lo, hi)``."""
        nodes = []
        lo += self._size
        hi += self._size
        while lo < hi:
            if lo & 1:
                nodes.append(lo)
                lo += 1
            if hi & 1:
                hi -= 1
                nodes.append(hi)
            lo //= 2
            hi //= 2
        return nodes


class RebuiltPrefixIndex:
    """A :class:`PrefixIndex` kept for an index that changes: after its generation changes
    it is rebuilt once the last build is ``rebuild_share`` builds' time old, so rebuilding
    takes at most 1/``rebuild_share`` of a process's time (a 1.2 s build at 100,000 titles
    and the default 50: once a minute). Thread-safe."""

    def __init__(self, rebuild_share: float = 50):
        self.rebuild_share = rebuild_share
        # (generation, prefix index, built at, seconds the build took)
        self._current: tuple[Hashable, PrefixIndex, float, float] | None = None
        self._lock = threading.Lock()

    def get(self, generation: Hashable,
            items: Callable[[], Iterable[tuple[str, int]]]) -> PrefixIndex:
        """The prefix index, built from ``items()`` if none is, or if ``generation`` is not
        the last build's and that build is old enough."""
        now = time.monotonic()
        with self._lock:
            current = self._current
            if current is None or (
                current[0] != generation
                and now - current[2] >= current[3] * self.rebuild_share
            ):
                built = PrefixIndex(items())
                current = (generation, built, now, time.monotonic() - now)
                self._current = current
            return current[1]
