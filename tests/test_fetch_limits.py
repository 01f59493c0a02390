"""Fetch limits: body cut and flagged, retry backoff, redirect-limit and failure counting."""

import asyncio

import pytest
from scrapy import Request
from scrapy.exceptions import (
    DownloadConnectionRefusedError,
    DownloadTimeoutError,
    IgnoreRequest,
    StopDownload,
)
from scrapy.http import HtmlResponse
from scrapy.statscollectors import MemoryStatsCollector

from crawler.fetch import TRUNCATED, FetchLimitsMiddleware, failure_kind
from crawler.ssrf import SSRFRefused
from harness.clock import FakeClock


class Stats(MemoryStatsCollector):
    def __init__(self):
        self._stats = {}


def make(maxsize=100, **kw):
    clock = FakeClock()
    mw = FetchLimitsMiddleware(maxsize, 5, frozenset({503}), backoff_base=1.0, backoff_max=8.0,
                               stats=Stats(), clock=clock, sleep=clock.sleep, **kw)
    return mw, clock


def test_backoff_is_exponential_and_capped():
    mw, _ = make()
    assert [mw.backoff(n) for n in range(7)] == [0.0, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_body_is_cut_at_the_limit_and_flagged():
    mw, _ = make(maxsize=100)
    request = Request("http://a.test/")
    asyncio.run(mw.process_request(request))
    assert request.meta["download_maxsize"] == 0  # the transfer is cut by us, not cancelled
    mw.bytes_received(b"x" * 60, request)
    with pytest.raises(StopDownload) as stop:
        mw.bytes_received(b"x" * 60, request)
    assert stop.value.fail is False
    response = HtmlResponse(request.url, body=b"x" * 120, flags=["download_stopped"],
                            request=request)
    out = mw.process_response(request, response)
    assert len(out.body) == 100 and TRUNCATED in out.flags
    assert request.meta["download_maxsize"] == 100  # back for HttpCompressionMiddleware
    assert mw.stats.get_value("fetch/truncated") == 1


def test_small_body_untouched():
    mw, _ = make(maxsize=100)
    request = Request("http://a.test/")
    asyncio.run(mw.process_request(request))
    mw.bytes_received(b"x" * 50, request)
    response = HtmlResponse(request.url, body=b"x" * 50, request=request)
    assert mw.process_response(request, response) is response


def test_retry_waits_for_its_backoff():
    mw, clock = make()
    request = Request("http://a.test/")
    asyncio.run(mw.process_request(request))
    mw.process_exception(request, DownloadTimeoutError("slow"))
    assert mw.stats.get_value("fetch/error/timeout") == 1
    for n, expected in ((1, 1.0), (2, 2.0), (3, 4.0)):
        retry = request.replace(dont_filter=True)
        retry.meta["retry_times"] = n
        clock.slept.clear()
        asyncio.run(mw.process_request(retry))
        assert clock.slept == [pytest.approx(expected)]
        mw.process_exception(retry, DownloadTimeoutError("slow"))
        request = retry


def test_retry_after_a_long_frontier_wait_does_not_sleep():
    mw, clock = make()
    request = Request("http://a.test/")
    asyncio.run(mw.process_request(request))
    mw.process_response(request, HtmlResponse(request.url, status=503, request=request))
    retry = request.replace(dont_filter=True)
    retry.meta["retry_times"] = 1
    clock.advance(30)  # the frontier's host backoff already waited
    asyncio.run(mw.process_request(retry))
    assert clock.slept == []


def test_redirect_limit_and_meta_refresh_counted():
    mw, _ = make()
    request = Request("http://a.test/9", meta={"redirect_times": 5, "redirect_ttl": 1})
    asyncio.run(mw.process_request(request))
    response = HtmlResponse(request.url, status=301, headers={"Location": "/8"}, request=request)
    mw.process_response(request, response)
    assert mw.stats.get_value("redirect/limit") == 1
    hop = Request("http://a.test/t", meta={"redirect_reasons": [301, "meta refresh"]})
    asyncio.run(mw.process_request(hop))
    assert mw.stats.get_value("redirect/meta_refresh") == 1
    assert mw.stats.get_value("redirect/followed") == 1


def test_failure_kinds():
    assert failure_kind(SSRFRefused("h", "127.0.0.1", "loopback")) == "ssrf"
    assert failure_kind(DownloadTimeoutError()) == "timeout"
    assert failure_kind(DownloadConnectionRefusedError()) == "connection_refused"
    assert failure_kind(IgnoreRequest("max redirections reached")) == "redirect_limit"
    assert failure_kind(IgnoreRequest("body exceeded DOWNLOAD_MAXSIZE (10 B)")) == "size_limit"
    assert failure_kind(IgnoreRequest("Forbidden by robots.txt")) == "robots"


def test_ssrf_refusals_counted_robots_ignores_not():
    mw, _ = make()
    mw.process_exception(Request("http://a.test/"), SSRFRefused("a.test", "10.0.0.1", "private"))
    mw.process_exception(Request("http://a.test/"), IgnoreRequest("Forbidden by robots.txt"))
    assert mw.stats.get_value("ssrf/refused") == 1
    assert mw.stats.get_value("ssrf/refused/private") == 1
    assert mw.stats.get_value("fetch/error/ignored") is None


# -- Scrapy's meta refresh and downloader stats, for less CPU ------------------------------

def _refresh_pair():
    from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware as Scrapys
    from scrapy.utils.test import get_crawler

    from crawler.fetch import MetaRefreshMiddleware

    crawler = get_crawler()
    return MetaRefreshMiddleware.from_crawler(crawler), Scrapys.from_crawler(crawler)


def _page(body: bytes, charset: str = "utf-8", url: str = "http://a.test/p") -> HtmlResponse:
    return HtmlResponse(url, body=body, request=Request(url),
                        headers={"Content-Type": f"text/html; charset={charset}"})


REFRESH = '<meta http-equiv="{}" content="0; url=/next">'
PAGES = [
    ("<html><head><title>No refresh</title></head><body>text</body></html>", "utf-8"),
    ("<html><head>" + REFRESH.format("refresh") + "</head></html>", "utf-8"),
    ("<html><head>" + REFRESH.format("REFRESH") + "</head></html>", "utf-8"),
    ("<html><head>" + REFRESH.format("ReFrEsH") + "</head></html>", "utf-8"),
    ("<html><head><!-- " + REFRESH.format("refresh") + " --></head></html>", "utf-8"),
    # past 4096 bytes but within Scrapy's 4096 characters: found by both
    ("<html><head><title>" + "é" * 3000 + "</title>" + REFRESH.format("refresh"), "utf-8"),
    ("<html><head><title>" + "x" * 5000 + "</title>" + REFRESH.format("refresh"), "utf-8"),
    ("<html><head><title>日本語</title>" + REFRESH.format("refresh") + "</head></html>",
     "shift_jis"),
    ("<html><head>" + REFRESH.format("refresh") + "</head></html>", "utf-16"),
    ("<html><head>" + REFRESH.format("refresh") + "</head></html>", "iso-2022-jp"),
]
PAGES = [(text.encode(charset), charset) for text, charset in PAGES] + [
    # an escape that ISO-2022-JP drops when decoding: the bytes do not spell "refresh"
    (b"<html><head>" + REFRESH.format("ref\x1b(Bresh").encode() + b"</head></html>",
     "iso-2022-jp"),
    # HZ drops "~" and the line end after it
    (b"<html><head>" + REFRESH.format("ref~\nresh").encode() + b"</head></html>", "hz"),
]


@pytest.mark.parametrize(("body", "charset"), PAGES)
def test_meta_refresh_as_scrapys(body, charset):
    ours, scrapys = _refresh_pair()
    request = Request("http://a.test/p")
    mine = ours.process_response(request, _page(body, charset))
    theirs = scrapys.process_response(request, _page(body, charset))
    assert type(mine) is type(theirs)
    if isinstance(theirs, Request):
        assert mine.url == theirs.url == "http://a.test/next"


def test_a_page_without_refresh_is_not_decoded():
    ours, _ = _refresh_pair()
    page = _page(b"<html><head><title>Plain</title></head><body>" + b"word " * 2000)
    assert ours.process_response(Request(page.url), page) is page
    assert page._cached_ubody is None  # Scrapy's decodes the whole body to look


def test_request_size_is_its_http_representation():
    from scrapy.utils.request import request_httprepr

    from crawler.fetch import request_size

    requests = [
        Request("http://a.test/"),
        Request("http://A.Test:8080/x/y;p=1?q=2&r=%C3%A9#frag"),
        Request("https://b.test", method="POST", body=b"abc=1"),
        Request("http://c.test/p", headers={"X": ["1", "2"], "User-Agent": "ua"}),
        Request("http://d.test/ü/ä?ß=1"),
        Request("http://e.test/a", headers={"Empty": []}),
        Request("http://[::1]:80/v6?x", headers={"Referer": "http://x.test/"}),
    ]
    for request in requests:
        assert request_size(request) == len(request_httprepr(request)), request
