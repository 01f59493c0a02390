"""JavaScript rendering through scrapy-playwright and Debian's chromium, for the few pages
that need it.

The spider renders a page only when the plain fetch looks like an app shell
(``Extracted.client_rendered``) or when the host's admin rule says ``render_js``; those
requests carry ``meta["playwright"]``. ``RenderingDownloadHandler`` is scrapy-playwright's
handler, which sends every other request through Scrapy's plain HTTP/1.1 code (one meta
lookup of overhead), so the crawl's hot path is unchanged. It sits behind
``crawler.handlers.GuardedDownloadHandler`` (the SSRF guard checks the host before the
browser sees it) when ``RENDER_JS_ENABLED`` is on.

Bounded: one browser, at most ``PLAYWRIGHT_MAX_PAGES_PER_CONTEXT`` pages open at once (each
closed after its render), and a fresh browser context every ``RENDER_CONTEXT_RENDERS``
renders (the old one closes when its last page is done), so caches and renderer memory do
not grow with the crawl. The browser loads no images, media, fonts or style sheets, nothing
from another host than the page's own, and resolves names through the same
``RESOLVE_OVERRIDES`` as the crawler.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from scrapy import signals
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from crawler.options import setting
from crawler.resolver import parse_overrides

#: Resource types a text crawler never needs from the browser.
SKIPPED_RESOURCES = frozenset({"image", "media", "font", "stylesheet", "manifest", "texttrack"})
RENDER_CONTEXT = "render"


def render_meta(timeout_ms: int) -> dict:
    """Request meta that makes scrapy-playwright render a page (page closed afterwards)."""
    return {
        "playwright": True,
        "playwright_context": RENDER_CONTEXT,
        "playwright_page_goto_kwargs": {"wait_until": "load", "timeout": timeout_ms},
    }


def should_abort(request) -> bool:
    """``PLAYWRIGHT_ABORT_REQUEST``: drop heavy resources and requests to other hosts."""
    if request.resource_type in SKIPPED_RESOURCES:
        return True
    if request.is_navigation_request():
        return False
    try:
        page_host = urlsplit(request.frame.url).hostname
    except Exception:  # a detached frame: nothing left to render for
        return True
    return bool(page_host) and urlsplit(request.url).hostname != page_host


def host_resolver_rules(overrides: dict[str, str]) -> str:
    """chromium's ``--host-resolver-rules`` for the crawler's ``RESOLVE_OVERRIDES``."""
    return ", ".join(f"MAP {pattern} {ip}" for pattern, ip in overrides.items())


class RenderingDownloadHandler(ScrapyPlaywrightDownloadHandler):
    """scrapy-playwright's handler, started on the first page to render (not when the
    engine starts: most crawls render nothing, and the driver costs seconds of CPU), with
    the browser resolving names like the crawler."""

    def __init__(self, crawler):
        super().__init__(crawler)
        for receiver in (getattr(self, "_maybe_launch_in_thread", None),
                         getattr(self, "_engine_started", None)):
            if receiver is not None:
                crawler.signals.disconnect(receiver, signal=signals.engine_started)
        self._started = False
        self._start_lock: asyncio.Lock | None = None
        self.context_renders = setting(crawler.settings, "RENDER_CONTEXT_RENDERS", int)
        self._generation = 0
        self._renders = 0
        self._open: dict[str, int] = {}  # pages in flight per context name
        overrides = parse_overrides(crawler.settings.get("RESOLVE_OVERRIDES"))
        if overrides:
            options = dict(self.config.launch_options)
            args = list(options.get("args", []))
            args.append(f"--host-resolver-rules={host_resolver_rules(overrides)}")
            options["args"] = args
            self.config.launch_options = options

    async def download_request(self, request):
        """Plain requests go straight to HTTP/1.1; the first render starts Playwright."""
        if not request.meta.get("playwright"):
            return await super().download_request(request)
        if not self._started:
            if self._start_lock is None:
                self._start_lock = asyncio.Lock()
            async with self._start_lock:
                if not self._started:
                    await self._launch()
                    self._started = True
        if not str(request.meta.get("playwright_context", "")).startswith(RENDER_CONTEXT):
            return await super().download_request(request)
        name = self._context_for_next_render()
        request.meta["playwright_context"] = name
        self._open[name] = self._open.get(name, 0) + 1
        try:
            return await super().download_request(request)
        finally:
            self._open[name] -= 1
            if self._open[name] == 0 and name != self._current_context():
                del self._open[name]
                await self._close_context(name)

    def _current_context(self) -> str:
        return f"{RENDER_CONTEXT}-{self._generation}"

    def _context_for_next_render(self) -> str:
        """The context of the next render; after ``context_renders`` renders, a new one."""
        if self.context_renders and self._renders >= self.context_renders:
            old = self._current_context()
            self._generation += 1
            self._renders = 0
            if not self._open.get(old):
                self._open.pop(old, None)
                asyncio.ensure_future(self._close_context(old))
        self._renders += 1
        return self._current_context()

    async def _close_context(self, name: str) -> None:
        wrapper = self.context_wrappers.get(name)
        if wrapper is not None:
            await wrapper.context.close()
            self.stats.inc_value("render/contexts_recycled")
