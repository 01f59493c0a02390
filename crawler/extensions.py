"""Crawl extensions: progress lines while running, a one-screen summary at the end, and how
late the reactor runs its timers (``reactor/*`` stats)."""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
import traceback

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from crawler.options import enabled, setting

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


#: A timer this late (seconds) counts as a stall in ``reactor/stalls``.
STALL_S = 0.1
#: Ticks at least this late (ms) are counted in ``reactor/late_<bound>ms``: a host due is
#: meant to be fetched within 50 ms.
LATE_BOUNDS_MS = (20, 50)

logger = logging.getLogger(__name__)


class ReactorLag:
    """Measures how late the reactor runs a timer due every ``REACTOR_LAG_INTERVAL`` seconds
    (0: off): a callback that holds the reactor thread (a blocking write, a slow parse, a
    starved CPU) delays every download and every wake-up of the scheduler by as much.
    Stats: ``reactor/ticks``, ``reactor/lag_total_ms`` (their sum: mean = total / ticks),
    ``reactor/lag_max_ms``, ``reactor/stalls`` (ticks ``STALL_S`` or more late) and
    ``reactor/stalled_ms`` (their lag summed), ``reactor/late_20ms`` and ``reactor/late_50ms``
    (ticks at least that late). Full (generation 2) garbage collections, which
    stop every thread, are timed too: ``reactor/gc_full``, ``reactor/gc_full_ms`` (summed)
    and ``reactor/gc_full_max_ms``.

    With ``REACTOR_STALL_STACKS`` a watchdog thread logs (warning ``reactor stalled``) what
    the reactor thread is running once a tick is ``STALL_S`` late, and every ``STALL_S``
    while the stall lasts: the code that holds the reactor, found in the crawl's log."""

    def __init__(self, stats, interval: float, stall_s: float = STALL_S,
                 stall_stacks: bool = False):
        self.stats = stats
        self.interval = interval
        self.stall_s = stall_s
        self.stall_stacks = stall_stacks
        self._call = None
        self._due = 0.0
        self._stopped = threading.Event()
        self._gc_started = 0.0
        self._gc_full: list[float] = []  # seconds each, until the next tick records them

    @classmethod
    def from_crawler(cls, crawler):
        interval = setting(crawler.settings, "REACTOR_LAG_INTERVAL", float)
        if not interval:
            raise NotConfigured
        probe = cls(crawler.stats, interval,
                    stall_stacks=enabled(crawler.settings, "REACTOR_STALL_STACKS"))
        crawler.signals.connect(probe.start, signal=signals.spider_opened)
        crawler.signals.connect(probe.stop, signal=signals.spider_closed)
        return probe

    def start(self, spider=None) -> None:
        gc.callbacks.append(self._on_gc)
        self._schedule()
        if self.stall_stacks:
            threading.Thread(target=self._watch, args=(threading.get_ident(),),
                             name="reactor-watchdog", daemon=True).start()

    def stop(self, spider=None, reason: str = "") -> None:
        self._stopped.set()
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        self._record_gc()
        if self._call is not None:
            self._call.cancel()
            self._call = None

    def _on_gc(self, phase: str, info: dict) -> None:
        # runs in whichever thread collects, with every other thread stopped: only note it
        if info["generation"] == 2:
            if phase == "start":
                self._gc_started = time.perf_counter()
            else:
                self._gc_full.append(time.perf_counter() - self._gc_started)

    def _record_gc(self) -> None:
        while self._gc_full:
            ms = round(self._gc_full.pop() * 1000)
            self.stats.inc_value("reactor/gc_full")
            self.stats.inc_value("reactor/gc_full_ms", ms)
            self.stats.max_value("reactor/gc_full_max_ms", ms)

    def _schedule(self) -> None:
        from scrapy.utils.asyncio import call_later

        self._due = time.monotonic() + self.interval
        self._call = call_later(self.interval, self.tick)

    def tick(self) -> None:
        """Record how late this call came, and set the next."""
        late = max(0.0, time.monotonic() - self._due)
        ms = round(late * 1000)
        self.stats.inc_value("reactor/ticks")
        self.stats.inc_value("reactor/lag_total_ms", ms)
        self.stats.max_value("reactor/lag_max_ms", ms)
        for bound in LATE_BOUNDS_MS:
            if ms >= bound:
                self.stats.inc_value(f"reactor/late_{bound}ms")
        if late >= self.stall_s:
            self.stats.inc_value("reactor/stalls")
            self.stats.inc_value("reactor/stalled_ms", ms)
        self._record_gc()
        self._schedule()

    def _watch(self, reactor_thread: int) -> None:
        """The watchdog: the reactor thread's stack each ``stall_s`` a tick is late, with the
        CPU each thread of the process used since the tick was due (a reactor thread that
        used little of the stall waited: for the GIL another thread held, or for a core)
        and the stacks of the threads that used most."""
        logged_for, times = None, 0
        before: tuple[float, dict[int, float]] = (time.monotonic(), _thread_cpu())
        while not self._stopped.wait(self.stall_s / 4):
            due = self._due
            now = time.monotonic()
            late = now - due
            if late < 0:  # the tick is not due yet: the CPU counted in a stall starts here
                before = (now, _thread_cpu())
            if late < self.stall_s:
                continue
            if due != logged_for:
                logged_for, times = due, 0
            if late < self.stall_s * (times + 1):
                continue
            times += 1
            frames = sys._current_frames()
            frame = frames.get(reactor_thread)
            if frame is None:
                return
            cpu, names = _thread_cpu(), {t.ident: t.name for t in threading.enumerate()}
            used = sorted(((cpu[t] - before[1].get(t, cpu[t]), t) for t in cpu), reverse=True)
            lines = [f"{names.get(t, t)} {ms * 1000:.0f} ms" for ms, t in used if ms > 0.001]
            stack = "".join(traceback.format_stack(frame)[-25:])
            others = "".join(
                f"-- {names.get(t, t)}:\n" + "".join(traceback.format_stack(frames[t])[-8:])
                for ms, t in used[:3] if t != reactor_thread and t in frames and ms > 0.01)
            logger.warning("reactor stalled %d ms (CPU over %d ms: %s), running:\n%s%s",
                           round(late * 1000), round((now - before[0]) * 1000),
                           ", ".join(lines) or "none", stack, others)


