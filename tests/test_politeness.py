"""The politeness audit's four definitions, counted on hand-made request logs."""

from __future__ import annotations

from harness.politeness import (
    due_lags,
    gap_report,
    politeness_violations,
    report_lags,
    timed_due_lags,
)


def req(start: float, end: float, host: str = "a.test:8080") -> dict:
    return {"host": host, "start": start, "end": end, "path": "/", "status": 200}


def test_a_polite_sequence_breaks_nothing():
    rows = [req(0.0, 0.2), req(1.2, 1.4), req(2.4, 2.5)]  # 1 s from each end
    audit = politeness_violations(rows, delay=1.0)
    assert audit == {"overlaps": 0, "start_to_start": 0, "end_to_start": 0, "crawl_delay": 0,
                     "download_delay": 0, "total": 0, "requests": 3}


def test_start_to_start_spacing_is_what_download_delay_promises():
    # one request a second by its start, each lasting 0.5 s: Scrapy's DOWNLOAD_DELAY = 1
    # is kept, the frontier's 1 s from the end of the previous response is not
    rows = [req(t, t + 0.5) for t in (0.0, 1.0, 2.0, 3.0)]
    audit = politeness_violations(rows, delay=1.0)
    assert audit["start_to_start"] == 0
    assert audit["overlaps"] == 0
    assert audit["download_delay"] == 0
    assert audit["end_to_start"] == 3
    assert audit["total"] == 3


def test_an_overlap_counts_as_overlap_and_end_to_start_but_not_always_start_to_start():
    # the second request starts 1.5 s after the first, which is still in flight
    rows = [req(0.0, 2.0), req(1.5, 1.6)]
    audit = politeness_violations(rows, delay=1.0)
    assert audit["overlaps"] == 1
    assert audit["start_to_start"] == 0
    assert audit["end_to_start"] == 1
    assert audit["download_delay"] == 1  # Scrapy promises one request per slot, too
    assert audit["total"] == 1  # one request, however many rules it breaks


def test_a_short_start_to_start_gap_counts_under_both_delay_definitions():
    rows = [req(0.0, 0.1), req(0.5, 0.6)]
    audit = politeness_violations(rows, delay=1.0)
    assert audit["start_to_start"] == 1
    assert audit["end_to_start"] == 1
    assert audit["overlaps"] == 0
    assert audit["download_delay"] == 1


def test_crawl_delay_is_counted_on_its_own_and_raises_the_end_to_start_delay():
    # 2 s apart by their starts: DOWNLOAD_DELAY 1 s is kept, robots.txt's Crawl-delay 3 is not
    rows = [req(t, t + 0.1, "slow.test") for t in (0.0, 2.0, 4.0)] + [
        req(t, t + 0.1, "fast.test") for t in (0.0, 2.0, 4.0)]
    audit = politeness_violations(rows, delay=1.0,
                                  crawl_delay_of=lambda h: 3.0 if h == "slow.test" else None)
    assert audit["crawl_delay"] == 2
    assert audit["start_to_start"] == 0
    assert audit["end_to_start"] == 2  # the frontier raises its delay to the Crawl-delay
    assert audit["download_delay"] == 0
    assert audit["requests"] == 6


def test_hosts_are_audited_apart_and_the_port_is_ignored():
    rows = [req(0.0, 0.1, "a.test:1"), req(0.05, 0.1, "b.test:1"), req(0.3, 0.4, "a.test:2")]
    audit = politeness_violations(rows, delay=1.0)
    assert audit["start_to_start"] == 1  # a.test at 0.0 and 0.3, whatever the port
    assert audit["requests"] == 3


def test_unsorted_rows_and_jitter_within_the_slack():
    rows = [req(2.098, 2.2), req(0.0, 0.1), req(1.098, 1.1)]  # 2 ms under the delay, twice
    audit = politeness_violations(rows, delay=1.0, slack=0.005)
    assert audit["total"] == 0
    assert politeness_violations(rows, delay=1.0, slack=0.0)["total"] == 2


def test_due_lag_counts_from_the_later_of_due_time_and_work_found():
    rows = [
        {"host": "a.test:80", "path": "/", "start": 0.0, "end": 0.01},
        # due at 0.26; /x was found at 0.01: 40 ms late
        {"host": "a.test:80", "path": "/x", "start": 0.30, "end": 0.31},
        # /y was found only at 1.0 (after its due time 0.56): 20 ms after that
        {"host": "a.test:80", "path": "/y", "start": 1.02, "end": 1.03},
        # /z has no known finding time: left out
        {"host": "a.test:80", "path": "/z", "start": 2.0, "end": 2.01},
    ]
    found = {"/": 0.0, "/x": 0.01, "/y": 1.0}
    lags = due_lags(rows, lambda host: 0.25, lambda host, path: found.get(path),
                    latency_factor=2.0)["a.test"]
    assert [round(lag, 3) for lag, _, _ in lags] == [0.04, 0.02]
    # the gap counts only where the host had work by its due time
    assert round(lags[0][1], 3) == 0.29 and lags[1][1] != lags[1][1]
    assert [p for _, _, p in lags] == [0.25, 0.25]


def test_due_lag_promises_k_times_the_moving_latency_when_it_is_longer():
    rows = [{"host": "s.test", "path": f"/{i}", "start": i * 2.0, "end": i * 2.0 + 0.5}
            for i in range(3)]
    lags = due_lags(rows, lambda host: 0.25, lambda host, path: 0.0, latency_factor=2.0)
    # latency 0.5 s: due 1 s after each response's end
    assert [(round(lag, 3), round(p, 3)) for lag, _, p in lags["s.test"]] == [
        (0.5, 1.0), (0.5, 1.0)]


def test_due_lag_against_scrapys_own_promise_counts_from_the_previous_start():
    rows = [{"host": "s.test", "path": f"/{i}", "start": i * 0.3, "end": i * 0.3 + 0.1}
            for i in range(3)]
    found = lambda host, path: 0.0  # noqa: E731
    # due 0.25 after the previous start: 50 ms late; after the previous end: 50 ms early
    own = due_lags(rows, lambda host: 0.25, found, start_to_start=True)["s.test"]
    same = due_lags(rows, lambda host: 0.25, found)["s.test"]
    assert [round(lag, 3) for lag, _, _ in own] == [0.05, 0.05]
    assert [round(lag, 3) for lag, _, _ in same] == [-0.05, -0.05]
    timed = list(timed_due_lags(rows, lambda host: 0.25, found))
    assert [(host, round(start, 3)) for host, start, *_ in timed] == [
        ("s.test", 0.3), ("s.test", 0.6)]


def test_gap_report_reads_the_lags_it_is_given_instead_of_computing_them_again():
    lines = [{"host": "s.test", "path": f"/{i}", "start": i * 0.3, "end": i * 0.3 + 0.1}
             for i in range(4)]
    found = {("s.test", f"/{i}"): 0.0 for i in range(4)}
    timed = report_lags(lines, lambda host: 0.25, found)
    # no test web: with the rows given, gap_report reads neither the web nor the pages
    given, per_host = gap_report(lines, None, lambda host: 0.25, timed=timed)
    computed, _ = gap_report(lines, None, lambda host: 0.25, found=found)
    assert given == computed
    assert given["due_lag_ms"]["n"] == 3 and per_host["s.test"]["promised_s"] == 0.25
    # the rows decide: other rows, another report
    assert gap_report(lines, None, lambda host: 0.25, timed=timed[:1])[0] != computed
