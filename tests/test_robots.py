"""robots.txt policy: RFC 9309 status handling, TTL, sharing through the frontier store."""

from crawler.frontier.local import LocalFrontier
from crawler.robots import RobotsPolicy
from harness.clock import FakeClock
from tests.frontiers import options

UA = "websearch-bot"


def make(store=None, clock=None, **kw):
    store = store or LocalFrontier(None, **options(bloom_capacity=1000))
    return RobotsPolicy(store, UA, ttl=100, error_ttl=10, clock=clock or FakeClock(), **kw)


def test_unknown_until_recorded():
    p = make()
    assert p.rules("a.test") is None
    assert p.allowed("http://a.test/x", "a.test") is None


def test_parsed_rules_and_crawl_delay():
    p = make()
    p.record_response("a.test", 200, b"User-agent: *\nDisallow: /private/\nCrawl-delay: 3\n")
    assert p.allowed("http://a.test/private/x", "a.test") is False
    assert p.allowed("http://a.test/public", "a.test") is True
    assert p.crawl_delay("a.test") == 3.0


def test_refuses_reads_only_the_rules_held_here():
    """The scheduler refuses a disallowed link before it takes a page of the host's budget
    (dask.test's /_modules/ links took 24 of its 300), from the rules held in-process."""
    clock = FakeClock()
    store = LocalFrontier(None, **options(bloom_capacity=1000))
    p = make(store, clock)
    p.record_response("a.test", 200, b"User-agent: *\nDisallow: /_modules/\n")
    assert p.refuses("http://a.test/_modules/x.html", "a.test")
    assert not p.refuses("http://a.test/api.html", "a.test")
    assert not make(store, clock).refuses("http://a.test/_modules/x.html", "a.test")  # not held
    clock.advance(101)  # expired: checked again when leased
    assert not p.refuses("http://a.test/_modules/x.html", "a.test")


def test_4xx_allows_all_5xx_and_errors_disallow_all_for_a_while():
    clock = FakeClock()
    p = make(clock=clock)
    p.record_response("gone.test", 404, b"")
    p.record_response("down.test", 503, b"")
    p.record_response("busy.test", 429, b"")
    p.record_error("dead.test")
    assert p.allowed("http://gone.test/x", "gone.test") is True
    for host in ("down.test", "busy.test", "dead.test"):
        assert p.allowed(f"http://{host}/x", host) is False
    clock.advance(11)  # the error TTL passed: fetch again
    assert p.rules("down.test") is None
    assert p.allowed("http://gone.test/x", "gone.test") is True
    clock.advance(90)
    assert p.rules("gone.test") is None


def test_garbage_is_allow_all(caplog):
    p = make()
    p.record_response("bin.test", 200, b"\xff\xfe\x00garbage\x80")
    assert p.allowed("http://bin.test/x", "bin.test") is True
    assert "unparseable robots.txt" in caplog.text
    p.record_response("junk.test", 200, b"<html>not robots</html>")
    assert p.allowed("http://junk.test/x", "junk.test") is True


def test_shared_between_workers_through_the_store(tmp_path):
    store_a = LocalFrontier(tmp_path / "f.sqlite3", **options(bloom_capacity=1000))
    store_b = LocalFrontier(tmp_path / "f.sqlite3", **options(bloom_capacity=1000))
    clock = FakeClock()
    make(store_a, clock).record_response("a.test", 200, b"User-agent: *\nDisallow: /\n")
    assert make(store_b, clock).allowed("http://a.test/x", "a.test") is False
