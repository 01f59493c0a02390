"""Crawl scope for every request the engine schedules, redirects and meta refreshes included.

Links are scoped by the spider before they reach the frontier (``WebSpider.in_scope``:
allowed host patterns, the admin's allow and block rules). A redirect (``RedirectMiddleware``)
or a ``<meta http-equiv="refresh">`` (``MetaRefreshMiddleware``) is a new request that the
engine hands straight to the scheduler, which checks block rules only; ``ScopeMiddleware``
puts it through the same ``in_scope`` test first, as Scrapy's own downloader
``OffsiteMiddleware`` does with ``allowed_domains`` (switched off here: it knows neither
host patterns nor host rules). ``dont_filter`` does not exempt a request (recrawls carry it
and may redirect anywhere); ``meta["allow_offsite"]`` does, as in Scrapy.
"""

from __future__ import annotations

import logging

from scrapy import Request, Spider, signals
from scrapy.exceptions import IgnoreRequest

from crawler.urls import host_of

logger = logging.getLogger(__name__)

#: Off-scope hosts logged once each (the first this many); the rest are only counted.
LOGGED_HOSTS = 1000


class ScopeMiddleware:
    """Drops a scheduled request whose host the spider's ``in_scope(host)`` refuses.

    Checked on ``request_scheduled`` (before the request reaches the frontier) and again in
    ``process_request`` for redirect and refresh hops (``meta["redirect_urls"]``), so a hop
    queued before a host rule changed is not fetched either. A spider without ``in_scope``
    is not scoped. Stats: ``scope/offsite`` (requests dropped), ``scope/offsite/redirect``
    (of which redirect or refresh hops).
    """

    def __init__(self, stats=None):
        self.stats = stats
        self.spider: Spider | None = None
        self._logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler) -> ScopeMiddleware:
        mw = cls(crawler.stats)
        crawler.signals.connect(mw.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(mw.request_scheduled, signal=signals.request_scheduled)
        return mw

    def spider_opened(self, spider: Spider) -> None:
        self.spider = spider

    def request_scheduled(self, request: Request, spider: Spider | None = None) -> None:
        """Raise ``IgnoreRequest`` (the engine then drops it) for an off-scope request."""
        self._check(request)

    def process_request(self, request: Request) -> None:
        if request.meta.get("redirect_urls"):
            self._check(request)

    def in_scope(self, request: Request) -> bool:
        """Whether ``request`` may be fetched: its host in the spider's scope."""
        if request.meta.get("allow_offsite"):
            return True
        check = getattr(self.spider, "in_scope", None)
        return check is None or check(host_of(request.url))

    def _check(self, request: Request) -> None:
        if self.in_scope(request):
            return
        host = host_of(request.url)
        hop = bool(request.meta.get("redirect_urls"))
        self._inc("scope/offsite")
        if hop:
            self._inc("scope/offsite/redirect")
        if host not in self._logged and len(self._logged) < LOGGED_HOSTS:
            self._logged.add(host)
            came_from = request.meta["redirect_urls"][-1] if hop else ""
            logger.info("out of scope, not fetched: %s%s", request.url,
                        f" (redirected from {came_from})" if came_from else "")
        raise IgnoreRequest(f"out of the crawl's scope: {host}")

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)
