"""Prometheus metrics of one crawl worker, served on ``CRAWL_METRICS_PORT``.

``CrawlMetrics`` (a Scrapy extension) serves this worker's Scrapy stats in the Prometheus
text format at ``http://CRAWL_METRICS_ADDRESS:CRAWL_METRICS_PORT/metrics``; off while the
port is 0 (the default: one port per worker process, so the operator picks them, as
scripts/stack.sh does). The values are the stats the dashboard's export already holds
(crawler/statsexport.py), read when Prometheus scrapes: the well-known keys become named
families (pages, responses by status, fetch errors by kind, leases, drops by reason,
politeness waits, queue depth, memory), every other numeric stat is kept as
``websearch_crawl_stat{key="..."}``; prometheus_client's process collector adds CPU, RSS
and open files. Gauges copied from the shared frontier (``frontier/cluster/*``, the queue
depth) are the same on every worker: take their max over workers, not their sum.

The page is rendered in the reactor's thread (a plain twisted.web resource around
``generate_latest``), so a scrape reads the stats between two callbacks of the crawl, never
while one changes them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet.error import CannotListenError
from twisted.web.resource import Resource

from crawler.options import setting
from crawler.statsexport import numeric_stats

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import Metric

# prometheus_client and twisted.web.server are imported where they are used: Scrapy
# imports this module for every crawl, and the endpoint is off by default (0.03 s of CPU)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Family:
    """Stats under ``key`` as one metric family: the key itself, or, when ``label`` is set,
    every key below ``key/`` with the rest of the key as that label's value (optionally only
    those ending in ``suffix``, which is cut off)."""

    key: str
    name: str
    kind: str  # "counter" or "gauge"
    help: str
    label: str | None = None
    suffix: str = ""


FAMILIES = (
    Family("response_received_count", "websearch_crawl_pages", "counter",
           "Responses received (pages and robots.txt)."),
    Family("item_scraped_count", "websearch_crawl_items", "counter",
           "Pages extracted into items."),
    Family("downloader/response_status_count", "websearch_crawl_responses", "counter",
           "Responses by HTTP status.", label="status"),
    Family("fetch/error", "websearch_crawl_fetch_errors", "counter",
           "Failed downloads by kind (timeout, dns, connection_refused, ssrf...).",
           label="kind"),
    Family("frontier/leased", "websearch_crawl_frontier_leased", "counter",
           "Hosts leased from the frontier by this worker."),
    Family("frontier/done", "websearch_crawl_frontier_done", "counter",
           "Leases this worker reported done."),
    Family("frontier/expired_released", "websearch_crawl_frontier_expired_released", "counter",
           "Expired leases (of dead workers) this worker returned to their queues."),
    Family("frontier/dropped", "websearch_crawl_frontier_dropped", "counter",
           "URLs dropped before the frontier, by reason.", label="reason"),
    Family("frontier/politeness_waits", "websearch_crawl_politeness_waits", "counter",
           "Frontier polls that found fewer hosts ready than asked for (hosts waiting out "
           "their delay)."),
    Family("frontier/store_errors", "websearch_crawl_frontier_store_errors", "counter",
           "Calls to the frontier's store (Redis, SQLite) that failed."),
    Family("frontier/queued", "websearch_crawl_queue_depth", "gauge",
           "URLs queued in the frontier, all workers together."),
    Family("frontier/cluster/leases", "websearch_crawl_frontier_leases", "gauge",
           "Leases held right now, all workers together."),
    Family("frontier/cluster/hosts_cooldown", "websearch_crawl_hosts_cooldown", "gauge",
           "Hosts waiting out their politeness delay, all workers together."),
    Family("robots/disallowed", "websearch_crawl_robots_disallowed", "counter",
           "URLs robots.txt forbade."),
    Family("index/indexed", "websearch_crawl_indexed", "counter",
           "Documents this worker sent to the search index."),
    Family("memory", "websearch_crawl_memory_bytes", "gauge",
           "Worker memory by kind (rss, heap_in_use, heap_free...; crawler/memory.py).",
           label="kind", suffix="_bytes"),
)


class StatsCollector:
    """A prometheus_client collector over a Scrapy stats collector."""

    def __init__(self, stats, families: tuple[Family, ...] = FAMILIES):
        self.stats = stats
        self.families = families
        self._exact = {f.key: f for f in families if f.label is None}
        self._prefixed = [f for f in families if f.label is not None]

    def collect(self) -> Iterator[Metric]:
        """The families of ``FAMILIES`` with the stats they hold, then the other stats."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        built: dict[str, Metric] = {}
        rest = GaugeMetricFamily("websearch_crawl_stat",
                                 "Any other numeric Scrapy stat of this worker, by key.",
                                 labels=["key"])
        for key, value in sorted(numeric_stats(self.stats.get_stats()).items()):
            family, label_value = self._family_of(key)
            if family is None:
                rest.add_metric([key], value)
                continue
            metric = built.get(family.name)
            if metric is None:
                cls = CounterMetricFamily if family.kind == "counter" else GaugeMetricFamily
                labels = [family.label] if family.label else []
                metric = built[family.name] = cls(family.name, family.help, labels=labels)
            metric.add_metric([label_value] if family.label else [], value)
        yield from built.values()
        yield rest

    def _family_of(self, key: str) -> tuple[Family | None, str]:
        family = self._exact.get(key)
        if family is not None:
            return family, ""
        for family in self._prefixed:
            rest = key.removeprefix(family.key + "/")
            if rest != key and "/" not in rest and rest.endswith(family.suffix):
                return family, rest[: len(rest) - len(family.suffix)]
        return None, ""


