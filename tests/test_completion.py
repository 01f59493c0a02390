"""The completion prefix index: the top k keys with a prefix, as a full scan finds them."""

import random
from collections import Counter

import pytest

from index.completion import PrefixIndex
from index.fields import completion_key, completion_prefix, completion_text

WORDS = ["ab", "abc", "b", "ba", "bab", "c", "a", "abd", "é"]


def scan(items: dict[str, int], prefix: str, k: int) -> list[tuple[str, int]]:
    found = [(key, n) for key, n in items.items() if key.startswith(prefix)]
    return sorted(found, key=lambda kv: (-kv[1], kv[0]))[:k]


@pytest.mark.parametrize("seed", range(40))
def test_top_k_matches_a_scan(seed):
    rng = random.Random(seed)
    items = Counter(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
                    for _ in range(rng.randint(0, 80)))
    index = PrefixIndex(items.items())
    for prefix in ["", "a", "ab", "b", "ba b", "c", "zz", "abc ", "é"]:
        for k in (1, 3, 8, 100):
            assert index.top(prefix, k) == scan(items, prefix, k), (prefix, k)


def test_empty_index_and_zero_k():
    assert PrefixIndex([]).top("a", 5) == []
    assert PrefixIndex([("a", 1)]).top("a", 0) == []


def test_completion_keys_match_typed_prefixes():
    key = completion_key("  Café   Ünïcödé  Guide ")
    assert completion_text(key) == "Café Ünïcödé Guide"
    assert key.startswith(completion_prefix("CAFE unic"))
    assert key.startswith(completion_prefix("cafe "))
    assert not key.startswith(completion_prefix("cafeu"))
    assert completion_key("") == ""
