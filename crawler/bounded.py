"""Bounded in-process memory: the two shapes the crawler's caches use.

A worker crawls for days; whatever it keeps per URL, page or host must stop growing at a
cap (the caps are settings in ``crawler/settings.py``, or constants next to their use), or
its RSS grows with the crawl. The frontier in Redis is the source of truth; what a worker
forgets it learns again or does without.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Hashable


def bound(entries: OrderedDict, cap: int) -> None:
    """Forget the oldest entries of ``entries`` beyond ``cap``.

    An ``OrderedDict``, not a dict: deleting a dict's first key (``next(iter(d))``) leaves
    a hole that every later ``next(iter(d))`` walks over until the dict is resized, which
    costs ~100 us a deletion in a full 100,000-entry dict; ``popitem(last=False)`` is O(1).
    """
    while len(entries) > cap:
        entries.popitem(last=False)


class RecentSet:
    """The keys added lately, at most ``cap``: two generations of sets, the older dropped
    when the newer reaches ``cap // 2``. A key stays at least ``cap // 2`` additions; O(1)
    per check, about a set entry per key (half an ``OrderedDict``'s)."""

    def __init__(self, cap: int):
        if cap < 2:
            raise ValueError("cap must be >= 2")
        self.cap = cap
        self._new: set = set()
        self._old: set = set()

    def __contains__(self, key: Hashable) -> bool:
        return key in self._new or key in self._old

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def add(self, key: Hashable) -> bool:
        """Add ``key``; False when it was there already (then nothing changes)."""
        if key in self._new or key in self._old:
            return False
        self._new.add(key)
        if len(self._new) >= self.cap // 2:
            self._old, self._new = self._new, set()
        return True


class RecentKeys:
    """The 64-bit keys (hashes, uniformly spread) added lately, in memory fixed when built:
    two generations of Bloom filters of ``per_generation`` keys each, the older cleared for
    reuse when the newer has had ``per_generation`` additions, so a key stays at least
    ``per_generation`` additions and at most twice that. ``bits_per_key`` bits a key per
    filter (4 bytes at 32, where an int in a set takes ~70 and a set only grows); a key
    never added, or forgotten, is reported present with a probability of ~0.05 % per full
    filter at 32 bits (~0.5 % at 16; measured in tests/test_bounded.py). Each filter is
    blocked: a key sets 8 bits of one 64-bit word, so a check reads one word of each."""

    _MIX = 0x9E3779B97F4A7C15  # Fibonacci hashing: the mask's bits independent of the word

    def __init__(self, per_generation: int, bits_per_key: int = 32):
        if per_generation < 1 or bits_per_key < 8:
            raise ValueError("per_generation must be >= 1 and bits_per_key >= 8")
        self.per_generation = per_generation
        self._words = max(1, per_generation * bits_per_key // 64)
        self._new = array("Q", bytes(8 * self._words))
        self._old = array("Q", bytes(8 * self._words))
        self._added = 0

    @property
    def nbytes(self) -> int:
        """Bytes the two filters hold (fixed)."""
        return 2 * 8 * self._words

    def _slot(self, key: int) -> tuple[int, int]:
        h = (key * self._MIX) & 0xFFFF_FFFF_FFFF_FFFF
        mask = 0
        for shift in range(0, 48, 6):
            mask |= 1 << ((h >> shift) & 63)
        return key % self._words, mask

    def __contains__(self, key: int) -> bool:
        word, mask = self._slot(key)
        return self._new[word] & mask == mask or self._old[word] & mask == mask

    def add(self, key: int) -> bool:
        """Add ``key``; False when it was (or seems) there already, then nothing changes."""
        word, mask = self._slot(key)
        if self._new[word] & mask == mask or self._old[word] & mask == mask:
            return False
        self._new[word] |= mask
        self._added += 1
        if self._added >= self.per_generation:
            self._old, self._new = self._new, self._old
            self._new[:] = array("Q", bytes(8 * self._words))
            self._added = 0
        return True


class RecentCounts:
    """Counts of the keys counted lately: two generations of plain dicts, the older dropped
    when the newer holds ``per_generation`` keys; a key counted again moves to the newer
    with its count. A key stays until at least ``per_generation`` keys were counted after
    it (at most ``2 * per_generation`` are held); a dict entry a key, about half an
    ``OrderedDict``'s (no linked node, no move to the end)."""

    def __init__(self, per_generation: int):
        if per_generation < 1:
            raise ValueError("per_generation must be >= 1")
        self.per_generation = per_generation
        self._new: dict[Hashable, int] = {}
        self._old: dict[Hashable, int] = {}

    def __len__(self) -> int:
        return len(self._new) + len(self._old)

    def get(self, key: Hashable, default: int = 0) -> int:
        """The count of ``key`` (``default`` if not held)."""
        count = self._new.get(key)
        return self._old.get(key, default) if count is None else count

    def add(self, key: Hashable, n: int = 1) -> int:
        """Count ``key`` ``n`` more times; its count."""
        count = self._new.get(key)
        if count is None:
            count = self._old.pop(key, 0)
            if len(self._new) >= self.per_generation:
                self._old, self._new = self._new, {}
        count += n
        self._new[key] = count
        return count
