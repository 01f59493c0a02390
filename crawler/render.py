"""JavaScript rendering through scrapy-playwright and Debian's chromium, for the few pages
that need it.

The spider renders a page only when the plain fetch looks like an app shell
(``Extracted.client_rendered``) or when the host's admin rule says ``render_js``; those
requests carry ``meta["playwright"]``. ``RenderingDownloadHandler`` is scrapy-playwright's
handler, which sends every other request through Scrapy's plain HTTP/1.1 code (one meta
lookup of overhead), so the crawl's hot path is unchanged. It sits behind
``crawler.handlers.GuardedDownloadHandler`` (the SSRF guard checks the host before the
browser sees it) when ``RENDER_JS_ENABLED`` is on.

Bounded: one browser, one context, at most ``PLAYWRIGHT_MAX_PAGES_PER_CONTEXT`` pages open
at once (each closed after its render); the browser loads no images, media, fonts or style
sheets, nothing from another host than the page's own, and resolves names through the
same ``RESOLVE_OVERRIDES`` as the crawler.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from scrapy import signals
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

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
        overrides = parse_overrides(crawler.settings.get("RESOLVE_OVERRIDES"))
        if overrides:
            options = dict(self.config.launch_options)
            args = list(options.get("args", []))
            args.append(f"--host-resolver-rules={host_resolver_rules(overrides)}")
            options["args"] = args
            self.config.launch_options = options

    async def download_request(self, request):
        """Plain requests go straight to HTTP/1.1; the first render starts Playwright."""
        if request.meta.get("playwright") and not self._started:
            if self._start_lock is None:
                self._start_lock = asyncio.Lock()
            async with self._start_lock:
                if not self._started:
                    await self._launch()
                    self._started = True
        return await super().download_request(request)
