"""Politeness arithmetic, the tier selector, and FrontierScheduler driven without a crawler."""

from __future__ import annotations

import time

import pytest
import scrapy
from scrapy.http import HtmlResponse, Response, TextResponse

from crawler.frontier import Entry, Outcome, TierSelector
from crawler.frontier.local import LocalFrontier
from crawler.handlers import NOT_BEFORE
from crawler.hostrules import HostRule, HostRules
from crawler.quality.traps import TrapGuard, url_pattern
from crawler.robots import RobotsPolicy
from crawler.scheduler import MIN_WAKE_S, FrontierScheduler, _retry_after
from crawler.signals import links_extracted
from harness.clock import FakeClock
from tests.frontiers import options, politeness, scheduler

# -- politeness --------------------------------------------------------------------------


def test_delay_is_max_of_default_robots_and_latency():
    p = politeness(default_delay=1.0, max_crawl_delay=10.0, latency_factor=2.0, latency_alpha=1)
    assert p.next_delay(0, 0, Outcome(status=200, latency=0.1))[0] == 1.0
    assert p.next_delay(0, 0, Outcome(status=200, latency=0.1, crawl_delay=3))[0] == 3.0
    assert p.next_delay(0, 0, Outcome(status=200, latency=0.1, crawl_delay=500))[0] == 10.0
    assert p.next_delay(0, 0, Outcome(status=200, latency=2.0))[0] == 4.0


def test_admin_delay_overrides_robots_but_not_slowness():
    p = politeness(default_delay=1.0, latency_factor=2.0, latency_alpha=1)
    assert p.next_delay(0, 0, Outcome(status=200, crawl_delay=5, admin_delay=0.2))[0] == 0.2
    assert p.next_delay(0, 0, Outcome(status=200, latency=1, admin_delay=0.2))[0] == 2.0


def test_exponential_backoff_and_reset():
    p = politeness(default_delay=1.0, latency_factor=0, max_backoff=10)
    delays, backoff = [], 0
    for _ in range(5):
        delay, _, backoff = p.next_delay(0, backoff, Outcome(status=503))
        delays.append(delay)
    assert delays == [2.0, 4.0, 8.0, 10.0, 10.0]
    assert p.next_delay(0, backoff, Outcome(error="timeout"))[2] == 6
    delay, _, backoff = p.next_delay(0, backoff, Outcome(status=200))
    assert (delay, backoff) == (1.0, 0)


def test_retry_after_honoured_and_capped():
    p = politeness(default_delay=1.0, latency_factor=0, max_retry_after=60)
    assert p.next_delay(0, 0, Outcome(status=429, retry_after=30))[0] == 30.0
    assert p.next_delay(0, 0, Outcome(status=429, retry_after=9999))[0] == 60.0


def test_no_delay_when_nothing_was_fetched():
    p = politeness(default_delay=5.0)
    assert p.next_delay(0.5, 2, Outcome(fetched=False)) == (0.0, 0.5, 2)
    assert p.next_delay(0.5, 2, Outcome(requeue=True)) == (0.0, 0.5, 2)


def test_retry_after_header_forms():
    assert _retry_after(b"120") == 120.0
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 100))
    assert 95 <= _retry_after(when.encode()) <= 101
    assert _retry_after(b"soon") is None
    assert _retry_after(None) is None


def test_selector_serves_every_tier_in_proportion():
    s = TierSelector(3)
    picks = [s.pick([0, 1, 2]) for _ in range(70)]
    assert [picks.count(t) for t in range(3)] == [40, 20, 10]
    assert s.pick([2]) == 2
    assert s.pick([]) is None


# -- scheduler ---------------------------------------------------------------------------


class Spider(scrapy.Spider):
    name = "unit"

    def parse(self, response):
        return None


AGENT = {"USER_AGENT": "websearch-bot"}


class Stats(dict):
    def inc_value(self, key, count=1):
        self[key] = self.get(key, 0) + count

    def set_value(self, key, value):
        self[key] = value


@pytest.fixture
def sched():
    frontier = LocalFrontier(None, **options(
        bloom_capacity=10_000, politeness=politeness(default_delay=0.0, latency_factor=0)))
    rules = HostRules.static([HostRule("blocked.test", action="block"),
                              HostRule("small.test", page_budget=2)])
    s = scheduler(frontier, rules, TrapGuard.from_settings(None, max_depth=3),
                  RobotsPolicy.from_settings(AGENT, frontier), stats=Stats(),
                  buffer_size=6, poll_interval=0)
    s.spider = Spider()
    # a turn ends after HANDING_TURN_S (10 ms) of wall time, which a loaded box takes for
    # a lease or two: the tests that refuse leases would get None
    s.turn_s = 60.0
    yield s
    frontier.close()


def fetch(s: FrontierScheduler, request: scrapy.Request, response: Response) -> None:
    """What the downloader's signals tell the scheduler about one download."""
    s.response_downloaded(response, request)
    s.request_left_downloader(request)


def robots_response(request, body=b"User-agent: *\nDisallow: /private/\n", status=200):
    return TextResponse(request.url, status=status, body=body, request=request)


