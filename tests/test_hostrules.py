import pytest

from crawler.hostrules import ControlNotReady, ControlStore, HostRule, HostRules, control_store


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


class ListedStore(ControlStore):
    """A control store of fixed rules and seeds (what the Django app serves from its models)."""

    ready = True

    def prepare(self) -> None:
        if not self.ready:
            raise ControlNotReady("migrate the control database, then start the crawl again")

    def host_rules(self) -> list[HostRule]:
        return [HostRule("blocked.test", "block")]

    def seed_urls(self) -> list[str]:
        return ["http://seed.test/", "not a url"]


def test_the_crawl_reads_rules_and_seeds_through_the_control_store_it_is_given():
    from scrapy.utils.test import get_crawler

    from spiders.web import WebSpider

    store = f"{__name__}.ListedStore"
    assert isinstance(control_store({"CONTROL_STORE": store}), ListedStore)
    assert control_store({"CONTROL_STORE": ""}) is None
    assert HostRules.from_settings({"CONTROL_STORE": store}).policy("blocked.test").blocked
    crawler = get_crawler(WebSpider, {"CONTROL_STORE": store})
    spider = WebSpider.from_crawler(crawler)
    assert spider.host_rules.policy("blocked.test").blocked
    assert spider.seed_urls() == ["http://seed.test/"]
    ListedStore.ready = False
    try:
        with pytest.raises(SystemExit, match="migrate the control database"):
            WebSpider.from_crawler(get_crawler(WebSpider, {"CONTROL_STORE": store}))
    finally:
        ListedStore.ready = True
    bare = WebSpider.from_crawler(get_crawler(WebSpider, {"CONTROL_STORE": ""}))
    assert bare.control is None and not bare.host_rules.policy("blocked.test").blocked


def test_a_failed_first_load_is_tried_again_within_seconds_not_a_ttl(monkeypatch):
    import crawler.hostrules as hostrules

    now = {"t": 1000.0}
    monkeypatch.setattr(hostrules.time, "monotonic", lambda: now["t"])
    calls = {"n": 0}

    def loader():
        calls["n"] += 1
        if calls["n"] <= 2:
            raise ConnectionError("database starting")
        return [HostRule("a.test", "allow", page_budget=5)]

    rules = HostRules(loader, ttl=30.0)
    assert rules.policy("a.test").page_budget is None  # nothing loaded yet
    now["t"] += 0.5
    assert rules.policy("a.test").page_budget is None and calls["n"] == 1  # no busy retry
    now["t"] += 0.6  # 1 s after the first failure: tried again, fails, next in 2 s
    assert rules.policy("a.test").page_budget is None and calls["n"] == 2
    now["t"] += 1.5
    assert rules.policy("a.test").page_budget is None and calls["n"] == 2
    now["t"] += 0.6
    assert rules.policy("a.test").page_budget == 5 and calls["n"] == 3
    now["t"] += 29.0  # loaded: the next load waits for the TTL
    assert rules.policy("a.test").page_budget == 5 and calls["n"] == 3


def test_one_crawl_reads_one_set_of_rules():
    from scrapy.utils.test import get_crawler

    from crawler.admission import Admission
    from spiders.web import WebSpider

    crawler = get_crawler(WebSpider, {"CONTROL_STORE": f"{__name__}.ListedStore"})
    spider = WebSpider.from_crawler(crawler)
    assert Admission.from_crawler(crawler).host_rules is spider.host_rules
    assert HostRules.from_crawler(crawler) is spider.host_rules
    other = get_crawler(WebSpider, {"CONTROL_STORE": f"{__name__}.ListedStore"})
    assert HostRules.from_crawler(other) is not spider.host_rules
