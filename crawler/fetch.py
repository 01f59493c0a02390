"""What one fetch may cost, and a record of every limit that fired.

``FetchLimitsMiddleware`` (a downloader middleware next to the download handler):

- **size**: a body is streamed and cut at ``DOWNLOAD_MAXSIZE`` bytes (``StopDownload`` on
  the ``bytes_received`` signal) instead of being thrown away: the page keeps its first
  ``DOWNLOAD_MAXSIZE`` bytes and the response carries the ``truncated`` flag, which the
  spider copies to ``PageItem.truncated``. Scrapy's own limit (which cancels the download
  and keeps nothing) is lifted for the transfer and put back before decompression, so a
  compression bomb is still refused by ``HttpCompressionMiddleware`` once it inflates past
  the limit.
- **retries**: Scrapy's ``RetryMiddleware`` decides what to retry (``RETRY_TIMES``); this
  middleware makes the n-th retry wait ``RETRY_BACKOFF_BASE * 2 ** (n - 1)`` seconds
  (capped at ``RETRY_BACKOFF_MAX``) after the failure. With the frontier scheduler the retry
  goes back through the frontier, whose host backoff usually already waited that long.
- **counting**: timeouts, refused connections, SSRF refusals, redirect-limit hits, meta
  refresh hops and truncations under ``fetch/``, ``ssrf/`` and ``redirect/``.

``CookiesMiddleware`` stands in for Scrapy's at its place in the chain and builds it only
when ``COOKIES_ENABLED`` (off by default). ``MetaRefreshMiddleware`` and ``DownloaderStats``
stand in for Scrapy's with the same results for less CPU a page: the first passes over a
page whose first bytes cannot hold a refresh without decoding it, the second counts a
request's bytes without writing them out.
"""

from __future__ import annotations

import time
from functools import lru_cache

from scrapy import Request, signals
from scrapy.downloadermiddlewares.redirect import (
    MetaRefreshMiddleware as ScrapyMetaRefreshMiddleware,
)
from scrapy.downloadermiddlewares.stats import DownloaderStats as ScrapyDownloaderStats
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadTimeoutError,
    IgnoreRequest,
    NotConfigured,
    StopDownload,
)
from scrapy.http import HtmlResponse, Response
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import defer, error, task

from crawler.options import enabled, setting
from crawler.ssrf import SSRFRefused

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
#: Scrapy looks for a meta refresh in the first 4096 characters of a page's text; in an
#: encoding that writes ASCII as itself a character takes at most 4 bytes, after a BOM.
META_REFRESH_SCAN_BYTES = 4 * 4096 + 4
TRUNCATED = "truncated"
_MAXSIZE_KEY = "fetch_maxsize"
_BYTES_KEY = "fetch_bytes"


def failure_kind(exc: BaseException) -> str:
    """A short stats name for a download exception (``timeout``, ``ssrf``...)."""
    if isinstance(exc, SSRFRefused):
        return "ssrf"
    if isinstance(exc, DownloadTimeoutError | error.TimeoutError | defer.TimeoutError):
        return "timeout"
    if isinstance(exc, DownloadConnectionRefusedError | error.ConnectionRefusedError):
        return "connection_refused"
    if isinstance(exc, CannotResolveHostError | error.DNSLookupError):
        return "dns"
    if isinstance(exc, DownloadCancelledError):
        return "cancelled"
    if isinstance(exc, IgnoreRequest):
        message = str(exc)
        if "max redirections" in message:
            return "redirect_limit"
        if "DOWNLOAD_MAXSIZE" in message:  # HttpCompressionMiddleware: inflated past the limit
            return "size_limit"
        if "robots.txt" in message:
            return "robots"
        return "ignored"
    return "error"