@pytest.mark.parametrize(("flags", "waited"), [((), 0.4), (("partial",), 0.0)])
def test_a_hosts_delay_runs_from_its_responses_last_read(monkeypatch, flags, waited):
    """The delay runs from the last bytes read of the response (``response_read``), not
    from its leaving the downloader, a turn of the reactor or more later; from there
    for a response cut short, whose server may write on."""
    import crawler.scheduler as module

    frontier = LocalFrontier(None, **options(
        bloom_capacity=10_000, politeness=politeness(default_delay=1.0, latency_factor=0)))
    s = scheduler(frontier, HostRules.static([]), TrapGuard.from_settings(None), None,
                  stats=Stats(), buffer_size=6, poll_interval=0)
    s.spider = Spider()
    s.enqueue_request(scrapy.Request("http://a.test/x", callback=s.spider.parse))
    request = s.next_request()
    clock = [100.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: clock[0])
    s.response_read(request)  # headers
    clock[0] += 0.1
    s.response_read(request, data=b"...")  # the body's last bytes
    clock[0] += 0.4  # the reactor's turns until the download's coroutines resume
    fetch(s, request, Response(request.url, status=200, flags=list(flags), request=request))
    monkeypatch.undo()
    s._settle()
    assert not s._read_at
    left = frontier.host_state("a.test").next_eligible - time.time()
    assert 1.0 - waited - 0.05 < left <= 1.0 - waited + 0.01
    frontier.close()


def test_a_host_due_soon_is_handed_out_ahead_with_its_start_time():
    """With ``lease_ahead``, a host due within it is leased and its request handed out at
    once, carrying when it may start (``NOT_BEFORE``, which the download handler keeps):
    the engine, the downloader middlewares and the download slot run during the host's
    delay, not after it. A host due later is not, and a due host's request has no wait."""
    clock = FakeClock(time.time())  # a lease is served while its deadline is ahead
    frontier = LocalFrontier(None, clock=clock, **options(
        bloom_capacity=10_000, politeness=politeness(default_delay=1.0, latency_factor=0)))
    s = scheduler(frontier, stats=Stats(), buffer_size=6, poll_interval=0, lease_ahead=0.2)
    s.spider = Spider()
    for path in ("/1", "/2"):
        s.enqueue_request(scrapy.Request(f"http://a.test{path}", callback=s.spider.parse))
    first = s.next_request()
    assert NOT_BEFORE not in first.meta
    fetch(s, first, HtmlResponse(first.url, body=b"", request=first))
    s._settle()
    clock.advance(frontier.host_state("a.test").next_eligible - clock() - 0.5)
    assert s.next_request() is None  # due in 0.5 s
    clock.advance(0.35)  # due in 0.15 s
    asked = time.monotonic()
    second = s.next_request()
    assert second.url == "http://a.test/2"
    assert asked + 0.1 < second.meta[NOT_BEFORE] <= time.monotonic() + 0.15 + 1e-6
    frontier.close()


def test_enqueue_drops_by_reason(sched):
    spider = sched.spider
    assert not sched.enqueue_request(scrapy.Request("http://blocked.test/", callback=spider.parse))
    deep = scrapy.Request("http://a.test/deep", callback=spider.parse, meta={"depth": 4})
    assert not sched.enqueue_request(deep)
    assert sched.enqueue_request(scrapy.Request("http://a.test/x", callback=spider.parse))
    assert not sched.enqueue_request(scrapy.Request("http://a.test/x", callback=spider.parse))
    for i in range(3):
        sched.enqueue_request(scrapy.Request(f"http://small.test/{i}", callback=spider.parse))
    assert not sched.enqueue_request(scrapy.Request("http://a.test/y", callback=lambda r: None))
    sched.flush()
    assert sched.stats["frontier/dropped/unserializable"] == 1
    assert sched.stats["frontier/dropped/blocked"] == 1
    assert sched.stats["frontier/dropped/depth"] == 1
    assert sched.stats["frontier/dropped/seen"] == 1
    assert sched.stats["frontier/budget_waiting"] == 1  # small.test/2 waits for a page back
    assert sched.frontier.stats()["dropped/depth"] == 1


def test_a_request_over_the_url_length_limit_is_dropped(sched):
    """The spider's own requests (Scrapy's UrlLengthMiddleware is off) meet the trap guard."""
    long = scrapy.Request("http://a.test/" + "p/" * 1100, callback=sched.spider.parse)
    assert not sched.enqueue_request(long)
    assert sched.stats["frontier/dropped/url_length"] == 1


