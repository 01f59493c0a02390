"""Crawl extensions: progress lines while running and a one-screen summary at the end."""

from __future__ import annotations

import logging
import sys
import time

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from crawler.options import enabled

SUMMARY_KEYS = (
    ("pages downloaded", "response_received_count"),
    ("items extracted", "item_scraped_count"),
    ("documents indexed", "index/indexed"),
    ("skipped: noindex", "index/skipped_noindex"),
    ("skipped: duplicate", "index/skipped_duplicate"),
    ("robots.txt disallowed", "robots/disallowed"),
    ("out of scope links", "scope/out_of_scope"),
    ("already seen (Bloom filter)", "frontier/dropped/seen"),
    ("exact duplicates (aliases)", "dedup/exact"),
    ("near duplicates", "dedup/near"),
    ("WARC records", "warc/records"),
    ("download errors", "downloader/exception_count"),
    ("retries", "retry/count"),
)


def _echo_problems_to_stderr() -> None:
    """With the log in a file, still show warnings and errors on the terminal."""
    root = logging.getLogger()
    if any(getattr(h, "_crawl_echo", False) for h in root.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    from crawler.logjson import JsonLogRecord

    json_lines = logging.getLogRecordFactory() is JsonLogRecord
    handler.setFormatter(logging.Formatter(
        "%(message)s" if json_lines else "%(levelname)s %(name)s: %(message)s"))
    handler._crawl_echo = True
    root.addHandler(handler)


class CrawlProgress:
    """Prints pages/s and totals to stderr every ``CRAWL_PROGRESS_INTERVAL`` seconds (0: never)
    and a summary when the crawl ends."""

    def __init__(self, stats, interval: float, stream=None):
        self.stats = stats
        self.interval = interval
        self.stream = stream or sys.stderr
        self.loop: task.LoopingCall | None = None
        self.started = time.monotonic()
        self.last = (self.started, 0)

    @classmethod
    def from_crawler(cls, crawler):
        interval = crawler.settings.getfloat("CRAWL_PROGRESS_INTERVAL")
        if not enabled(crawler.settings, "CRAWL_SUMMARY_ENABLED"):
            raise NotConfigured
        if crawler.settings.get("LOG_FILE"):
            _echo_problems_to_stderr()
        ext = cls(crawler.stats, interval)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider):
        self.started = time.monotonic()
        self.last = (self.started, 0)
        if self.interval > 0:
            self.loop = task.LoopingCall(self.report)
            self.loop.start(self.interval, now=False)

    def report(self):
        now = time.monotonic()
        pages = self.stats.get_value("response_received_count", 0)
        rate = (pages - self.last[1]) / max(now - self.last[0], 1e-9)
        self.last = (now, pages)
        errors = self.stats.get_value("downloader/exception_count", 0) - self.stats.get_value(
            "downloader/exception_type_count/scrapy.exceptions.IgnoreRequest", 0
        )
        indexed = self.stats.get_value("index/indexed", 0)
        queued = self.stats.get_value(
            "frontier/queued", self.stats.get_value("scheduler/enqueued", 0)
        )
        print(
            f"[crawl] {now - self.started:6.0f}s  pages {pages:>7}  {rate:6.1f}/s  "
            f"indexed {indexed:>7}  errors {errors:>5}  queued {queued:>7}",
            file=self.stream,
            flush=True,
        )

    def spider_closed(self, spider, reason):
        if self.loop and self.loop.running:
            self.loop.stop()
        elapsed = time.monotonic() - self.started
        pages = self.stats.get_value("response_received_count", 0)
        lines = [
            f"crawl finished ({reason}) in {elapsed:.1f}s, {pages / max(elapsed, 1e-9):.1f} pages/s"
        ]
        for label, key in SUMMARY_KEYS:
            value = self.stats.get_value(key)
            if value:
                lines.append(f"  {label:<30} {value}")
        statuses = sorted(
            (k.rsplit("/", 1)[-1], v)
            for k, v in self.stats.get_stats().items()
            if k.startswith("downloader/response_status_count/")
        )
        if statuses:
            lines.append(
                "  HTTP statuses                  " + ", ".join(f"{s}: {n}" for s, n in statuses)
            )
        print("\n".join(lines), file=self.stream, flush=True)
