"""harness.crawlcpu: a crawl's CPU per second from cumulative samples, and its due lags
split by whether the second they started in was saturated, on synthetic samples and lag
rows (no crawl)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from harness.crawlcpu import CrawlCPUSampler, cpu_per_second, cpu_summary, lag_by_cpu


def samples(t0: float, main_cores: list[float], every: float = 0.1,
            ) -> list[tuple[float, float, float | None, float, float | None]]:
    """Cumulative samples ``every`` s apart from ``t0``: the main thread at
    ``main_cores[s]`` cores during second s and waiting for a core 0.1 s of it (0.3 s in
    the last second), the process 0.3 core more, workers 0.5."""
    out, t, process, main, workers, wait = [(t0, 0.0, 0.0, 0.0, 0.0)], t0, 0.0, 0.0, 0.0, 0.0
    for second, cores in enumerate(main_cores):
        for _ in range(round(1 / every)):
            t += every
            main += cores * every
            process += (cores + 0.3) * every
            workers += 0.5 * every
            wait += (0.3 if second == len(main_cores) - 1 else 0.1) * every
            out.append((t, process, main, workers, wait))
    return out


def test_cores_per_second_from_cumulative_samples():
    per_second = cpu_per_second(samples(1000.0, [0.2, 0.95, 0.6]))
    assert sorted(per_second) == [1000, 1001, 1002]
    for second, main in zip((1000, 1001, 1002), (0.2, 0.95, 0.6), strict=True):
        row = per_second[second]
        assert row["main"] == pytest.approx(main)
        assert row["process"] == pytest.approx(main + 0.3)
        assert row["workers"] == pytest.approx(0.5)
        assert row["main_wait"] == pytest.approx(0.3 if second == 1002 else 0.1)
    saturated, summary = cpu_summary(per_second)
    assert saturated == 1  # only 1001's main thread reached 0.8 core
    assert summary["seconds"] == 3 and summary["main"]["max"] == 0.95


def test_due_lags_split_by_the_second_they_started_in():
    per_second = cpu_per_second(samples(1000.0, [0.2, 0.95, 0.6]))
    timed = [  # (host, start, lag, gap, promised)
        ("a.test", 1000.2, 0.010, 0.26, 0.25),
        ("b.test", 1000.7, 0.120, 0.37, 0.25),  # late in an idle second
        ("a.test", 1001.1, 0.300, 0.55, 0.25),  # late in the saturated one
        ("b.test", 1001.5, 0.200, 0.45, 0.25),
        ("c.test", 1001.9, 0.020, 0.27, 0.25),
        ("a.test", 1002.4, 0.005, 0.25, 0.25),
        ("b.test", 1002.6, 0.080, 0.33, 0.25),  # late, idle, the reactor waiting for a core
        ("c.test", 1003.5, 0.900, 1.15, 0.25),  # no sample covers second 1003
    ]
    out = lag_by_cpu(timed, per_second)
    assert out["cpu"] == "main thread" and out["threshold_cores"] == 0.8
    assert out["idle"] == {"seconds": 2, "n": 4, "p50": 80.0, "p95": 120.0, "over_50ms": 2,
                           "over_50ms_waiting": 1}
    assert out["saturated"] == {"seconds": 1, "n": 3, "p50": 200.0, "p95": 300.0,
                                "over_50ms": 2}
    assert out["unsampled"] == 1
    assert out["late_in_idle"] == [
        {"at_s": 0.5, "host": "b.test", "lag_ms": 120.0, "main": 0.2, "process": 0.5,
         "main_wait": 0.1},
        {"at_s": 2.4, "host": "b.test", "lag_ms": 80.0, "main": 0.6, "process": 0.9,
         "main_wait": 0.3}]


def test_without_thread_times_the_process_decides():
    rows = [(t, p, None, w, None) for t, p, _, w, _ in samples(1000.0, [0.6, 0.2])]
    per_second = cpu_per_second(rows)
    assert per_second[1000]["main"] is None and per_second[1000]["main_wait"] is None
    out = lag_by_cpu([("a.test", 1000.5, 0.1, 0.35, 0.25), ("a.test", 1001.5, 0.1, 0.35, 0.25)],
                     per_second)
    # the process used 0.9 core in second 1000 (saturated), 0.5 in 1001
    assert out["cpu"] == "process"
    assert out["saturated"]["n"] == 1 and out["idle"]["n"] == 1
    assert cpu_summary(per_second)[0] == 1


def test_sampler_finds_the_child_by_its_command_line():
    burn = "import time\nend = time.time() + 1.0\nwhile time.time() < end: pass"
    with CrawlCPUSampler(("crawlcpu-burn",), every=0.05) as sampler:
        subprocess.run([sys.executable, "-c", burn + "  # crawlcpu-burn"], check=True)
        time.sleep(0.1)
    assert len(sampler.samples) >= 10, sampler.samples
    per_second = cpu_per_second(sampler.samples)
    # a busy loop on its main thread: near one core while it ran
    assert max(row["main"] for row in per_second.values()) > 0.1, per_second
    assert all(row["workers"] == 0 for row in per_second.values())
