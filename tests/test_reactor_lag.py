"""The reactor-lag probe (crawler.extensions.ReactorLag) counts how late its timer runs."""

from __future__ import annotations

import gc
import logging
import sys
import time

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from crawler.extensions import STALL_S, ReactorLag


def _probe(interval: float = 0.05) -> ReactorLag:
    crawler = get_crawler(settings_dict={"REACTOR_LAG_INTERVAL": interval})
    probe = ReactorLag(crawler.stats, interval)
    probe._schedule = lambda: None  # each tick is driven by the test
    return probe


def test_a_late_tick_counts_as_a_stall_with_its_lag():
    probe = _probe()
    probe._due = time.monotonic() - 0.25
    probe.tick()
    probe._due = time.monotonic() + 1.0  # early: no lag
    probe.tick()
    stats = probe.stats.get_stats()
    assert stats["reactor/ticks"] == 2
    assert stats["reactor/stalls"] == 1
    assert 250 <= stats["reactor/lag_max_ms"] < 1000
    assert stats["reactor/stalled_ms"] == stats["reactor/lag_max_ms"]
    assert stats["reactor/lag_total_ms"] == stats["reactor/lag_max_ms"]
    assert stats["reactor/late_20ms"] == stats["reactor/late_50ms"] == 1


def test_a_tick_on_time_is_no_stall():
    probe = _probe()
    probe._due = time.monotonic() - STALL_S / 10
    probe.tick()
    assert "reactor/stalls" not in probe.stats.get_stats()


def test_interval_zero_turns_it_off():
    with pytest.raises(NotConfigured):
        ReactorLag.from_crawler(get_crawler(settings_dict={"REACTOR_LAG_INTERVAL": 0}))


def _stalls(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "reactor stalled" in r.getMessage()]


def _holds_the_reactor(caplog, warnings: int, limit_s: float = 10.0) -> None:
    """Hold this thread (the reactor) until the watchdog has warned ``warnings`` times: a
    busy machine may wake the watchdog late, so the hold is not a fixed time."""
    deadline = time.monotonic() + limit_s
    while len(_stalls(caplog)) < warnings and time.monotonic() < deadline:
        time.sleep(0.01)


def test_the_watchdog_logs_what_holds_a_stalled_reactor(caplog):
    crawler = get_crawler(settings_dict={"REACTOR_STALL_STACKS": True})
    probe = ReactorLag.from_crawler(crawler)
    assert probe.stall_stacks
    probe._schedule = lambda: None
    probe._due = time.monotonic()  # due now: this thread is the reactor, and it is held
    with caplog.at_level("WARNING", logger="crawler.extensions"):
        probe.start()
        _holds_the_reactor(caplog, 2)
        probe.stop()
    stalls = _stalls(caplog)[:2]
    assert len(stalls) == 2  # at STALL_S late, then again STALL_S later
    late = [int(message.split()[2]) for message in stalls]
    assert late[0] >= STALL_S * 1000 and late[1] >= 2 * STALL_S * 1000
    assert all("_holds_the_reactor" in message for message in stalls)
    assert all("(CPU over " in message for message in stalls)  # each thread's CPU in the stall


def test_reactor_first_freezes_start_up_and_shortens_the_switch_interval():
    from crawler.extensions import ReactorFirst

    before, thresholds = sys.getswitchinterval(), gc.get_threshold()
    try:
        crawler = get_crawler(settings_dict={"REACTOR_SWITCH_INTERVAL": 0.002})
        ext = ReactorFirst.from_crawler(crawler)
        assert sys.getswitchinterval() == pytest.approx(0.002)
        ext.spider_opened()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (20000, 20, 10)  # REACTOR_GC_THRESHOLD's default
    finally:
        gc.unfreeze()
        sys.setswitchinterval(before)
        gc.set_threshold(*thresholds)
    with pytest.raises(NotConfigured):
        ReactorFirst.from_crawler(get_crawler(settings_dict={
            "REACTOR_GC_FREEZE": False, "REACTOR_SWITCH_INTERVAL": 0, "REACTOR_GC_THRESHOLD": ""}))


