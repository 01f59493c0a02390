"""Trap guards: each check drops what it should and keeps ordinary URLs."""

from crawler.quality.traps import TrapGuard


def test_ordinary_urls_pass():
    g = TrapGuard.from_settings(None, max_depth=5)
    assert g.check("http://a.test/", 0) is None
    assert g.check("http://a.test/docs/guide/intro.html?lang=en", 5) is None


def test_depth_limit():
    g = TrapGuard.from_settings(None, max_depth=3)
    assert g.check("http://a.test/x", 3) is None
    assert g.check("http://a.test/x", 4) == "depth"
    assert TrapGuard.from_settings(None, max_depth=0).check("http://a.test/x", 999) is None


def test_url_length():
    g = TrapGuard.from_settings(None, max_url_length=50)
    assert g.check("http://a.test/" + "x" * 30) is None
    assert g.check("http://a.test/" + "x" * 40) == "url_length"


def test_repeated_segments():
    g = TrapGuard.from_settings(None, max_segment_repeats=3)
    assert g.check("http://a.test/a/b/a/b") is None
    assert g.check("http://a.test/a/b/a/b/a/b") == "repeated_segments"
    assert g.check("http://a.test/x/x/x") == "repeated_segments"


def test_query_explosion_per_path_pattern():
    g = TrapGuard.from_settings(None, max_query_variants=10)
    kept = [g.check(f"http://a.test/cal/2024/{m}?sid={i}") for i in range(12) for m in (1, 2)]
    assert kept.count(None) == 10
    assert kept[-1] == "query_explosion"
    assert g.check("http://a.test/cal/2024/1?sid=0") is None  # already-admitted variant
    assert g.check("http://a.test/other?sid=99") is None  # another pattern has its own count
    assert g.check("http://b.test/cal/2024/1?sid=99") is None  # and so does another host


def test_pattern_memory_is_bounded():
    g = TrapGuard.from_settings(None, max_query_variants=2, max_patterns=100)
    for i in range(1000):
        g.check(f"http://a.test/p{chr(97 + i % 26)}{i}x?q=1")
    assert len(g._variants) <= 101