def test_links_batch_becomes_requests_like_the_template(tmp_path):
    from scrapy.settings import Settings
    from scrapy.spidermiddlewares.referer import RefererMiddleware

    frontier = LocalFrontier(None, **options(
        bloom_capacity=10_000, politeness=politeness(default_delay=0.0, latency_factor=0)))
    s = scheduler(frontier, HostRules.static([HostRule("blocked.test", action="block")]),
                  TrapGuard.from_settings(None, max_depth=3), None, stats=Stats(),
                  buffer_size=6, poll_interval=0, referrer=RefererMiddleware(Settings()))
    s.spider = Spider()
    template = scrapy.Request("http://x.invalid/", callback=s.spider.parse,
                              meta={"frontier_tier": 1})
    page = HtmlResponse("https://a.test/page#frag", body=b"<html></html>")
    urls = ["https://a.test/1", "https://a.test/1", "http://b.test/x", "http://blocked.test/",
            "https://c.test/" + "p/" * 1200, "https://a.test/2", "https://A.test:443/3#f"]
    assert s.enqueue_links(page, urls, 2, template) is True
    s.flush()
    assert s.stats["frontier/dropped/seen"] == 1
    assert s.stats["frontier/dropped/blocked"] == 1
    assert s.stats["frontier/dropped/url_length"] == 1
    got = {}
    for _ in range(10):  # one request per host at a time: finish each lease, then poll again
        while (request := s.next_request()) is not None:
            got[request.url] = request
        for lease in s._inflight.values():
            frontier.done(lease, Outcome(fetched=False))
        s._inflight.clear()
    # links of one origin share their stored payload; a non-canonical one keeps its URL
    assert set(got) == {"https://a.test/1", "http://b.test/x", "https://a.test/2",
                        "https://a.test:443/3#f"}
    for url in ("https://a.test/1", "https://a.test/2", "https://a.test:443/3#f"):
        same = got[url]
        assert same.callback == s.spider.parse
        assert same.meta == {"frontier_tier": 1, "depth": 2}
        assert same.headers[b"Referer"] == b"https://a.test/page"  # fragment stripped
    assert b"Referer" not in got["http://b.test/x"].headers  # no referrer on a downgrade
    assert frontier.stats()["added"] == 4
    frontier.close()


def _value_ordered_scheduler():
    """A scheduler over a new local frontier (no delay), URLs ordered by value and moved
    up (re-pushed) as their in-links arrive."""
    from crawler.frontier.value import ValueOrder

    frontier = LocalFrontier(None, **options(
        bloom_capacity=10_000, politeness=politeness(default_delay=0.0, latency_factor=0)))
    s = scheduler(frontier, stats=Stats(), buffer_size=2, poll_interval=0,
                  value_order=ValueOrder(tiers=4), repush_urls=100)
    s.spider = Spider()
    return s


def test_value_order_moves_a_queued_url_up_as_in_links_arrive_and_fetches_it_once():
    s = _value_ordered_scheduler()
    frontier = s.frontier
    template = scrapy.Request("http://x.invalid/", callback=s.spider.parse)
    urls = [f"http://a.test/p/{n}" for n in range(20)]
    others = [f"http://a.test/other/{n}" for n in range(3)]
    s.enqueue_links(HtmlResponse("http://a.test/", body=b""), urls + others, 1, template)
    # the other three pages, fetched since, link to /p/17 (queued already) and /p/18
    for n in range(3):
        s.enqueue_links(HtmlResponse(f"http://a.test/other/{n}", body=b""), [], 2, template,
                        outlinks=10, seen=["http://a.test/p/17", "http://a.test/p/18"])
    # a probe of /p/17 (another request for the same URL, at its own rank) is no copy
    s.enqueue_request(scrapy.Request("http://a.test/p/17", callback=s.spider.parse,
                                     dont_filter=True, meta={"depth": 0, "frontier_tier": 0}))
    s.flush()
    assert s.stats["frontier/repushed"] >= 2
    got = []
    while (request := s.next_request()) is not None or s._inflight:
        if request is not None:
            got.append(request)
        for lease in s._inflight.values():
            frontier.done(lease, Outcome(fetched=False))
        s._inflight.clear()
    assert [r.url for r in got[:3]] == ["http://a.test/p/17"] * 2 + ["http://a.test/p/18"]
    assert sorted(r.url for r in got) == sorted(urls + others + ["http://a.test/p/17"])
    assert [r.meta["depth"] for r in got[:3]] == [0, 1, 1]  # the link's first depth
    # the local frontier moved each queued page up: no stale copy was leased and dropped
    assert s.stats["frontier/moved"] == s.stats["frontier/repushed"]
    assert "frontier/dropped/repushed" not in s.stats
    frontier.close()


def test_spider_hands_links_to_the_scheduler_or_yields_requests(tmp_path):
    from scrapy.utils.test import get_crawler

    from crawler.items import Link
    from spiders.web import WebSpider

    crawler = get_crawler(WebSpider, {"CONTROL_STORE": ""})
    spider = WebSpider.from_crawler(crawler, seeds="http://a.test/")
    page = HtmlResponse("http://a.test/", body=b"<html></html>")
    links = [Link("http://a.test/1", "one"), Link("http://a.test/2", "two", nofollow=True),
             Link("http://a.test/1", "again")]
    # no scheduler took them: Requests, as with any Scrapy scheduler
    requests = list(spider.follow(links, 1, page))
    assert [(r.url, r.meta["depth"], r.callback) for r in requests] == [
        ("http://a.test/1", 1, spider.parse)]
    taken = []
    crawler.signals.connect(lambda urls, **kw: taken.extend(urls) or True,
                            signal=links_extracted, weak=False)
    assert list(spider.follow([Link("http://a.test/3", "three")], 1, page)) == []
    assert taken == ["http://a.test/3"]