def _thread_cpu() -> dict[int, float]:
    """CPU seconds of each live thread of this process, by ident."""
    found = {}
    for thread in threading.enumerate():
        try:
            found[thread.ident] = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
        except (OSError, TypeError, AttributeError):
            continue
    return found


class ReactorFirst:
    """Keeps the reactor thread's pauses short where the interpreter makes them.

    - ``REACTOR_GC_FREEZE``: once the spider is open, one full collection and
      ``gc.freeze()``, so later full collections no longer walk the objects of start-up
      (Scrapy, the pipelines' models and tables). Every full collection stops the reactor
      for as long as it takes; in a 10-site ``bench/realweb.py`` crawl they took 120-270 ms
      each, 14 times, collecting ~40-120 objects each time.
    - ``REACTOR_SWITCH_INTERVAL``: ``sys.setswitchinterval``. The reactor thread lets go of
      the GIL at every socket and SQLite call; while a writer thread (index, WARC, link
      graph) runs Python code, each time it wants the GIL back it waits up to the switch
      interval (5 ms by default), and a frontier poll makes a dozen such calls.
    - ``REACTOR_GC_THRESHOLD``: ``gc.set_threshold`` once the spider is open. A crawl's
      objects that live a few seconds (a page's item and links until the link store's and
      the index's batches are written, queued requests) outlive Python's young generations
      (700 allocations, 10 and 10 collections) and end in full collections: at Python's
      thresholds a 30 s ``bench/crawl.py`` round spent 3.3-3.5 s in the collector (every
      thread stopped), ~11% of the crawl's CPU with its workers'; at 20,000, 20 and 10
      0.7-0.9 s, start-up's full collection included and none after it, the longest
      pause 50 ms (docs/crawl-speed.md).
    """

    def __init__(self, gc_freeze: bool, switch_interval: float,
                 gc_threshold: tuple[int, ...] = ()):
        self.gc_freeze = gc_freeze
        self.switch_interval = switch_interval
        self.gc_threshold = tuple(gc_threshold)

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        ext = cls(enabled(settings, "REACTOR_GC_FREEZE"),
                  setting(settings, "REACTOR_SWITCH_INTERVAL", float),
                  tuple(int(n) for n in setting(settings, "REACTOR_GC_THRESHOLD", list) or ()))
        if not ext.gc_freeze and not ext.switch_interval and not ext.gc_threshold:
            raise NotConfigured
        if ext.switch_interval:
            sys.setswitchinterval(ext.switch_interval)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        return ext

    def spider_opened(self, spider=None) -> None:
        if self.gc_freeze:
            gc.collect()
            gc.freeze()
            logger.debug("gc.freeze(): %d objects out of later collections", gc.get_freeze_count())
        if self.gc_threshold:
            gc.set_threshold(*self.gc_threshold)


