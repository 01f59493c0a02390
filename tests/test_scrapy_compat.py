"""Scrapy's AUTOTHROTTLE_* settings drive the frontier's politeness (and Scrapy's AutoThrottle
stays off); scrapy-redis's SCHEDULER_FLUSH_ON_START, SCHEDULER_PERSIST and
REDIS_START_URLS_KEY work as aliases, so a scrapy-redis project switches by SCHEDULER; Scrapy's
spider middlewares that do nothing the frontier does not stay out of a page's callback chain."""

from __future__ import annotations

import math

import pytest
import scrapy
from pydispatch import dispatcher
from redis import Redis
from scrapy import signals
from scrapy.extensions.throttle import AutoThrottle
from scrapy.settings import Settings
from scrapy.utils.project import get_project_settings
from scrapy.utils.test import get_crawler

from crawler import aliases
from crawler.frontier import Outcome, Politeness
from crawler.scheduler import FrontierScheduler
from harness.redisserver import running_redis

# -- AutoThrottle -> Politeness ------------------------------------------------------------


def throttle(**values) -> Politeness:
    return Politeness.from_settings(Settings({"AUTOTHROTTLE_ENABLED": True, **values}))


def test_autothrottle_off_leaves_the_frontier_settings_alone():
    p = Politeness.from_settings(Settings({"FRONTIER_DELAY": 0.5, "FRONTIER_LATENCY_FACTOR": 3,
                                           "AUTOTHROTTLE_TARGET_CONCURRENCY": 0.1}))
    assert (p.default_delay, p.latency_factor) == (0.5, 3.0)
    assert (p.max_latency_delay, p.start_delay) == (math.inf, 0.0)


def test_autothrottle_settings_map_onto_the_policy():
    p = throttle(AUTOTHROTTLE_TARGET_CONCURRENCY=0.25, AUTOTHROTTLE_MAX_DELAY=20,
                 AUTOTHROTTLE_START_DELAY=3, FRONTIER_DELAY=0.1)
    assert (p.latency_factor, p.max_latency_delay, p.start_delay) == (3.0, 20.0, 3.0)
    assert p.default_delay == 0.1  # the floor stays the frontier's
    # Scrapy's defaults: target 1 -> no latency term (one request at a time), 60 s, 5 s
    p = throttle()
    assert (p.latency_factor, p.max_latency_delay, p.start_delay) == (0.0, 60.0, 5.0)
    assert throttle(AUTOTHROTTLE_TARGET_CONCURRENCY=4).latency_factor == 0.0
    with pytest.raises(ValueError, match="AUTOTHROTTLE_TARGET_CONCURRENCY must be above 0"):
        throttle(AUTOTHROTTLE_TARGET_CONCURRENCY=0)


@pytest.mark.parametrize("target", [0.1, 0.25, 0.5, 1.0])
def test_requests_start_every_latency_over_target_like_autothrottle(target):
    """AutoThrottle aims at one request start per latency/N; the frontier waits its delay
    after each response, so a request starts every latency + delay."""
    p = throttle(AUTOTHROTTLE_TARGET_CONCURRENCY=target, FRONTIER_DELAY=0,
                 AUTOTHROTTLE_START_DELAY=0)
    latency, state, backoff = 0.8, 0.0, 0
    for _ in range(30):  # the latency average settles
        delay, state, backoff = p.next_delay(state, backoff, Outcome(status=200, latency=latency))
    assert latency + delay == pytest.approx(latency / target)


def test_start_delay_then_latency_and_max_delay_caps_only_the_latency_term():
    p = throttle(AUTOTHROTTLE_TARGET_CONCURRENCY=0.5, AUTOTHROTTLE_START_DELAY=4,
                 AUTOTHROTTLE_MAX_DELAY=10, FRONTIER_DELAY=0.2)
    p = Politeness(**{**p.__dict__, "latency_alpha": 1.0})
    ok = Outcome(status=200, latency=0.3)
    delay, latency, _ = p.next_delay(0.0, 0, ok)  # the host's first response
    assert delay == 4.0
    assert p.next_delay(latency, 0, ok)[0] == pytest.approx(0.3)  # then k=1 x latency
    assert p.next_delay(latency, 0, Outcome(status=200, latency=0.05))[0] == 0.2  # floor
    assert p.next_delay(latency, 0, Outcome(status=200, latency=50))[0] == 10.0  # capped
    # what AutoThrottle does not set keeps its own rules
    assert p.next_delay(latency, 0, Outcome(status=200, latency=0.3, crawl_delay=25))[0] == 25
    assert p.next_delay(latency, 0, Outcome(status=200, latency=0.3, admin_delay=40))[0] == 40
    assert p.next_delay(latency, 3, Outcome(status=503, latency=0.3))[0] == 16.0  # backoff
    assert p.next_delay(latency, 0, Outcome(status=429, retry_after=90))[0] == 90