def test_the_spider_hands_its_links_to_the_frontier_scheduler_without_a_signal(
        sched, monkeypatch):
    from scrapy.utils.test import get_crawler

    from crawler.items import Link
    from spiders.web import WebSpider

    class Loop:  # no timers: the scheduler's loops are not what is tested
        def __init__(self, *args):
            pass

        def start(self, *args, **kwargs):
            pass

        def stop(self):
            pass

    monkeypatch.setattr("crawler.scheduler.task.LoopingCall", Loop)
    crawler = get_crawler(WebSpider, {"CONTROL_STORE": ""})
    spider = WebSpider.from_crawler(crawler, seeds="http://a.test/")
    sched.open(spider)
    assert spider.links_sink == sched.enqueue_links
    sent = []
    crawler.signals.connect(lambda urls, **kw: sent.extend(urls), signal=links_extracted,
                            weak=False)
    page = HtmlResponse("http://a.test/", body=b"<html></html>")
    assert list(spider.follow([Link("http://a.test/3", "three")], 1, page)) == []
    assert sent == []  # no signal: the scheduler took them directly
    sched.flush()
    assert sched.frontier.pending() == 1
    # a handler that fails is logged and its links yielded, as through the signal
    spider.links_sink = lambda **kwargs: 1 / 0
    assert [r.url for r in spider.follow([Link("http://a.test/4", "four")], 1, page)] == [
        "http://a.test/4"]


def test_the_spiders_links_are_admitted_without_being_canonicalized_again(sched, monkeypatch):
    """The extraction's links are canonical: the spider says so, and the scheduler admits
    them as they are; a batch not said canonical is canonicalized link by link."""
    from scrapy.utils.test import get_crawler

    import crawler.admission
    from crawler.items import Link
    from spiders.web import WebSpider

    calls = []
    real = crawler.admission.canonicalize
    monkeypatch.setattr(crawler.admission, "canonicalize",
                        lambda url: calls.append(url) or real(url))
    spider = WebSpider.from_crawler(get_crawler(WebSpider, {"CONTROL_STORE": ""}),
                                    seeds="http://a.test/")
    batches = []
    spider.links_sink = lambda **batch: batches.append(batch) or True
    page = HtmlResponse("http://a.test/", body=b"<html></html>")
    assert list(spider.follow([Link("http://a.test/3", "three")], 1, page)) == []
    assert batches[0]["canonical"] is True
    template = scrapy.Request("http://x.invalid/", callback=sched.spider.parse)
    sched.enqueue_links(page, ["http://a.test/3", "http://a.test/4"], 1, template,
                        canonical=True)
    assert calls == []
    sched.enqueue_links(page, ["http://A.test/5"], 1, template)
    assert calls == ["http://A.test/5"]
    sched.flush()
    assert sched.frontier.pending() == 3


def test_robots_first_then_pages_and_disallowed_dropped(sched):
    spider = sched.spider
    sched.enqueue_request(scrapy.Request("http://a.test/private/1", callback=spider.parse))
    sched.enqueue_request(scrapy.Request("http://a.test/page", callback=spider.parse))
    robots = sched.next_request()
    assert robots.url == "http://a.test/robots.txt"
    assert sched.next_request() is None  # the host is leased by its robots.txt fetch
    fetch(sched, robots, robots_response(robots))
    page = sched.next_request()
    assert page.url == "http://a.test/page"  # /private/1 was dropped as disallowed
    assert page.callback == spider.parse
    assert sched.stats["robots/disallowed"] == 1
    fetch(sched, page, HtmlResponse(page.url, body=b"<html></html>", request=page))
    assert not sched.has_pending_requests()


class Turn:
    """The reactor's timers, run when the test says its turn ends (``call_later``)."""

    def __init__(self):
        self.calls = []

    def call_later(self, delay, fn, *args):
        call = [delay, fn, args]
        self.calls.append(call)
        return type("Call", (), {"cancel": lambda _: self.calls.remove(call)})()

    def end(self):
        calls, self.calls = self.calls, []
        for _, fn, args in calls:
            fn(*args)


def test_responses_of_one_turn_are_reported_in_one_call(sched, monkeypatch):
    """In a crawl the finished leases wait for the end of the reactor's turn, or the engine's
    next poll if sooner, and go to the frontier together, each with its response's age."""
    turn = Turn()
    monkeypatch.setattr("crawler.scheduler.call_later", turn.call_later)
    # a refused lease is followed by the next in the same call however slow the box (the
    # turn's refusal deadline is not what this test is about)
    monkeypatch.setattr(sched, "turn_s", 60.0)
    spider, frontier = sched.spider, sched.frontier
    calls = []
    done_many = frontier.done_many
    frontier.done_many = lambda reports: calls.append(list(reports)) or done_many(reports)
    for host in ("a.test", "b.test", "c.test"):
        for n in (1, 2):
            sched.enqueue_request(scrapy.Request(f"http://{host}/{n}", callback=spider.parse))
    robots = [sched.next_request() for _ in range(3)]
    sched.crawler = object()  # in a crawl: reports wait for the reactor's turn
    for request in robots[:2]:
        fetch(sched, request, robots_response(request))
    assert calls == [] and frontier.stats()["leases"] == 3  # not reported yet
    turn.end()
    assert [len(batch) for batch in calls] == [2]
    assert all(outcome.status == 200 and outcome.age >= 0 for _, outcome in calls[0])
    # a.test and b.test are due again (no delay here): the engine is woken for them
    assert [(delay, fn.__name__) for delay, fn, _ in turn.calls] == [(MIN_WAKE_S, "wake")]
    fetch(sched, robots[2], robots_response(robots[2]))
    pages = [sched.next_request() for _ in range(3)]  # the poll reports it first
    assert [len(batch) for batch in calls] == [2, 1]
    assert sorted(r.url for r in pages) == [f"http://{h}.test/1" for h in "abc"]
    turn.end()  # nothing left to report
    assert [len(batch) for batch in calls] == [2, 1]
    sched.crawler = None


