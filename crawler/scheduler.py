"""``FrontierScheduler``: Scrapy's scheduler slot backed by the shared Mercator frontier.

Three roles around the frontier, each its own component built with ``from_crawler``:
admission (``crawler.admission``: trap guards, host rules, condemned hosts, the seen
cache), ordering (``crawler.ordering``: breadth-first or value order, re-pushes) and the
pipelines' verdicts (``crawler.feedback``: one typed interface). This module joins them to
Scrapy: requests and batches of links go through admission and ordering into the frontier
(batched); the engine gets requests from leases; outcomes come back through Scrapy's
download signals and release the lease with status and latency, which sets the host's
next-eligible time. The lease, not Scrapy's download slots, keeps one request per host in
flight across every worker of the crawl.

The scheduler is work-conserving: it leases no more hosts than the engine has free slots
(a host leased and not fetched would wait while another worker's slot idles), and when the
frontier has fewer eligible hosts than free slots it asks when the next one is due
(``Frontier.due_in``) and wakes the engine then, so a host that is due and has work is
fetched within milliseconds, not on the engine's next heartbeat.
"""

from __future__ import annotations

import dataclasses
import email.utils
import logging
import sqlite3
import sys
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.spidermiddlewares.referer import RefererMiddleware, ReferrerPolicy
from scrapy.utils.asyncio import CallLaterResult, call_later
from scrapy.utils.request import request_from_dict
from twisted.internet import task

from crawler import aliases
from crawler.admission import Admission, Admitted
from crawler.config import config_from_settings
from crawler.feedback import FrontierFeedback
from crawler.frontier import Entry, Frontier, Lease, Outcome, frontier_options, open_frontier
from crawler.frontier.base import ROBOTS_RANK, Politeness, request_tier
from crawler.frontier.codec import decode_request, encode_request, request_fields
from crawler.handlers import NOT_BEFORE
from crawler.options import Option, enabled, setting, settings_to_options
from crawler.ordering import Ordering
from crawler.robots import RobotsPolicy
from crawler.signals import links_extracted
from crawler.urls import InvalidURL, canonicalize, host_of, netloc_of

logger = logging.getLogger(__name__)


def store_down() -> tuple[type[Exception], ...]:
    """The exceptions that say the frontier's or crawl state's store is unreachable for now
    (Redis restarting, SQLite locked): the scheduler keeps what it holds, retries, and the
    crawl goes on when the store is back. Evaluated in ``except store_down()``, i.e. only
    when an exception is raised: Redis' are among them once ``redis`` is imported, which a
    Redis store does before it can raise one; a local crawl does not import ``redis``."""
    errors = sys.modules.get("redis.exceptions")
    if errors is None:
        return (sqlite3.OperationalError,)
    return (errors.ConnectionError, errors.TimeoutError, sqlite3.OperationalError)


#: A lease kept in this process is served only while it has at least this long left.
SERVE_LEASE_MARGIN_S = 1.0
#: The soonest a wake-up for a due host is set (a host due "now" that could not be leased,
#: e.g. over its address's limit, is not polled for in a busy loop).
MIN_WAKE_S = 0.002
#: Seconds between the scheduler's housekeeping ticks (flush adds, seeds, orphans).
TICK_S = 0.2
#: Seconds ``next_request`` may spend in one turn of the reactor, on requests it hands out
#: and leases it refuses (a condemned host's queue, a trap pattern's URLs: each a lease
#: and its release), before it gives the turn back and the engine asks again at the next
#: one. The engine asks until it gets None, and each request it gets goes through the
#: downloader and its middlewares in that turn (~1.5 ms a request on a quiet box): a poll
#: that leased 18 hosts held the reactor 30-50 ms, and the timers of hosts due meanwhile
#: waited as long. Unbounded, a run of a thousand refusals held the reactor 0.3-1.5 s
#: (asyncio debug, ``bench/realweb.py``).
HANDING_TURN_S = 0.01
#: Lease-time refusals whose URL keeps the page of budget it took: a template trap's URLs
#: are what the host's budget bounds. Given back, they let the host's waiting pages in,
#: and a trap host fetched its whole budget (events.test 25 of 25 in
#: tests/test_hostile_crawl.py, against under 25 without the waiting list).
KEEPS_BUDGET = frozenset({"template_trap"})