class Spider(scrapy.Spider):
    name = "compat"

    def parse(self, response):
        return None


def receivers(crawler, signal) -> list:
    return list(dispatcher.liveReceivers(dispatcher.getAllReceivers(crawler.signals.sender,
                                                                    signal)))


def test_scrapy_autothrottle_is_off_in_the_project_and_disconnected_elsewhere(tmp_path):
    assert get_project_settings().getdict("EXTENSIONS")[
        "scrapy.extensions.throttle.AutoThrottle"] is None
    # a project that kept Scrapy's extension: the scheduler takes its settings over
    crawler = get_crawler(Spider, {
        "SCHEDULER": "crawler.scheduler.FrontierScheduler", "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_TARGET_CONCURRENCY": 0.5, "DATA_DIR": str(tmp_path),
    })
    extension = crawler.get_extension(AutoThrottle)
    assert extension is not None
    assert any(getattr(r, "__self__", None) is extension
               for r in receivers(crawler, signals.response_downloaded))
    scheduler = FrontierScheduler.from_crawler(crawler)
    try:
        for signal in (signals.response_downloaded, signals.spider_opened):
            assert not any(getattr(r, "__self__", None) is extension
                           for r in receivers(crawler, signal))
        assert scheduler.frontier.politeness.latency_factor == 1.0
        assert crawler.stats.get_value("frontier/autothrottle_disconnected") == 1
    finally:
        scheduler.frontier.close()


# -- spider middlewares ----------------------------------------------------------------------


def test_a_pages_callback_output_passes_only_the_spider_middlewares_the_project_needs():
    """Each spider middleware with process_spider_output wraps every page's callback in two
    async generators, passed at each await: only the referrer policy's (the spider's own
    requests: sitemap pages, renders) is left; HttpErrorMiddleware reads the response only."""
    from scrapy.spidermiddlewares.httperror import HttpErrorMiddleware
    from scrapy.spidermiddlewares.referer import RefererMiddleware
    from scrapy.utils.conf import build_component_list
    from scrapy.utils.misc import load_object

    paths = build_component_list(get_project_settings().getwithbase("SPIDER_MIDDLEWARES"))
    classes = [load_object(path) for path in paths]
    assert classes == [HttpErrorMiddleware, RefererMiddleware]
    assert [c for c in classes if hasattr(c, "process_spider_output")] == [RefererMiddleware]


def test_the_frontier_drops_the_urls_scrapys_url_length_limit_dropped():
    """UrlLengthMiddleware is off: every request reaches the frontier, which drops a URL
    over FRONTIER_MAX_URL_LENGTH, no larger than Scrapy's URLLENGTH_LIMIT."""
    settings = get_project_settings()
    assert 0 < settings.getint("FRONTIER_MAX_URL_LENGTH") <= settings.getint("URLLENGTH_LIMIT")


def test_the_spiders_requests_copy_no_internal_meta_of_the_response():
    """MetaCopyDetectionMiddleware is off: the spider's requests made from a response's meta
    (a render of the page) carry none of the keys it warns about."""
    from scrapy.spidermiddlewares.metacopy import MetaCopyDetectionMiddleware

    from spiders.web import WebSpider

    spider = WebSpider.from_crawler(get_crawler(WebSpider, {"CONTROL_STORE": ""}),
                                    seeds="http://a.test/")
    internal = MetaCopyDetectionMiddleware._INTERNAL_KEYS
    meta = {key: 1 for key in internal} | {"depth": 2, "seed": True}
    request = spider.render_request("http://a.test/app", meta)
    assert request.meta["depth"] == 2
    assert not internal & request.meta.keys()


# -- scrapy-redis aliases ----------------------------------------------------------------


def test_alias_wins_on_higher_or_equal_priority():
    s = Settings({"FRONTIER_RESET": False}, priority="project")
    assert aliases.getbool(s, "FRONTIER_RESET") is False
    s.set("SCHEDULER_FLUSH_ON_START", True, priority="project")
    assert aliases.getbool(s, "FRONTIER_RESET") is True  # tie: the alias
    s.set("FRONTIER_RESET", False, priority="cmdline")
    assert aliases.getbool(s, "FRONTIER_RESET") is False  # -s FRONTIER_RESET wins
    s = Settings()
    s.set("SCHEDULER_PERSIST", "False", priority="cmdline")
    assert aliases.getbool(s, "FRONTIER_PERSIST") is False
    assert aliases.get(Settings(), "FRONTIER_SEEDS_KEY") in ("", None)


@pytest.fixture
def redis_server(tmp_path):
    with running_redis(tmp_path / "redis") as server:
        yield server


def scrapy_redis_crawler(redis_url: str, data_dir, **settings):
    """A crawler of a scrapy-redis project (no settings of ours) with SCHEDULER switched."""
    return get_crawler(Spider, {
        "SCHEDULER": "crawler.scheduler.FrontierScheduler", "REDIS_URL": redis_url,
        "DATA_DIR": str(data_dir), "FRONTIER_ROBOTS": False, **settings,
    })