def _local_state(frontier: LocalFrontier) -> dict:
    """Every table of a local frontier but the leases' random ids."""
    q = frontier.db.execute
    return {
        "entries": q("SELECT host, rank, url, payload, attempts FROM entries "
                     "ORDER BY id").fetchall(),
        "hosts": q("SELECT * FROM hosts ORDER BY host").fetchall(),
        "ready": q("SELECT * FROM ready ORDER BY host").fetchall(),
        "leases": q("SELECT host, entry_id FROM leases ORDER BY host").fetchall(),
        "waiting": q("SELECT host, rank, url FROM waiting ORDER BY id").fetchall(),
        "counters": q("SELECT * FROM counters ORDER BY key").fetchall(),
    }


def test_reports_in_one_call_leave_the_frontier_as_one_at_a_time_in_few_statements():
    """``LocalFrontier.done_many`` over reports of every kind (fetched with a Crawl-delay,
    an age and a new address, failed, requeued, refunded with a page waiting, unfetched, a
    host's last page, stale) leaves every table as ``done`` one report at a time does, in
    as many statements for 31 reports as for 3 (a refund's promotion takes its own): the
    reactor thread lets go of the GIL at each statement."""
    def build():
        clock = FakeClock(1_000_000.0)
        f = LocalFrontier(None, clock=clock, **options(
            bloom_capacity=10_000, budget_waiting=5,
            politeness=politeness(default_delay=1.0, latency_factor=2.0)))
        entries = [Entry(f"http://h{h}.test/{i}", f"h{h}.test", b"p", rank=h % 4 + i * 0.25,
                         budget=2) for h in range(40) for i in range(3)]
        f.add([Entry("http://last.test/", "last.test", b"p", rank=1.5)] + entries)
        return f, clock

    outcomes = [Outcome(status=200, latency=0.05, crawl_delay=3.0, age=0.5),
                Outcome(status=503, latency=0.2), Outcome(requeue=True),
                Outcome(fetched=False, refund=True), Outcome(fetched=False),
                Outcome(status=200, latency=0.01, ip="10.0.0.1", age=2.0)]
    states, statements = [], {}
    for batched in (False, True):
        f, clock = build()
        leases = sorted(f.next_ready(41), key=lambda lease: lease.host)
        assert len(leases) == 41
        reports = [(lease, outcomes[n % len(outcomes)]) for n, lease in enumerate(leases)]
        # one report stale: its lease expired and its entry went back to the queue
        f.db.execute("UPDATE leases SET deadline = 0 WHERE host = 'h7.test'")
        f.release_expired()
        clock.advance(0.25)
        if batched:
            # three reports, then the others but the refunds (31, one stale), then the
            # refunds (their promotions take statements of their own)
            batches = {"three": reports[:3],
                       "others": [r for r in reports[3:] if not r[1].refund],
                       "refunds": [r for r in reports[3:] if r[1].refund]}
            answer_of = {}
            for name, batch in batches.items():
                counted = []
                f.db.set_trace_callback(counted.append)
                answer_of.update(zip([lease.id for lease, _ in batch], f.done_many(batch),
                                     strict=True))
                f.db.set_trace_callback(None)
                statements[name] = len(counted)
            answers = [answer_of[lease.id] for lease, _ in reports]
        else:
            answers = [f.done(lease, outcome) for lease, outcome in reports]
        assert answers == [lease.host != "h7.test" for lease, _ in reports]
        states.append((_local_state(f), f.due_in(),
                       sorted((lease.host, lease.url) for lease in f.next_ready(50))))
        f.close()
    assert states[0] == states[1]
    assert len(batches["others"]) == 31
    assert statements["others"] <= statements["three"]


def test_a_report_wakes_the_engine_ahead_of_its_host(monkeypatch):
    """The wake-up after the finished leases are reported comes ``lease_ahead`` before the
    host is due, as a poll's does: the engine asks for the host's next request after its
    page is processed (spider, pipelines), later than that, and woken only when the host
    is due, its request went through the engine and the download slot after it."""
    turn = Turn()
    monkeypatch.setattr("crawler.scheduler.call_later", turn.call_later)
    frontier = LocalFrontier(None, **options(
        bloom_capacity=10_000, politeness=politeness(default_delay=1.0, latency_factor=0)))
    s = scheduler(frontier, stats=Stats(), buffer_size=6, poll_interval=0, lease_ahead=0.2)
    s.spider = Spider()
    for path in ("/1", "/2"):
        s.enqueue_request(scrapy.Request(f"http://a.test{path}", callback=s.spider.parse))
    first = s.next_request()
    s.crawler = object()  # in a crawl: the report waits for the reactor's turn
    reported = time.monotonic()
    fetch(s, first, HtmlResponse(first.url, body=b"", request=first))
    turn.end()
    [(delay, fn, _)] = turn.calls
    assert fn.__name__ == "wake"
    assert 0.8 - (time.monotonic() - reported) - 0.01 < delay <= 0.8
    s.crawler = None
    frontier.close()

