"""The CPU a crawl process uses, second by second, beside its due lag: whether a request
that started late fell in a second when the crawl had no CPU to spare (a saturated
process: the lag is capacity-bound) or in one when it had (idle capacity: a scheduler that
left a due host waiting).

:class:`CrawlCPUSampler` samples, from a daemon thread, the cumulative CPU seconds of a
child of this process picked by its command line (the ``scrapy crawl`` of a bench, or
plain Scrapy's spider): the whole process (every thread), its main thread alone (Scrapy's
reactor thread), the time its main thread was runnable but waited for a core (Linux's
``schedstat``: a thread under 0.8 core that waited the rest wanted a core the box did not
have) and its child processes together (the extraction workers). The samples'
wall clock is ``time.time()``, the test web's request log's clock. :func:`cpu_per_second`
turns them into cores used per whole second, and :func:`lag_by_cpu` splits the due lags
of :func:`harness.politeness.timed_due_lags` by the cores the main thread used in the
second each request started.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

import psutil

from harness.politeness import quantile_ms
from harness.rounds import PeriodicSampler

#: Cores of the crawl's main thread at and above which a second counts as saturated.
SATURATED_CORES = 0.8

#: A request this many seconds or more after it was due with work counts as late.
LATE_S = 0.05

#: One sample: (time.time(), process CPU s, main thread CPU s or None, workers' CPU s,
#: the main thread's time runnable but waiting for a core, s, or None).
Sample = tuple[float, float, float | None, float, float | None]


class CrawlCPUSampler(PeriodicSampler):
    """Samples the CPU of this process's child whose command line contains one of
    ``match`` every ``every`` seconds while the ``with`` block runs. The workers' CPU is
    the sum over the child's own children, each counted from when it is first seen; the
    main thread's is None where the system gives no per-thread times."""

    thread_name = "crawl-cpu-sampler"

    def __init__(self, match: Iterable[str], every: float = 0.1) -> None:
        super().__init__(every)
        self.match = tuple(match)
        self.samples: list[Sample] = []
        self._crawl: psutil.Process | None = None
        self._workers: dict[int, float] = {}

    def _find(self) -> psutil.Process | None:
        for child in psutil.Process().children():
            try:
                command = " ".join(child.cmdline())
            except psutil.Error:
                continue
            if any(word in command for word in self.match):
                return child
        return None

    def _sample(self) -> None:
        if self._crawl is None:
            self._crawl = self._find()
            if self._crawl is None:
                return
        now = time.time()
        try:
            with self._crawl.oneshot():
                times = self._crawl.cpu_times()
                main = None
                try:
                    main = next((t.user_time + t.system_time for t in self._crawl.threads()
                                 if t.id == self._crawl.pid), None)
                except psutil.AccessDenied:
                    pass
            children = self._crawl.children(recursive=True)
        except psutil.Error:  # the crawl ended
            self._stop.set()
            return
        for child in children:
            try:
                used = child.cpu_times()
            except psutil.Error:
                continue
            self._workers[child.pid] = used.user + used.system
        self.samples.append((now, times.user + times.system, main,
                             sum(self._workers.values()), _waited(self._crawl.pid)))


