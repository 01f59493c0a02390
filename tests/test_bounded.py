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


def test_recent_keys_remember_a_generation_in_fixed_memory_and_forget_older_ones():
    import random

    from crawler.bounded import RecentKeys

    rng = random.Random(7)
    keys = [rng.getrandbits(64) for _ in range(60_000)]
    recent = RecentKeys(10_000)
    size = recent.nbytes
    assert size == 2 * 10_000 * 4  # 32 bits a key, two filters, whatever is added
    assert recent.add(keys[0]) and not recent.add(keys[0]) and keys[0] in recent
    for key in keys[1:10_000]:
        recent.add(key)
    assert all(key in recent for key in keys[:10_000])  # no false negative
    never = keys[50_000:]
    assert sum(key in recent for key in never) / len(never) < 0.002  # ~0.05 % measured
    for key in keys[10_000:30_000]:  # two more generations: the first is cleared
        recent.add(key)
    assert recent.nbytes == size
    assert all(key in recent for key in keys[25_000:30_000])  # the latest stay
    assert sum(key in recent for key in keys[:10_000]) / 10_000 < 0.01
    with pytest.raises(ValueError):
        RecentKeys(0)


def test_recent_keys_set_the_bits_of_eight_six_bit_fields_of_the_mixed_key():
    """A key's mask in its word: the bits numbered by the eight 6-bit fields of the key
    times the Fibonacci constant (mod 2**64), the lowest first."""
    import random

    from crawler.bounded import RecentKeys

    recent = RecentKeys(1_000)
    for key in [0, 1, 2**64 - 1, *(random.Random(5).getrandbits(64) for _ in range(2_000))]:
        mixed = key * RecentKeys._MIX % 2**64
        mask = sum({1 << (mixed >> shift) % 64 for shift in range(0, 48, 6)})
        assert recent._slot(key) == (key % recent._words, mask)
        assert 1 <= bin(mask).count("1") <= 8


def test_recent_counts_keep_the_keys_counted_lately_with_their_counts():
    from crawler.bounded import RecentCounts

    a = 2**64 - 5
    counts = RecentCounts(3)
    size = counts.nbytes
    assert counts.add(a) == 1 and counts.add(a, 2) == 3 and counts.get(a) == 3
    for n in range(3):  # a moves to the older generation with its count
        counts.add(n)
    assert counts.get(a) == 3 and counts.add(a) == 4  # counted again: newer again
    for n in range(10, 16):
        counts.add(n)
        assert len(counts) <= 6
    assert counts.get(a) == 0 and counts.get(0, -1) == -1  # forgotten
    assert all(counts.get(n) == 1 for n in range(13, 16))  # the latest per_generation stay
    assert counts.nbytes == size == 2 * 6 * 12  # fixed: 2 * per_generation slots of 12 bytes
    with pytest.raises(ValueError):
        RecentCounts(0)


def test_recent_counts_are_exact_for_the_latest_keys_like_two_dict_generations():
    """The fixed tables answer as the two plain dicts they replace did, on skewed counts
    of random 64-bit keys (links to popular pages counted many times)."""
    import random

    from crawler.bounded import RecentCounts

    rng = random.Random(3)
    pool = [rng.getrandbits(64) for _ in range(30_000)]
    counts = RecentCounts(5_000)
    size = counts.nbytes
    new: dict[int, int] = {}
    old: dict[int, int] = {}
    for _ in range(60_000):
        key = pool[min(int(rng.paretovariate(0.7)), len(pool)) - 1]
        if key not in new:
            held = old.pop(key, 0)
            if len(new) >= 5_000:
                old, new = new, {}
            new[key] = held
        new[key] += 1
        assert counts.add(key) == new[key]
    assert all(counts.get(k) == n for k, n in (old | new).items())
    never = [rng.getrandbits(64) for _ in range(5_000)]
    assert sum(counts.get(k) for k in never) == 0
    assert counts.nbytes == size