def open_scheduler(crawler) -> FrontierScheduler:
    scheduler = FrontierScheduler.from_crawler(crawler)
    scheduler.open(crawler._create_spider())
    return scheduler


def add_pages(scheduler: FrontierScheduler, n: int = 3) -> None:
    for i in range(n):
        scheduler.enqueue_request(scrapy.Request(f"http://h{i}.test/page",
                                                 callback=scheduler.spider.parse))
    scheduler.flush()


def test_redis_start_urls_key_names_the_seed_list(redis_server, tmp_path):
    crawler = scrapy_redis_crawler(redis_server.url, tmp_path,
                                   REDIS_START_URLS_KEY="%(name)s:seeds")
    scheduler = open_scheduler(crawler)
    try:
        assert scheduler.seeds_key == "compat:seeds"
        Redis.from_url(redis_server.url).rpush("compat:seeds", "http://a.test/",
                                               "http://b.test/x")
        scheduler._pull_seeds()  # what the scheduler's timer does every second
        scheduler.flush()
        assert scheduler.frontier.pending() == 2
        assert Redis.from_url(redis_server.url).llen("compat:seeds") == 0
    finally:
        scheduler.close("finished")
    # without the alias: ours, "<crawl>:start_urls" like scrapy-redis's default
    scheduler = open_scheduler(scrapy_redis_crawler(redis_server.url, tmp_path))
    try:
        assert scheduler.seeds_key == "compat:start_urls"
    finally:
        scheduler.close("finished")


@pytest.mark.parametrize(("settings", "kept"), [
    ({}, True),  # ours: the frontier persists (scrapy-redis would clear it)
    ({"SCHEDULER_PERSIST": True}, True),
    ({"SCHEDULER_PERSIST": False}, False),
    ({"SCHEDULER_PERSIST": False, "FRONTIER_PERSIST": True}, False),  # tie: the alias
])
def test_scheduler_persist_decides_what_close_leaves(redis_server, tmp_path, settings, kept):
    scheduler = open_scheduler(scrapy_redis_crawler(redis_server.url, tmp_path, **settings))
    add_pages(scheduler)
    assert scheduler.frontier.pending() == 3
    scheduler.close("finished")
    scheduler = open_scheduler(scrapy_redis_crawler(redis_server.url, tmp_path))
    try:
        assert scheduler.frontier.pending() == (3 if kept else 0)
    finally:
        scheduler.close("finished")


def test_scheduler_flush_on_start_empties_the_frontier(redis_server, tmp_path):
    scheduler = open_scheduler(scrapy_redis_crawler(redis_server.url, tmp_path))
    add_pages(scheduler)
    scheduler.close("finished")
    scheduler = open_scheduler(scrapy_redis_crawler(redis_server.url, tmp_path,
                                                    SCHEDULER_FLUSH_ON_START=True))
    try:
        assert scheduler.frontier.pending() == 0
        add_pages(scheduler, 2)  # and it queues again from there (the seen filter was reset)
        assert scheduler.frontier.pending() == 2
    finally:
        scheduler.close("finished")


# -- a crawl with AutoThrottle's settings, seen from the test web's side ------------------


@pytest.mark.slow
def test_a_crawl_with_autothrottle_settings_keeps_their_delays(tmp_path):
    import testweb
    from harness.crawlrun import migrate, run_crawl

    slow = 0.4  # every response of slow.test takes this long
    with testweb.run(hosts=1, slow_delay=slow, log=tmp_path / "web.log") as web:
        migrate(tmp_path / "data")
        result = run_crawl(tmp_path / "data", [web.home_url("slow.test")], {
            "AUTOTHROTTLE_ENABLED": True, "AUTOTHROTTLE_START_DELAY": 1.5,
            "AUTOTHROTTLE_TARGET_CONCURRENCY": 0.25,  # k = 3: three latencies between requests
            "FRONTIER_DELAY": 0.05,
        }, args={"allowed_hosts": "slow.test", "max_pages": 4}, timeout=180)
        assert result.returncode == 0, result.stderr[-3000:]
        log = sorted((r for r in web.read_log() if r["host"].startswith("slow.test")),
                     key=lambda r: r["start"])
    assert [r["path"] for r in log[:2]] == ["/robots.txt", "/"]
    assert len(log) >= 4
    gaps = [b["start"] - a["end"] for a, b in zip(log, log[1:], strict=False)]
    assert gaps[0] >= 1.5 - 0.01  # AUTOTHROTTLE_START_DELAY after the host's first response
    # then 3 x the latency average (>= the server's 0.4 s): not FRONTIER_LATENCY_FACTOR's 2 x
    assert all(gap >= 3 * slow - 0.01 for gap in gaps[1:]), gaps
    assert all(b["start"] >= a["end"] for a, b in zip(log, log[1:], strict=False))
