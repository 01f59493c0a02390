"""Adaptive recrawl against a fixed interval, over simulated time, with one fetch budget.

The pages are those of testweb's fresh hosts (``testweb/fresh.py``: periods never, hourly,
6-hourly, daily, weekly; deletions and moves), answered by the test web's own model
(``TestWeb.render`` with its clock set to the simulated instant), so ETag, Last-Modified
and 304 behave as the crawler sees them. Both policies get the same budget: one fetch slot
every ``3600 / budget`` simulated seconds.

- fixed: round robin, every page every ``pages / budget`` hours;
- adaptive: ``crawler.recrawl`` (the crawler's code): in each slot, the due page of highest
  value x staleness; a slot with nothing due stays unused.

Both send If-None-Match / If-Modified-Since. Measured over the content changes of live pages
in the window: share of changes picked up (the version a change made was fetched at least
once), mean staleness (time-averaged over pages of ``now - first change not yet fetched``,
0 when the copy is current), bytes saved by 304 (body bytes a 200 would have carried).

Last stdout line: one JSON object with adaptive_changes_found, fixed_changes_found (shares,
0..1), adaptive_mean_staleness_s, fixed_mean_staleness_s, bytes_saved_304 (adaptive), and
counts for context.

    python -m bench.freshness [--hosts 2] [--pages 250] [--days 14] [--budget 20] [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from crawler.recrawl import CrawlState, RecrawlPolicy, observe
from harness.clock import FakeClock
from testweb import TestWeb
from testweb.fresh import DAY, EPOCH, HOUR, FreshHost


@dataclass
class PageLog:
    """One page under one policy: its crawl state and the fetches that saw a version."""

    host: FreshHost
    n: int
    state: CrawlState
    seen: list[tuple[float, int]] = field(default_factory=list)  # (instant, version)
    body_size: int = 0


@dataclass
class Result:
    """What one policy achieved."""

    fetches: int = 0
    not_modified: int = 0
    bytes_saved: int = 0
    changes: int = 0
    found: int = 0
    stale_integral: float = 0.0


def fetch(web: TestWeb, clock: FakeClock, page: PageLog, policy: RecrawlPolicy,
          result: Result) -> None:
    """Fetch one page at the simulated instant, conditionally, and update its state."""
    host, path = page.host, f"/p/{page.n}"
    response = web.render(host.name, path, page.state.validators)
    headers = {k.lower(): v for k, v in response.headers.items()}
    digest = hashlib.sha1(response.body).hexdigest() if response.status == 200 else ""
    event = observe(policy, page.state, clock.now, response.status, digest,
                    headers.get("etag", ""), headers.get("last-modified", ""),
                    headers.get("location", ""))
    result.fetches += 1
    if response.status == 200:
        page.body_size = len(response.body)
    if event == "not_modified":
        result.not_modified += 1
        result.bytes_saved += page.body_size
    if response.status in (200, 304):
        page.seen.append((clock.now, host.state(path, clock.now).version))


def score(pages: list[PageLog], start: float, end: float, result: Result) -> None:
    """Changes picked up and the staleness integral, from the ground truth."""
    for page in pages:
        path = f"/p/{page.n}"
        changes = [t for t in page.host.change_times(page.n, start, end)
                   if page.host.state(path, t).status == 200]
        versions = {v for _, v in page.seen}
        result.changes += len(changes)
        result.found += sum(page.host.state(path, t).version in versions for t in changes)
        fetches = [t for t, _ in page.seen]
        for i, fetched in enumerate(fetches):
            until = fetches[i + 1] if i + 1 < len(fetches) else end
            first = next((t for t in changes if fetched < t < until), None)
            if first is not None:
                result.stale_integral += (until - first) ** 2 / 2


def simulate(web: TestWeb, clock: FakeClock, hosts: list[FreshHost], pages_per_host: int,
             start: float, end: float, budget: int,
             pick: Callable[[list[PageLog], float], PageLog | None],
             policy: RecrawlPolicy) -> Result:
    """Run one policy over [start, end] with ``budget`` fetch slots per simulated hour."""
    pages = [PageLog(host, n, CrawlState(f"{host.name}/p/{n}", next_fetch_at=start))
             for host in hosts for n in range(pages_per_host)]
    result = Result()
    step = HOUR / budget
    slot = 0
    while True:
        clock.now = start + slot * step
        if clock.now > end:
            break
        page = pick(pages, clock.now)
        if page is not None:
            fetch(web, clock, page, policy, result)
        slot += 1
        if slot % (budget * 24) == 0:
            print(f"  day {slot // (budget * 24)}: {result.fetches} fetches",
                  file=sys.stderr)
    score(pages, start, end, result)
    return result


def adaptive_pick(policy: RecrawlPolicy) -> Callable[[list[PageLog], float], PageLog | None]:
    """The due page of highest value x staleness (the crawler's order)."""
    def pick(pages: list[PageLog], now: float) -> PageLog | None:
        due = [p for p in pages if p.state.next_fetch_at <= now]
        if not due:
            return None
        return max(due, key=lambda p: policy.priority(p.state, now))
    return pick


def fixed_pick() -> Callable[[list[PageLog], float], PageLog | None]:
    """Round robin: each page in turn, whatever it did."""
    turn = [0]

    def pick(pages: list[PageLog], now: float) -> PageLog | None:
        page = pages[turn[0] % len(pages)]
        turn[0] += 1
        return page
    return pick


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--pages", type=int, default=250, help="pages per fresh host")
    parser.add_argument("--days", type=float, default=14.0, help="simulated days")
    parser.add_argument("--budget", type=int, default=20, help="fetches per simulated hour")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="1 host x 60 pages, 3 days")
    args = parser.parse_args(argv)
    if args.quick:
        args.hosts, args.pages, args.days, args.budget = 1, 60, 3.0, 3
    start = EPOCH + DAY
    end = start + args.days * DAY
    clock = FakeClock(start)
    web = TestWeb(1, 80, seed=args.seed, fresh_hosts=args.hosts, fresh_pages=args.pages,
                  clock=clock)
    hosts = [web.host(name) for name in web.fresh_hosts]
    policy = RecrawlPolicy.from_settings(None, min_interval=HOUR, max_interval=14 * DAY,
                                         initial_interval=DAY)
    pages = args.hosts * args.pages
    print(f"{pages} pages, {args.days:g} days, {args.budget} fetches/h "
          f"(fixed interval {pages / args.budget:.1f} h)", file=sys.stderr)
    print("adaptive:", file=sys.stderr)
    adaptive = simulate(web, clock, hosts, args.pages, start, end, args.budget,
                        adaptive_pick(policy), policy)
    print("fixed:", file=sys.stderr)
    fixed = simulate(web, clock, hosts, args.pages, start, end, args.budget, fixed_pick(),
                     policy)
    span = pages * (end - start)
    out = {
        "adaptive_changes_found": round(adaptive.found / max(adaptive.changes, 1), 4),
        "fixed_changes_found": round(fixed.found / max(fixed.changes, 1), 4),
        "adaptive_mean_staleness_s": round(adaptive.stale_integral / span, 1),
        "fixed_mean_staleness_s": round(fixed.stale_integral / span, 1),
        "bytes_saved_304": adaptive.bytes_saved,
        "fixed_bytes_saved_304": fixed.bytes_saved,
        "changes": adaptive.changes,
        "adaptive_changes_found_n": adaptive.found,
        "fixed_changes_found_n": fixed.found,
        "adaptive_fetches": adaptive.fetches,
        "fixed_fetches": fixed.fetches,
        "adaptive_not_modified": adaptive.not_modified,
        "pages": pages,
        "days": args.days,
        "budget_per_hour": args.budget,
    }
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