class LogLevelFloor:
    """Loggers create no record that no handler would write.

    Scrapy's logging leaves the root logger at ``NOTSET`` and its ``scrapy`` logger at
    ``DEBUG``, and lets the handlers drop what is under ``LOG_LEVEL``: each response's
    "Crawled (200)" and each item's "Scraped from" became a ``LogRecord`` (its caller's
    frame looked up) that the handler then threw away, up to ~0.1 ms of CPU a page. Once the
    spider is open, the root logger and every logger that sets a level are raised to the
    lowest level of the handlers their records could reach (``raise_to_handlers_floor``), so
    ``logger.debug`` returns at once under ``LOG_LEVEL = "INFO"``; what reaches a handler
    is the same. A handler added later at a lower level sees records from that level only
    after ``setLevel`` on its logger."""

    @classmethod
    def from_crawler(cls, crawler):
        ext = cls()
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        return ext

    def spider_opened(self, spider=None) -> None:
        raise_to_handlers_floor()


def raise_to_handlers_floor() -> None:
    """Raise each logger that sets a level (the root logger included) to the lowest level
    of the handlers that the records it decides on could reach: for each logger that takes
    its level from it, the handlers of that logger and of its ancestors up to where
    propagation stops (``logging.lastResort`` when there are none). A ``NullHandler``
    writes nothing and counts for none; a handler's filters only drop records."""
    loggers = [logging.root, *(logger for logger in logging.root.manager.loggerDict.values()
                               if isinstance(logger, logging.Logger))]
    floors: dict[logging.Logger, int] = {}
    for logger in loggers:
        governor = logger
        while governor.level == logging.NOTSET and governor.parent is not None:
            governor = governor.parent
        floor = floors.get(governor, logging.CRITICAL + 1)
        floors[governor] = min(floor, _lowest_handler_level(logger))
    for governor, floor in floors.items():
        if governor.level < floor <= logging.CRITICAL:
            governor.setLevel(floor)


def _lowest_handler_level(logger: logging.Logger) -> int:
    """The lowest level a record of ``logger`` is written at by some handler."""
    levels, found = [], False
    current: logging.Logger | None = logger
    while current is not None:
        for handler in current.handlers:
            found = True
            if not isinstance(handler, logging.NullHandler):  # a library's: writes nothing
                levels.append(handler.level)
        if not current.propagate:
            break
        current = current.parent
    if not found and logging.lastResort is not None:
        levels.append(logging.lastResort.level)
    return min(levels, default=logging.CRITICAL + 1)


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


class RemoteControl:
    """Scrapy's ``RemoteControl`` extension, imported only when ``REMOTE_CONTROL_ENABLED``:
    Scrapy imports an extension's module before it can say NotConfigured, and this one
    imports aiohttp (0.11 s of CPU at every crawl's start, for an extension that is off)."""

    @classmethod
    def from_crawler(cls, crawler):
        if not crawler.settings.getbool("REMOTE_CONTROL_ENABLED"):
            raise NotConfigured
        from scrapy.extensions.remote_control import RemoteControl as ScrapyRemoteControl
        from scrapy.utils.misc import build_from_crawler

        return build_from_crawler(ScrapyRemoteControl, crawler)