def _waited(pid: int) -> float | None:
    """Seconds the main thread of process ``pid`` was runnable but waited for a core
    (None where ``/proc`` gives no ``schedstat``)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def cpu_per_second(samples: list[Sample]) -> dict[int, dict[str, float | None]]:
    """Whole second (``int(time.time())``) -> cores used in it by the ``process``, its
    ``main`` thread (None without per-thread times) and its ``workers``, and the share of
    it the main thread waited for a core (``main_wait``, None without ``schedstat``):
    each interval between two samples counts in the second of its midpoint."""
    used: dict[int, list[float]] = {}
    for (t0, p0, m0, w0, q0), (t1, p1, m1, w1, q1) in zip(samples, samples[1:],
                                                          strict=False):
        if t1 <= t0:
            continue
        row = used.setdefault(int((t0 + t1) / 2), [0.0] * 5)
        row[0] += t1 - t0
        row[1] += p1 - p0
        row[2] += math.nan if m0 is None or m1 is None else m1 - m0
        row[3] += max(0.0, w1 - w0)
        row[4] += math.nan if q0 is None or q1 is None else q1 - q0
    return {second: {"process": p / wall, "main": None if math.isnan(m) else m / wall,
                     "workers": w / wall, "main_wait": None if math.isnan(q) else q / wall}
            for second, (wall, p, m, w, q) in sorted(used.items())}


def lag_by_cpu(timed: Iterable[tuple[str, float, float, float, float]],
               per_second: dict[int, dict[str, float | None]],
               threshold: float = SATURATED_CORES, late_listed: int = 20) -> dict:
    """The due lags ``timed`` (:func:`harness.politeness.timed_due_lags`' rows: host,
    start, lag, gap, promised) split by the cores the crawl's main thread used (the whole
    process's where per-thread times are missing, as ``cpu`` says) in the second each
    request started: ``idle`` (below ``threshold``) and ``saturated`` (at or above), each
    with its ``seconds``, ``n``, ``p50``, ``p95`` (ms) and ``over_50ms``; ``unsampled``
    counts the requests in a second with no samples. ``late_in_idle`` lists the first
    ``late_listed`` requests over 50 ms late in idle seconds (``at_s`` from the first
    request's start, host, lag, the main thread's and the process's cores, the main
    thread's wait for a core); the idle side's ``over_50ms_waiting`` counts its late
    requests in seconds where the main thread's cores and wait together reach
    ``threshold`` (a thread that wanted a core: the box's capacity, not the crawl's)."""
    rows = list(timed)
    key = _cpu_key(per_second)
    began = min((start for _, start, _, _, _ in rows), default=0.0)
    lags: dict[str, list[float]] = {"idle": [], "saturated": []}
    late: list[dict] = []
    unsampled = waiting = 0
    for host, start, lag, _, _ in sorted(rows, key=lambda row: row[1]):
        cpu = per_second.get(int(start))
        if cpu is None:
            unsampled += 1
            continue
        side = "saturated" if cpu[key] >= threshold else "idle"
        lags[side].append(lag)
        if side == "saturated" or lag <= LATE_S:
            continue
        wait = cpu["main_wait"]
        waiting += wait is not None and cpu[key] + wait >= threshold
        if len(late) < late_listed:
            late.append({"at_s": round(start - began, 2), "host": host,
                         "lag_ms": round(lag * 1000, 1),
                         "main": None if cpu["main"] is None else round(cpu["main"], 2),
                         "process": round(cpu["process"], 2),
                         "main_wait": None if wait is None else round(wait, 2)})
    seconds = {side: sum(1 for row in per_second.values()
                         if (row[key] >= threshold) == (side == "saturated"))
               for side in lags}
    out: dict[str, object] = {"cpu": "main thread" if key == "main" else "process",
                              "threshold_cores": threshold}
    for side, values in lags.items():
        values.sort()
        out[side] = {"seconds": seconds[side], "n": len(values), "p50": quantile_ms(values, 0.5),
                     "p95": quantile_ms(values, 0.95),
                     "over_50ms": sum(1 for v in values if v > LATE_S)}
    out["idle"]["over_50ms_waiting"] = waiting
    out["unsampled"] = unsampled
    out["late_in_idle"] = late
    return out


def cpu_summary(per_second: dict[int, dict[str, float | None]],
                threshold: float = SATURATED_CORES) -> tuple[int, dict]:
    """The seconds whose main thread (the process's, without per-thread times) used
    ``threshold`` cores or more, and the cores per second of the process, its main thread
    and its workers, and the main thread's wait for a core: p50, p95 and max over the
    sampled seconds."""
    key = _cpu_key(per_second)
    saturated = sum(1 for row in per_second.values() if row[key] >= threshold)
    summary: dict[str, object] = {"seconds": len(per_second)}
    for name in ("process", "main", "workers", "main_wait"):
        values = sorted(row[name] for row in per_second.values() if row[name] is not None)
        summary[name] = {"p50": _q(values, 0.5), "p95": _q(values, 0.95),
                         "max": round(values[-1], 2) if values else None}
    return saturated, summary


def _q(values: list[float], q: float) -> float | None:
    return round(values[min(len(values) - 1, int(q * len(values)))], 2) if values else None


def _cpu_key(per_second: dict[int, dict[str, float | None]]) -> str:
    """The figure a second's saturation is read from: ``main`` (the main thread's cores)
    where every second has per-thread times, else ``process``."""
    return "main" if all(row["main"] is not None for row in per_second.values()) else "process"
