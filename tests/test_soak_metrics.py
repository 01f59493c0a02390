"""The soak's memory figures: growth as a trend that a swinging series does not fool."""

from __future__ import annotations

import pytest

from harness.series import growth, stat_series


def test_growth_of_a_swinging_flat_series_is_zero():
    # a worker whose memory swings by 27 MB with each index commit, flat underneath
    series = [(t * 10.0, 300.0 + (27.0 if t % 3 == 0 else 0.0)) for t in range(180)]
    assert growth(series, warmup=450, end=1800) == pytest.approx(0.0, abs=1.0)


def test_growth_of_a_leak_is_its_rate_times_the_span():
    series = [(t * 10.0, 300.0 + t * 10.0 / 60) for t in range(180)]  # +1 MB a minute
    assert growth(series, warmup=600, end=1790) == pytest.approx(1190 / 60, rel=0.01)


def test_growth_ignores_the_warm_up_and_the_close():
    warm = [(t * 10.0, 100.0 + t) for t in range(30)]  # caches filling
    steady = [(300.0 + t * 10.0, 330.0) for t in range(120)]
    close = [(1500.0, 420.0), (1510.0, 430.0)]  # last index commit after the crawl's end
    assert growth(warm + steady + close, warmup=300, end=1490) == pytest.approx(0.0)


def test_stat_series_per_worker_from_exported_stats():
    snapshots = [
        {"ts": 1000.0, "worker": "a", "stats": {"memory/heap_in_use_bytes": 2**20}},
        {"ts": 1000.0, "worker": "b", "stats": {}},  # no memory monitor
        {"ts": 1010.0, "worker": "a", "stats": {"memory/heap_in_use_bytes": 3 * 2**20}},
        {"ts": 1003.0, "worker": "b", "stats": {"memory/heap_in_use_bytes": 5 * 2**20}},
    ]
    assert stat_series(snapshots, "memory/heap_in_use_bytes") == {
        "a": [(0.0, 1.0), (10.0, 3.0)], "b": [(0.0, 5.0)]}


def test_stat_series_of_another_stat_and_scale():
    snapshots = [
        {"ts": 5.0, "worker": "a", "stats": {"memory/pymalloc_arenas": 140}},
        {"ts": 65.0, "worker": "a", "stats": {"memory/pymalloc_arenas": 143,
                                               "memory/rss_bytes": 300 * 2**20}},
    ]
    assert stat_series(snapshots, "memory/pymalloc_arenas", 1.0) == {
        "a": [(0.0, 140.0), (60.0, 143.0)]}
    assert stat_series(snapshots, "memory/rss_bytes") == {"a": [(0.0, 300.0)]}


def test_slope_of_caches_filling_then_flat_is_zero_in_the_second_half():
    from harness.series import slope_per_s

    filling = [(t, 200 + t / 10) for t in range(0, 900, 10)]  # +1 MB a 10 s, 15 minutes
    flat = [(t, 290 + (5 if t % 20 else -5)) for t in range(900, 3600, 10)]
    series = filling + flat
    assert slope_per_s(series, 1800, 3600) * 600 == pytest.approx(0.0, abs=0.5)
    assert growth(series, 30, 1800) > 80  # the first half holds the filling
    assert slope_per_s(series[:2], 0, 3600) == 0.0  # too few samples
