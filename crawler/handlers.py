"""The http(s) download handler: the SSRF guard in front of plain HTTP or the renderer.

``GuardedDownloadHandler`` wraps the handler named by ``FETCH_HANDLER`` (Scrapy's HTTP/1.1
handler) and, when ``RENDER_JS_ENABLED`` is on, the one named by ``RENDER_HANDLER``
(scrapy-playwright's) for the requests with ``meta["playwright"]``. The renderer is built
on the first such request: importing Playwright and its handler costs ~0.7 s of CPU, and
most crawls render nothing.

Before any connection it asks the crawler's resolver (``crawler.resolver.OverrideResolver``,
cached: an answer from its cache is read at once, without a turn of the event loop) for
the host's address, which raises ``SSRFRefused`` for a refused address, and
checks literal-IP hosts itself (Twisted connects to those without asking the resolver).
Asking here matters because Twisted's connection endpoint turns any resolver error into a
plain "no results" DNS error, which would be retried and not told apart; the resolver's own
check stays as the net under every connection, and the browser, which resolves names
itself, only renders checked hosts (and reaches the network only through the renderer's
proxy, ``crawler.browserproxy``, which checks every connection the same way).

The response's URL is checked too when it differs from the request's host: a render ends
where the browser's redirects and ``location=`` changes took it, and the spider indexes
that URL.

The check runs inside the download, so the request leaves the downloader like any failed
download and the frontier's lease ends at once.

A request whose host the scheduler leased ahead of its due time (``FRONTIER_LEASE_AHEAD``)
carries that time in ``meta["frontier_not_before"]`` and waits here, the last step before
its connection, until then: the engine, the downloader middlewares and Scrapy's download
slot (20-40 ms on a busy box) run while the host is still in its delay, not after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

from scrapy import Request
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet.defer import Deferred
from twisted.internet.task import deferLater
from twisted.python.failure import Failure

from crawler.options import enabled, setting
from crawler.ssrf import AddressPolicy, RefusalLog, SSRFRefused, is_ip_literal

#: ``request.meta`` key: when (``time.monotonic()``) a request may start at the soonest;
#: set by the scheduler for a host leased ahead of its due time.
NOT_BEFORE = "frontier_not_before"


def _build_handler(path: str, crawler):
    return build_from_crawler(load_object(path), crawler)


class GuardedDownloadHandler:
    """Download handler that applies the SSRF policy, then delegates to ``inner``."""

    lazy = False

    def __init__(self, inner, policy: AddressPolicy, refusals: RefusalLog, resolve=None,
                 renderer: Callable[[], Any] | None = None, clock=None):
        self.inner = inner
        self.clock = clock  # the reactor (its callLater), for NOT_BEFORE
        self.policy = policy
        self.refusals = refusals
        self.resolve = resolve
        self._build_renderer = renderer  # builds the handler of meta["playwright"] requests
        self._renderer = None

    @classmethod
    def from_crawler(cls, crawler) -> GuardedDownloadHandler:
        from twisted.internet import reactor

        settings = crawler.settings
        inner = build_from_crawler(load_object(setting(settings, "FETCH_HANDLER")), crawler)
        renderer = None
        if enabled(settings, "RENDER_JS_ENABLED"):
            renderer = partial(_build_handler, setting(settings, "RENDER_HANDLER"), crawler)
        return cls(inner, AddressPolicy.from_settings(settings), RefusalLog(),
                   resolve=reactor.resolve, renderer=renderer, clock=reactor)

    def _handler_for(self, request: Request):
        if self._build_renderer is None or not request.meta.get("playwright"):
            return self.inner
        if self._renderer is None:
            self._renderer = self._build_renderer()
        return self._renderer

    async def download_request(self, request: Request) -> Response:
        """Refuse a forbidden address (``SSRFRefused``), else download with the inner
        handler, not before ``meta[NOT_BEFORE]``; a response from another host than the
        request's is checked too."""
        await self._not_before(request)
        host = urlparse_cached(request).hostname or ""
        if self.policy.enabled:
            await self._check_host(host)
        response = await self._handler_for(request).download_request(request)
        if self.policy.enabled and response.url != request.url:
            final = urlparse_cached(response)
            if final.scheme not in ("http", "https") or not final.hostname:
                raise SSRFRefused(response.url, "-", "not_http")
            if final.hostname != host:
                await self._check_host(final.hostname, lookup_errors=True)
        return response

    async def _not_before(self, request: Request) -> None:
        """Wait until ``request`` may start (``NOT_BEFORE``, taken out of its meta so that a
        retry or a redirect made of it does not carry it)."""
        not_before = request.meta.pop(NOT_BEFORE, None)
        if not_before is None:
            return
        wait = not_before - time.monotonic()
        if wait > 0:
            if self.clock is None:
                from twisted.internet import reactor as clock
            else:
                clock = self.clock
            await maybe_deferred_to_future(deferLater(clock, wait))

    async def _check_host(self, host: str, lookup_errors: bool = False) -> None:
        """Raise ``SSRFRefused`` if ``host`` (a name or literal) is not allowed; a name that
        does not resolve passes unless ``lookup_errors`` (the download reports it)."""
        if is_ip_literal(host):
            self._check(host, host)
        elif self.resolve is not None:
            try:
                await _outcome(self.resolve(host))
            except SSRFRefused:
                raise
            except Exception:
                if lookup_errors:
                    raise SSRFRefused(host, "-", "unresolved") from None

    def _check(self, host: str, ip: str) -> None:
        reason = self.policy.refusal(ip)
        if reason is not None:
            raise self.refusals.refused(host, ip, reason)

    async def close(self) -> None:
        """Close the inner handler and the renderer (and its browser) if one was built."""
        await self.inner.close()
        if self._renderer is not None:
            await self._renderer.close()


async def _outcome(deferred: Deferred) -> Any:
    """``deferred``'s result (its error raised): read at once when it has fired, as the
    resolver's answer from its cache has, else awaited as an asyncio future. A request
    to a host resolved before then takes no turn of the event loop here."""
    if deferred.called and not deferred.paused:
        outcome: list = []
        deferred.addBoth(outcome.append)  # runs now: the Deferred has its result
        if isinstance(outcome[0], Failure):
            outcome[0].raiseException()
        return outcome[0]
    return await maybe_deferred_to_future(deferred)
