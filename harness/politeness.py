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

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from itertools import pairwise

#: A sitemap's ``<loc>`` and robots.txt's ``Sitemap:`` lines (links for ``found_times``).
LOC = re.compile(rb"<loc>\s*([^<\s]+)\s*</loc>")
SITEMAP_LINE = re.compile(r"^\s*sitemap\s*:\s*(\S+)", re.I | re.M)
HTML = re.compile(r"text/html|application/xhtml", re.I)

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


def due_lags(rows: Iterable[dict], promised_of: Callable[[str], float],
             found_at: Callable[[str, str], float | None], latency_factor: float = 0.0,
             latency_alpha: float = 0.3, *, start_to_start: bool = False,
             ) -> dict[str, list[tuple[float, float, float]]]:
    """Per host, for each request after its first: (lag, gap, promised). ``promised`` is
    max(``promised_of(host)``, ``latency_factor`` x the moving average of the host's
    response times, as ``crawler.frontier.Politeness`` keeps it); the host is *due* its
    previous response's end + ``promised`` (its previous request's start + ``promised``
    with ``start_to_start``: Scrapy's ``DOWNLOAD_DELAY``), and *has work* from the
    earliest time ``found_at(host, path)`` (a link to it was answered) of this request and
    the host's later ones: the frontier could have sent any of them. ``lag`` is how long
    after the later of the two the request started (a work-conserving crawl keeps it near
    0); ``gap`` the time from the previous response's end (``nan`` when the host had no
    work by its due time: the gap then measures the discovery, not the scheduler).
    Requests whose work has no known finding time are left out."""
    return _per_host(timed_due_lags(rows, promised_of, found_at, latency_factor,
                                    latency_alpha, start_to_start=start_to_start))


def _per_host(timed: Iterable[tuple[str, float, float, float, float]],
              ) -> dict[str, list[tuple[float, float, float]]]:
    """:func:`timed_due_lags`' rows grouped by host as :func:`due_lags` gives them."""
    lags: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for host, _, lag, gap, promised in timed:
        lags[host].append((lag, gap, promised))
    return dict(lags)


def timed_due_lags(rows: Iterable[dict], promised_of: Callable[[str], float],
                   found_at: Callable[[str, str], float | None], latency_factor: float = 0.0,
                   latency_alpha: float = 0.3, *, start_to_start: bool = False,
                   ) -> Iterator[tuple[str, float, float, float, float]]:
    """:func:`due_lags`' rows one by one as (host, start, lag, gap, promised), ``start``
    the request's start in the log's clock: which moments of a crawl the late requests
    fall in."""
    for host, reqs in _by_host(rows).items():
        found = [found_at(host, r["path"]) for r in reqs]
        # the earliest finding time of this request or a later one
        avail, soonest = [], float("inf")
        for t in reversed(found):
            soonest = min(soonest, float("inf") if t is None else t)
            avail.append(soonest)
        avail.reverse()
        latency = None
        for k in range(1, len(reqs)):
            prev = reqs[k - 1]
            took = prev["end"] - prev["start"]
            latency = took if latency is None else (
                latency_alpha * took + (1 - latency_alpha) * latency)
            if avail[k] == float("inf"):
                continue
            if start_to_start:
                promised = promised_of(host)
                due = prev["start"] + promised
            else:
                promised = max(promised_of(host), latency_factor * latency)
                due = prev["end"] + promised
            gap = reqs[k]["start"] - prev["end"] if avail[k] <= due else float("nan")
            yield host, reqs[k]["start"], reqs[k]["start"] - max(due, avail[k]), gap, promised


