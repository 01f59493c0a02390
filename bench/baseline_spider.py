"""The baseline for bench/crawl.py: a plain Scrapy spider with LinkExtractor.

Run as a script so it uses none of the project's settings:
    python bench/baseline_spider.py SEEDS_FILE SECONDS SETTINGS_JSON
"""

import json
import sys

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor


class BaselineSpider(scrapy.Spider):
    name = "baseline"

    def __init__(self, seeds, **kwargs):
        super().__init__(**kwargs)
        self.seeds = seeds
        self.links = LinkExtractor()

    async def start(self):
        for url in self.seeds:
            yield scrapy.Request(url)

    def parse(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}
        for link in self.links.extract_links(response):
            yield response.follow(link, callback=self.parse)


def main() -> None:
    seeds_file, seconds, settings_json = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    seeds = [line.strip() for line in open(seeds_file) if line.strip()]
    settings = json.loads(settings_json)
    settings.update(
        {
            "CLOSESPIDER_TIMEOUT": seconds,
            "TWISTED_DNS_RESOLVER": "crawler.resolver.OverrideResolver",
            "LOG_LEVEL": "WARNING",
            "TELNETCONSOLE_ENABLED": False,
        }
    )
    process = CrawlerProcess(settings)
    process.crawl(BaselineSpider, seeds=seeds)
    process.start()


if __name__ == "__main__":
    main()
