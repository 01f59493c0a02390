"""crawler/bounded.py: the shapes of the crawler's bounded caches."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from crawler.bounded import RecentSet, bound


def test_recent_set_holds_at_most_its_cap_and_remembers_the_latest():
    recent = RecentSet(10)
    assert recent.add("a") and not recent.add("a") and "a" in recent
    for n in range(100):
        recent.add(n)
        assert len(recent) <= 10
    assert all(n in recent for n in range(95, 100))  # at least cap // 2 latest stay
    assert "a" not in recent and 0 not in recent
    assert recent.add("a")  # forgotten: new again
    with pytest.raises(ValueError):
        RecentSet(1)


def test_bound_forgets_the_oldest_entries():
    entries = OrderedDict((n, n) for n in range(10))
    entries.move_to_end(0)
    bound(entries, 3)
    assert list(entries) == [8, 9, 0]
