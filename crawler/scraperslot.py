"""Scrapy's scraper slot with each response counted at most ``SCRAPER_SLOT_RESPONSE_CAP``
bytes, and the engine's refusals for its sake counted (``scraper/backout``).

The engine starts no request, to any host, while the responses in the scraper (waiting
for or in their callback, here mostly for an extraction worker) count more than
``SCRAPER_SLOT_MAX_ACTIVE_SIZE``. Counted at their full size, one multi-MB page being
extracted and a few others held every host back. Counted at most the cap, the memory of
the responses in the scraper stays bounded: the counted sizes add up to at most
``SCRAPER_SLOT_MAX_ACTIVE_SIZE`` (the engine stops at it) plus the responses the
downloader hands over meanwhile, so at most ``SCRAPER_SLOT_MAX_ACTIVE_SIZE //
SCRAPER_SLOT_RESPONSE_CAP + 1`` responses are counted short, each at most
``DOWNLOAD_MAXSIZE`` (5 MB / 1 MB and 10 MB: 6 responses, 60 MB, against 15 MB of big
pages counted in full before)."""

from __future__ import annotations

import logging

from scrapy import signals
from scrapy.core.scraper import Slot
from scrapy.http import Response

logger = logging.getLogger(__name__)


class CappedSlot(Slot):
    """A scraper slot whose responses count ``min(len(body), cap)`` bytes (at least
    Scrapy's ``MIN_RESPONSE_SIZE``; cap 0: their full size, as Scrapy's slot), and whose
    ``needs_backout`` counts each refusal."""

    def __init__(self, max_active_size: int, cap: int, stats=None):
        super().__init__(max_active_size)
        self.cap = max(cap, self.MIN_RESPONSE_SIZE) if cap > 0 else 0
        self.stats = stats

    def _excess(self, result) -> int:
        """What Scrapy's slot counts of ``result`` beyond what this slot counts."""
        if not self.cap or not isinstance(result, Response):
            return 0
        return max(len(result.body) - self.cap, 0)

    def add_response_request(self, result, request):
        deferred = super().add_response_request(result, request)
        self.active_size -= self._excess(result)
        return deferred

    def finish_response(self, result, request) -> None:
        super().finish_response(result, request)
        self.active_size += self._excess(result)

    def needs_backout(self) -> bool:
        backout = super().needs_backout()
        if backout and self.stats is not None:
            self.stats.inc_value("scraper/backout")
        return backout


class ScraperSlotCap:
    """Puts a :class:`CappedSlot` in place of the scraper's slot when the spider opens
    (Scrapy builds its slot in ``Scraper.open_spider_async`` and offers no setting for
    another class)."""

    def __init__(self, crawler):
        self.crawler = crawler
        self.cap = crawler.settings.getint("SCRAPER_SLOT_RESPONSE_CAP")

    @classmethod
    def from_crawler(cls, crawler):
        ext = cls(crawler)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        return ext

    def spider_opened(self, spider=None) -> None:
        scraper = self.crawler.engine.scraper
        slot = scraper.slot
        if slot is None or not slot.is_idle() or slot.active_size:
            logger.warning("scraper slot busy at spider_opened: Scrapy's slot kept")
            return
        scraper.slot = CappedSlot(slot.max_active_size, self.cap, self.crawler.stats)
        self.crawler.stats.set_value("scraper/backout", 0)
