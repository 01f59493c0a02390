"""Merge the stats snapshots of every crawl worker into series and totals for the dashboard.

Counters (pages, errors) become rates per worker between consecutive snapshots, summed over
workers per time bucket; gauges copied from the shared frontier (``frontier/cluster/*``) are
the same for every worker, so their buckets take the newest value instead of a sum.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

PAGES = "response_received_count"
INDEXED = "index/indexed"
QUEUE_DEPTH = "frontier/cluster/queue_depth"
HOSTS_COOLDOWN = "frontier/cluster/hosts_cooldown"

#: Stats keys counted as drops, by the label the dashboard shows; prefixes end in "/".
DROP_KEYS = {
    "frontier/dropped/": "",
    "extract/dropped_links/": "",
    "scope/out_of_scope": "out of scope",
    "robots/disallowed": "robots.txt",
    "robotstxt/forbidden": "robots.txt",
    "index/skipped_noindex": "noindex",
    "index/skipped_duplicate": "duplicate",
    "extract/skipped_non_html": "not HTML",
    "dupefilter/filtered": "seen",
}


def error_kinds(stats: dict[str, float]) -> Counter:
    """Errors by kind: download exceptions by class name, HTTP responses by 4xx/5xx status."""
    kinds: Counter = Counter()
    for key, value in stats.items():
        if key.startswith("downloader/exception_type_count/"):
            kinds[key.rsplit("/", 1)[1].rsplit(".", 1)[-1]] += value
        elif key.startswith("downloader/response_status_count/"):
            status = key.rsplit("/", 1)[1]
            if status.isdigit() and int(status) >= 400:
                kinds[f"HTTP {status}"] += value
    return kinds


def drop_reasons(stats: dict[str, float]) -> Counter:
    """Requests and pages dropped, by reason."""
    drops: Counter = Counter()
    for key, value in stats.items():
        for prefix, label in DROP_KEYS.items():
            if prefix.endswith("/") and key.startswith(prefix):
                drops[key[len(prefix) :].replace("_", " ")] += value
            elif key == prefix:
                drops[label] += value
    return drops


@dataclass
class CrawlSummary:
    """What the dashboard shows from the crawl workers' snapshots."""

    start: float
    end: float
    buckets: int
    workers: list[str] = field(default_factory=list)
    totals: dict[str, float] = field(default_factory=dict)
    series: dict[str, list[tuple[float, float | None]]] = field(default_factory=dict)
    hosts: Counter = field(default_factory=Counter)

    @property
    def errors(self) -> Counter:
        return error_kinds(self.totals)

    @property
    def drops(self) -> Counter:
        return drop_reasons(self.totals)

    def latest(self, name: str) -> float | None:
        """The newest non-empty value of a series."""
        for _, value in reversed(self.series.get(name, [])):
            if value is not None:
                return value
        return None


def _errors_total(stats: dict[str, float]) -> float:
    return float(sum(error_kinds(stats).values()))


def _auto_buckets(by_worker: dict[str, list[dict]], span: float, most: int) -> int:
    """As many buckets as snapshots fit (one per export interval), so lines only break where
    workers really stopped reporting."""
    gaps = sorted(
        b["ts"] - a["ts"]
        for snaps in by_worker.values()
        for a, b in zip(snaps, snaps[1:], strict=False)
        if b["ts"] > a["ts"]
    )
    if not gaps:
        return most
    return max(2, min(most, int(span / gaps[len(gaps) // 2])))


def summarize(
    snapshots: Iterable[dict], start: float, end: float, buckets: int | None = None,
    max_buckets: int = 90,
) -> CrawlSummary:
    """Series over ``[start, end]`` in ``buckets`` steps (default: one per export interval,
    at most ``max_buckets``) and totals over the workers' newest snapshots."""
    by_worker: dict[str, list[dict]] = defaultdict(list)
    for snap in snapshots:
        if start <= snap["ts"] <= end:
            by_worker[snap["worker"]].append(snap)
    for snaps in by_worker.values():
        snaps.sort(key=lambda s: s["ts"])
    buckets = buckets or _auto_buckets(by_worker, end - start, max_buckets)
    summary = CrawlSummary(start, end, buckets, workers=sorted(by_worker))
    step = (end - start) / buckets
    rates = {
        "pages": lambda s: s.get(PAGES, 0.0),
        "errors": _errors_total,
        "indexed": lambda s: s.get(INDEXED, 0.0),
    }
    rate_sums: dict[str, list[dict[str, list[float]]]] = {
        name: [defaultdict(list) for _ in range(buckets)] for name in rates
    }
    gauges = {"queue_depth": QUEUE_DEPTH, "hosts_cooldown": HOSTS_COOLDOWN}
    gauge_last: dict[str, list[tuple[float, float] | None]] = {g: [None] * buckets for g in gauges}
    for worker, snaps in by_worker.items():
        for prev, cur in zip(snaps, snaps[1:], strict=False):
            dt = cur["ts"] - prev["ts"]
            if dt <= 0:
                continue
            slot = _bucket(cur["ts"], start, step, buckets)
            for name, value in rates.items():
                delta = value(cur["stats"]) - value(prev["stats"])
                if delta >= 0:  # a restarted worker starts its counters again
                    rate_sums[name][slot][worker].append(delta / dt)
        for snap in snaps:
            slot = _bucket(snap["ts"], start, step, buckets)
            for name, key in gauges.items():
                if key in snap["stats"]:
                    held = gauge_last[name][slot]
                    if held is None or snap["ts"] >= held[0]:
                        gauge_last[name][slot] = (snap["ts"], snap["stats"][key])
        newest = snaps[-1]
        for key, value in newest["stats"].items():
            if key.startswith("frontier/cluster/"):
                summary.totals[key] = max(summary.totals.get(key, value), value)
            else:
                summary.totals[key] = summary.totals.get(key, 0) + value
        summary.hosts.update(newest.get("hosts", {}))
    times = [start + step * (n + 1) for n in range(buckets)]
    for name in rates:
        summary.series[name] = [
            (t, sum(sum(v) / len(v) for v in slot.values()) if slot else None)
            for t, slot in zip(times, rate_sums[name], strict=True)
        ]
    for name in gauges:
        summary.series[name] = [
            (t, held[1] if held else None)
            for t, held in zip(times, gauge_last[name], strict=True)
        ]
    return summary


def _bucket(ts: float, start: float, step: float, buckets: int) -> int:
    return min(buckets - 1, max(0, int((ts - start) / step))) if step > 0 else 0


def top(counter: Counter, n: int = 10) -> Sequence[tuple[str, float]]:
    """The ``n`` largest entries, largest first."""
    return [(k, v) for k, v in counter.most_common(n) if v]