def test_a_url_refused_when_leased_gives_its_page_of_budget_back(sched):
    """small.test may have 2 pages: a URL its robots.txt disallows, found before the
    robots.txt was, took one of them; refused when leased, it gives it back, and the page
    the budget refused meanwhile (it waited) takes it. The crawl fetches 2 pages, never
    more. A recrawl refused so took no page and gives none back."""
    spider = sched.spider
    for path in ("/private/1", "/a", "/b"):
        sched.enqueue_request(scrapy.Request(f"http://small.test{path}", callback=spider.parse))
    sched.flush()
    assert sched.stats["frontier/budget_waiting"] == 1  # /b
    assert sched.frontier.host_state("small.test").waiting == 1
    robots = sched.next_request()
    fetch(sched, robots, robots_response(robots))
    page = sched.next_request()
    assert page.url == "http://small.test/a"  # /private/1 was refused, and refunded
    assert sched.stats["frontier/budget_refunded"] == 1
    state = sched.frontier.host_state("small.test")
    assert (state.pages_added, state.waiting) == (2, 0)  # /a and /b
    sched.enqueue_request(scrapy.Request("http://small.test/c", callback=spider.parse))
    sched.enqueue_request(scrapy.Request("http://small.test/private/2", callback=spider.parse,
                                         meta={"recrawl": True}, dont_filter=True))
    sched.flush()
    assert sched.frontier.host_state("small.test").waiting == 1  # /c
    fetch(sched, page, HtmlResponse(page.url, body=b"<html></html>", request=page))
    last = sched.next_request()
    assert last.url == "http://small.test/b"
    fetch(sched, last, HtmlResponse(last.url, body=b"<html></html>", request=last))
    assert sched.next_request() is None  # the recrawl of /private/2 refused; /c waits
    assert not sched.has_pending_requests()
    assert sched.stats["robots/disallowed"] == 2
    assert sched.stats["frontier/budget_refunded"] == 1  # not for the recrawl
    state = sched.frontier.host_state("small.test")
    assert (state.pages_added, state.waiting) == (2, 1)


def test_a_run_of_refused_urls_gives_the_reactor_turn_back(sched, monkeypatch):
    """URLs refused one after another when leased (a trap pattern's, a condemned host's)
    are settled a bounded time at a turn: ``next_request`` then answers None with work
    left (the engine asks again at the next turn) instead of holding the reactor, and
    every response waiting to be read, for the whole run."""
    monkeypatch.setattr(sched, "turn_s", 0.0)
    spider = sched.spider
    for path in ("/cal/1", "/cal/2"):
        sched.enqueue_request(scrapy.Request(f"http://trap.test{path}", callback=spider.parse))
    sched.flush()
    sched.feedback.trap_pattern(url_pattern("http://trap.test/cal/1"), "trap.test")
    assert sched.next_request() is None
    assert sched.stats["frontier/dropped/template_trap"] == 1  # one refusal, then the turn
    assert sched.next_request() is None
    assert sched.stats["frontier/dropped/template_trap"] == 2
    assert sched.stats["frontier/refusals_yielded"] == 2


def test_requests_handed_out_for_a_while_give_the_reactor_turn_back(monkeypatch):
    """The engine asks for requests until it gets None, and sends each through the
    downloader in the same turn of the reactor: once ``turn_s`` of the turn is spent,
    ``next_request`` answers None with leases in hand and wakes the engine at the next
    turn for them, so that the timers due meanwhile (a host's request held to its start
    time, a response to read) are not held up by a whole poll's worth of requests."""
    turn = Turn()
    monkeypatch.setattr("crawler.scheduler.call_later", turn.call_later)
    frontier = LocalFrontier(None, **options(
        bloom_capacity=10_000, politeness=politeness(default_delay=0.0, latency_factor=0)))
    s = scheduler(frontier, stats=Stats(), buffer_size=6, poll_interval=0)
    s.spider = Spider()
    s.turn_s = 0.0
    for host in ("a.test", "b.test", "c.test"):
        s.enqueue_request(scrapy.Request(f"http://{host}/", callback=s.spider.parse))
    s.crawler = object()  # in a crawl: a turn lasts until the reactor runs its timers
    first = s.next_request()
    assert first is not None and len(s._buffer) == 2  # three hosts leased in one poll
    assert s.next_request() is None
    assert s.stats["frontier/handouts_yielded"] == 1
    assert "wake" in [fn.__name__ for _, fn, _ in turn.calls]
    turn.end()  # the next turn: the engine asks again
    second = s.next_request()
    assert second is not None and second.url != first.url
    assert s.next_request() is None
    s.turn_s = 60.0
    turn.end()
    assert s.next_request() is not None and s.stats["frontier/handouts_yielded"] == 2
    s.crawler = None
    frontier.close()


def test_urls_refused_in_one_turn_reach_the_frontier_in_one_call(sched, monkeypatch):
    """Each refused lease is reported with the other leases finished since the last poll,
    in one frontier call before the next poll, not a write transaction of its own: a
    verdict's refusals ran to thousands a crawl on the reactor thread."""
    turn = Turn()
    monkeypatch.setattr("crawler.scheduler.call_later", turn.call_later)
    monkeypatch.setattr(sched, "poll_interval", 60.0)  # polled when there is cause only
    sched.crawler = object()  # in a crawl: reports wait for the reactor's turn
    spider, frontier = sched.spider, sched.frontier
    for host in ("trap1.test", "trap2.test", "trap3.test"):
        for n in (1, 2):
            sched.enqueue_request(scrapy.Request(f"http://{host}/cal/{n}",
                                                 callback=spider.parse))
    sched.flush()
    robots = [sched.next_request() for _ in range(3)]
    for request in robots:
        fetch(sched, request, robots_response(request))
    turn.end()
    for host in ("trap1.test", "trap2.test", "trap3.test"):
        sched.feedback.trap_pattern(url_pattern(f"http://{host}/cal/1"), host)
    calls = []
    done, done_many = frontier.done, frontier.done_many
    frontier.done = lambda lease, outcome: calls.append(1) or done(lease, outcome)
    frontier.done_many = lambda reports: calls.append(len(reports)) or done_many(reports)
    assert sched.next_request() is None
    assert sched.stats["frontier/dropped/template_trap"] == 6
    # a lease a host at each poll, polled again once they are refused: each poll reports
    # the refusals of the one before
    assert calls == [3, 3]
    turn.end()  # nothing left to report
    assert calls == [3, 3]
    assert not sched.has_pending_requests()
    sched.crawler = None


