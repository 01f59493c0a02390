"""Freshness in the crawl: conditional GET, change tracking, deletions, moves, recrawl feed.

``FreshnessMiddleware`` (downloader middleware, between the redirect middleware and the
handler) sends each URL's validators, records every answer in the crawl-state store through
``crawler.recrawl.observe``, drops 304s before the spider (no download, no re-indexing), and
asks the index writer to delete documents that are gone (404/410 twice) or moved (301/308).
``RecrawlFeeder`` (extension) puts due URLs back into the frontier, highest value x
staleness first, within ``RECRAWL_SHARE`` of the fetches (all of them when nothing else is
pending).
"""

from __future__ import annotations

import hashlib
import logging
import time
import weakref
from typing import ClassVar
from urllib.parse import urljoin

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured
from twisted.internet import task

from crawler import aliases
from crawler.config import config_from_settings
from crawler.crawlstate import CrawlStateStore, WriteBehind, open_crawl_state
from crawler.frontier.base import request_tier
from crawler.options import Option, enabled, setting, settings_to_options
from crawler.recrawl import CrawlState, RecrawlPolicy, observe
from crawler.scheduler import store_down
from crawler.signals import documents_removed
from crawler.urls import InvalidURL, canonicalize, doc_id_for

logger = logging.getLogger(__name__)

CONDITIONAL_HEADERS = ("If-None-Match", "If-Modified-Since")


def store_from_crawler(crawler) -> CrawlStateStore:
    """The crawl's state store, one per crawler (the middleware and the feeder share it):
    its puts written in batches (``WriteBehind``), and at each ``spider_idle``."""
    store = getattr(crawler, "crawl_state", None)
    if store is None:
        s = crawler.settings
        crawl = s.get("FRONTIER_CRAWL") or crawler.spidercls.name
        store = WriteBehind(open_crawl_state(config_from_settings(s), crawl))
        if aliases.getbool(s, "FRONTIER_RESET"):
            store.clear()
        crawler.crawl_state = store
        crawler.signals.connect(store.flush, signal=signals.spider_idle)
        if not aliases.getbool(s, "FRONTIER_PERSIST"):
            crawler.signals.connect(store.clear, signal=signals.engine_stopped)
        crawler.signals.connect(store.close, signal=signals.engine_stopped)
    return store


def _url_of(request: Request) -> str | None:
    try:
        return canonicalize(request.url)
    except InvalidURL:
        return None


class FreshnessMiddleware:
    """Conditional GET and per-URL change tracking; see the module docstring."""

    def __init__(self, store: CrawlStateStore, policy: RecrawlPolicy, *, max_tier: int,
                 stats=None, signals_=None, clock=time.time):
        self.store = store
        self.policy = policy
        self.stats = stats
        self.signals = signals_
        self.clock = clock
        self.max_tier = max_tier
        # requests whose URL had no state when they left: their answer need not read it
        # again (a URL is leased to one request at a time, so none appears meanwhile)
        self._unknown: weakref.WeakSet[Request] = weakref.WeakSet()

    @classmethod
    def from_crawler(cls, crawler) -> FreshnessMiddleware:
        s = crawler.settings
        if not enabled(s, "RECRAWL_ENABLED"):
            raise NotConfigured
        return cls(store_from_crawler(crawler), RecrawlPolicy.from_settings(s), stats=crawler.stats,
                   signals_=crawler.signals, max_tier=setting(s, "FRONTIER_TIERS", int) - 1)

    def _skip(self, request: Request) -> bool:
        return bool(request.meta.get("frontier_robots") or request.meta.get("dont_recrawl"))

    def process_request(self, request: Request, spider=None) -> None:
        """Send the stored copy's validators; refuse tombstoned URLs met through links."""
        if self._skip(request):
            return None
        for name in CONDITIONAL_HEADERS:  # a redirect copies the source URL's headers
            request.headers.pop(name, None)
        url = _url_of(request)
        state = self.store.get(url) if url else None
        if state is None:
            self._unknown.add(request)
            return None
        self._unknown.discard(request)
        if state.tombstone and not request.meta.get("recrawl"):
            self._inc("recrawl/tombstoned")
            raise IgnoreRequest(f"{url} is gone (tombstone)")
        for name, value in state.validators.items():
            request.headers[name] = value
        return None

    def process_response(self, request: Request, response, spider=None):
        """Record the answer; a 304 on a stored copy ends here (IgnoreRequest)."""
        if self._skip(request):
            return response
        url = _url_of(request)
        if url is None:
            return response
        state = None if request in self._unknown else self.store.get(url)
        state = state or CrawlState(url)
        state.tier = min(max(request_tier(request.meta), 0), self.max_tier)
        status = response.status
        headers = response.headers
        location = ""
        if status in (301, 308) and headers.get(b"Location"):
            try:
                location = canonicalize(
                    urljoin(request.url, headers[b"Location"].decode("latin-1")))
            except InvalidURL:
                location = ""
        event = observe(
            self.policy, state, self.clock(), status,
            hashlib.sha1(response.body).hexdigest() if 200 <= status < 300 else "",
            headers.get(b"ETag", b"").decode("latin-1"),
            headers.get(b"Last-Modified", b"").decode("latin-1"),
            location,
        )
        self.store.put([state])
        self._inc(f"recrawl/{event}")
        if request.meta.get("recrawl"):
            self._inc("recrawl/fetched")
        if event in ("deleted", "moved"):
            self._remove(url, event)
        if event == "not_modified":
            raise IgnoreRequest(f"{url} not modified")
        return response

    def process_exception(self, request: Request, exception, spider=None) -> None:
        """A download error: the URL backs off."""
        if self._skip(request):
            return None
        url = _url_of(request)
        state = self.store.get(url) if url else None
        if state is not None:
            self.policy.failed(state, self.clock())
            self.store.put([state])
            self._inc("recrawl/failed")
        return None

    def _remove(self, url: str, reason: str) -> None:
        if self.signals is not None:
            self.signals.send_catch_log(documents_removed, ids=[doc_id_for(url)], reason=reason)

    def _inc(self, key: str, n: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, n)