def test_reactor_first_sets_the_collector_thresholds_it_is_given():
    from crawler.extensions import ReactorFirst

    thresholds = gc.get_threshold()
    try:
        ext = ReactorFirst.from_crawler(get_crawler(settings_dict={
            "REACTOR_GC_FREEZE": False, "REACTOR_SWITCH_INTERVAL": 0,
            "REACTOR_GC_THRESHOLD": "5000,15,12"}))
        assert gc.get_threshold() == thresholds  # not before the spider is open
        ext.spider_opened()
        assert gc.get_threshold() == (5000, 15, 12)
    finally:
        gc.set_threshold(*thresholds)
    ext = ReactorFirst.from_crawler(get_crawler(settings_dict={"REACTOR_GC_THRESHOLD": []}))
    ext.spider_opened()
    gc.unfreeze()
    assert gc.get_threshold() == thresholds  # empty: Python's are kept


def test_full_collections_are_timed_while_the_probe_runs():
    probe = _probe()
    probe.start()
    try:
        gc.collect()
        gc.collect(1)  # a younger generation is not a full collection
        probe.tick()
    finally:
        probe.stop()
    gc.collect()
    stats = probe.stats.get_stats()
    assert stats["reactor/gc_full"] == 1
    assert 0 <= stats["reactor/gc_full_max_ms"] == stats["reactor/gc_full_ms"]
    assert probe._on_gc not in gc.callbacks


def test_log_level_floor_creates_no_record_that_no_handler_writes(tmp_path, monkeypatch):
    from crawler.extensions import LogLevelFloor, raise_to_handlers_floor

    root, scrapy_logger = logging.getLogger(), logging.getLogger("scrapy")
    # only Scrapy's loggers: another test's or library's logger with a handler of its own
    # would rightly keep the root logger low, and no other logger's level is changed here
    names = ("scrapy", "scrapy.core", "scrapy.core.engine")
    own_loggers = {name: logging.getLogger(name) for name in names}
    monkeypatch.setattr(logging.root.manager, "loggerDict", own_loggers)
    saved = root.level, scrapy_logger.level, root.handlers[:]
    handler = logging.FileHandler(tmp_path / "crawl.log")
    handler.setLevel(logging.INFO)
    try:
        root.handlers[:] = [handler]
        root.setLevel(logging.NOTSET)
        scrapy_logger.setLevel(logging.DEBUG)  # as Scrapy's logging leaves them
        engine = logging.getLogger("scrapy.core.engine")
        assert engine.isEnabledFor(logging.DEBUG)
        LogLevelFloor.from_crawler(get_crawler()).spider_opened()
        assert not engine.isEnabledFor(logging.DEBUG)
        assert (root.level, scrapy_logger.level) == (logging.INFO, logging.INFO)
        engine.info("kept")
        engine.debug("never made")
        handler.flush()
        written = (tmp_path / "crawl.log").read_text().splitlines()
        assert "kept" in written and "never made" not in written
        # a handler that takes every level: nothing is raised
        root.setLevel(logging.NOTSET)
        everything = logging.StreamHandler()
        root.addHandler(everything)
        raise_to_handlers_floor()
        assert root.level == logging.NOTSET
        # a handler that a logger's records reach at a lower level keeps that level
        scrapy_logger.setLevel(logging.DEBUG)
        root.removeHandler(everything)
        own = logging.StreamHandler()
        own.setLevel(logging.DEBUG)
        logging.getLogger("scrapy.core").addHandler(own)
        raise_to_handlers_floor()
        assert engine.isEnabledFor(logging.DEBUG)
        assert scrapy_logger.level == logging.DEBUG
        logging.getLogger("scrapy.core").removeHandler(own)
    finally:
        handler.close()
        root.handlers[:] = saved[2]
        root.setLevel(saved[0])
        scrapy_logger.setLevel(saved[1])