def found_times(web, lines: list[dict]) -> dict[tuple[str, str], float]:
    """(host, path) -> when the crawl could first know the URL: the end of the first
    response that links to it (an HTML link or meta refresh, a redirect's Location, a
    sitemap's ``<loc>`` or robots.txt's ``Sitemap:``), the crawl's first request for a
    seed (a home page), and a host's robots.txt with the host's first URL."""
    from crawler.extract import extract
    from crawler.urls import InvalidURL, canonicalize, host_of

    start = min(line["start"] for line in lines)
    found: dict[tuple[str, str], float] = {}

    def saw(url: str, base: str, at: float) -> None:
        try:
            url = canonicalize(url, base=base)
        except InvalidURL:
            return
        key = (host_of(url), path_of(url))
        if at < found.get(key, float("inf")):
            found[key] = at

    for line in sorted(lines, key=lambda r: r["end"]):
        host, path = line["host"].rsplit(":", 1)[0], line["path"]
        url = web.web.url(host, path)
        response = web.web.render(host, path)
        if response.status in (301, 302, 303, 307, 308):
            saw(response.headers.get("Location", ""), url, line["end"])
        elif response.status != 200:
            continue
        elif path == "/robots.txt":
            for target in SITEMAP_LINE.findall(response.body.decode("utf-8", "replace")):
                saw(target, url, line["end"])
        elif HTML.search(response.headers.get("Content-Type", "")):
            page = extract(response.body, url)
            for target in [link.url for link in page.links if not link.nofollow] + (
                    [page.refresh_url] if page.refresh_url else []):
                saw(target, url, line["end"])
        else:
            for target in LOC.findall(response.body[:5_000_000]):
                saw(target.decode("utf-8", "replace"), url, line["end"])
    for host in {line["host"].rsplit(":", 1)[0] for line in lines}:
        found.setdefault((host, "/"), start)  # the seeds
        first = min((t for (h, _), t in found.items() if h == host), default=start)
        found[(host, "/robots.txt")] = first
    return found


def report_lags(lines: list[dict], promised_of: Callable[[str], float],
                found: dict[tuple[str, str], float], *, start_to_start: bool = False,
                ) -> list[tuple[str, float, float, float, float]]:
    """The :func:`timed_due_lags` rows :func:`gap_report` summarizes: ``found`` the log's
    :func:`found_times`, the latency term ``FRONTIER_LATENCY_FACTOR``'s default."""
    from crawler import settings as defaults

    return list(timed_due_lags(lines, promised_of, lambda host, path: found.get((host, path)),
                               latency_factor=defaults.FRONTIER_LATENCY_FACTOR,
                               start_to_start=start_to_start))


def gap_report(lines: list[dict], web, promised_of: Callable[[str], float], *,
               start_to_start: bool = False, first_s: float = 10.0,
               found: dict[tuple[str, str], float] | None = None,
               timed: list[tuple[str, float, float, float, float]] | None = None,
               ) -> tuple[dict, dict]:
    """The crawl's lag from "due with work" to request start (``due_lags``; p50/p95 ms over
    every host, the p95 of the requests after the crawl's first ``first_s`` seconds, and
    how many requests started over 50 ms late, in those first seconds and in all) and per
    host its median gap after a response, where it had work, against its delay
    (``promised_of(host)``, or k x latency when longer) for the log ``lines`` of the
    running test web ``web``. ``start_to_start``: a host is due ``promised_of(host)``
    after its previous request started (Scrapy's ``DOWNLOAD_DELAY``, for a baseline).
    ``found``: the log's :func:`found_times`, and ``timed`` its :func:`report_lags` rows
    (for the same ``start_to_start``), when the caller has them already."""
    if timed is None:
        if found is None:
            found = found_times(web, lines)
        timed = report_lags(lines, promised_of, found, start_to_start=start_to_start)
    began = min((line["start"] for line in lines), default=0.0)
    every = sorted(lag for _, _, lag, _, _ in timed)
    later = sorted(lag for _, start, lag, _, _ in timed if start - began >= first_s)
    late = [start - began for _, start, lag, _, _ in timed if lag > 0.05]
    lags = _per_host(timed)
    per_host = {}
    for host, rows in lags.items():
        gaps = sorted(gap for _, gap, _ in rows if gap == gap)
        if gaps:
            promised = sorted(p for _, gap, p in rows if gap == gap)[len(gaps) // 2]
            per_host[host] = {"gap_median_s": round(gaps[len(gaps) // 2], 3),
                              "promised_s": round(promised, 3)}
    within = [h for h, row in per_host.items()
              if row["gap_median_s"] <= 1.1 * row["promised_s"]]
    summary = {
        "due_lag_ms": {"p50": quantile_ms(every, 0.5), "p95": quantile_ms(every, 0.95),
                       "n": len(every),
                       f"p95_after_{first_s:g}s": quantile_ms(later, 0.95),
                       "over_50ms": len(late),
                       f"over_50ms_first_{first_s:g}s": sum(1 for t in late if t < first_s)},
        "gap_median_within_10pct": f"{len(within)}/{len(per_host)}",
    }
    return summary, per_host


def quantile_ms(values: list[float], q: float) -> float | None:
    """The ``q`` quantile of the sorted seconds ``values`` in ms (None for none)."""
    return round(values[min(len(values) - 1, int(q * len(values)))] * 1000, 1) if values \
        else None


def path_of(url: str) -> str:
    """The path and query of ``url``, as the test web's log writes them."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