class RecrawlFeeder:
    """Queues due URLs, highest value x staleness first, within ``share`` of the fetches.

    Every ``interval`` seconds it may add up to ``share x (requests dequeued + batch)``
    recrawls in all, at most ``batch`` at a time; when the scheduler has nothing else
    pending, a whole ``batch``; an idle spider is kept open while due URLs remain. A claimed
    URL is not due again for ``hold`` seconds unless its fetch reschedules it.
    """

    #: Setting -> option; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "RECRAWL_SHARE": ("share", float),
        "RECRAWL_BATCH": ("batch", int),
        "RECRAWL_POLL_INTERVAL": ("interval", float),
        "RECRAWL_HOLD": ("hold", float),
    }

    def __init__(self, crawler, store: CrawlStateStore, policy: RecrawlPolicy, *,
                 share: float, batch: int, interval: float, hold: float, clock=time.time):
        self.crawler = crawler
        self.store = store
        self.policy = policy
        self.share = share
        self.batch = batch
        self.interval = interval
        self.hold = hold
        self.clock = clock
        self.fed = 0
        self._loop: task.LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler) -> RecrawlFeeder:
        s = crawler.settings
        if not enabled(s, "RECRAWL_ENABLED") or setting(s, "RECRAWL_SHARE", float) <= 0:
            raise NotConfigured
        feeder = cls(crawler, store_from_crawler(crawler), RecrawlPolicy.from_settings(s),
                     **settings_to_options(s, cls.SETTINGS))
        crawler.signals.connect(feeder.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(feeder.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(feeder.spider_idle, signal=signals.spider_idle)
        return feeder

    def spider_opened(self, spider) -> None:
        self._loop = task.LoopingCall(self._feed_on_timer)
        self._loop.start(self.interval, now=False)

    def _feed_on_timer(self) -> None:
        # a store outage (Redis restarting) skips a round; it must not stop the timer
        try:
            self.feed()
        except store_down() as exc:
            logger.warning("recrawl feed skipped, crawl state store unavailable: %s", exc)

    def spider_closed(self, spider) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()

    def spider_idle(self, spider) -> None:
        """Nothing new left: feed due URLs now, and keep the spider open if there were any."""
        try:
            fed = self.feed()
        except store_down() as exc:
            logger.warning("recrawl feed skipped, crawl state store unavailable: %s", exc)
            raise DontCloseSpider from exc
        if fed:
            raise DontCloseSpider

    def allowance(self, dequeued: int, idle: bool) -> int:
        """How many recrawls may be queued now."""
        if idle:
            return self.batch
        return max(0, min(self.batch, int(self.share * (dequeued + self.batch)) - self.fed))

    def feed(self) -> int:
        """Queue the due URLs the allowance permits; returns how many."""
        engine = getattr(self.crawler, "engine", None)
        spider = getattr(engine, "spider", None)
        if engine is None or spider is None:
            return 0
        stats = self.crawler.stats
        scheduler = engine.scheduler
        idle = scheduler is not None and not scheduler.has_pending_requests()
        limit = self.allowance(stats.get_value("frontier/dequeued", 0), idle)
        states = self.store.take_due(self.clock(), limit, self.policy, self.hold)
        for state in states:
            engine.crawl(self.request_for(spider, state))
        self.fed += len(states)
        if states:
            stats.inc_value("recrawl/queued", len(states))
        return len(states)

    @staticmethod
    def request_for(spider, state: CrawlState) -> Request:
        """The recrawl request of ``state``: past the seen filter, in the URL's tier."""
        if hasattr(spider, "page_request"):
            request = spider.page_request(state.url, state.tier)
        else:
            request = Request(state.url)
        return request.replace(dont_filter=True, meta={**request.meta, "recrawl": True,
                                                        "frontier_tier": state.tier})