def test_a_template_trap_url_keeps_its_page_of_budget(sched):
    """A URL of a pattern found to be a template trap since it was queued is dropped when
    leased and keeps its page of the budget: a trap's URLs are what the budget bounds.
    Given back, they let the host's waiting pages in, and a trap host fetched its whole
    budget."""
    spider = sched.spider
    for path in ("/cal/1", "/cal/2", "/about"):
        sched.enqueue_request(scrapy.Request(f"http://small.test{path}", callback=spider.parse))
    sched.flush()
    sched.feedback.trap_pattern(url_pattern("http://small.test/cal/1"), "small.test")
    assert sched.next_request() is None  # both /cal/ URLs dropped; /about still waits
    assert sched.stats["frontier/dropped/template_trap"] == 2
    assert "frontier/budget_refunded" not in sched.stats
    state = sched.frontier.host_state("small.test")
    assert (state.queued, state.pages_added, state.waiting) == (0, 2, 1)


def test_a_url_dropped_when_leased_does_not_hold_its_host_up():
    """A host whose next URLs are dropped when leased (a robots.txt refusal here; stale
    copies of re-pushed URLs in a value-ordered crawl) gets its next fetchable URL at once,
    in the same call, not a poll interval or a tick later per dropped URL."""
    frontier = LocalFrontier(None, **options(
        bloom_capacity=10_000, politeness=politeness(default_delay=0.0, latency_factor=0)))
    s = scheduler(frontier, robots=RobotsPolicy.from_settings(AGENT, frontier),
                  stats=Stats(), buffer_size=6, poll_interval=60)
    s.spider = Spider()
    s.turn_s = 60.0  # as the sched fixture: a loaded box may take 10 ms a refusal
    frontier.robots_set("a.test", 200, b"User-agent: *\nDisallow: /private/\n",
                        time.time() + 100)
    for path in ("/private/1", "/private/2", "/private/3", "/page"):
        s.enqueue_request(scrapy.Request(f"http://a.test{path}", callback=s.spider.parse))
    assert s.next_request().url == "http://a.test/page"
    assert s.stats["robots/disallowed"] == 3
    frontier.close()


def test_robots_5xx_disallows_all(sched):
    sched.enqueue_request(scrapy.Request("http://down.test/x", callback=sched.spider.parse))
    robots = sched.next_request()
    fetch(sched, robots, robots_response(robots, b"", status=503))
    assert sched.robots.allowed("http://down.test/x", "down.test") is False
    assert sched.next_request() is None  # and the 503 made the host back off
    assert sched.frontier.stats()["hosts_cooldown"] == 1


def test_failed_download_backs_off_and_retry_after_is_honoured(sched):
    sched.frontier.robots_set("slow.test", 404, b"", time.time() + 100)
    for i in range(3):
        sched.enqueue_request(scrapy.Request(f"http://slow.test/{i}", callback=sched.spider.parse))
    first = sched.next_request()
    response = Response(first.url, status=429, headers={"Retry-After": "30"}, request=first)
    fetch(sched, first, response)
    assert sched.next_request() is None
    assert sched.frontier.stats()["hosts_cooldown"] == 1
    assert sched.stats["frontier/outcome/429"] == 1


def test_close_returns_buffered_leases(tmp_path):
    path = tmp_path / "f.sqlite3"
    frontier = LocalFrontier(path, **options(bloom_capacity=1000))
    s = scheduler(frontier, robots=RobotsPolicy.from_settings(AGENT, frontier), stats=Stats(),
                  buffer_size=6)
    s.spider = Spider()
    for h in range(4):
        frontier.robots_set(f"h{h}.test", 404, b"", time.time() + 100)
        s.enqueue_request(scrapy.Request(f"http://h{h}.test/", callback=s.spider.parse))
    assert s.next_request() is not None  # leases all four hosts, hands out one
    s.close("shutdown")
    reopened = LocalFrontier(path, **options(bloom_capacity=1000))
    assert reopened.stats()["leases"] == 0
    assert len(reopened.next_ready(10)) == 4  # nothing waits for a lease timeout


def test_budget_cut_verdict_and_seeds_from_redis(tmp_path):
    from redis import Redis

    from crawler.frontier.redis_backend import RedisFrontier
    from harness.redisserver import running_redis

    with running_redis(tmp_path / "redis") as server:
        frontier = RedisFrontier(Redis.from_url(server.url), "unit", **options(bloom_capacity=1000))
        s = scheduler(frontier, stats=Stats(), seeds_key=frontier.seeds_key)
        s.spider = Spider()
        Redis.from_url(server.url).rpush("unit:start_urls", "http://a.test/", "http://a.test/2")
        s.tick()
        assert frontier.stats()["added"] == 2
        assert s.feedback.cut_host_budget("a.test", 2) is True
        s.enqueue_request(scrapy.Request("http://a.test/3", callback=s.spider.parse))
        s.flush()
        assert s.stats["frontier/dropped/budget"] == 1
        s.close("finished")


