"""Crawl stats over time: every few seconds each worker appends a snapshot of its Scrapy
stats to a store the dashboard reads and merges.

Embedded: one JSON-lines file per worker under ``DATA_DIR/stats``. Distributed (``REDIS_URL``
set): one capped Redis list per worker plus a set of worker names. A snapshot holds the
numeric stats and the hosts this worker fetched most.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from abc import ABC, abstractmethod
from collections import Counter
from pathlib import Path

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from crawler.config import Config, config_from_settings
from crawler.options import setting
from crawler.urls import host_of

logger = logging.getLogger(__name__)


class StatsStore(ABC):
    """Where snapshots go; ``read`` returns every worker's snapshots, oldest first."""

    @abstractmethod
    def append(self, snapshot: dict) -> None:
        """Store one snapshot (``ts``, ``worker``, ``stats``, ``hosts``)."""

    @abstractmethod
    def read(self, since: float = 0.0) -> list[dict]:
        """Snapshots of all workers taken at or after ``since`` (epoch seconds)."""


class FileStatsStore(StatsStore):
    """JSON lines, one file per worker, in ``directory``; at most ``max_lines`` kept per file."""

    def __init__(self, directory: Path, max_lines: int = 10_000):
        self.directory = Path(directory)
        self.max_lines = max_lines
        self._written: dict[str, int] = {}

    def _path(self, worker: str) -> Path:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in worker)
        return self.directory / f"{safe}.jsonl"

    def append(self, snapshot: dict) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(snapshot["worker"])
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(snapshot, separators=(",", ":")) + "\n")
        written = self._written.get(path.name, 0) + 1
        self._written[path.name] = written
        if written % 1000 == 0:
            self._trim(path)

    def _trim(self, path: Path) -> None:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        if len(lines) > self.max_lines:
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(lines[-self.max_lines :]), encoding="utf-8")
            os.replace(tmp, path)

    def read(self, since: float = 0.0) -> list[dict]:
        out: list[dict] = []
        if not self.directory.is_dir():
            return out
        for path in sorted(self.directory.glob("*.jsonl")):
            out.extend(self._read_tail(path, since))
        out.sort(key=lambda s: s["ts"])
        return out

    def _read_tail(self, path: Path, since: float, block: int = 65536) -> list[dict]:
        """Snapshots at or after ``since``, reading the file backwards from its end (only the
        window a dashboard shows is parsed, however long the file)."""
        found: list[dict] = []
        with open(path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            rest = b""
            while end > 0:
                start = max(0, end - block)
                f.seek(start)
                chunk = f.read(end - start) + rest
                end = start
                lines = chunk.split(b"\n")
                rest = lines.pop(0) if start > 0 else b""
                for line in reversed(lines):
                    snap = _parse(line)
                    if snap is None:
                        continue
                    if snap.get("ts", 0) < since:
                        return found[::-1]
                    found.append(snap)
        return found[::-1]


def _parse(line: bytes) -> dict | None:
    try:
        return json.loads(line) if line.strip() else None
    except ValueError:  # a line being written right now
        return None


class RedisStatsStore(StatsStore):
    """A capped list ``<prefix>:<worker>`` per worker and the set ``<prefix>:workers``."""

    def __init__(self, client, prefix: str = "crawlstats", max_entries: int = 10_000):
        self.client = client
        self.prefix = prefix
        self.max_entries = max_entries

    def append(self, snapshot: dict) -> None:
        key = f"{self.prefix}:{snapshot['worker']}"
        pipe = self.client.pipeline()
        pipe.sadd(f"{self.prefix}:workers", snapshot["worker"])
        pipe.rpush(key, json.dumps(snapshot, separators=(",", ":")))
        pipe.ltrim(key, -self.max_entries, -1)
        pipe.execute()

    def read(self, since: float = 0.0, chunk: int = 200) -> list[dict]:
        workers = sorted(
            w.decode() if isinstance(w, bytes) else w
            for w in self.client.smembers(f"{self.prefix}:workers")
        )
        out: list[dict] = []
        for worker in workers:
            key = f"{self.prefix}:{worker}"
            stop = -1
            while True:  # newest first, one chunk at a time, until older than ``since``
                raws = self.client.lrange(key, stop - chunk + 1, stop)
                snaps = [json.loads(raw) for raw in raws]
                recent = [s for s in snaps if s.get("ts", 0) >= since]
                out.extend(recent)
                if len(raws) < chunk or len(recent) < len(snaps):
                    break
                stop -= chunk
        out.sort(key=lambda s: s["ts"])
        return out


def open_stats_store(config: Config, max_entries: int = 10_000) -> StatsStore:
    """Redis when ``config.redis_url`` is set, else files under ``DATA_DIR/stats``."""
    if config.redis_url:
        from redis import Redis

        return RedisStatsStore(Redis.from_url(config.redis_url), max_entries=max_entries)
    return FileStatsStore(config.data_dir / "stats", max_lines=max_entries)


def numeric_stats(stats: dict) -> dict[str, float]:
    """The numeric values of a Scrapy stats dict (times and strings left out)."""
    return {
        k: v for k, v in stats.items() if isinstance(v, int | float) and not isinstance(v, bool)
    }


class HostCounter:
    """Approximate top hosts by fetched pages in bounded memory (prunes to the heaviest)."""

    def __init__(self, capacity: int = 5_000):
        self.capacity = capacity
        self.counts: Counter[str] = Counter()

    def add(self, host: str) -> None:
        self.counts[host] += 1
        if len(self.counts) > 2 * self.capacity:
            self.counts = Counter(dict(self.counts.most_common(self.capacity)))

    def top(self, n: int) -> dict[str, int]:
        return dict(self.counts.most_common(n))


class StatsExport:
    """Appends this worker's stats to the stats store every ``STATS_EXPORT_INTERVAL`` seconds
    (and once at the end); ``STATS_EXPORT_INTERVAL = 0`` switches it off."""

    def __init__(
        self,
        stats,
        store: StatsStore,
        interval: float,
        worker: str | None = None,
        *,
        top_hosts: int,
        clock=time.time,
    ):
        self.stats = stats
        self.store = store
        self.interval = interval
        self.worker = worker or f"{socket.gethostname()}-{os.getpid()}"
        self.top_hosts = top_hosts
        self.clock = clock
        self.hosts = HostCounter()
        self.loop: task.LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler) -> StatsExport:
        s = crawler.settings
        interval = setting(s, "STATS_EXPORT_INTERVAL", float)
        if interval <= 0:
            raise NotConfigured
        store = open_stats_store(config_from_settings(s), setting(s, "STATS_EXPORT_MAX", int))
        ext = cls(crawler.stats, store, interval, s.get("STATS_EXPORT_WORKER") or None,
                  top_hosts=setting(s, "STATS_EXPORT_TOP_HOSTS", int))
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.response_received, signal=signals.response_received)
        return ext

    def spider_opened(self, spider=None) -> None:
        self.loop = task.LoopingCall(self.export)
        self.loop.start(self.interval, now=True)

    def spider_closed(self, spider=None, reason: str | None = None) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        self.export()

    def response_received(self, response, request=None, spider=None) -> None:
        try:
            self.hosts.add(host_of(response.url))
        except ValueError:
            pass

    def snapshot(self) -> dict:
        """This worker's numeric stats and top hosts, stamped with the time."""
        return {
            "ts": self.clock(),
            "worker": self.worker,
            "stats": numeric_stats(self.stats.get_stats()),
            "hosts": self.hosts.top(self.top_hosts),
        }

    def export(self) -> None:
        """Append one snapshot; a store outage is logged, never stops the crawl."""
        try:
            self.store.append(self.snapshot())
        except Exception:
            logger.exception("cannot export crawl stats")