class FrontierScheduler(BaseScheduler):
    """Scheduler whose queue is a ``Frontier`` (local SQLite, or Redis when configured).

    Built by ``from_crawler`` from the ``FRONTIER_*`` settings (``SETTINGS`` here, the
    frontier's ``crawler.frontier.SETTINGS``, and those of its admission and ordering); the
    defaults are in crawler/settings.py. ``feedback`` is where the pipelines' verdicts
    arrive (``crawler.feedback.crawl_feedback``).
    """

    #: ``HANDING_TURN_S`` (an attribute, so that a test can change it).
    turn_s: ClassVar[float] = HANDING_TURN_S

    #: Setting -> keyword option of ``__init__``.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "FRONTIER_RELEASE_INTERVAL": ("release_interval", float),
        "FRONTIER_STATS_INTERVAL": ("stats_interval", float),
        "FRONTIER_RESET": ("reset", bool),
        "FRONTIER_PERSIST": ("persist", bool),
        "FRONTIER_LEASE_AHEAD": ("lease_ahead", float),
    }

    def __init__(
        self,
        frontier: Frontier,
        admission: Admission,
        ordering: Ordering,
        robots: RobotsPolicy | None = None,
        *,
        stats=None,
        release_interval: float,
        stats_interval: float,
        reset: bool,
        persist: bool,
        buffer_size: int = 48,
        add_batch: int = 200,
        seeds_key: str | None = None,
        poll_interval: float = 0.05,
        lease_ahead: float = 0.0,
        referrer: RefererMiddleware | None = None,
    ):
        self.frontier = frontier
        self.admission = admission
        self.ordering = ordering
        self.robots = robots
        self.stats = stats
        self.feedback = FrontierFeedback(frontier, admission, ordering, stats)
        self.buffer_size = buffer_size
        self.add_batch = add_batch
        self.seeds_key = seeds_key
        self.poll_interval = poll_interval
        self.lease_ahead = lease_ahead
        self.release_interval = release_interval
        self.stats_interval = stats_interval
        self.reset = reset
        self.persist = persist
        self.referrer = referrer
        self.spider = None
        self.crawler = None
        self._adds: list[Entry] = []
        self._drops: dict[str, int] = {}
        self._buffer: deque[Lease] = deque()
        # lease id -> when (monotonic) the request of a host leased ahead may start
        self._not_before: dict[str, float] = {}
        self._inflight: dict[Request, Lease] = {}
        self._responses: dict[Request, Outcome] = {}
        # when each in-flight request's response last had bytes read (monotonic)
        self._read_at: dict[Request, float] = {}
        # finished leases not reported yet, each with its response's arrival (monotonic)
        self._done: deque[tuple[Lease, Outcome, float]] = deque()
        self._settle_call: CallLaterResult | None = None
        self._last_poll = 0.0
        self._poll_now = True
        self._refused = False  # a lease was refused since the last poll
        self._wake: CallLaterResult | None = None
        self._wake_at = 0.0
        # when next_request gives the reactor's current turn back (monotonic)
        self._turn_ends: float | None = None
        self._pending_cache = (0.0, 0)
        self._down_since: float | None = None
        self._loops: list[task.LoopingCall] = []
        self._ticks = 0
        self._templates: dict[int, tuple[Request, dict]] = {}

    @classmethod
    def from_crawler(cls, crawler) -> FrontierScheduler:
        s = crawler.settings
        politeness = Politeness.from_settings(s)
        if enabled(s, "AUTOTHROTTLE_ENABLED"):
            _take_over_autothrottle(crawler, politeness)
        crawl = s.get("FRONTIER_CRAWL") or crawler.spidercls.name
        frontier = open_frontier(config_from_settings(s), crawl,
                                 **frontier_options(s, politeness=politeness))
        robots = RobotsPolicy.from_settings(s, frontier) if enabled(s, "FRONTIER_ROBOTS") else None
        seeds_key = aliases.get(s, "FRONTIER_SEEDS_KEY") or getattr(frontier, "seeds_key", None)
        if seeds_key and "%(" in seeds_key:
            seeds_key = seeds_key % {"name": crawler.spidercls.name}
        scheduler = cls(
            frontier,
            Admission.from_crawler(crawler),
            Ordering.from_crawler(crawler),
            robots,
            stats=crawler.stats,
            buffer_size=(setting(s, "FRONTIER_BUFFER_PER_SLOT", int)
                         * setting(s, "CONCURRENT_REQUESTS", int)),
            seeds_key=seeds_key,
            referrer=RefererMiddleware(s) if s.getbool("REFERER_ENABLED") else None,
            # reset and persist may come from their scrapy-redis names (crawler/aliases.py)
            **settings_to_options(s, cls.SETTINGS, reset=aliases.getbool(s, "FRONTIER_RESET"),
                                  persist=aliases.getbool(s, "FRONTIER_PERSIST")),
        )
        scheduler.crawler = crawler
        if s.getbool("ROBOTSTXT_OBEY") and scheduler.robots is not None:
            logger.warning(
                "ROBOTSTXT_OBEY is on: Scrapy's RobotsTxtMiddleware fetches robots.txt outside "
                "the frontier's leases; set ROBOTSTXT_OBEY = False, FrontierScheduler obeys "
                "robots.txt itself"
            )
        crawler.signals.connect(scheduler.response_read, signal=signals.headers_received)
        crawler.signals.connect(scheduler.response_read, signal=signals.bytes_received)
        crawler.signals.connect(scheduler.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(scheduler.response_received, signal=signals.response_received)
        crawler.signals.connect(
            scheduler.request_left_downloader, signal=signals.request_left_downloader
        )
        crawler.signals.connect(scheduler.enqueue_links, signal=links_extracted)
        return scheduler

    # -- BaseScheduler -----------------------------------------------------------------

    def open(self, spider) -> None:
        self.spider = spider
        if hasattr(spider, "links_sink"):  # the spider hands its links over without a signal
            spider.links_sink = self.enqueue_links
        if self.reset:
            self.frontier.clear()
        for interval, fn in (
            (self.release_interval, self.release_expired),
            (self.stats_interval, self.update_stats),
            (TICK_S, self.tick),
        ):
            loop = task.LoopingCall(self._guarded, fn)
            loop.start(interval, now=False)
            self._loops.append(loop)
        pending = self.frontier.pending()
        if pending:
            logger.info("Resuming crawl (%d requests in the frontier)", pending)

    def close(self, reason: str) -> None:
        for loop in self._loops:
            if loop.running:
                loop.stop()
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        if self._settle_call is not None:
            self._settle_call.cancel()
            self._settle_call = None
        self._settle()
        try:
            self.flush()
            for lease in [*self._buffer, *self._inflight.values()]:
                self.frontier.done(lease, Outcome(requeue=True))
            self.update_stats()
        except store_down() as exc:  # the leases expire and go back to the queue on their own
            logger.error("frontier store unavailable at close (%s): leases left to expire", exc)
        self._buffer.clear()
        self._inflight.clear()
        if not self.persist:
            logger.info("FRONTIER_PERSIST is off: clearing the frontier of this crawl")
            try:
                self.frontier.clear()
            except store_down() as exc:
                logger.error("frontier store unavailable at close (%s): not cleared", exc)
        self.frontier.close()

    def has_pending_requests(self) -> bool:
        if self._adds or self._buffer:
            return True
        now = time.monotonic()
        checked, pending = self._pending_cache
        if now - checked > 1.0:
            try:
                self.flush()
                pending = self.frontier.pending()
            except store_down() as exc:
                self._store_down(exc)
                return True  # unknown: the crawl must not end because the store is away
            self._pending_cache = (now, pending)
        return pending > 0

    def enqueue_request(self, request: Request) -> bool:
        admitted = self.admission.admit(
            request.url, request.meta.get("depth", 0), filter=not request.dont_filter,
            # a cloaking probe fetches a page held already: no new page for the budget
            recrawl=bool(request.meta.get("recrawl") or request.meta.get("quality_probe")))
        if isinstance(admitted, str):
            return self._drop(admitted)
        return self._queue(admitted, request.meta.get("depth", 0),
                           lambda url: encode_request(self._fields(request), url),
                           tier=self.ordering.tier(request_tier(request.meta)),
                           valued="frontier_tier" not in request.meta,
                           filter=not request.dont_filter)

    def next_request(self) -> Request | None:
        if self._turn_ends is not None and time.monotonic() >= self._turn_ends:
            # requests handed out for a while in this turn: the rest go at the next
            self._inc("frontier/handouts_yielded")
            self._wake_in(0)
            return None
        deadline = self._turn_deadline()
        try:
            while True:
                lease = self._next_lease()
                if lease is None:
                    return None
                not_before = self._not_before.pop(lease.id, None)
                request = self._request_for(lease)
                if request is not None:
                    if not_before is not None:
                        request.meta[NOT_BEFORE] = not_before
                    self.ordering.handed_out(lease.url)
                    self._inflight[request] = lease
                    self._inc("frontier/dequeued")
                    return request
                if time.monotonic() >= deadline:  # refused for a while: the turn is over
                    self._inc("frontier/refusals_yielded")
                    self._wake_in(0)
                    return None
        except store_down() as exc:  # a lease in hand expires and returns to the queue
            self._store_down(exc)
            return None

    def _turn_deadline(self) -> float:
        """When ``next_request`` gives this turn of the reactor back: ``turn_s`` after its
        first call in the turn (in a crawl; after this call's start without one)."""
        now = time.monotonic()
        if self.crawler is None:
            return now + self.turn_s
        if self._turn_ends is None:
            self._turn_ends = now + self.turn_s
            call_later(0, self._turn_over)  # runs at the next turn, not this one
        return self._turn_ends

    def _turn_over(self) -> None:
        self._turn_ends = None

    # -- links -------------------------------------------------------------------------

    def enqueue_links(
        self, response, urls, depth: int, template: Request, spider=None, outlinks: int = 0,
        seen=(), canonical: bool = False, **kwargs,
    ) -> bool:
        """Handler of ``links_extracted`` (and the spider's ``links_sink``): queue ``urls``
        found on ``response`` as copies of ``template`` at ``depth``, without building a
        Request each (``outlinks``: how many links the page has in all, for the value
        order's shares; ``seen``: its links queued before, whose value this in-link raises;
        ``canonical``: ``urls`` are canonical already, as the extraction gives them)."""
        self.ordering.links_found(response.url, [*urls, *seen], depth, outlinks)
        meta = {**template.meta, "depth": depth}
        base = {**self._template(template), "meta": meta}
        tier = self.ordering.tier(request_tier(meta))
        valued = "frontier_tier" not in meta
        policy = _remembering(self.referrer.policy(response, template)) if self.referrer \
            else None
        # origin -> the fields of its links and, once encoded, their payload: a link queued
        # as itself (canonical) is stored without its URL, so one origin's links share it
        by_origin: dict[str, list] = {}

        def shared_for(url: str) -> list:
            # the standard referrer policies look at the target's origin only
            origin = _origin(url)
            shared = by_origin.get(origin)
            if shared is None:
                referer = policy.referrer(response.url, url) if policy else None
                fields = base if not referer else {
                    **base, "headers": {**base.get("headers", {}),
                                        b"Referer": [referer.encode()]}}
                shared = by_origin[origin] = [fields, None]
            return shared

        def payload(canonical: str, url: str, shared: list) -> bytes:
            if canonical != url:
                return encode_request({**shared[0], "url": url}, canonical)
            if shared[1] is None:
                shared[1] = encode_request({**shared[0], "url": url}, canonical)
            return shared[1]

        def repushed(url: str, depth_now: int) -> bytes:
            shared = shared_for(url)
            if depth_now == depth:  # the fields of a link queued now: their payload is shared
                return payload(url, url, shared)
            return encode_request(
                {**shared[0], "meta": {**meta, "depth": depth_now}, "url": url}, url)

        queued = 0
        for url in urls:
            admitted = self.admission.admit(url, depth, canonical=canonical)
            if isinstance(admitted, str):
                self._drop(admitted)
                continue
            if self.robots is not None and self.robots.refuses(admitted.url, admitted.netloc):
                # refused now rather than when leased: it takes none of the host's budget
                self._inc("robots/disallowed")
                continue
            shared = shared_for(url)
            queued += self._queue(
                admitted, depth,
                lambda canonical, url=url, shared=shared: payload(canonical, url, shared),
                tier=tier, valued=valued, count=False)
        self._inc("frontier/enqueued", queued)
        if valued:
            for url in seen:
                self._repush(url, depth, partial(repushed, url))
        return True

    def _queue(self, admitted: Admitted, depth: int, payload: Callable[[str], bytes], *,
               tier: int, valued: bool, filter: bool = True, count: bool = True) -> bool:
        """Put an admitted URL, ranked, into the add batch (counted in
        ``frontier/enqueued`` if ``count``)."""
        url = admitted.url
        rank = self.ordering.rank(url, admitted.netloc, depth, tier, valued=valued,
                                  dying=admitted.dying)
        try:
            data = payload(url)
        except ValueError:  # a callback that is not a spider method cannot be stored
            logger.exception("cannot store %s in the frontier", url)
            self.admission.forget(url)
            return self._drop("unserializable")
        if filter and valued:
            self.ordering.queued(url, rank, depth)
        self._add(Entry(url=url, host=admitted.netloc, payload=data, rank=rank, filter=filter,
                        budget=admitted.budget, ip=admitted.ip))
        if count:
            self._inc("frontier/enqueued")
        return True

    def _repush(self, url: str, depth: int, payload: Callable[[int], bytes]) -> None:
        """Queue a copy of ``url`` ahead when the ordering moved it up; it skips the seen
        filter and the host's budget (it is no new page), and moves the queued page
        where the frontier can (``Entry.was``)."""
        moved = self.ordering.moved_up(url, depth)
        if moved is None or self.admission.not_worth(url) or self.admission.dying(url):
            return
        rank, depth, was = moved
        self._add(Entry(url=url, host=netloc_of(url), payload=payload(depth), rank=rank,
                        filter=False, budget=None, ip=self.admission.ip_of(host_of(url)),
                        was=was))
        self._inc("frontier/repushed")

    def _add(self, entry: Entry) -> None:
        self._adds.append(entry)
        if len(self._adds) == 1:  # the first of a batch: its host may be idle, waiting
            self._wake_in(0)
        elif len(self._adds) >= self.add_batch:
            self.flush()

    # -- leases ------------------------------------------------------------------------

    def _free_slots(self) -> int:
        """Requests the engine can start now (at least 1: it asks only when it can)."""
        engine = getattr(self.crawler, "engine", None)
        downloader = getattr(engine, "downloader", None)
        total = getattr(downloader, "total_concurrency", 0)
        if not total:
            return self.buffer_size
        return max(1, min(total - len(downloader.active), self.buffer_size))

    def _next_lease(self) -> Lease | None:
        """The next lease to serve: from the buffer, refilled from the frontier with as many
        leases as the engine has free slots. After a short answer the frontier is asked
        again when a host is due (a wake-up), when a lease ends, when new work was added, or
        ``poll_interval`` later (another worker's hosts), not each time the engine asks."""
        want = self._free_slots() - len(self._buffer)
        if want > 0 and (self._poll_now or (self._refused and not self._buffer)
                         or time.monotonic() - self._last_poll >= self.poll_interval):
            self._poll(want)
        while self._buffer:
            lease = self._buffer.popleft()
            if _usable(lease):
                return lease
            self._not_before.pop(lease.id, None)
            self._inc("frontier/buffer_expired")
        return None

    def _poll(self, want: int) -> None:
        self._last_poll = time.monotonic()
        self._refused = False
        self._settle()  # hosts whose request came back may be due again
        self.flush()  # so that hosts found since the last poll can be leased
        leases = self.frontier.next_ready(want, self.lease_ahead)
        leased_at = time.monotonic()
        for lease in leases:
            if lease.wait > 0:
                self._not_before[lease.id] = leased_at + lease.wait
        self._buffer.extend(leases)
        self._inc("frontier/leased", len(leases))
        self._poll_now = len(leases) == want
        self.feedback.slack.polled(self._poll_now)
        if not self._poll_now:
            self._inc("frontier/politeness_waits")
            due = self.frontier.due_in()
            if due is not None:
                self._wake_in(max(due - self.lease_ahead, MIN_WAKE_S))

    def _wake_in(self, seconds: float) -> None:
        """Make the engine ask for requests in ``seconds`` (unless a wake-up comes sooner)."""
        if self.crawler is None:
            return
        when = time.monotonic() + seconds
        if self._wake is not None:
            if self._wake_at <= when:
                return
            self._wake.cancel()
        self._wake_at = when
        self._wake = call_later(seconds, self.wake)

    def wake(self) -> None:
        """A host is due (or new work came): the engine asks for requests now, and the
        frontier is polled. Run in this turn of the reactor, not scheduled for the next
        (``nextcall.schedule()``): under load each turn waits for every callback ready
        before it, and the host's gap grows by as much."""
        self._wake = None
        self._poll_now = True
        engine = getattr(self.crawler, "engine", None)
        slot = getattr(engine, "_slot", None)
        if slot is not None:
            slot.nextcall.cancel()
            slot.nextcall()

    def _request_for(self, lease: Lease) -> Request | None:
        """The request to send for ``lease``, or None after settling the lease here."""
        if lease.is_robots:
            return self._robots_request(lease)
        reason = self.admission.not_worth(lease.url)
        allowed = True
        if reason is None and self.robots is not None:
            allowed = self.robots.allowed(lease.url, lease.host)
            if allowed is None:
                scheme = lease.url.split(":", 1)[0]
                robots_url = RobotsPolicy.robots_url(scheme, lease.host)
                self.frontier.add([Entry(robots_url, lease.host, rank=ROBOTS_RANK,
                                         filter=False)])
                self.frontier.done(lease, Outcome(requeue=True))
                self._poll_now = True  # the robots.txt fetch is ready now: poll again
                return None
        # before a refusal: of a re-pushed URL's copies only the first refunds its page
        if self.ordering.extra_copy(lease):
            return self._skip(lease, "repushed")
        try:
            fields = decode_request(lease.url, lease.payload)
        except Exception:
            logger.exception("cannot rebuild the request of %s; dropping it", lease.url)
            self._inc("frontier/dropped/undecodable")
            self._refuse(lease, False)
            return None
        if reason:
            return self._skip(lease, reason, refund=reason not in KEEPS_BUDGET
                              and _took_budget(fields.get("meta") or {}))
        if not allowed:
            self._inc("robots/disallowed")
            self._refuse(lease, _took_budget(fields.get("meta") or {}))
            return None
        try:
            return request_from_dict(fields, spider=self.spider)
        except Exception:
            logger.exception("cannot rebuild the request of %s; dropping it", lease.url)
            self._inc("frontier/dropped/undecodable")
            self._refuse(lease, False)
            return None

    def _skip(self, lease: Lease, reason: str, refund: bool = False) -> None:
        """Finish ``lease`` unfetched, its URL dropped for ``reason``."""
        self._inc(f"frontier/dropped/{reason}")
        self._drops[reason] = self._drops.get(reason, 0) + 1
        self._refuse(lease, refund)

    def _refuse(self, lease: Lease, refund: bool) -> None:
        """Finish ``lease`` unfetched; with ``refund``, its host gets back the page of budget
        its URL took when queued. The host is free again at the next poll, made as soon as
        the leases in hand are served, not at the next tick (a run of stale re-pushed
        copies at the head of a host's queue cost a tick, 0.2 s, each: pauses of 20-40 s
        with nothing else to crawl, ``bench/crawl_value.py``). The lease is reported with
        the others finished since the last poll, in one frontier call before it
        (``_settle``), or at the end of the reactor's turn: a verdict's refusals (a
        condemned host's queue, a trap's URLs) and the stale copies of re-pushed URLs,
        thousands in a crawl, each took a poll and a write transaction of their own on the
        reactor thread."""
        self._done.append((lease, Outcome(fetched=False, refund=refund), time.monotonic()))
        self._settle_soon()
        self._refused = True
        if refund:
            self._inc("frontier/budget_refunded")

    def _robots_request(self, lease: Lease) -> Request:
        return Request(
            lease.url,
            callback=_ignore_response,
            errback=_ignore_failure,
            dont_filter=True,
            meta={
                "frontier_robots": lease.host,
                "dont_redirect": True,
                "dont_retry": True,
                "handle_httpstatus_all": True,
                "dont_obey_robotstxt": True,
            },
        )

    # -- outcomes (signals) ------------------------------------------------------------

    def response_read(self, request, spider=None, **kwargs) -> None:
        """Handler of ``headers_received`` and ``bytes_received``: note when the response
        of ``request`` was last read. The host's delay runs from its last read (its end),
        not from the response's leaving the downloader: between the two the reactor
        resumes the download's coroutines, a turn of the event loop or more, 10-100 ms on
        a busy box, and each host's next request waited as long."""
        if request in self._inflight:
            self._read_at[request] = time.monotonic()

    def response_downloaded(self, response, request, spider=None) -> None:
        """Record status, latency and Retry-After; store robots.txt before the lease ends."""
        if request not in self._inflight:
            return
        if response.flags:  # cut short (a size limit, lost data): the server may write on
            self._read_at.pop(request, None)
        self._responses[request] = Outcome(
            status=response.status,
            latency=request.meta.get("download_latency"),
            retry_after=_retry_after(response.headers.get(b"Retry-After")),
        )
        netloc = request.meta.get("frontier_robots")
        if netloc and self.robots is not None:
            self.robots.record_response(netloc, response.status, response.body)

    def response_received(self, response, request, spider=None) -> None:
        """A response made by a downloader middleware (cache...) also ends the lease."""
        if request in self._inflight and request not in self._responses:
            self._responses[request] = Outcome(status=response.status, latency=0.0)
            self.request_left_downloader(request, spider)

    def request_left_downloader(self, request, spider=None) -> None:
        """Release the lease of ``request`` with what happened to it. The host's delay runs
        from the response's last read (``response_read``; from here for a failed or cut
        short one), not from the end of its processing; the report goes to the frontier
        with the others of this turn of the reactor (``_settle``)."""
        lease = self._inflight.pop(request, None)
        read_at = self._read_at.pop(request, None)
        if lease is None:
            return
        outcome = self._responses.pop(request, None)
        if outcome is None:
            read_at = None  # no whole response: its end is now, as far as is known
            outcome = Outcome(error="timeout")
            netloc = request.meta.get("frontier_robots")
            if netloc and self.robots is not None:
                self.robots.record_error(netloc)
        host = host_of(lease.url)
        outcome = Outcome(
            status=outcome.status,
            latency=outcome.latency,
            error=outcome.error,
            retry_after=outcome.retry_after,
            crawl_delay=None if self.robots is None else self._robots_delay(lease.host),
            admin_delay=self.admission.admin_delay(host),
            ip=self.admission.ip_of(host),
        )
        if not lease.is_robots and outcome.status:
            self.admission.fetched(lease.url, outcome.status)
        self._done.append((lease, outcome, read_at or time.monotonic()))
        self._settle_soon()
        self._poll_now = True  # the host may be due at once (no delay), or sooner than others
        self._inc("frontier/done")
        if outcome.status is not None:
            self._inc(f"frontier/outcome/{outcome.status}")
        else:
            self._inc("frontier/outcome/error")

    def _robots_delay(self, netloc: str) -> float | None:
        rules = self.robots.rules(netloc)
        return None if rules is None else rules.crawl_delay(self.robots.user_agent)

    def _release_orphans(self, inprogress) -> None:
        """Release leases of requests the engine dropped without a download signal.

        A downloader middleware that raises IgnoreRequest in ``process_request`` ends a
        request before the downloader sees it; the download signals fire, for requests that
        reach it, before the engine forgets them, so a request handed out but no longer in
        the engine's ``inprogress`` set was never fetched.
        """
        orphans = [r for r in self._inflight if r not in inprogress]
        for request in orphans:
            lease = self._inflight.pop(request)
            self._responses.pop(request, None)
            self._read_at.pop(request, None)
            self._inc("frontier/dropped/before_download")
            self._refuse(lease, not lease.is_robots and _took_budget(request.meta))
        if orphans:
            self._poll_now = True

    # -- timers ------------------------------------------------------------------------

    def tick(self) -> None:
        """Flush adds, pull seeds from Redis, release orphaned leases, wake the engine."""
        self._ticks += 1
        self._settle()
        if self._ticks % 5 == 1:  # every second
            self._pull_seeds()
        self.flush()
        engine = getattr(self.crawler, "engine", None)
        slot = getattr(engine, "_slot", None)
        if slot is not None:
            self._release_orphans(slot.inprogress)
            if slot.nextcall is not None:
                slot.nextcall.schedule()

    def release_expired(self) -> None:
        n = self.frontier.release_expired()
        if n:
            self._inc("frontier/expired_released", n)
            logger.info("released %d expired leases", n)
            self._poll_now = True

    def update_stats(self) -> None:
        """Copy the frontier's cluster-wide gauges and counters into Scrapy's stats."""
        if self.stats is None:
            return
        stats = self.frontier.stats()
        for key, value in stats.items():
            self.stats.set_value(f"frontier/cluster/{key}", value)
        self.stats.set_value("frontier/queued", stats["queue_depth"])

    def flush(self) -> None:
        """Send buffered adds (and drop counts) to the frontier in one call each; new work
        wakes the engine."""
        if self._drops:
            drops, self._drops = self._drops, {}
            try:
                for reason in list(drops):
                    self.frontier.count(f"dropped/{reason}", drops.pop(reason))
            except store_down():
                for reason, n in drops.items():
                    self._drops[reason] = self._drops.get(reason, 0) + n
                raise
        if self._adds:
            adds, self._adds = self._adds, []
            try:
                counts = self.frontier.add(adds)
            except store_down():
                # kept for the next flush; a part the store took already counts as seen then
                self._adds = adds + self._adds
                raise
            if counts["added"]:
                self._pending_cache = (0.0, 0)  # new work: the next pending check must see it
                if not self._poll_now:
                    self._poll_now = True
                    self._wake_in(0)
            if counts["seen"] or counts["budget"] or counts["waiting"]:
                # a waiting page is queued later, if at all: it is not moved up meanwhile
                self.ordering.not_queued(entry.url for entry in adds if entry.filter)
            self._inc("frontier/added", counts["added"])
            self._inc("frontier/dropped/seen", counts["seen"])
            self._inc("frontier/dropped/budget", counts["budget"])
            self._inc("frontier/budget_waiting", counts["waiting"])
            self._inc("frontier/moved", counts["moved"])
        self._push_standings()

    def _push_standings(self) -> None:
        """Hand the ordering's changed host standings to the frontier (after the adds, so
        the hosts exist there)."""
        values = self.ordering.changed_standings()
        if values:
            try:
                self.frontier.set_host_values(values)
            except store_down():
                self.ordering.not_sent(values)
                raise
            self._inc("frontier/host_values", len(values))

    def _pull_seeds(self) -> None:
        if not self.seeds_key or self.spider is None:
            return
        client = getattr(self.frontier, "client", None)
        urls = client.lpop(self.seeds_key, 100) if client is not None else None
        for raw in urls or []:
            url = raw.decode() if isinstance(raw, bytes) else raw
            try:
                self.enqueue_request(Request(canonicalize(url), meta={"depth": 0}))
            except InvalidURL as exc:
                self._drop(exc.reason)

    def _settle_soon(self) -> None:
        """Report the finished leases once the reactor has handled what else is ready now (or
        at the engine's next poll, if sooner): the responses that arrive together are
        reported in one frontier call (``Frontier.done_many``)."""
        if self.crawler is None:
            self._settle()
        elif self._settle_call is None:
            self._settle_call = call_later(0, self._settle_due)

    def _settle_due(self) -> None:
        self._settle_call = None
        self._settle()

    def _settle(self) -> None:
        """Report finished leases to the frontier, each with how long ago its response
        arrived; the store down, they are kept for the next try."""
        if not self._done:
            return
        now = time.monotonic()
        reports = [(lease, dataclasses.replace(outcome, age=max(0.0, now - arrived)))
                   for lease, outcome, arrived in self._done]
        try:
            self.frontier.done_many(reports)
            # the engine asks again only once a response is processed (spider, pipelines):
            # a wake-up for the host due first, whichever it is, keeps the due hosts' gaps
            # from waiting on that; it comes FRONTIER_LEASE_AHEAD before, as a poll's does,
            # so that the request is in the download handler when the host is due
            due = self.frontier.due_in()
        except store_down() as exc:
            self._store_down(exc)
            return
        for _ in reports:
            self._done.popleft()
        if due is not None:
            self._wake_in(max(due - self.lease_ahead, MIN_WAKE_S))

    def _guarded(self, fn) -> None:
        """Run a timer's ``fn``; a store outage is logged once and the timer keeps going."""
        try:
            fn()
        except store_down() as exc:
            self._store_down(exc)
            return
        if self._down_since is not None:
            logger.warning(
                "frontier store is back after %.1f s", time.monotonic() - self._down_since
            )
            self._down_since = None

    def _store_down(self, exc: Exception) -> None:
        if self._down_since is None:
            self._down_since = time.monotonic()
            logger.error("frontier store unavailable (%s): holding work and retrying", exc)
        self._inc("frontier/store_errors")

    # -- helpers -----------------------------------------------------------------------

    def _fields(self, request: Request) -> dict:
        return request_fields(request, self.spider)

    def _template(self, template: Request) -> dict:
        """``request_fields(template)``, computed once per template."""
        cached = self._templates.get(id(template))
        if cached is None or cached[0] is not template:
            cached = self._templates[id(template)] = (template, self._fields(template))
        return cached[1]

    def _drop(self, reason: str) -> bool:
        self._inc(f"frontier/dropped/{reason}")
        if reason != "seen":  # the frontier counts its own seen-filter drops
            self._drops[reason] = self._drops.get(reason, 0) + 1
        return False

    def _inc(self, key: str, n: int = 1) -> None:
        if self.stats is not None and n:
            self.stats.inc_value(key, n)


def _usable(lease: Lease, margin_s: float = SERVE_LEASE_MARGIN_S) -> bool:
    """Whether a lease kept in this process has ``margin_s`` left: one kept too long may
    have expired and gone to another worker, which fetches its URL too."""
    return time.time() < lease.deadline - margin_s


def _take_over_autothrottle(crawler, politeness: Politeness) -> None:
    """With ``AUTOTHROTTLE_ENABLED``, the frontier's politeness follows the ``AUTOTHROTTLE_*``
    settings (``Politeness.from_settings``); Scrapy's own AutoThrottle extension, if a
    project left it in ``EXTENSIONS``, must not also slow Scrapy's download slots on top:
    it is disconnected before the spider opens (it acts on ``spider_opened`` and
    ``response_downloaded`` only)."""
    from scrapy.extensions.throttle import AutoThrottle

    throttle = crawler.get_extension(AutoThrottle)
    if throttle is not None:
        crawler.signals.disconnect(throttle._spider_opened, signal=signals.spider_opened)
        crawler.signals.disconnect(throttle._response_downloaded,
                                   signal=signals.response_downloaded)
        crawler.stats.set_value("frontier/autothrottle_disconnected", 1)
    target = crawler.settings.getfloat("AUTOTHROTTLE_TARGET_CONCURRENCY", 1.0)
    if target > 1:
        logger.warning(
            "AUTOTHROTTLE_TARGET_CONCURRENCY is %g: the frontier sends at most one request "
            "per host at a time (its lease), so it acts as 1", target)
    logger.info(
        "AUTOTHROTTLE_ENABLED: host delay >= %.3g x latency (at most %g s), %g s after a "
        "host's first response, never below FRONTIER_DELAY %g s",
        politeness.latency_factor, politeness.max_latency_delay, politeness.start_delay,
        politeness.default_delay)


def _took_budget(meta: dict) -> bool:
    """Whether a queued request took a page of its host's budget: a recrawl or a cloaking
    probe is no new page (``Admission.admit``)."""
    return not (meta.get("recrawl") or meta.get("quality_probe"))


def _remembering(policy: ReferrerPolicy) -> ReferrerPolicy:
    """``policy`` (made for one page) remembering what it reads of a URL: it is asked once
    per origin the page's links reach and strips and parses the page's own URL each time
    (each strip a parse of the URL with urllib)."""
    for name in ("stripped_referrer", "origin_referrer", "strip_url", "origin",
                 "tls_protected", "potentially_trustworthy"):
        setattr(policy, name, _remembered(getattr(policy, name)))
    return policy


def _remembered(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` answering each call it was made before from memory: ``functools.cache``
    without its wrapper's making (``update_wrapper`` copies six attributes, ~2 us, six
    times for each page)."""
    memo: dict = {}

    def remembered(*args, **kwargs):
        key = (args, *kwargs.items())
        try:
            return memo[key]
        except KeyError:
            value = memo[key] = method(*args, **kwargs)
            return value

    return remembered


def _origin(url: str) -> str:
    """``scheme://authority`` of an absolute URL."""
    end = url.find("/", url.find("//") + 2)
    return url if end < 0 else url[:end]


def _ignore_response(response):
    """robots.txt responses are consumed by the scheduler, not the spider."""
    return None


def _ignore_failure(failure):
    """A failed robots.txt fetch is recorded by the scheduler from the download signals."""
    return None


def _retry_after(value: bytes | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP-date)."""
    if not value:
        return None
    text = value.decode("latin-1").strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
