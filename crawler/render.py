"""JavaScript rendering through scrapy-playwright and Debian's chromium, for the few pages
that need it.

The spider renders a page only when the plain fetch looks like an app shell
(``Extracted.client_rendered``) or when the host's admin rule says ``render_js``; those
requests carry ``meta["playwright"]``. ``RenderingDownloadHandler`` is scrapy-playwright's
handler (which would send any other request through Scrapy's plain HTTP/1.1 code). It sits
behind ``crawler.handlers.GuardedDownloadHandler`` (the SSRF guard checks the host before
the browser sees it) when ``RENDER_JS_ENABLED`` is on, which sends it only the requests to
render and builds it on the first of them, so a crawl that renders nothing never imports
Playwright.

Inside the SSRF guard: the browser reaches the network only through
``crawler.browserproxy.BrowserProxy``, started with the browser, which resolves every host
through the crawler's resolver, checks the address and connects to it (navigations,
redirects, ``location=`` changes, frames of any origin, workers). The browser itself
resolves no name (``--host-resolver-rules`` maps every name but the proxy's address to
"not found", a backstop should anything bypass the proxy) and sends no UDP (WebRTC only
over TCP through the proxy, no QUIC: ``NO_BROWSER_UDP``). A render whose final document
was refused by the proxy, or failed, is refused as a whole (``SSRFRefused``), and the
handler checks the final URL (``response.url``, which the spider indexes) like any other.

Bounded: one browser, at most ``PLAYWRIGHT_MAX_PAGES_PER_CONTEXT`` pages open at once (each
closed after its render), and a fresh browser context every ``RENDER_CONTEXT_RENDERS``
renders (the old one closes when its last page is done), so caches and renderer memory do
not grow with the crawl. The browser loads no images, media, fonts or style sheets, and
no subresource from another host than the top page's own (frames without a host of their
own, ``about:srcdoc``, ``about:blank``, ``data:``, count as the top page's); service workers
are blocked.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from crawler.browserproxy import REFUSED_HEADER, BrowserProxy
from crawler.options import setting
from crawler.ssrf import AddressPolicy, RefusalLog, SSRFRefused

#: Resource types a text crawler never needs from the browser.
SKIPPED_RESOURCES = frozenset({"image", "media", "font", "stylesheet", "manifest", "texttrack"})
RENDER_CONTEXT = "render"


def render_meta(timeout_ms: int) -> dict:
    """Request meta that makes scrapy-playwright render a page (page closed afterwards)."""
    return {
        "playwright": True,
        "playwright_context": RENDER_CONTEXT,
        "playwright_page_goto_kwargs": {"wait_until": "load", "timeout": timeout_ms},
        "playwright_context_kwargs": {"service_workers": "block"},
    }


def should_abort(request) -> bool:
    """``PLAYWRIGHT_ABORT_REQUEST``: drop heavy resources and subresources from other hosts
    than the top page's (a cost and politeness rule; the SSRF check is the proxy's).
    Navigations pass: the proxy checks each of them."""
    if request.resource_type in SKIPPED_RESOURCES:
        return True
    if request.is_navigation_request():
        return False
    try:
        page_host = urlsplit(request.frame.page.main_frame.url).hostname
    except Exception:  # a detached frame: nothing left to render for
        return True
    return urlsplit(request.url).hostname != page_host


#: chromium resolves no name itself: only the proxy's own address is left as it is. With
#: every name "not found", no DNS datagram leaves the browser either: not the system
#: resolver's, nor its own (async DNS), DNS-over-HTTPS or mDNS (``.local``) lookups.
NO_BROWSER_DNS = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
#: chromium sends no UDP: WebRTC gathers no host or STUN candidates and relays through TURN
#: over TCP, through the proxy, only (no STUN or TURN datagrams, no mDNS announcements of
#: ``.local`` candidates); QUIC (HTTP/3, WebTransport) is off. This chromium ignores
#: ``--force-webrtc-ip-handling-policy`` (a page's STUN servers got 20 datagrams with it).
#: No ``--disable-features``: the last one given wins, so it would undo Playwright's own.
NO_BROWSER_UDP = ("--webrtc-ip-handling-policy=disable_non_proxied_udp", "--disable-quic")
#: Configured switches the renderer replaces with its own.
_OWN_SWITCHES = ("--proxy-server", "--proxy-bypass-list", "--host-resolver-rules",
                 "--webrtc-ip-handling-policy", "--force-webrtc-ip-handling-policy",
                 "--enable-quic", "--origin-to-force-quic-on")


def browser_args(configured: list[str], proxy: BrowserProxy) -> list[str]:
    """chromium's switches: the configured ones (``PLAYWRIGHT_LAUNCH_OPTIONS["args"]``)
    without any that would open a path around the proxy, then the proxy's, no DNS, no UDP."""
    kept = [a for a in configured if not a.startswith(_OWN_SWITCHES)]
    return [*kept, *proxy.launch_args(), NO_BROWSER_DNS, *NO_BROWSER_UDP]


