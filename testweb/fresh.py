"""Hosts whose pages change, move and die at known rates, and the clock they run on
(docs/freshness.md).

``fresh{i}.test`` serves ``/p/<n>`` (n < ``TestWeb.fresh_pages``). Each page, by a hash of
(seed, host, path), gets a change period: never (40%), hourly (10%), every 6 hours (15%),
daily (20%) or weekly (15%). Time is cut into buckets of one period from ``EPOCH``; the page
changes once in each bucket at a hashed instant, so changes come at the period's mean rate
but not like clockwork. 10% of pages are deleted at a hashed time within ``LIFETIME`` after
``EPOCH`` (then 410 Gone for half of them, 404 for the rest); another 5% move there (then
301 to ``/moved/<n>``, which serves the page). Responses carry ETag and Last-Modified and
honour If-None-Match and If-Modified-Since with 304. ``/`` links to every ``/p/<n>``, dead
or alive (stale links, as on the real web); ``/sitemap.xml`` lists the live pages with their
lastmod and robots.txt points to it.

Time comes from ``TestWeb.clock``: a ``Clock`` (``--clock-offset``, ``--clock-speed``) that
tests can also move through ``clock.test`` (``GET /now``, ``POST /advance?seconds=S``).
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import parse_qs

from testweb import text
from testweb.adversarial import article, paragraphs
from testweb.kinds import HTML_TYPE, HostKind, Web, not_found, register, text_response
from testweb.messages import PageInfo, Request, Response

EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z: no page changes before this instant
HOUR = 3600.0
DAY = 24 * HOUR
LIFETIME = 14 * DAY
# (period in seconds or None for never, weight out of 100)
PERIODS: tuple[tuple[float | None, int], ...] = (
    (None, 40), (HOUR, 10), (6 * HOUR, 15), (DAY, 20), (7 * DAY, 15),
)


class Clock:
    """Simulated time: ``offset`` seconds ahead of the real clock, running ``speed`` times as
    fast from the moment it is made; ``advance`` jumps it forward."""

    def __init__(self, offset: float = 0.0, speed: float = 1.0,
                 real: Callable[[], float] = time.time):
        self._real = real
        self._start = real()
        self.offset = offset
        self.speed = speed

    def __call__(self) -> float:
        real = self._real()
        return real + self.offset + (real - self._start) * (self.speed - 1.0)

    def advance(self, seconds: float) -> float:
        """Move the clock forward by ``seconds``; returns the new time."""
        self.offset += seconds
        return self()


@dataclass(frozen=True)
class PageState:
    """What a fresh page is at one instant.

    ``status`` 200, 301, 404 or 410; ``version`` counts changes so far; ``last_modified`` is
    the instant of the last change (or of the page's creation); ``location`` the target of a
    move; ``period`` the mean seconds between changes (None: never changes).
    """

    status: int
    version: int
    last_modified: float
    etag: str
    period: float | None
    location: str | None = None


@register
class FreshHost(HostKind):
    """``fresh{i}.test``: pages that change, move and die; see the module docstring."""

    kind = "fresh"
    DELETED_SHARE = 10
    MOVED_SHARE = 5

    def __init__(self, web: Web, name: str):
        super().__init__(web, name)
        self.pages = web.fresh_pages

    # -- the model ---------------------------------------------------------------------------

    def _number(self, path: str) -> int | None:
        for prefix in ("/p/", "/moved/"):
            number = path[len(prefix):]
            if path.startswith(prefix) and number.isdigit() and str(int(number)) == number \
                    and int(number) < self.pages:
                return int(number)
        return None

    def paths(self) -> list[str]:
        """The page paths of this host, ``/p/0`` .. (whatever their state)."""
        return [f"/p/{n}" for n in range(self.pages)]

    def period(self, n: int) -> float | None:
        """Mean seconds between changes of page n (None: it never changes)."""
        pick = text.digest(self.web.seed, self.name, n, "period")[0] % 100
        for period, weight in PERIODS:
            if pick < weight:
                return period
            pick -= weight
        return None

    def _fate(self, n: int) -> tuple[str, float]:
        """("live" | "gone" | "missing" | "moved", the instant it happens)."""
        h = text.digest(self.web.seed, self.name, n, "fate")
        pick = h[0] % 100
        when = EPOCH + int.from_bytes(h[1:5], "big") / 2**32 * LIFETIME
        if pick < self.DELETED_SHARE:
            return ("gone" if pick % 2 else "missing"), when
        if pick < self.DELETED_SHARE + self.MOVED_SHARE:
            return "moved", when
        return "live", float("inf")

    def _change_in_bucket(self, n: int, bucket: int, period: float) -> float:
        h = text.digest(self.web.seed, self.name, n, "change", bucket)
        return EPOCH + (bucket + int.from_bytes(h[:4], "big") / 2**32) * period

    def change_times(self, n: int, start: float, end: float) -> list[float]:
        """The instants in (start, end] at which page n's content changes."""
        period = self.period(n)
        if period is None or end <= EPOCH:
            return []
        first = max(0, int((max(start, EPOCH) - EPOCH) // period))
        last = int((end - EPOCH) // period)
        times = [self._change_in_bucket(n, b, period) for b in range(first, last + 1)]
        return [t for t in times if start < t <= end]

    def _version(self, n: int, now: float) -> tuple[int, float]:
        """(changes so far, instant of the last change or of creation)."""
        created = EPOCH - DAY - int.from_bytes(
            text.digest(self.web.seed, self.name, n, "born")[:4], "big") / 2**32 * 30 * DAY
        period = self.period(n)
        if period is None or now <= EPOCH:
            return 0, created
        bucket = int((now - EPOCH) // period)
        change = self._change_in_bucket(n, bucket, period)
        if change <= now:
            return bucket + 1, change
        if bucket == 0:
            return 0, created
        return bucket, self._change_in_bucket(n, bucket - 1, period)

    def state(self, path: str, now: float | None = None) -> PageState | None:
        """The state of a page path at ``now`` (default: the web's clock); None if no page."""
        now = self.web.clock() if now is None else now
        n = self._number(path)
        if n is None:
            return None
        fate, when = self._fate(n)
        moved_path = path.startswith("/moved/")
        if moved_path and fate != "moved":
            return None
        period = self.period(n)
        if moved_path and now < when:
            return None
        version, modified = self._version(n, now)
        etag = f'"{n}-{version}-{text.digest(self.web.seed, self.name, n, version)[:3].hex()}"'
        if not moved_path and now >= when:
            if fate == "moved":
                return PageState(301, version, modified, etag, period,
                                 self.url(f"/moved/{n}"))
            return PageState(410 if fate == "gone" else 404, version, modified, etag, period)
        return PageState(200, version, modified, etag, period)

    # -- serving -----------------------------------------------------------------------------

    def handle(self, request: Request) -> Response:
        path = request.path
        if path == "/robots.txt":
            return text_response(f"User-agent: *\nDisallow:\n\nSitemap: "
                                 f"{self.url('/sitemap.xml')}\n")
        if path == "/sitemap.xml":
            return self._sitemap()
        if path == "/":
            return Response(200, {"Content-Type": HTML_TYPE}, self._home()[1].encode())
        state = self.state(path)
        if state is None:
            return not_found()
        if state.status == 301:
            return Response(301, {"Location": state.location, "Content-Type": HTML_TYPE},
                            b"Moved Permanently")
        if state.status in (404, 410):
            return not_found("Gone") if state.status == 404 else Response(
                410, {"Content-Type": HTML_TYPE}, b"<h1>Gone</h1>")
        headers = {"Content-Type": HTML_TYPE, "ETag": state.etag,
                   "Last-Modified": email.utils.formatdate(state.last_modified, usegmt=True),
                   "Cache-Control": "no-cache"}
        if self._not_modified(request, state):
            return Response(304, {k: v for k, v in headers.items() if k != "Content-Type"})
        n = self._number(path)
        return Response(200, headers, self._build(path, n, state.version)[1])

    @staticmethod
    def _not_modified(request: Request, state: PageState) -> bool:
        """RFC 9110: If-None-Match wins over If-Modified-Since."""
        tags = request.headers.get("if-none-match")
        if tags is not None:
            return tags.strip() == "*" or state.etag in [t.strip() for t in tags.split(",")]
        since = request.headers.get("if-modified-since")
        if since:
            try:
                parsed = email.utils.parsedate_to_datetime(since).timestamp()
            except (TypeError, ValueError):
                return False
            return int(state.last_modified) <= parsed
        return False

    def page(self, path: str, now: float | None = None) -> PageInfo | None:
        """The ground truth of a path at ``now`` (None unless it answers 200)."""
        if path == "/":
            return self._home()[0]
        state = self.state(path, now)
        if state is None or state.status != 200:
            return None
        return self._build(path, self._number(path), state.version)[0]

    def _build(self, path: str, n: int, version: int) -> tuple[PageInfo, bytes]:
        key = (self.name, f"/p/{n}", version)  # a moved page keeps its content
        hit = self.web.cache.get(key)
        if hit is None:
            rng = text.rng_for(self.web.seed, self.name, n, version)
            title = f"Page {n} " + text.title_case(
                text.words(text.rng_for(self.web.seed, self.name, n), 3))
            keyword = text.keyword_for(self.web.seed, self.name, n, version)
            blocks = [("h1", title), *paragraphs(rng, 3, keyword)]
            links = [(self.url("/"), "Home"),
                     (self.url(f"/p/{(n + 1) % self.pages}"), "Next page")]
            info, doc = article(self, f"/p/{n}", title, blocks, links, keyword)
            hit = (info, doc.encode())
            self.web.cache.put(key, hit)
        info, body = hit  # type: ignore[misc]
        return replace(info, url=self.url(path), extra={"version": version}), body

    def _home(self) -> tuple[PageInfo, str]:
        links = [(self.url(f"/p/{n}"), f"Page {n}") for n in range(self.pages)]
        title = f"{self.name} front page"
        return article(self, "/", title, [("h1", title)], links, "")

    def _sitemap(self) -> Response:
        now = self.web.clock()
        entries = []
        for n in range(self.pages):
            state = self.state(f"/p/{n}", now)
            path = f"/p/{n}"
            if state.status == 301:
                path, state = f"/moved/{n}", self.state(f"/moved/{n}", now)
            if state is not None and state.status == 200:
                lastmod = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(state.last_modified))
                entries.append(f"<url><loc>{self.url(path)}</loc><lastmod>{lastmod}</lastmod>"
                               "</url>\n")
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                f"{''.join(entries)}</urlset>\n")
        return text_response(body, "application/xml")


@register
class ClockHost(HostKind):
    """``clock.test``: ``GET /now`` gives the simulated time as JSON ``{"now": t}``;
    ``POST /advance?seconds=S`` moves it forward (only a ``Clock`` can be moved)."""

    kind = "clock"
    host_name = "clock.test"

    def __init__(self, web: Web):
        super().__init__(web, self.host_name)

    def handle(self, request: Request) -> Response:
        clock = self.web.clock
        if request.path == "/advance" and request.method == "POST":
            if not isinstance(clock, Clock):
                return Response(409, {"Content-Type": "text/plain"}, b"clock cannot be moved")
            try:
                seconds = float(parse_qs(request.query)["seconds"][0])
            except (KeyError, ValueError):
                return Response(400, {"Content-Type": "text/plain"}, b"need ?seconds=S")
            clock.advance(seconds)
        elif request.path != "/now":
            return not_found()
        return text_response(json.dumps({"now": clock()}), "application/json")
