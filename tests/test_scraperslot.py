"""crawler/scraperslot.py: a response counts at most the cap against the scraper slot's
limit, the count returns to zero when it leaves, and each refusal is counted."""

from __future__ import annotations

from scrapy import Request
from scrapy.core.scraper import Slot
from scrapy.http import HtmlResponse
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from crawler.scraperslot import CappedSlot

MB = 1024 * 1024


def _response(size: int) -> HtmlResponse:
    return HtmlResponse("http://a.test/", body=b"x" * size)


def test_a_big_page_counts_the_cap_and_no_longer_holds_the_engine_back():
    scrapy_slot, slot = Slot(5 * MB), CappedSlot(5 * MB, MB)
    big, small = _response(4 * MB + MB // 2), _response(900_000)
    for s in (scrapy_slot, slot):
        for response in (big, small):
            s.add_response_request(response, Request(response.url))
    assert scrapy_slot.needs_backout()
    assert slot.active_size == MB + 900_000
    assert not slot.needs_backout()


def test_the_count_returns_to_zero_and_small_responses_count_as_in_scrapy():
    slot = CappedSlot(5 * MB, MB)
    results = [_response(3 * MB), _response(10), _response(MB - 1),
               Failure(ValueError("x"))]
    requests = [Request("http://a.test/") for _ in results]
    for result, request in zip(results, requests, strict=True):
        slot.add_response_request(result, request)
    assert slot.active_size == MB + 1024 + (MB - 1) + 1024
    for result, request in zip(results, requests, strict=True):
        slot.next_response_request_deferred()
        slot.finish_response(result, request)
    assert slot.active_size == 0 and slot.is_idle()


def test_big_pages_past_the_limit_still_hold_the_engine_back_and_are_counted():
    stats = MemoryStatsCollector(get_crawler())
    slot = CappedSlot(5 * MB, MB, stats)
    for _ in range(6):
        assert not slot.needs_backout()
        slot.add_response_request(_response(10 * MB), Request("http://a.test/"))
    assert slot.needs_backout() and slot.needs_backout()
    assert stats.get_value("scraper/backout") == 2


def test_cap_zero_counts_as_scrapy_does():
    scrapy_slot, slot = Slot(5 * MB), CappedSlot(5 * MB, 0)
    for s in (scrapy_slot, slot):
        s.add_response_request(_response(3 * MB), Request("http://a.test/"))
    assert slot.active_size == scrapy_slot.active_size == 3 * MB


def test_the_default_caps_at_one_megabyte():
    from crawler import settings
    assert settings.SCRAPER_SLOT_RESPONSE_CAP == MB
    assert "crawler.scraperslot.ScraperSlotCap" in settings.EXTENSIONS


def test_the_extension_puts_a_capped_slot_in_place_of_an_idle_one_only():
    from types import SimpleNamespace

    from crawler.scraperslot import ScraperSlotCap

    crawler = get_crawler(settings_dict={"SCRAPER_SLOT_RESPONSE_CAP": MB})
    stats = MemoryStatsCollector(crawler)
    busy = Slot(5_000_000)
    busy.add_response_request(_response(10), Request("http://a.test/"))
    for slot, capped in ((Slot(5_000_000), True), (busy, False)):
        scraper = SimpleNamespace(slot=slot)
        ext = ScraperSlotCap(crawler)
        ext.crawler = SimpleNamespace(engine=SimpleNamespace(scraper=scraper), stats=stats)
        ext.spider_opened()
        assert isinstance(scraper.slot, CappedSlot) is capped
    assert scraper.slot is busy
    assert stats.get_value("scraper/backout") == 0
