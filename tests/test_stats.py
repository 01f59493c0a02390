"""The crawl's stats collector (``STATS_CLASS``): Scrapy's in-memory stats, read directly."""

import warnings

from scrapy.spiders import Spider
from scrapy.utils.test import get_crawler

from crawler import settings as project_settings
from crawler.stats import CrawlStats


def test_the_project_collects_its_stats_with_crawl_stats():
    crawler = get_crawler(settings_dict={"STATS_CLASS": project_settings.STATS_CLASS})
    assert type(crawler.stats) is CrawlStats


def test_crawl_stats_keeps_scrapys_behaviour_without_the_shim():
    crawler = get_crawler(Spider)
    stats = CrawlStats(crawler)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation shim left to warn
        stats.inc_value("frontier/enqueued")
        stats.inc_value("frontier/enqueued", 2)
        stats.inc_value("x", spider=None)
        stats.max_value("reactor/lag_max_ms", 5)
        stats.max_value("reactor/lag_max_ms", 3)
        stats.min_value("m", 4)
        stats.min_value("m", 7)
        stats.set_value("s", "v")
    assert stats.get_stats() == {"frontier/enqueued": 3, "x": 1, "reactor/lag_max_ms": 5,
                                 "m": 4, "s": "v"}
    assert stats.get_value("missing", 0) == 0
    assert "_cached_inc_value" not in vars(stats)  # Scrapy's shim caches its wrappers there
    crawler.spider = Spider("web")
    stats.close_spider(reason="finished")
    assert stats.spider_stats["web"]["frontier/enqueued"] == 3
