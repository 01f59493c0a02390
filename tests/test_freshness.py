"""FreshnessMiddleware and RecrawlFeeder without a crawler: validators, 304, deletions, moves."""

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.signalmanager import SignalManager

from crawler.crawlstate import LocalCrawlStateStore
from crawler.freshness import FreshnessMiddleware, RecrawlFeeder
from crawler.options import settings_to_options
from crawler.recrawl import RecrawlPolicy
from crawler.signals import documents_removed
from crawler.urls import doc_id_for
from harness.clock import FakeClock

H = 3600.0
URL = "http://fresh0.test/p/1"
LM = "Thu, 01 Jan 2026 00:00:00 GMT"


@pytest.fixture
def mw():
    signals = SignalManager()
    removed = []
    signals.connect(lambda ids, reason, **kw: removed.append((ids, reason)),
                    signal=documents_removed, weak=False)
    middleware = FreshnessMiddleware(
        LocalCrawlStateStore(None),
        RecrawlPolicy.from_settings(None, min_interval=H, max_interval=100 * H,
                                    initial_interval=10 * H),
        max_tier=3, signals_=signals, clock=FakeClock())
    middleware.removed = removed
    return middleware


def fetch(mw, url, status=200, body=b"<html>v1</html>", headers=None, meta=None):
    request = Request(url, meta=meta or {})
    mw.process_request(request)
    response = HtmlResponse(url, status=status, body=body, headers=headers or {},
                            request=request)
    return request, mw.process_response(request, response)


def test_validators_sent_and_304_ends_before_the_spider(mw):
    request, response = fetch(mw, URL, headers={"ETag": '"a"', "Last-Modified": LM})
    assert b"If-None-Match" not in request.headers and response.status == 200
    state = mw.store.get(URL)
    assert state.etag == '"a"' and state.next_fetch_at == 1000.0 + 10 * H
    mw.clock.advance(10 * H)
    request = Request(URL, meta={"recrawl": True})
    mw.process_request(request)
    assert request.headers[b"If-None-Match"] == b'"a"'
    assert request.headers[b"If-Modified-Since"] == LM.encode()
    with pytest.raises(IgnoreRequest):
        mw.process_response(request, Response(URL, status=304, request=request))
    assert mw.store.get(URL).interval == 15 * H
    # a changed page comes back whole and shrinks the interval
    mw.clock.advance(15 * H)
    _, response = fetch(mw, URL, body=b"<html>v2</html>", headers={"ETag": '"b"'})
    state = mw.store.get(URL)
    assert response.status == 200 and state.changes == [mw.clock.now]
    assert state.interval == 7.5 * H


def test_gone_twice_removes_and_tombstones(mw):
    fetch(mw, URL)
    fetch(mw, URL, status=404)
    assert mw.removed == [] and not mw.store.get(URL).tombstone
    fetch(mw, URL, status=410)
    assert mw.removed == [([doc_id_for(URL)], "deleted")]
    with pytest.raises(IgnoreRequest):  # a stale link does not bring it back
        mw.process_request(Request(URL))
    mw.process_request(Request(URL, meta={"recrawl": True}))  # a recrawl checks it again


def test_permanent_redirect_moves_the_document(mw):
    fetch(mw, URL)
    fetch(mw, URL, status=301, headers={"Location": "/moved/1"})
    assert mw.removed == [([doc_id_for(URL)], "moved")]
    assert mw.store.get(URL).moved_to == "http://fresh0.test/moved/1"
    fetch(mw, "http://fresh0.test/other", status=302, headers={"Location": "/x"})
    assert len(mw.removed) == 1  # a temporary redirect moves nothing


def test_redirect_target_does_not_inherit_validators(mw):
    fetch(mw, URL, headers={"ETag": '"a"'})
    request = Request("http://fresh0.test/moved/1", headers={"If-None-Match": '"a"'})
    mw.process_request(request)
    assert b"If-None-Match" not in request.headers


def test_robots_fetches_are_left_alone(mw):
    request = Request("http://fresh0.test/robots.txt", meta={"frontier_robots": "fresh0.test"})
    mw.process_request(request)
    mw.process_response(request, Response(request.url, status=404, request=request))
    assert mw.store.get("http://fresh0.test/robots.txt") is None


def test_feeder_allowance_is_a_share_of_fetches_or_a_batch_when_idle():
    feeder = RecrawlFeeder(None, LocalCrawlStateStore(None), RecrawlPolicy.from_settings(None),
                           **settings_to_options(None, RecrawlFeeder.SETTINGS, share=0.2, batch=10))
    assert feeder.allowance(0, idle=False) == 2
    assert feeder.allowance(1000, idle=False) == 10
    feeder.fed = 30
    assert feeder.allowance(100, idle=False) == 0
    assert feeder.allowance(150, idle=False) == 2  # 0.2 x 160 - 30
    assert feeder.allowance(100, idle=True) == 10
