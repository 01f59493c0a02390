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
        # eight 6-bit fields of h, each a bit of the mask: written out, not a loop (a loop
        # was most of a key's time; a page's links are each checked against one)
        mask = (1 << (h & 63) | 1 << (h >> 6 & 63) | 1 << (h >> 12 & 63)
                | 1 << (h >> 18 & 63) | 1 << (h >> 24 & 63) | 1 << (h >> 30 & 63)
                | 1 << (h >> 36 & 63) | 1 << (h >> 42 & 63))
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
    """Counts of the 64-bit keys (hashes, uniformly spread) counted lately, in memory fixed
    when built: two generations of open-addressing tables (``array`` of keys and of 32-bit
    counts, ``2 * per_generation`` slots each, 12 bytes a slot), the older cleared for reuse
    when the newer holds ``per_generation`` keys; a key counted again moves to the newer
    with its count. A key stays until at least ``per_generation`` keys were counted after
    it (at most ``2 * per_generation`` are held). Counts are exact: a slot holds the key
    itself (keys ``0`` and ``2**64 - 1`` share one, ~1 in 2**63 a pair). 24 bytes a key
    held, against ~80 for a dict entry with its int, and nothing grows."""

    _EMPTY = 0
    _MASK = 0xFFFF_FFFF_FFFF_FFFF

    def __init__(self, per_generation: int):
        if per_generation < 1:
            raise ValueError("per_generation must be >= 1")
        self.per_generation = per_generation
        self._slots = 2 * per_generation
        self._zero_keys = bytes(8 * self._slots)
        self._zero_counts = bytes(4 * self._slots)
        self._new = (array("Q", self._zero_keys), array("L", self._zero_counts))
        self._old = (array("Q", self._zero_keys), array("L", self._zero_counts))
        if self._new[1].itemsize != 4:  # "L" is 8 bytes on some platforms
            self._new = (self._new[0], array("I", self._zero_counts))
            self._old = (self._old[0], array("I", self._zero_counts))
        self._held = 0  # keys in the newer table

    @property
    def nbytes(self) -> int:
        """Bytes the two tables hold (fixed)."""
        return 2 * self._slots * (8 + self._new[1].itemsize)

    def __len__(self) -> int:
        return self._held + sum(1 for k in self._old[0] if k != self._EMPTY)

    def _find(self, table: tuple[array, array], key: int) -> int:
        """The slot of ``key`` in ``table``, or of the empty slot where it would go."""
        keys, slots = table[0], self._slots
        slot = key % slots
        while True:
            held = keys[slot]
            if held == key or held == self._EMPTY:
                return slot
            slot = slot + 1 if slot + 1 < slots else 0

    @classmethod
    def _stored(cls, key: int) -> int:
        return key % cls._MASK + 1  # never 0, the empty slot's mark

    def get(self, key: int, default: int = 0) -> int:
        """The count of ``key`` (``default`` if not held)."""
        key = self._stored(key)
        for keys, counts in (self._new, self._old):
            slot = self._find((keys, counts), key)
            if keys[slot] == key:
                return counts[slot]
        return default

    def add(self, key: int, n: int = 1) -> int:
        """Count ``key`` ``n`` more times; its count (at most 2**32 - 1)."""
        key = self._stored(key)
        keys, counts = self._new
        slot = self._find(self._new, key)
        if keys[slot] == key:
            count = min(counts[slot] + n, 0xFFFF_FFFF)
            counts[slot] = count
            return count
        old_keys, old_counts = self._old
        old = self._find(self._old, key)
        count = old_counts[old] if old_keys[old] == key else 0
        if self._held >= self.per_generation:
            self._old, self._new = self._new, self._old
            keys, counts = self._new
            keys[:] = array("Q", self._zero_keys)
            counts[:] = array(counts.typecode, self._zero_counts)
            self._held = 0
            slot = self._find(self._new, key)
        count = min(count + n, 0xFFFF_FFFF)
        keys[slot], counts[slot] = key, count
        self._held += 1
        return count