class MainFrameNavigations:
    """What happened to the last navigation of a page's main frame: its URL, and the
    proxy's refusal (``reason``, ``address``) or the browser's failure, if any."""

    def __init__(self) -> None:
        self.url = ""
        self.refusal: tuple[str, str] | None = None
        self.failure = ""

    def handlers(self) -> dict:
        """``playwright_page_event_handlers`` that keep this record up to date."""
        return {"response": self.on_response, "requestfailed": self.on_request_failed}

    def on_response(self, response) -> None:
        request = response.request
        if request.is_navigation_request() and request.frame.parent_frame is None:
            self.url, self.failure = response.url, ""
            value = response.headers.get(REFUSED_HEADER.lower())
            reason, _, address = (value or "").partition(" ")
            self.refusal = (reason, address) if value else None

    def on_request_failed(self, request) -> None:
        if request.is_navigation_request() and request.frame.parent_frame is None:
            self.url, self.refusal = request.url, None
            self.failure = request.failure or "failed"


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
        self.proxy = BrowserProxy(_reactor_resolve, AddressPolicy.from_settings(crawler.settings),
                                  RefusalLog(), self.stats,
                                  idle_timeout=setting(crawler.settings, "DOWNLOAD_TIMEOUT", float))

    async def _launch(self) -> None:
        """Start the proxy, then the browser, sent through it and resolving nothing."""
        await self.proxy.start()
        options = dict(self.config.launch_options)
        options["args"] = browser_args(list(options.get("args", [])), self.proxy)
        options.pop("proxy", None)
        self.config.launch_options = options
        await super()._launch()

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
        navigations = MainFrameNavigations()
        request.meta["playwright_page_event_handlers"] = navigations.handlers()
        self._open[name] = self._open.get(name, 0) + 1
        try:
            response = await super().download_request(request)
            _check_final_document(navigations, response.url)
            return response
        finally:
            request.meta.pop("playwright_page_event_handlers", None)
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

    async def close(self) -> None:
        """Close the browser, then the proxy."""
        await super().close()
        await self.proxy.close()

    async def _close_context(self, name: str) -> None:
        wrapper = self.context_wrappers.get(name)
        if wrapper is not None:
            await wrapper.context.close()
            self.stats.inc_value("render/contexts_recycled")


async def _reactor_resolve(host: str) -> str:
    """The crawler's resolver (``TWISTED_DNS_RESOLVER``, installed on the reactor)."""
    from twisted.internet import reactor

    return await maybe_deferred_to_future(reactor.resolve(host))


def _check_final_document(navigations: MainFrameNavigations, url: str) -> None:
    """Refuse a render whose last main-frame document the proxy refused (counted there) or
    the browser failed to load: what the page shows then is not the page at ``url``."""
    if navigations.refusal is not None:
        reason, address = navigations.refusal
        raise SSRFRefused(urlsplit(navigations.url).hostname or navigations.url, address,
                          reason, counted=True)
    if navigations.failure:
        raise IgnoreRequest(f"render of {url}: the page's last navigation, to "
                            f"{navigations.url}, failed ({navigations.failure})")
