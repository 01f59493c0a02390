"""The baseline for bench/crawl.py and bench/realweb.py: a plain Scrapy spider with
LinkExtractor.

Run as a script so it uses none of the project's settings:
    python bench/baseline_spider.py SEEDS_FILE SECONDS SETTINGS_JSON [--same-host]
                                    [--host-budget N]

``--same-host`` follows only links to the page's own host; ``--host-budget N`` queues at
most N distinct requests a host, its seed included (plain Scrapy has no page budget: the
spider counts what it yields, distinct by Scrapy's request fingerprint as its dupefilter
counts them; redirect targets are Scrapy's own and not counted).
"""

import argparse
import json
from collections import Counter
from urllib.parse import urlsplit

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.linkextractors import LinkExtractor


class BaselineSpider(scrapy.Spider):
    name = "baseline"

    def __init__(self, seeds, same_host: bool = False, host_budget: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.seeds = seeds
        self.links = LinkExtractor()
        self.same_host = same_host
        self.host_budget = host_budget
        self.queued: set[bytes] = set()
        self.per_host: Counter[str] = Counter()

    async def start(self):
        for url in self.seeds:
            request = scrapy.Request(url)
            if self._admit(request):
                yield request

    def parse(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}
        host = urlsplit(response.url).hostname
        for link in self.links.extract_links(response):
            if self.same_host and urlsplit(link.url).hostname != host:
                continue
            request = response.follow(link, callback=self.parse)
            if self._admit(request):
                yield request

    def _admit(self, request: scrapy.Request) -> bool:
        """Whether ``request`` may be queued: always without a budget; with one, while its
        host has fewer than ``host_budget`` distinct requests queued (Scrapy's dupefilter
        drops the repeats either way)."""
        if not self.host_budget:
            return True
        key = self.crawler.request_fingerprinter.fingerprint(request)
        if key in self.queued:
            return False
        host = urlsplit(request.url).hostname
        if self.per_host[host] >= self.host_budget:
            return False
        self.queued.add(key)
        self.per_host[host] += 1
        return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds_file")
    parser.add_argument("seconds", type=float, help="CLOSESPIDER_TIMEOUT (0: none)")
    parser.add_argument("settings_json", help="Scrapy settings, a JSON object")
    parser.add_argument("--same-host", action="store_true",
                        help="follow only links to the page's own host")
    parser.add_argument("--host-budget", type=int, default=0,
                        help="distinct URLs queued per host at most (0: no budget)")
    args = parser.parse_args()
    with open(args.seeds_file) as lines:
        seeds = [line.strip() for line in lines if line.strip()]
    settings = json.loads(args.settings_json)
    settings.update(
        {
            "CLOSESPIDER_TIMEOUT": args.seconds,
            "TWISTED_DNS_RESOLVER": "crawler.resolver.OverrideResolver",
            "LOG_LEVEL": "WARNING",
            "TELNETCONSOLE_ENABLED": False,
        }
    )
    process = CrawlerProcess(settings)
    process.crawl(BaselineSpider, seeds=seeds, same_host=args.same_host,
                  host_budget=args.host_budget)
    process.start()


if __name__ == "__main__":
    main()