class FetchLimitsMiddleware:
    """Cuts oversized bodies (keeping a record), spaces retries out exponentially, counts
    every limit that fires. Switched off by ``FETCH_LIMITS_ENABLED = False``."""

    def __init__(
        self,
        maxsize: int,
        max_redirects: int,
        retry_codes: frozenset[int],
        *,
        backoff_base: float,
        backoff_max: float,
        stats=None,
        clock=time.time,
        sleep=None,
    ):
        self.maxsize = maxsize
        self.max_redirects = max_redirects
        self.retry_codes = retry_codes
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.stats = stats
        self.clock = clock
        self.sleep = sleep or _reactor_sleep

    @classmethod
    def from_crawler(cls, crawler) -> FetchLimitsMiddleware:
        s = crawler.settings
        if not enabled(s, "FETCH_LIMITS_ENABLED"):
            raise NotConfigured
        mw = cls(
            maxsize=s.getint("DOWNLOAD_MAXSIZE"),
            max_redirects=s.getint("REDIRECT_MAX_TIMES"),
            retry_codes=frozenset(int(c) for c in s.getlist("RETRY_HTTP_CODES")),
            backoff_base=setting(s, "RETRY_BACKOFF_BASE", float),
            backoff_max=setting(s, "RETRY_BACKOFF_MAX", float),
            stats=crawler.stats,
        )
        crawler.signals.connect(mw.bytes_received, signal=signals.bytes_received)
        return mw

    # -- backoff -------------------------------------------------------------------------

    def backoff(self, retry_times: int) -> float:
        """Seconds the ``retry_times``-th retry waits after the failure (exponential, capped)."""
        if retry_times <= 0:
            return 0.0
        return min(self.backoff_max, self.backoff_base * 2.0 ** (retry_times - 1))

    async def process_request(self, request: Request) -> None:
        meta = request.meta
        retry_times = meta.get("retry_times", 0)
        failed_at = meta.pop("fetch_failed_at", None)
        if retry_times and failed_at is not None:
            wait = failed_at + self.backoff(retry_times) - self.clock()
            if wait > 0:
                self._inc("fetch/retry_backoff_waits")
                await self.sleep(wait)
        reasons = meta.get("redirect_reasons")
        if reasons and not retry_times:
            self._inc("redirect/followed")
            if reasons[-1] == "meta refresh":
                self._inc("redirect/meta_refresh")
        limit = meta.get("download_maxsize", self.maxsize)
        if limit:
            meta[_MAXSIZE_KEY] = limit
            meta["download_maxsize"] = 0  # we cut the body ourselves, keeping what came
        meta[_BYTES_KEY] = 0
        return None

    # -- size ----------------------------------------------------------------------------

    def bytes_received(self, data: bytes, request: Request, spider=None) -> None:
        """Stop the transfer (keeping the body so far) once it passes the size limit."""
        limit = request.meta.get(_MAXSIZE_KEY)
        if not limit:
            return
        received = request.meta.get(_BYTES_KEY, 0) + len(data)
        request.meta[_BYTES_KEY] = received
        if received > limit:
            raise StopDownload(fail=False)

    def process_response(self, request: Request, response: Response) -> Response:
        meta = request.meta
        limit = meta.pop(_MAXSIZE_KEY, None)
        meta.pop(_BYTES_KEY, None)
        if limit:
            meta["download_maxsize"] = limit  # HttpCompressionMiddleware's limit on inflation
            if "download_stopped" in response.flags or len(response.body) > limit:
                response = response.replace(
                    body=response.body[:limit], flags=[*response.flags, TRUNCATED]
                )
                self._inc("fetch/truncated")
        status = response.status
        if status in REDIRECT_STATUSES and b"Location" in response.headers \
                and not meta.get("dont_redirect"):
            ttl = meta.get("redirect_ttl", self.max_redirects)
            if not ttl or meta.get("redirect_times", 0) + 1 > self.max_redirects:
                self._inc("redirect/limit")
        if status in self.retry_codes and not meta.get("dont_retry"):
            meta["fetch_failed_at"] = self.clock()
        return response

    # -- failures ------------------------------------------------------------------------

    def process_exception(self, request: Request, exception: BaseException) -> None:
        if isinstance(exception, SSRFRefused):
            if not exception.counted:
                self._inc("ssrf/refused")
                self._inc(f"ssrf/refused/{exception.reason}")
        elif isinstance(exception, IgnoreRequest):
            return None  # a middleware's decision (robots.txt...), not a failed download
        self._inc(f"fetch/error/{failure_kind(exception)}")
        request.meta.pop(_BYTES_KEY, None)
        limit = request.meta.pop(_MAXSIZE_KEY, None)
        if limit:
            request.meta["download_maxsize"] = limit
        request.meta["fetch_failed_at"] = self.clock()
        return None

    def _inc(self, key: str, n: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, n)


