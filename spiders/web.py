"""The `web` spider: crawl from seeds, extract each page, follow links within scope."""

from __future__ import annotations

import fnmatch
import time
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import scrapy
from scrapy.exceptions import CloseSpider
from scrapy.http import Response, TextResponse

from crawler.extract import extract
from crawler.hostrules import HostRules
from crawler.items import PageItem
from crawler.urls import InvalidURL, canonicalize, host_of

HTML_TYPES = (b"text/html", b"application/xhtml+xml")
RECENT_LINKS = 200_000  # links this process yielded lately, skipped before building a Request


def load_host_rules(settings) -> HostRules:
    """The admin's host rules, through the loader named by ``HOST_RULES_LOADER``."""
    from scrapy.utils.misc import load_object

    path = settings.get("HOST_RULES_LOADER")
    if not path:
        return HostRules.static([])
    return HostRules(load_object(path), ttl=settings.getfloat("HOST_RULES_TTL", 30.0))


class WebSpider(scrapy.Spider):
    """Crawl the web from seeds.

    Arguments (``-a name=value``): ``seeds`` (comma-separated URLs), ``seeds_file`` (one URL
    per line, ``#`` comments), ``allowed_hosts`` (comma-separated host patterns such as
    ``*.test``), ``max_pages``, ``max_depth``. Without seeds, the admin's seeds are used.
    """

    name = "web"

    def __init__(
        self,
        seeds: str | None = None,
        seeds_file: str | None = None,
        allowed_hosts: str | None = None,
        max_pages: str | int | None = None,
        max_depth: str | int | None = None,
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

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        spider.allowed_patterns = spider.allowed_arg or [
            p.lower() for p in settings.getlist("CRAWL_ALLOWED_HOSTS")
        ]
        spider.max_pages = spider.max_pages_arg or settings.getint("CRAWL_MAX_PAGES")
        spider.max_depth = spider.max_depth_arg or settings.getint("DEPTH_LIMIT")
        spider.host_rules = load_host_rules(settings)
        spider.pages = 0
        spider._scope_cache = {}
        spider._recent_links = {}
        return spider

    # --- seeds ---

    def seed_urls(self) -> list[str]:
        """Seeds from arguments, else the seeds file, else the admin's Seed table."""
        raw: Iterable[str] = self.seed_args
        if not raw and self.seeds_file:
            lines = Path(self.seeds_file).read_text(encoding="utf-8").splitlines()
            raw = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
        if not raw:
            from webui.control.rules import load_seed_urls

            raw = load_seed_urls()
        urls = []
        for url in raw:
            try:
                urls.append(canonicalize(url))
            except InvalidURL as exc:
                self.logger.warning("skipping seed: %s", exc)
        if not urls:
            raise CloseSpider(
                "no seeds: pass -a seeds=URL,URL or -a seeds_file=PATH, or add seeds in the admin"
            )
        return urls

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.seed_urls():
            if self.in_scope(host_of(url)):
                yield scrapy.Request(url, callback=self.parse, meta={"depth": 0, "seed": True})
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

    def parse(self, response: Response):
        stats = self.crawler.stats
        self.pages += 1
        if self.max_pages and self.pages > self.max_pages:
            raise CloseSpider("max_pages")
        ctype = response.headers.get(b"Content-Type", b"").split(b";")[0].strip().lower()
        if not isinstance(response, TextResponse) or (ctype and ctype not in HTML_TYPES):
            stats.inc_value("extract/skipped_non_html")
            return
        x_robots = response.headers.get(b"X-Robots-Tag", b"").decode("latin-1")
        page = extract(response.text, response.url, x_robots)
        depth = response.meta.get("depth", 0)
        url = canonicalize(response.url)
        if page.canonical and host_of(page.canonical) == host_of(url):
            url = page.canonical
        item = PageItem(
            url=url,
            fetched_url=response.url,
            host=host_of(url),
            status=response.status,
            fetched_at=time.time(),
            title=page.title,
            text=page.text,
            description=page.description,
            lang=page.lang,
            canonical=page.canonical,
            links=page.links,
            noindex=page.noindex,
            nofollow=page.nofollow,
            depth=depth,
            content_type=ctype.decode("latin-1"),
            truncated="truncated" in response.flags,
        )
        yield item
        if page.nofollow or (self.max_depth and depth >= self.max_depth):
            return
        yield from self.follow(page.links, depth + 1)

    def follow(self, links, depth: int):
        """Requests for in-scope links not yielded lately by this process.

        Most links of a page were seen on its siblings; skipping them here saves building
        and scheduling a Request each. The frontier's seen filter stays the authority.
        """
        recent = self._recent_links
        stats = self.crawler.stats
        for link in links:
            if link.nofollow or link.url in recent:
                continue
            recent[link.url] = None
            if len(recent) > RECENT_LINKS:
                del recent[next(iter(recent))]
            if not self.in_scope(host_of(link.url)):
                stats.inc_value("scope/out_of_scope")
                continue
            yield scrapy.Request(link.url, callback=self.parse, meta={"depth": depth})
