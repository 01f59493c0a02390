"""The adaptive recrawl policy (crawler/recrawl.py) and its benchmark's quick run."""

import json
import subprocess
import sys
from pathlib import Path

from crawler.recrawl import HISTORY, CrawlState, RecrawlPolicy, observe

ROOT = Path(__file__).resolve().parent.parent
H = 3600.0
POLICY = RecrawlPolicy.from_settings(None, min_interval=H, max_interval=100 * H,
                                     initial_interval=10 * H)


def test_interval_shrinks_on_change_grows_when_unchanged_within_tier_bounds():
    state = CrawlState("http://a.test/")
    assert observe(POLICY, state, 1000.0, 200, "h1", '"e1"', "lm1") == "new"
    assert state.interval == 10 * H and state.next_fetch_at == 1000.0 + 10 * H
    assert observe(POLICY, state, 2000.0, 200, "h2") == "changed"
    assert state.interval == 5 * H and state.changes == [2000.0]
    assert observe(POLICY, state, 3000.0, 200, "h2") == "unchanged"
    assert state.interval == 7.5 * H
    for i in range(20):
        observe(POLICY, state, 4000.0 + i, 200, f"x{i}")
    assert state.interval == H  # the tier's floor
    assert len(state.changes) == HISTORY
    for i in range(30):
        observe(POLICY, state, 9000.0 + i, 304)
    assert state.interval == 100 * H
    deep = CrawlState("http://a.test/deep", tier=2)
    assert POLICY.bounds(2) == (4 * H, 400 * H)
    for i in range(30):
        observe(POLICY, deep, 1.0 + i, 200, "same")
    assert deep.interval == 400 * H


def test_not_modified_keeps_the_copy_and_its_validators():
    state = CrawlState("http://a.test/")
    observe(POLICY, state, 10.0, 200, "h", '"v1"', "Thu, 01 Jan 2026 00:00:00 GMT")
    assert state.validators == {"If-None-Match": '"v1"',
                                "If-Modified-Since": "Thu, 01 Jan 2026 00:00:00 GMT"}
    assert observe(POLICY, state, 20.0, 304) == "not_modified"
    assert state.content_hash == "h" and state.validators["If-None-Match"] == '"v1"'
    assert state.last_fetch == 20.0 and state.interval == 15 * H
    # a 304 without a stored copy is no confirmation of anything
    assert observe(POLICY, CrawlState("http://b.test/"), 1.0, 304) == "failed"


def test_errors_back_off_and_gone_twice_deletes():
    state = CrawlState("http://a.test/")
    observe(POLICY, state, 0.0, 200, "h", '"e"')
    delays = []
    for _ in range(4):
        assert observe(POLICY, state, 100.0, 503) == "failed"
        delays.append(state.next_fetch_at - 100.0)
    assert delays == [2 * H, 4 * H, 8 * H, 16 * H]
    assert state.validators  # an error does not forget the stored copy
    assert observe(POLICY, state, 200.0, 404) == "missing"
    assert not state.tombstone and state.next_fetch_at == 200.0 + H
    assert observe(POLICY, state, 300.0, 410) == "deleted"
    assert state.tombstone
    assert observe(POLICY, state, 400.0, 200, "back") == "changed"
    assert not state.tombstone and state.gone == 0


def test_moved_and_missing_reset_by_success():
    state = CrawlState("http://a.test/p")
    assert observe(POLICY, state, 1.0, 404) == "missing"
    assert observe(POLICY, state, 2.0, 200, "h") == "new"
    assert state.gone == 0
    assert observe(POLICY, state, 3.0, 301, location="http://a.test/q") == "moved"
    assert state.moved_to == "http://a.test/q"
    temp = CrawlState("http://a.test/t")
    assert observe(POLICY, temp, 5.0, 302, location="http://a.test/u") == "redirected"
    assert temp.failures == 0 and temp.next_fetch_at == 5.0 + 10 * H and not temp.moved_to


def test_priority_prefers_stale_fast_changing_and_important_urls():
    now = 100 * H
    fast = CrawlState("f", last_fetch=now - 5 * H, interval=H)
    slow = CrawlState("s", last_fetch=now - 5 * H, interval=50 * H)
    deep_fast = CrawlState("d", tier=3, last_fetch=now - 5 * H, interval=H)
    recent = CrawlState("r", last_fetch=now - 0.1 * H, interval=H)
    never = CrawlState("n")
    order = sorted([slow, fast, deep_fast, recent, never],
                   key=lambda s: -POLICY.priority(s, now))
    assert [s.url for s in order] == ["n", "f", "d", "s", "r"]
    assert POLICY.staleness(fast, now) < 5 * H


def test_benchmark_quick_prints_the_keys():
    out = subprocess.run([sys.executable, "-m", "bench.freshness", "--quick"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("adaptive_changes_found", "fixed_changes_found", "adaptive_mean_staleness_s",
                "fixed_mean_staleness_s", "bytes_saved_304"):
        assert key in result
    assert 0 < result["fixed_changes_found"] <= 1 and 0 < result["adaptive_changes_found"] <= 1
    assert result["bytes_saved_304"] > 0
    assert result["adaptive_fetches"] <= result["fixed_fetches"]