async def _reactor_sleep(seconds: float) -> None:
    from twisted.internet import reactor

    await maybe_deferred_to_future(task.deferLater(reactor, seconds, lambda: None))


class CookiesMiddleware:
    """Scrapy's ``CookiesMiddleware``, imported only when ``COOKIES_ENABLED``: Scrapy imports
    a middleware's module before it can say NotConfigured, and that one imports tldextract
    with requests and filelock (0.05 s of CPU at every crawl's start, for a middleware that
    is off)."""

    @classmethod
    def from_crawler(cls, crawler):
        if not crawler.settings.getbool("COOKIES_ENABLED"):
            raise NotConfigured
        from scrapy.downloadermiddlewares.cookies import CookiesMiddleware as ScrapyCookies
        from scrapy.utils.misc import build_from_crawler

        return build_from_crawler(ScrapyCookies, crawler)


@lru_cache(maxsize=64)
def _writes_ascii_as_itself(encoding: str) -> bool:
    """Whether a text in ``encoding`` holds an ASCII word only where its bytes spell it:
    ASCII encoded as itself, no bytes that decoding drops (ISO-2022's escapes, SO and SI,
    HZ's "~" and line end) to join two parts of a word, and no shift into another alphabet
    (UTF-7's ``+AHI-`` is "r")."""
    probe = '<meta http-equiv="Refresh" content="0; url=/">'
    try:
        if probe.encode(encoding) != probe.encode("ascii"):
            return False
        return b"+AHI-".decode(encoding, "replace") != "r" and all(
            (b"a" + dropped + b"b").decode(encoding, "replace") != "ab"
            for dropped in (b"\x1b(B", b"\x0e", b"\x0f", b"~\n"))
    except (LookupError, UnicodeError):
        return False


def may_refresh(response: HtmlResponse) -> bool:
    """Whether Scrapy's meta refresh check could find a refresh in ``response``: False when
    the bytes its first 4096 characters come from do not spell "refresh" in any case, in an
    encoding that writes ASCII as itself (Scrapy decodes the whole body to look)."""
    head = response.body[:META_REFRESH_SCAN_BYTES]
    return b"refresh" in head.lower() or not _writes_ascii_as_itself(response.encoding)


class MetaRefreshMiddleware(ScrapyMetaRefreshMiddleware):
    """Scrapy's ``MetaRefreshMiddleware``, which decodes a page's whole body and looks for
    its base URL and a ``<meta http-equiv="refresh">`` in the first 4096 characters, for
    the pages whose first bytes spell "refresh" (``may_refresh``) only."""

    def process_response(self, request: Request, response: Response) -> Request | Response:
        if isinstance(response, HtmlResponse) and not may_refresh(response):
            return response
        return super().process_response(request, response)


def request_size(request: Request) -> int:
    """``len(scrapy.utils.request.request_httprepr(request))``, counted without writing the
    request out: ``METHOD path HTTP/1.1``, ``Host: host``, the header lines, a blank line
    and the body."""
    parsed = urlparse_cached(request)
    size = len(request.method) + 1 + len((parsed.path or "/").encode()) + len(" HTTP/1.1\r\n")
    if parsed.params:
        size += 1 + len(parsed.params.encode())
    if parsed.query:
        size += 1 + len(parsed.query.encode())
    size += len("Host: \r\n") + len((parsed.hostname or "").encode())
    headers = request.headers
    if headers:
        lines = 0
        for name, values in dict.items(headers):  # as stored: normalized, a list each
            for value in values:
                size += len(name) + 2 + len(value) + 2  # "name: value", then "\r\n"
                lines += 1
        size += 0 if lines else 2  # no line: the "\r\n" after the headers alone
    return size + len("\r\n") + len(request.body)


class DownloaderStats(ScrapyDownloaderStats):
    """Scrapy's ``DownloaderStats``, a request's bytes counted by ``request_size`` (Scrapy's
    writes each request out to measure it)."""

    def process_request(self, request: Request) -> None:
        self.stats.inc_value("downloader/request_count")
        self.stats.inc_value(f"downloader/request_method_count/{request.method}")
        self.stats.inc_value("downloader/request_bytes", request_size(request))
        return None
