"""Memory series of a long run: per-worker series from exported stats, and growth as a
least-squares trend that a swinging series does not fool."""

from __future__ import annotations

import statistics


def stat_series(snapshots: list[dict], name: str,
                scale: float = 2**20) -> dict[str, list[tuple[float, float]]]:
    """Per worker, (seconds since its first snapshot, stat ``name`` / ``scale``) from the
    exported stats (``crawler.memory.MemoryMonitor``'s ``memory/*``); workers without the
    stat give nothing."""
    series: dict[str, list[tuple[float, float]]] = {}
    first: dict[str, float] = {}
    for snap in snapshots:
        value = snap["stats"].get(name)
        if value is None:
            continue
        start = first.setdefault(snap["worker"], snap["ts"])
        series.setdefault(snap["worker"], []).append((snap["ts"] - start, value / scale))
    return series


def slope_per_s(series: list[tuple[float, float]], start: float, end: float) -> float:
    """The least-squares slope (MB per second) of the samples from ``start`` to ``end``;
    0 with fewer than three."""
    window = [(t, mb) for t, mb in series if start <= t <= end]
    if len(window) < 3:
        return 0.0
    slope, _ = statistics.linear_regression([t for t, _ in window], [mb for _, mb in window])
    return slope


def growth(series: list[tuple[float, float]], warmup: float, end: float) -> float:
    """MB gained from the end of the warm-up to ``end`` (the crawl's end; the close that
    follows writes the last index commit): the least-squares trend of the samples in between
    times its length. A trend, not end minus start: RSS and heap swing by tens of MB from one
    sample to the next (the index writer's buffer comes and goes with each commit)."""
    window = [t for t, _ in series if warmup <= t <= end]
    if len(window) < 3:
        return 0.0
    return slope_per_s(series, warmup, end) * (window[-1] - window[0])
