"""Politeness audit from the test web's request log (the server's side of the story).

Crawlers promise different things, so each definition is counted on its own:

- ``overlaps``: a request to a host while an earlier one to it is still in flight. Both
  sides promise none (Scrapy with ``CONCURRENT_REQUESTS_PER_DOMAIN = 1``, the frontier's
  one lease per host).
- ``start_to_start``: a request sooner than ``delay`` after the previous request to the
  host *started*: what Scrapy's ``DOWNLOAD_DELAY`` promises (the slot's ``lastseen`` is the
  time a request was sent).
- ``end_to_start``: a request sooner than max(``delay``, the host's robots.txt Crawl-delay)
  after the previous response *ended* (overlaps included): what the frontier promises
  (``crawler.frontier.Politeness``).
- ``crawl_delay``: on hosts whose robots.txt sets a Crawl-delay, a request sooner than it
  after the previous request started (the lenient, start-to-start reading; Scrapy ignores
  Crawl-delay).

``download_delay`` counts the requests that break Scrapy's own promise (an overlap or a
start-to-start gap): the headline when a Scrapy-based baseline is compared. ``total``
counts the requests that break any rule (for the frontier it equals ``end_to_start``).
A request that breaks several rules counts once in each.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from itertools import pairwise

#: The keys of :func:`politeness_violations`' result.
DEFINITIONS = ("overlaps", "start_to_start", "end_to_start", "crawl_delay")


def politeness_violations(
    rows: Iterable[dict],
    delay: float,
    crawl_delay_of: Callable[[str], float | None] | None = None,
    slack: float = 0.005,
) -> dict[str, int]:
    """Count the requests of the log ``rows`` (``host``, ``start``, ``end``) that break each
    definition above, for a per-host ``delay`` and ``crawl_delay_of(host)`` (robots.txt's
    Crawl-delay, or None); ``slack`` absorbs the server's own timestamping jitter."""
    by_host: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_host[row["host"].rsplit(":", 1)[0]].append(row)
    counts: Counter[str] = Counter({name: 0 for name in (*DEFINITIONS, "download_delay",
                                                         "total", "requests")})
    for host, reqs in by_host.items():
        reqs.sort(key=lambda r: r["start"])
        crawl_delay = (crawl_delay_of(host) if crawl_delay_of else None) or 0.0
        promised = max(delay, crawl_delay)
        last_start = busy_until = float("-inf")
        for row in reqs:
            start = row["start"]
            broken = set()
            if start < busy_until:
                broken.add("overlaps")
            if start - last_start < delay - slack:
                broken.add("start_to_start")
            if start - busy_until < promised - slack:
                broken.add("end_to_start")
            if crawl_delay and start - last_start < crawl_delay - slack:
                broken.add("crawl_delay")
            counts.update(broken)
            counts["requests"] += 1
            counts["total"] += bool(broken)
            counts["download_delay"] += bool(broken & {"overlaps", "start_to_start"})
            last_start = start
            busy_until = max(busy_until, row["end"])
    return dict(counts)


def crawl_delays(web) -> Callable[[str], float | None]:
    """Per-host robots.txt Crawl-delay (for ``*``) of a running test web, or None."""
    from protego import Protego

    cache: dict[str, float | None] = {}

    def crawl_delay_of(host: str) -> float | None:
        if host not in cache:
            robots = web.web.render(host, "/robots.txt")
            cache[host] = None
            if robots.status == 200:
                text = robots.body.decode("utf-8", "replace")
                cache[host] = Protego.parse(text).crawl_delay("*")
        return cache[host]

    return crawl_delay_of


def _by_host(rows: Iterable[dict]) -> dict[str, list[dict]]:
    by_host: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_host[row["host"].rsplit(":", 1)[0]].append(row)
    for reqs in by_host.values():
        reqs.sort(key=lambda r: r["start"])
    return by_host


def politeness_bound(rows: Iterable[dict], delay: float,
                     crawl_delay_of: Callable[[str], float | None] | None = None) -> float:
    """The least time a crawl of the log ``rows`` can take while polite: for each host, its
    requests x max(``delay``, its robots.txt Crawl-delay); the largest host decides."""
    return max((len(reqs) * max(delay, (crawl_delay_of(host) if crawl_delay_of else None)
                                or 0.0)
                for host, reqs in _by_host(rows).items()), default=0.0)


def span(rows: Iterable[dict]) -> float:
    """Seconds from the first request's start to the last response's end."""
    rows = list(rows)
    if not rows:
        return 0.0
    return max(r["end"] for r in rows) - min(r["start"] for r in rows)


def idle_waits(rows: Iterable[dict], delay: float,
               crawl_delay_of: Callable[[str], float | None] | None = None,
               ) -> dict[str, list[float]]:
    """Per host, how long each request came after the host was due again (its previous
    response's end + max(``delay``, Crawl-delay)); negative for a request sooner than
    that. A work-conserving crawl with free slots keeps these near zero while a host has
    work (a host whose work was found late waits for it, which shows here too)."""
    waits: dict[str, list[float]] = {}
    for host, reqs in _by_host(rows).items():
        promised = max(delay, (crawl_delay_of(host) if crawl_delay_of else None) or 0.0)
        waits[host] = [b["start"] - a["end"] - promised for a, b in pairwise(reqs)]
    return waits
