from crawler.hostrules import HostRule, HostRules


def test_exact_rule_wins_and_block_beats_allow():
    rules = HostRules.static(
        [
            HostRule("*.example.test", "allow", crawl_delay=2.0, page_budget=100),
            HostRule("shop.example.test", "allow", crawl_delay=5.0),
            HostRule("bad.example.test", "block"),
        ]
    )
    shop = rules.policy("shop.example.test")
    assert shop.allowed and not shop.blocked
    assert shop.crawl_delay == 5.0 and shop.page_budget == 100
    assert rules.policy("bad.example.test").blocked
    assert rules.policy("www.example.test").crawl_delay == 2.0
    other = rules.policy("other.test")
    assert not other.allowed and not other.blocked


def test_keeps_last_rules_when_store_fails():
    calls = {"n": 0}

    def loader():
        calls["n"] += 1
        if calls["n"] > 1:
            raise ConnectionError("database down")
        return [HostRule("a.test", "block")]

    rules = HostRules(loader, ttl=0)
    assert rules.policy("a.test").blocked
    assert rules.policy("a.test").blocked  # reload failed: old rules kept
    assert calls["n"] >= 2


def test_policy_cache_stays_bounded_without_reloads():
    rules = HostRules.static([HostRule("*.blocked.test", "block")])
    rules.max_cached = 100
    for n in range(1000):
        assert not rules.policy(f"h{n}.test").blocked
        assert len(rules._cache) <= 100
    assert rules.policy("a.blocked.test").blocked  # answers stay right after a reset