class MetricsResource(Resource):
    """``/metrics``: the registry in the Prometheus text format."""

    isLeaf = True

    def __init__(self, registry: CollectorRegistry):
        super().__init__()
        self.registry = registry

    def render_GET(self, request) -> bytes:
        if request.path not in (b"/metrics", b"/"):
            request.setResponseCode(404)
            return b"not found: the metrics are at /metrics\n"
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        request.setHeader(b"Content-Type", CONTENT_TYPE_LATEST.encode())
        return generate_latest(self.registry)


class CrawlMetrics:
    """Serves this worker's stats on ``port`` while the crawl runs; ``CRAWL_METRICS_PORT = 0``
    (the default) switches it off."""

    def __init__(self, stats, port: int, address: str = "127.0.0.1"):
        from prometheus_client import CollectorRegistry
        from prometheus_client.process_collector import ProcessCollector

        self.port = port
        self.address = address
        self.registry = CollectorRegistry()
        self.registry.register(StatsCollector(stats))
        ProcessCollector(registry=self.registry)
        self.listening = None

    @classmethod
    def from_crawler(cls, crawler) -> CrawlMetrics:
        s = crawler.settings
        port = setting(s, "CRAWL_METRICS_PORT", int) or 0
        if port <= 0:
            raise NotConfigured
        ext = cls(crawler.stats, port, setting(s, "CRAWL_METRICS_ADDRESS", str))
        ext.listen()
        crawler.signals.connect(ext.stop, signal=signals.engine_stopped)
        return ext

    def listen(self) -> None:
        """Start serving; a port in use stops the crawl before it starts, saying so."""
        from twisted.internet import reactor
        from twisted.web.server import Site

        try:
            self.listening = reactor.listenTCP(self.port, Site(MetricsResource(self.registry)),
                                               interface=self.address)
        except CannotListenError as exc:
            raise RuntimeError(
                f"CRAWL_METRICS_PORT {self.port} on {self.address} is not free ({exc.socketError}):"
                " give each crawl worker its own port, or 0 to switch the endpoint off"
            ) from None
        logger.info("crawl metrics at http://%s:%d/metrics", self.address, self.port)

    def stop(self) -> None:
        """Stop serving (the crawl's engine stopped)."""
        if self.listening is not None:
            self.listening.stopListening()
            self.listening = None