def test_local_frontier_memory_stays_flat_as_the_queue_grows(tmp_path):
    import psutil

    from crawler.frontier import Entry

    frontier = LocalFrontier(tmp_path / "big.sqlite3", **options(bloom_capacity=1_000_000))
    process = psutil.Process()

    def add(start: int, n: int) -> None:
        for base in range(start, start + n, 5000):
            frontier.add(Entry(f"http://h{i % 3000}.test/page/{i}", f"h{i % 3000}.test",
                               payload=b"p" * 600) for i in range(base, base + 5000))

    add(0, 20_000)
    before = process.memory_info().rss
    add(20_000, 80_000)
    grown = process.memory_info().rss - before
    assert frontier.pending() == 100_000
    assert grown < 12 * 2**20  # 80,000 more queued requests (~50 MB of payload) stay on disk
    frontier.close()


def test_request_dropped_before_download_releases_its_lease(sched):
    sched.frontier.robots_set("a.test", 404, b"", time.time() + 100)
    sched.enqueue_request(scrapy.Request("http://a.test/1", callback=sched.spider.parse))
    sched.enqueue_request(scrapy.Request("http://a.test/2", callback=sched.spider.parse))
    first = sched.next_request()
    sched._release_orphans(inprogress={first})  # still with the engine: kept
    assert sched.next_request() is None
    sched._release_orphans(inprogress=set())  # a middleware dropped it: the host is free
    assert sched.next_request().url == "http://a.test/2"
    assert sched.stats["frontier/dropped/before_download"] == 1


def test_local_restart_releases_leases_of_dead_processes_at_once(tmp_path):
    import subprocess
    import sys

    from crawler.frontier import Entry

    path = tmp_path / "f.sqlite3"
    frontier = LocalFrontier(path, **options(bloom_capacity=1000, lease_s=3600))
    frontier.add([Entry("http://a.test/1", "a.test"), Entry("http://b.test/1", "b.test")])
    leases = frontier.next_ready(2)
    assert len(leases) == 2
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    owner = frontier.owner.rsplit(":", 1)[0] + ":" + dead
    frontier.db.execute("UPDATE leases SET owner = ? WHERE id = ?", (owner, leases[0].id))
    frontier.close()
    reopened = LocalFrontier(path, **options(bloom_capacity=1000, lease_s=3600))
    assert reopened.stats()["leases"] == 1  # this (live) process's lease stays
    (again,) = reopened.next_ready(2)
    assert again.url == leases[0].url


def test_a_url_with_a_bad_host_is_dropped_with_its_reason(sched):
    spider = sched.spider
    for url in ('http://"><img src=x onerror=alert(1)>.test/', "http://a%00b.test/"):
        assert not sched.enqueue_request(scrapy.Request(url, callback=spider.parse))
    assert not sched.enqueue_request(scrapy.Request("http://a..b.test/", callback=spider.parse))
    sched.flush()
    assert sched.stats["frontier/dropped/invalid_host"] == 3


def test_an_acquitted_host_is_queued_again_within_its_own_budget(sched):
    spider = sched.spider
    assert sched.enqueue_request(scrapy.Request("http://a.test/0", callback=spider.parse))
    sched.flush()
    sched.feedback.condemn_host("a.test", "a.test", reason="spam")
    assert not sched.enqueue_request(scrapy.Request("http://a.test/1", callback=spider.parse))
    sched.feedback.acquit_host("a.test", "a.test", reason="spam")
    assert sched.enqueue_request(scrapy.Request("http://a.test/2", callback=spider.parse))
    sched.flush()
    # /0 dropped from the queue at the verdict, /1 refused
    assert sched.stats["frontier/dropped/spam"] == 2 and sched.stats["frontier/acquitted"] == 1
    assert sched.frontier.stats()["added"] == 2  # the budget cut is lifted
    assert sched.frontier.pending() == 1  # /2
    sched.feedback.acquit_host("a.test", "a.test")  # not condemned: nothing to do
    assert sched.stats["frontier/acquitted"] == 1


def test_a_url_moved_up_at_its_own_depth_keeps_its_fields():
    s = _value_ordered_scheduler()
    frontier = s.frontier
    template = scrapy.Request("http://x.invalid/", callback=s.spider.parse,
                              meta={"kept": "yes"})
    urls = [f"http://a.test/p/{n}" for n in range(20)]
    s.enqueue_links(HtmlResponse("http://a.test/", body=b""), urls, 1, template)
    for n in range(3):  # pages at the same depth link to /p/7, queued already
        s.enqueue_links(HtmlResponse(f"http://a.test/q/{n}", body=b""), [], 1, template,
                        outlinks=10, seen=["http://a.test/p/7"])
    s.flush()
    assert s.stats["frontier/repushed"] >= 1
    first = s.next_request()
    assert first.url == "http://a.test/p/7"
    assert first.meta["depth"] == 1 and first.meta["kept"] == "yes"
    assert first.callback == s.spider.parse
    frontier.close()
