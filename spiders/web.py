"""The `web` spider: crawl from seeds, extract each page, follow links within scope."""

from __future__ import annotations

import fnmatch
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import scrapy
from scrapy import signals
from scrapy.exceptions import CloseSpider, DontCloseSpider
from scrapy.http import Response, TextResponse
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.defer import maybe_deferred_to_future

from crawler.bounded import RecentSet
from crawler.extract import NotAPage, cut_words, load_language_model
from crawler.extractpool import ExtractPool
from crawler.fetch import TRUNCATED, failure_kind
from crawler.hostrules import ControlNotReady, ControlStore, HostRules, control_store
from crawler.options import enabled, setting
from crawler.quality.judges import BROWSER_AGENT, browser_probe_fetched
from crawler.signals import links_extracted
from crawler.sitemaps import SitemapBacklog, parse_sitemap, robots_sitemaps
from crawler.urls import InvalidURL, canonicalize, host_of

RECENT_LINKS = 200_000  # links this process yielded lately, skipped before building a Request
SITEMAP_PRIORITY = -10  # Scrapy's scheduler: sitemaps after pages
SITEMAP_TIER = 3  # the frontier's lowest front tier, still served (never starved)


class WebSpider(scrapy.Spider):
    """Crawl the web from seeds.

    Arguments (``-a name=value``): ``seeds`` (comma-separated URLs), ``seeds_file`` (one URL
    per line, ``#`` comments), ``allowed_hosts`` (comma-separated host patterns such as
    ``*.test``), ``max_pages``, ``max_depth``, ``continuous`` (1: never close when idle,
    keep crawling new and due URLs). Without seeds, the admin's seeds are used; with none
    there either, a continuous crawl waits for seeds pushed to the frontier's seeds key.
    """

    name = "web"
    #: Host rules and the admin's seeds (``CONTROL_STORE``); None: seeds from arguments only.
    control: ControlStore | None = None

    def __init__(
        self,
        seeds: str | None = None,
        seeds_file: str | None = None,
        allowed_hosts: str | None = None,
        max_pages: str | int | None = None,
        max_depth: str | int | None = None,
        continuous: str | bool | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.seed_args = [s.strip() for s in (seeds or "").split(",") if s.strip()]
        self.seeds_file = seeds_file
        self.allowed_arg = [
            h.strip().lower() for h in (allowed_hosts or "").split(",") if h.strip()
        ]
        self.max_pages_arg = int(max_pages) if max_pages else None
        self.max_depth_arg = int(max_depth) if max_depth else None
        self.continuous = str(continuous or "").lower() in ("1", "true", "yes", "on")

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        spider.allowed_patterns = spider.allowed_arg or [
            p.lower() for p in settings.getlist("CRAWL_ALLOWED_HOSTS")
        ]
        spider.max_pages = spider.max_pages_arg or settings.getint("CRAWL_MAX_PAGES")
        spider.max_depth = spider.max_depth_arg or settings.getint("DEPTH_LIMIT")
        spider.control = control_store(settings)
        if spider.control is not None:
            try:
                spider.control.prepare()
            except ControlNotReady as exc:
                spider.logger.error("%s", exc)
                raise SystemExit(str(exc)) from None  # one sentence, not a traceback
        spider.host_rules = HostRules.from_crawler(crawler)
        if not setting(settings, "EXTRACT_WORKERS", int):
            # before the first response, not on the reactor mid-crawl; with workers, they
            # load it and this process never uses it (0.6 s of CPU)
            load_language_model(setting(settings, "LANGUAGE_MODEL_CACHE") or None)
        crawler.signals.connect(spider.open_extractor, signal=signals.spider_opened)
        crawler.signals.connect(spider.warm_extractor, signal=signals.spider_opened)
        spider.retry_codes = {int(c) for c in settings.getlist("RETRY_HTTP_CODES")}
        spider.render_enabled = enabled(settings, "RENDER_JS_ENABLED")
        spider.max_words = setting(settings, "PAGE_MAX_WORDS", int)
        spider.render_timeout_ms = setting(settings, "RENDER_TIMEOUT_MS", int)
        spider.sitemap_probe = enabled(settings, "SITEMAP_PROBE_DEFAULT")
        spider.sitemap_max_size = setting(settings, "SITEMAP_MAX_SIZE", int)
        spider.sitemap_max_depth = setting(settings, "SITEMAP_MAX_DEPTH", int)
        spider.sitemap_release = setting(settings, "SITEMAP_RELEASE", int)
        spider._sitemap_hosts = {}
        spider._sitemap_backlog = SitemapBacklog(setting(settings, "SITEMAP_MAX_PENDING", int))
        if enabled(settings, "SITEMAPS_ENABLED"):
            crawler.signals.connect(spider.robots_downloaded, signal=signals.response_downloaded)
        if spider.continuous:
            crawler.signals.connect(spider.keep_running, signal=signals.spider_idle)
        spider.pages = 0
        spider._scope_cache = {}
        spider._recent_links = RecentSet(RECENT_LINKS)
        # what a followed link's request is like, bar its URL and depth (links_extracted)
        spider.link_template = scrapy.Request(
            "http://link.invalid/", callback=spider.parse, errback=spider.fetch_failed
        )
        # the scheduler's handler of links_extracted, set by a scheduler that takes a page's
        # links in one batch when it opens (FrontierScheduler.open): called directly, without
        # a signal's dispatch (7.5 us a page); None: the signal is sent
        spider.links_sink = None
        return spider

    def open_extractor(self, spider=None) -> None:
        """The pages' extraction, in worker processes (``EXTRACT_WORKERS``; 0: inline),
        started when the crawl opens and stopped when it closes."""
        self.extractor = ExtractPool.from_settings(self.crawler.settings,
                                                   stats=self.crawler.stats)
        self.crawler.signals.connect(self.extractor.close, signal=signals.spider_closed)

    async def warm_extractor(self, spider=None) -> None:
        """Done once every extraction worker has extracted a first page
        (``ExtractPool.warm``): Scrapy awaits ``spider_opened``'s handlers before the first
        request, so the crawl's first pages, whose links its hosts wait for, meet started
        workers."""
        await maybe_deferred_to_future(self.extractor.warm())

    def keep_running(self, spider=None) -> None:
        """``spider_idle`` handler in continuous mode: due URLs will come (RecrawlFeeder)."""
        self.crawler.stats.inc_value("crawl/idle")
        raise DontCloseSpider

    # --- seeds ---

    def seed_urls(self) -> list[str]:
        """Seeds from arguments, else the seeds file, else the control store's (the admin's)."""
        raw: Iterable[str] = self.seed_args
        if not raw and self.seeds_file:
            lines = Path(self.seeds_file).read_text(encoding="utf-8").splitlines()
            raw = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
        if not raw and self.control is not None:
            raw = self.control.seed_urls()
        urls = []
        for url in raw:
            try:
                urls.append(canonicalize(url))
            except InvalidURL as exc:
                self.logger.warning("skipping seed: %s", exc)
                self.crawler.stats.inc_value(f"scope/invalid_seed/{exc.reason}")
        if not urls and self.continuous:
            self.logger.info("no seeds given: waiting for seeds pushed to the frontier")
        elif not urls:
            raise CloseSpider(
                "no seeds: pass -a seeds=URL,URL or -a seeds_file=PATH, or add seeds in the admin"
            )
        return urls

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.seed_urls():
            if self.in_scope(host_of(url)):
                yield self.page_request(url, 0, seed=True)
            else:
                self.crawler.stats.inc_value("scope/seed_out_of_scope")

    # --- scope ---

    def in_scope(self, host: str) -> bool:
        """Crawlable host: not blocked, and allowed when allow patterns or rules exist."""
        cached = self._scope_cache.get(host)
        if cached is not None:
            return cached
        policy = self.host_rules.policy(host)
        if policy.blocked:
            ok = False
        elif self.allowed_patterns:
            ok = policy.allowed or any(fnmatch.fnmatchcase(host, p) for p in self.allowed_patterns)
        elif self.host_rules.has_allow_rules:
            ok = policy.allowed
        else:
            ok = True
        if len(self._scope_cache) > 100_000:
            self._scope_cache.clear()
        self._scope_cache[host] = ok
        return ok

    # --- parsing ---

    async def parse(self, response: Response):
        stats = self.crawler.stats
        self.pages += 1
        if self.max_pages and self.pages > self.max_pages:
            raise CloseSpider("max_pages")
        if not isinstance(response, TextResponse):
            stats.inc_value("extract/skipped_non_html")
            return
        headers = response.headers
        try:
            page, item = await self.extractor.extract(
                url=response.url,
                status=response.status,
                body=response.body,
                fetched_at=time.time(),
                content_type=headers.get(b"Content-Type", b"").decode("latin-1"),
                x_robots=headers.get(b"X-Robots-Tag", b"").decode("latin-1"),
                language=headers.get(b"Content-Language", b"").decode("latin-1"),
                truncated=TRUNCATED in response.flags,
                depth=response.meta.get("depth", 0),
                max_words=self.max_words,
            )
        except NotAPage as exc:
            stats.inc_value(f"extract/skipped_{exc.reason}")
            return
        for reason, n in page.invalid_links.items():
            stats.inc_value(f"extract/dropped_links/{reason}", n)
        depth = item.depth
        if page.client_rendered and self.render_enabled and not response.meta.get("playwright"):
            stats.inc_value("render/detected")
            yield self.render_request(response.url, response.meta)
            return
        if response.meta.get("playwright"):
            stats.inc_value("render/rendered")
        yield item
        if self._sitemap_backlog:
            for request in self.release_sitemap_urls(host_of(response.url)):
                yield request
        if page.nofollow or (self.max_depth and depth >= self.max_depth):
            return
        for request in self.follow(page.links, depth + 1, response):
            yield request

    def probe_request(self, url: str) -> scrapy.Request:
        """``url`` again as a browser would ask for it (``BROWSER_AGENT``), for the quality
        pipeline's cloaking check; polite like any page (it goes through the frontier)."""
        return scrapy.Request(url, callback=self.parse_probe, errback=self.fetch_failed,
                              dont_filter=True, headers={"User-Agent": BROWSER_AGENT},
                              meta={"depth": 0, "frontier_tier": 0, "dont_recrawl": True,
                                    "quality_probe": url})

    async def parse_probe(self, response: Response) -> None:
        """A page fetched as a browser: its text goes to the quality pipeline
        (``browser_probe_fetched``), which compares it with what the crawler was served.
        Extracted in the extraction pool like any page: inline, one page's extraction held
        the reactor thread, and every host's next request, for up to 0.6 s
        (``bench/realweb.py --quick`` under py-spy)."""
        text = ""
        if isinstance(response, TextResponse):
            try:
                page, _item = await self.extractor.extract(
                    url=response.url, status=response.status, body=response.body,
                    fetched_at=time.time(),
                    content_type=response.headers.get(b"Content-Type", b"").decode("latin-1"),
                    max_words=self.max_words)
            except NotAPage:
                pass
            else:
                text = cut_words(page.text, self.max_words)
        self.crawler.signals.send_catch_log(
            browser_probe_fetched, url=response.meta.get("quality_probe", response.url),
            text=text)

    # --- sitemaps ---

    def robots_downloaded(self, response, request, spider=None) -> None:
        """From each host's robots.txt (whoever fetched it), queue its sitemaps: the
        ``Sitemap:`` lines, else ``/sitemap.xml`` (``SITEMAP_PROBE_DEFAULT``)."""
        if not request.url.endswith("/robots.txt") or response.status >= 500:
            return
        scheme, rest = request.url.split("://", 1)
        netloc = rest.split("/", 1)[0]
        if netloc in self._sitemap_hosts:
            return
        if len(self._sitemap_hosts) > 100_000:
            self._sitemap_hosts.clear()
        self._sitemap_hosts[netloc] = None
        urls = robots_sitemaps(response.body) if response.status == 200 else []
        if urls:
            self.crawler.stats.inc_value("sitemap/from_robots", len(urls))
        elif self.sitemap_probe:
            urls = [f"{scheme}://{netloc}/sitemap.xml"]
        for url in urls:
            try:
                url = canonicalize(url)
            except InvalidURL:
                continue
            if self.in_scope(host_of(url)):
                self.crawler.engine.crawl(self.sitemap_request(url, 0))

    def sitemap_request(self, url: str, level: int) -> scrapy.Request:
        """A request for a sitemap (``level`` = how many indexes led to it)."""
        # after the pages: a sitemap only adds URLs, most of them found by links anyway
        return scrapy.Request(url, callback=self.parse_sitemap, errback=self.fetch_failed,
                              priority=SITEMAP_PRIORITY,
                              meta={"depth": 0, "sitemap_level": level,
                                    "frontier_tier": SITEMAP_TIER,
                                    # recrawls are pages (parse); sitemaps come via robots.txt
                                    "dont_recrawl": True})

    def parse_sitemap(self, response: Response):
        """Pages of a urlset (their ``lastmod`` in ``meta["sitemap_lastmod"]``, kept in the
        frontier with the request for recrawl), or the sitemaps of an index."""
        stats = self.crawler.stats
        if response.status != 200:
            return
        kind, entries = parse_sitemap(response.body, max_size=self.sitemap_max_size)
        if not kind:
            stats.inc_value("sitemap/invalid")
            return
        stats.inc_value(f"sitemap/{kind}")
        host = host_of(response.url)
        level = response.meta.get("sitemap_level", 0)
        pages = []
        for entry in entries:
            if host_of(entry.loc) != host:  # the protocol: a sitemap lists its own host only
                stats.inc_value("sitemap/off_host")
                continue
            if kind == "sitemapindex":
                if level < self.sitemap_max_depth:
                    try:
                        yield self.sitemap_request(canonicalize(entry.loc), level + 1)
                    except InvalidURL:
                        continue
            else:
                # canonicalized when released: most entries wait, some are never needed
                pages.append((entry.loc, entry.lastmod))
        if pages:
            self._sitemap_backlog.add(host, pages)
        yield from self.release_sitemap_urls(host)

    def release_sitemap_urls(self, host: str):
        """Page requests for the next ``SITEMAP_RELEASE`` sitemap URLs of ``host``.

        A sitemap may list thousands of URLs; building and queueing them all at once costs
        seconds of CPU that no fetch needs yet. They are released a few per response of the
        host instead, so the host's own crawl pulls them at its pace (each released page
        releases more when it arrives).
        """
        backlog = self._sitemap_backlog
        released = 0
        entries: list[tuple[str, str]] = []
        used = 0
        while released < self.sitemap_release:
            if used == len(entries):
                entries, used = backlog.pop(host), 0
                if not entries:
                    break
            loc, lastmod = entries[used]
            used += 1
            try:
                url = canonicalize(loc)
            except InvalidURL:
                continue
            if not self._recent_links.add(url):
                continue
            released += 1
            yield self.page_request(url, 1, sitemap_lastmod=lastmod)
        backlog.push_front(host, entries[used:])
        if released:
            self.crawler.stats.inc_value("sitemap/urls", released)

    # --- requests ---

    def page_request(self, url: str, depth: int, **meta) -> scrapy.Request:
        """A page request; hosts whose admin rule says render_js go to the browser."""
        if self.render_enabled and self.host_rules.policy(host_of(url)).render_js:
            return self.render_request(url, {"depth": depth, **meta})
        return scrapy.Request(url, callback=self.parse, errback=self.fetch_failed,
                              meta={"depth": depth, **meta})

    def render_request(self, url: str, meta: dict) -> scrapy.Request:
        """The request that renders ``url`` in the browser (see crawler/render.py)."""
        from crawler.render import render_meta

        keep = {k: meta[k] for k in ("depth", "seed", "sitemap_lastmod") if k in meta}
        return scrapy.Request(url, callback=self.parse, errback=self.fetch_failed,
                              dont_filter=True,
                              meta={**keep, **render_meta(self.render_timeout_ms)})

    def fetch_failed(self, failure) -> None:
        """A download failed for good (retries spent, or not retryable): count it by kind.

        The frontier already finished the URL's entry with the error outcome, and the seen
        filter keeps it out of this crawl: it waits for the next recrawl cycle.
        """
        stats = self.crawler.stats
        if failure.check(HttpError):
            status = failure.value.response.status
            if status not in self.retry_codes:
                return  # an answer (404, 410...), not a failure to fetch
            kind = f"http_{status}"
        else:
            kind = failure_kind(failure.value)
            if kind in ("ignored", "robots"):
                return  # dropped on purpose by a middleware, not a failure to fetch
        stats.inc_value("fetch/failed")
        stats.inc_value(f"fetch/failed/{kind}")
        request = getattr(failure, "request", None)
        self.logger.info("fetch failed (%s): %s: %s", kind,
                         getattr(request, "url", "?"), failure.getErrorMessage())

    def follow(self, links, depth: int, response: Response | None = None):
        """Follow the in-scope links not seen lately by this process.

        Most links of a page were seen on its siblings; skipping them here saves the
        scheduling of each. The frontier's seen filter stays the authority. With
        ``response``, the links go to the scheduler in one batch (``links_extracted``, or
        straight to ``links_sink`` when the scheduler set it; the links seen lately as
        ``seen``: in-links that raise a queued URL's value) and Requests are yielded only
        for what no scheduler took and hosts rendered in a browser.
        """
        recent = self._recent_links
        stats = self.crawler.stats
        urls = []
        again = []  # links seen lately: no request, but an in-link for the value order
        for link in links:
            if link.nofollow:
                continue
            seen = not recent.add(link.url)
            host = host_of(link.url)
            if not self.in_scope(host):
                if not seen:
                    stats.inc_value("scope/out_of_scope")
                continue
            if self.render_enabled and self.host_rules.policy(host).render_js:
                if not seen:
                    yield self.render_request(link.url, {"depth": depth})
            else:
                (again if seen else urls).append(link.url)
        if not urls and not again:
            return
        if response is not None:
            batch = {"response": response, "urls": urls, "depth": depth,
                     "template": self.link_template, "spider": self,
                     "outlinks": len(links), "seen": again, "canonical": True}
            sink = self.links_sink
            if sink is None:
                taken = self.crawler.signals.send_catch_log(links_extracted, **batch)
                if any(result is True for _, result in taken):
                    return
            else:
                try:
                    if sink(**batch) is True:
                        return
                except Exception:  # as the signal's dispatch: logged, the links yielded
                    self.logger.exception("Error handing the links of %s to the scheduler",
                                          response.url)
        for url in urls:
            yield self.page_request(url, depth)
