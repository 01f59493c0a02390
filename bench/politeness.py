"""Politeness audit from the test web's request log (the server's side of the story)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable


def politeness_violations(
    rows: Iterable[dict], delay_of: Callable[[str], float], slack: float = 0.005
) -> dict[str, int]:
    """Count requests to a host that overlap the previous one (``concurrent``) or start
    sooner than ``delay_of(host)`` after it ended (``short_gap``); ``slack`` absorbs the
    server's own timestamping jitter."""
    by_host: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_host[row["host"].rsplit(":", 1)[0]].append(row)
    concurrent = short_gap = 0
    for host, reqs in by_host.items():
        reqs.sort(key=lambda r: r["start"])
        delay = delay_of(host)
        busy_until = float("-inf")
        for row in reqs:
            if row["start"] < busy_until:
                concurrent += 1
            elif row["start"] - busy_until < delay - slack:
                short_gap += 1
            busy_until = max(busy_until, row["end"])
    return {"concurrent": concurrent, "short_gap": short_gap,
            "total": concurrent + short_gap}


def host_delays(web, default: float) -> Callable[[str], float]:
    """Per-host delay for the audit: max(default, the host's robots.txt Crawl-delay)."""
    from protego import Protego

    cache: dict[str, float] = {}

    def delay_of(host: str) -> float:
        if host not in cache:
            robots = web.web.render(host, "/robots.txt")
            crawl_delay = None
            if robots.status == 200:
                text = robots.body.decode("utf-8", "replace")
                crawl_delay = Protego.parse(text).crawl_delay("*")
            cache[host] = max(default, crawl_delay or 0.0)
        return cache[host]

    return delay_of
