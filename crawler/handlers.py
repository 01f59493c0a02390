"""The http(s) download handler: the SSRF guard in front of plain HTTP or the renderer.

``GuardedDownloadHandler`` wraps the handler named by ``FETCH_HANDLER`` (Scrapy's HTTP/1.1
handler), or ``RENDER_HANDLER`` when ``RENDER_JS_ENABLED`` is on (scrapy-playwright's, which
serves requests without ``meta["playwright"]`` through the same plain HTTP/1.1 code).

Before any connection it asks the crawler's resolver (``crawler.resolver.OverrideResolver``,
cached) for the host's address, which raises ``SSRFRefused`` for a refused address, and
checks literal-IP hosts itself (Twisted connects to those without asking the resolver).
Asking here matters because Twisted's connection endpoint turns any resolver error into a
plain "no results" DNS error, which would be retried and not told apart; the resolver's own
check stays as the net under every connection, and the browser, which resolves names
itself, only renders checked hosts.

The check runs inside the download, so the request leaves the downloader like any failed
download and the frontier's lease ends at once.
"""

from __future__ import annotations

import ipaddress

from scrapy import Request
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler, load_object

from crawler.options import enabled, setting
from crawler.ssrf import AddressPolicy, RefusalLog, SSRFRefused


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


class GuardedDownloadHandler:
    """Download handler that applies the SSRF policy, then delegates to ``inner``."""

    lazy = False

    def __init__(self, inner, policy: AddressPolicy, refusals: RefusalLog, resolve=None):
        self.inner = inner
        self.policy = policy
        self.refusals = refusals
        self.resolve = resolve

    @classmethod
    def from_crawler(cls, crawler) -> GuardedDownloadHandler:
        from twisted.internet import reactor

        settings = crawler.settings
        path = setting(settings, "FETCH_HANDLER")
        if enabled(settings, "RENDER_JS_ENABLED"):
            path = setting(settings, "RENDER_HANDLER")
        inner = build_from_crawler(load_object(path), crawler)
        return cls(inner, AddressPolicy.from_settings(settings), RefusalLog(),
                   resolve=reactor.resolve)

    async def download_request(self, request: Request) -> Response:
        """Refuse a forbidden address (``SSRFRefused``), else download with the inner handler."""
        if self.policy.enabled:
            host = urlparse_cached(request).hostname or ""
            if _is_ip(host):
                self._check(host, host)
            elif self.resolve is not None:
                try:
                    await maybe_deferred_to_future(self.resolve(host))
                except SSRFRefused:
                    raise
                except Exception:
                    pass  # a resolution error is reported by the download itself
        return await self.inner.download_request(request)

    def _check(self, host: str, ip: str) -> None:
        reason = self.policy.refusal(ip)
        if reason is not None:
            raise self.refusals.refused(host, ip, reason)

    async def close(self) -> None:
        """Close the inner handler (and the browser it may run)."""
        await self.inner.close()
