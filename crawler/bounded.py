"""Bounded in-process memory: the two shapes the crawler's caches use.

A worker crawls for days; whatever it keeps per URL, page or host must stop growing at a
cap (the caps are settings in ``crawler/settings.py``, or constants next to their use), or
its RSS grows with the crawl. The frontier in Redis is the source of truth; what a worker
forgets it learns again or does without.
"""

from __future__ import annotations

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
