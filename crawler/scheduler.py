"""``FrontierScheduler``: Scrapy's scheduler slot backed by the shared Mercator frontier.

Requests go through trap guards, host rules and the seen filter into the frontier
(batched); the engine gets requests from leases, a few per concurrent slot buffered
locally. Outcomes come back through Scrapy's signals and release the lease with status and
latency, which sets the host's next-eligible time. The lease, not Scrapy's download slots,
keeps one request per host in flight across every worker of the crawl.
"""

from __future__ import annotations

import email.utils
import logging
import sqlite3
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import ClassVar

import redis.exceptions
from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.resolver import dnscache
from scrapy.spidermiddlewares.referer import RefererMiddleware
from scrapy.utils.request import request_from_dict
from twisted.internet import task

from crawler import aliases
from crawler.bounded import bound
from crawler.config import config_from_settings
from crawler.frontier import Entry, Frontier, Lease, Outcome, frontier_options, open_frontier
from crawler.frontier.base import ROBOTS_RANK, Politeness, request_tier
from crawler.frontier.codec import decode_request, encode_request
from crawler.frontier.value import ValueOrder
from crawler.hostrules import HostRules
from crawler.options import Option, enabled, setting, settings_to_options
from crawler.resolver import parse_overrides, resolve_override
from crawler.robots import RobotsPolicy
from crawler.signals import (
    host_acquitted,
    host_budget_cut,
    host_condemned,
    host_scored,
    links_extracted,
    pattern_trapped,
    soft_404_found,
)
from crawler.traps import DeadSubtrees, TrapGuard
from crawler.urls import InvalidURL, canonicalize, host_of, netloc_of

logger = logging.getLogger(__name__)

#: The budget cut an acquitted host gets: above any entry's own, so that one applies.
UNCUT_BUDGET = 2**31 - 1

#: The frontier's store is unreachable for now (Redis restarting, SQLite locked): the
#: scheduler keeps what it holds, retries, and the crawl goes on when the store is back.
STORE_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
              sqlite3.OperationalError)


class FrontierScheduler(BaseScheduler):
    """Scheduler whose queue is a ``Frontier`` (local SQLite, or Redis when configured).

    Built by ``from_crawler`` from the ``FRONTIER_*`` settings (``SETTINGS`` here, the
    frontier's ``crawler.frontier.SETTINGS``, the robots, trap and host-rule settings); the
    defaults are in crawler/settings.py.
    """

    #: Setting -> keyword option of ``__init__``.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "FRONTIER_TIERS": ("tiers", int),
        "FRONTIER_RELEASE_INTERVAL": ("release_interval", float),
        "FRONTIER_STATS_INTERVAL": ("stats_interval", float),
        "FRONTIER_RESET": ("reset", bool),
        "FRONTIER_PERSIST": ("persist", bool),
    }

    def __init__(
        self,
        frontier: Frontier,
        host_rules: HostRules,
        traps: TrapGuard,
        robots: RobotsPolicy | None = None,
        *,
        stats=None,
        tiers: int,
        release_interval: float,
        stats_interval: float,
        reset: bool,
        persist: bool,
        buffer_size: int = 48,
        add_batch: int = 200,
        host_budget: int | None = None,
        ip_of: Callable[[str], str] | None = None,
        seeds_key: str | None = None,
        poll_interval: float = 0.05,
        referrer: RefererMiddleware | None = None,
        value_order: ValueOrder | None = None,
        dead_subtrees: DeadSubtrees | None = None,
        low_share: float = 0.0,
        repush_urls: int = 0,
    ):
        self.frontier = frontier
        self.host_rules = host_rules
        self.traps = traps
        self.robots = robots
        self.stats = stats
        self.tiers = tiers
        self.buffer_size = buffer_size
        self.add_batch = add_batch
        self.host_budget = host_budget
        self.ip_of = ip_of or (lambda host: host)
        self.seeds_key = seeds_key
        self.poll_interval = poll_interval
        self.release_interval = release_interval
        self.stats_interval = stats_interval
        self.reset = reset
        self.persist = persist
        self.referrer = referrer
        self.value_order = value_order
        self.dead_subtrees = dead_subtrees
        self.low_share = low_share if value_order is not None else 0.0
        self.repush_urls = repush_urls if value_order is not None else 0
        # URL moved up by the value order (``_repush``) -> [one copy was handed out, the
        # ranks of its copies not leased yet]
        self._copies: OrderedDict[str, list] = OrderedDict()
        # leases of low-standing hosts held back while better hosts have work: (since, lease)
        self._held: deque[tuple[float, Lease]] = deque()
        self._last_good = 0.0
        self._served_low: deque[bool] = deque(maxlen=LOW_LANE_WINDOW)
        self._condemned: dict[str, str] = {}
        self.spider = None
        self.crawler = None
        self._adds: list[Entry] = []
        self._buffer: deque[Lease] = deque()
        self._inflight: dict[Request, Lease] = {}
        self._responses: dict[Request, Outcome] = {}
        # URL queued lately -> (rank, link depth) it waits with, None if it is not to be
        # moved up (handed out, no value order)
        self._recent: OrderedDict[str, tuple[float, int] | None] = OrderedDict()
        self._last_poll = 0.0
        self._poll_now = True
        self._pending_cache = (0.0, 0)
        self._done: deque[tuple[Lease, Outcome]] = deque()
        self._down_since: float | None = None
        self._loops: list[task.LoopingCall] = []
        self._drops: dict[str, int] = {}
        self._ticks = 0
        self._templates: dict[int, tuple[Request, dict]] = {}

    @classmethod
    def from_crawler(cls, crawler) -> FrontierScheduler:
        s = crawler.settings
        config = config_from_settings(s)
        politeness = Politeness.from_settings(s)
        if enabled(s, "AUTOTHROTTLE_ENABLED"):
            _take_over_autothrottle(crawler, politeness)
        crawl = s.get("FRONTIER_CRAWL") or crawler.spidercls.name
        frontier = open_frontier(config, crawl, **frontier_options(s, politeness=politeness))
        robots = RobotsPolicy.from_settings(s, frontier) if enabled(s, "FRONTIER_ROBOTS") else None
        overrides = parse_overrides(s.get("RESOLVE_OVERRIDES"))
        seeds_key = aliases.get(s, "FRONTIER_SEEDS_KEY") or getattr(frontier, "seeds_key", None)
        if seeds_key and "%(" in seeds_key:
            seeds_key = seeds_key % {"name": crawler.spidercls.name}
        scheduler = cls(
            frontier,
            HostRules.from_settings(s),
            TrapGuard.from_settings(s),
            robots,
            stats=crawler.stats,
            buffer_size=(setting(s, "FRONTIER_BUFFER_PER_SLOT", int)
                         * setting(s, "CONCURRENT_REQUESTS", int)),
            host_budget=setting(s, "FRONTIER_HOST_PAGE_BUDGET", int) or None,
            ip_of=lambda host: resolve_override(host, overrides) or _cached_ip(host) or host,
            seeds_key=seeds_key,
            referrer=RefererMiddleware(s) if s.getbool("REFERER_ENABLED") else None,
            # reset and persist may come from their scrapy-redis names (crawler/aliases.py)
            **settings_to_options(s, cls.SETTINGS, reset=aliases.getbool(s, "FRONTIER_RESET"),
                                  persist=aliases.getbool(s, "FRONTIER_PERSIST")),
            value_order=_value_order(s),
            dead_subtrees=DeadSubtrees.from_settings(s),
            low_share=setting(s, "FRONTIER_VALUE_LOW_SHARE", float) or 0.0,
            # a worker cannot tell whether another fetched a URL: one process only
            repush_urls=0 if config.frontier_urls else (
                setting(s, "FRONTIER_VALUE_REPUSH_URLS", int) or 0),
        )
        scheduler.crawler = crawler
        if s.getbool("ROBOTSTXT_OBEY") and scheduler.robots is not None:
            logger.warning(
                "ROBOTSTXT_OBEY is on: Scrapy's RobotsTxtMiddleware fetches robots.txt outside "
                "the frontier's leases; set ROBOTSTXT_OBEY = False, FrontierScheduler obeys "
                "robots.txt itself"
            )
        crawler.signals.connect(scheduler.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(scheduler.response_received, signal=signals.response_received)
        crawler.signals.connect(
            scheduler.request_left_downloader, signal=signals.request_left_downloader
        )
        crawler.signals.connect(scheduler.cut_host_budget, signal=host_budget_cut)
        crawler.signals.connect(scheduler.enqueue_links, signal=links_extracted)
        crawler.signals.connect(scheduler.condemn_host, signal=host_condemned)
        crawler.signals.connect(scheduler.acquit_host, signal=host_acquitted)
        crawler.signals.connect(scheduler.trap_pattern, signal=pattern_trapped)
        crawler.signals.connect(scheduler.soft_404, signal=soft_404_found)
        crawler.signals.connect(scheduler.score_host, signal=host_scored)
        return scheduler

    # -- BaseScheduler -----------------------------------------------------------------

    def open(self, spider) -> None:
        self.spider = spider
        if self.reset:
            self.frontier.clear()
        for interval, fn in (
            (self.release_interval, self.release_expired),
            (self.stats_interval, self.update_stats),
            (0.2, self.tick),
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
        self._settle()
        try:
            self.flush()
            for lease in [*self._buffer, *(held for _, held in self._held),
                          *self._inflight.values()]:
                self.frontier.done(lease, Outcome(requeue=True))
            self.update_stats()
        except STORE_DOWN as exc:  # the leases expire and go back to the queue on their own
            logger.error("frontier store unavailable at close (%s): leases left to expire", exc)
        self._buffer.clear()
        self._held.clear()
        self._inflight.clear()
        if not self.persist:
            logger.info("FRONTIER_PERSIST is off: clearing the frontier of this crawl")
            try:
                self.frontier.clear()
            except STORE_DOWN as exc:
                logger.error("frontier store unavailable at close (%s): not cleared", exc)
        self.frontier.close()

    def has_pending_requests(self) -> bool:
        if self._adds or self._buffer or self._held:
            return True
        now = time.monotonic()
        checked, pending = self._pending_cache
        if now - checked > 1.0:
            try:
                self.flush()
                pending = self.frontier.pending()
            except STORE_DOWN as exc:
                self._store_down(exc)
                return True  # unknown: the crawl must not end because the store is away
            self._pending_cache = (now, pending)
        return pending > 0

    def enqueue_request(self, request: Request) -> bool:
        return self._queue(
            request.url,
            request.meta.get("depth", 0),
            lambda queued: self._serialize(request, queued),
            tier=self._tier(request.meta),
            valued="frontier_tier" not in request.meta,
            filter=not request.dont_filter,
            # a cloaking probe fetches a page held already: no new page for the budget
            recrawl=bool(request.meta.get("recrawl") or request.meta.get("quality_probe")),
        )

    def enqueue_links(
        self, response, urls, depth: int, template: Request, spider=None, outlinks: int = 0,
        seen=(), **kwargs,
    ) -> bool:
        """Handler of ``links_extracted``: queue ``urls`` found on ``response`` as copies of
        ``template`` at ``depth``, without building a Request each (``outlinks``: how many
        links the page has in all, for the value order's shares; ``seen``: its links queued
        before, whose value this in-link raises)."""
        if self.value_order is not None:
            self.value_order.distribute(response.url, [*urls, *seen], depth, outlinks)
        base = self._template(template)
        meta = {**template.meta, "depth": depth}
        tier = self._tier(meta)
        policy = self.referrer.policy(response, template) if self.referrer else None
        base = {**base, "meta": meta}
        # origin -> the fields of its links and, once encoded, their payload: a link queued
        # as itself (canonical) is stored without its URL, so one origin's links share it
        by_origin: dict[str, list] = {}
        queued = 0

        def payload(canonical: str, url: str, shared: list) -> bytes:
            if canonical != url:
                return encode_request({**shared[0], "url": url}, canonical)
            if shared[1] is None:
                shared[1] = encode_request({**shared[0], "url": url}, canonical)
            return shared[1]

        def shared_for(url: str) -> list:
            # the standard referrer policies look at the target's origin only
            origin = _origin(url)
            shared = by_origin.get(origin)
            if shared is None:
                referer = policy.referrer(response.url, url) if policy else None
                shared = by_origin[origin] = [
                    {**base, "headers": {**base.get("headers", {}),
                                         b"Referer": [referer.encode()]}}
                    if referer else base,
                    None,
                ]
            return shared

        for url in urls:
            shared = shared_for(url)
            queued += self._queue(
                url, depth,
                lambda canonical, url=url, shared=shared: payload(canonical, url, shared),
                tier=tier,
                count=False,
                valued="frontier_tier" not in meta,
            )
        self._inc("frontier/enqueued", queued)
        if self.repush_urls and "frontier_tier" not in meta:
            for url in seen:
                queued_as = self._recent.get(url)
                if queued_as is not None:
                    self._repush(url, *queued_as, depth, lambda d, url=url: encode_request(
                        {**shared_for(url)[0], "meta": {**meta, "depth": d}, "url": url},
                        url))
        return True

    def _repush(self, url: str, queued: float, queued_depth: int, depth: int,
                payload: Callable[[int], bytes]) -> None:
        """Queue ``url`` (queued with rank ``queued`` at ``queued_depth``, not yet handed
        out), found again at link ``depth``, once more when in-links (or a shorter path)
        raised its rank by ``REPUSH_GAIN`` or more, at most
        ``REPUSH_COPIES`` copies in all: the frontier's seen filter keeps one entry per URL,
        so the new copy skips it (and the host's budget: it is no new page); the copy handed
        out first is fetched, the others are dropped when leased
        (``frontier/dropped/repushed``). Only with the embedded frontier: with workers
        sharing a Redis frontier, a copy of a URL another worker fetched would be fetched
        again."""
        copies = self._copies.get(url) or [False, [round(queued, 3)]]
        if copies[0] or len(copies[1]) >= REPUSH_COPIES:
            return
        netloc = netloc_of(url)
        depth = min(depth, queued_depth)
        rank = self.value_order.rank(url, netloc, depth)
        if rank > queued - REPUSH_GAIN:
            return
        host = host_of(url)
        if (self._condemned and host in self._condemned) or self.traps.blocked(url) or (
                self.dead_subtrees is not None and self.dead_subtrees.dying(url)):
            return
        self._recent[url] = (rank, depth)
        copies[1].append(round(rank, 3))
        self._copies[url] = copies
        self._copies.move_to_end(url)
        bound(self._copies, self.repush_urls)
        self._adds.append(Entry(url=url, host=netloc, payload=payload(depth), rank=rank,
                                filter=False, budget=None, ip=self.ip_of(host)))
        self._inc("frontier/repushed")
        if len(self._adds) >= self.add_batch:
            self.flush()

    def _queue(
        self,
        raw_url: str,
        depth: int,
        payload: Callable[[str], bytes],
        *,
        tier: int,
        filter: bool = True,
        recrawl: bool = False,
        count: bool = True,
        valued: bool = False,
    ) -> bool:
        """Trap guards, host rules and the seen filter, then the URL into the add batch
        (counted in ``frontier/enqueued`` if ``count``)."""
        # links are mostly canonical already and mostly repeats: drop those before the cost
        # of canonicalizing and serializing
        if filter and raw_url in self._recent:
            return self._drop("seen")
        try:
            url = canonicalize(raw_url)
        except InvalidURL as exc:
            return self._drop(exc.reason)
        reason = self.traps.check(url, depth)
        if reason:
            return self._drop(reason)
        host = host_of(url)
        policy = self.host_rules.policy(host)
        if policy.blocked:
            return self._drop("blocked")
        condemned = self._condemned.get(host) if self._condemned else None
        if condemned and not recrawl and policy.quality != "trusted":
            return self._drop(condemned)
        netloc = netloc_of(url)
        if valued and self.value_order is not None:
            tier = self.value_order.rank(url, netloc, depth)
        if self.dead_subtrees is not None and self.dead_subtrees.dying(url):
            tier = self.tiers - 1
        if filter:
            if url in self._recent:
                return self._drop("seen")
            self._recent[url] = (tier, depth) if valued and self.repush_urls else None
            bound(self._recent, 100_000)
        try:
            data = payload(url)
        except ValueError:  # a callback that is not a spider method cannot be stored
            logger.exception("cannot store %s in the frontier", raw_url)
            return self._drop("unserializable")
        self._adds.append(
            Entry(
                url=url,
                host=netloc,
                payload=data,
                rank=tier,
                filter=filter,
                # a recrawl is no new page: it does not count against the host's budget
                budget=None if recrawl else (policy.page_budget or self.host_budget),
                ip=self.ip_of(host),
            )
        )
        if count:
            self._inc("frontier/enqueued")
        if len(self._adds) >= self.add_batch:
            self.flush()
        return True

    def next_request(self) -> Request | None:
        try:
            while True:
                lease = self._pick_lease()
                if lease is None:
                    return None
                request = self._request_for(lease)
                if request is not None:
                    self._handed_out(lease.url)
                    self._inflight[request] = lease
                    self._inc("frontier/dequeued")
                    return request
        except STORE_DOWN as exc:  # a lease in hand expires and returns to the queue
            self._store_down(exc)
            return None

    # -- leases ------------------------------------------------------------------------

    def _pick_lease(self) -> Lease | None:
        """The next lease to serve: a held-back one when the low-value lane has room, else
        the buffer's next, holding back leases of low-standing hosts while they had their
        share (``low_share``) of the last ``LOW_LANE_WINDOW`` fetches and better hosts had
        work within ``LOW_LANE_IDLE_S``."""
        while self._held and self._lane_open():
            lease = self._held.popleft()[1]
            if _usable(lease):
                return self._serve(lease, low=True)
            self._return_held(lease)
        while True:
            lease = self._next_lease()
            if lease is None or self.low_share <= 0 or lease.is_robots:
                return lease
            if not self.value_order.is_low(lease.host):
                self._last_good = time.monotonic()
                return self._serve(lease, low=False)
            if self._lane_open():
                return self._serve(lease, low=True)
            self._held.append((time.monotonic(), lease))
            self._inc("frontier/held_back")

    def _serve(self, lease: Lease, low: bool) -> Lease:
        self._served_low.append(low)
        return lease

    def _lane_open(self) -> bool:
        """Whether a low-standing host may be fetched now."""
        if time.monotonic() - self._last_good > LOW_LANE_IDLE_S:
            return True  # no better host had work lately: the lane is the whole crawl
        served = self._served_low
        return sum(served) < self.low_share * max(len(served), 1)

    def _release_held(self) -> None:
        """Give held-back leases back to the frontier after ``LOW_LANE_HOLD_S``, or sooner
        when their lease has less than ``HELD_LEASE_MARGIN_S`` left (a short
        ``FRONTIER_LEASE_S``): an expired lease goes to another worker, and a held copy
        served after that would fetch its URL twice."""
        now = time.monotonic()
        kept: deque[tuple[float, Lease]] = deque()
        for since, lease in self._held:
            if now - since > LOW_LANE_HOLD_S or not _usable(lease, HELD_LEASE_MARGIN_S):
                self._return_held(lease)
            else:
                kept.append((since, lease))
        self._held = kept

    def _return_held(self, lease: Lease) -> None:
        self.frontier.done(lease, Outcome(requeue=True))
        self._inc("frontier/held_back_returned")

    def _next_lease(self) -> Lease | None:
        now = time.monotonic()
        # poll again at once only while the frontier keeps up; after a short answer, wait
        # poll_interval so an engine spinning on next_request does not hammer the store
        if len(self._buffer) <= self.buffer_size // 2 and (
            self._poll_now or now - self._last_poll >= self.poll_interval
        ):
            self._last_poll = now
            self.flush()  # so that hosts found since the last poll can be leased
            want = self.buffer_size - len(self._buffer)
            leases = self.frontier.next_ready(want)
            self._poll_now = len(leases) == want
            self._inc("frontier/leased", len(leases))
            if not self._poll_now:
                self._inc("frontier/politeness_waits")
            self._buffer.extend(leases)
        while self._buffer:
            lease = self._buffer.popleft()
            if _usable(lease):
                return lease
            self._inc("frontier/buffer_expired")
        return None

    def _handed_out(self, url: str) -> None:
        """``url`` goes to the engine: it is not moved up any more."""
        if url in self._recent:
            self._recent[url] = None

    def _request_for(self, lease: Lease) -> Request | None:
        """The request to send for ``lease``, or None after settling the lease here."""
        if lease.is_robots:
            return self._robots_request(lease)
        reason = self._not_worth(lease)
        if reason:
            self._inc(f"frontier/dropped/{reason}")
            self._drops[reason] = self._drops.get(reason, 0) + 1
            self.frontier.done(lease, Outcome(fetched=False))
            return None
        if self.robots is not None:
            allowed = self.robots.allowed(lease.url, lease.host)
            if allowed is None:
                scheme = lease.url.split(":", 1)[0]
                robots_url = RobotsPolicy.robots_url(scheme, lease.host)
                self.frontier.add([Entry(robots_url, lease.host, rank=ROBOTS_RANK,
                                         filter=False)])
                self.frontier.done(lease, Outcome(requeue=True))
                self._poll_now = True  # the robots.txt fetch is ready now: poll again
                return None
            if not allowed:
                self._inc("robots/disallowed")
                self.frontier.done(lease, Outcome(fetched=False))
                return None
        if self._copies and self._another_copy_went(lease):
            self._inc("frontier/dropped/repushed")
            self._drops["repushed"] = self._drops.get("repushed", 0) + 1
            self.frontier.done(lease, Outcome(fetched=False))
            return None
        try:
            return request_from_dict(decode_request(lease.url, lease.payload),
                                     spider=self.spider)
        except Exception:
            logger.exception("cannot rebuild the request of %s; dropping it", lease.url)
            self._inc("frontier/dropped/undecodable")
            self.frontier.done(lease, Outcome(fetched=False))
            return None

    def _another_copy_went(self, lease: Lease) -> bool:
        """Whether ``lease`` is a copy of a re-pushed URL (known by its rank: a probe, a
        retry or a recrawl of the URL is none) of which another copy went out before; if
        it is the first, it goes out."""
        copies = self._copies.get(lease.url)
        rank = round(lease.rank, 3)
        if copies is None or rank not in copies[1]:
            return False
        went, copies[0] = copies[0], True
        copies[1].remove(rank)
        if not copies[1]:
            del self._copies[lease.url]
        return went

    def _not_worth(self, lease: Lease) -> str | None:
        """Why a leased URL found worthless since it was queued is dropped, or None."""
        if self._condemned:
            host = host_of(lease.url)
            reason = self._condemned.get(host)
            if reason and self.host_rules.policy(host).quality != "trusted":
                return reason
        if self.traps.blocked(lease.url):
            return "template_trap"
        if self.dead_subtrees is not None and self.dead_subtrees.dead(lease.url):
            return "dead_subtree"
        return None

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

    def response_downloaded(self, response, request, spider=None) -> None:
        """Record status, latency and Retry-After; store robots.txt before the lease ends."""
        if request not in self._inflight:
            return
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
        """Release the lease of ``request`` with what happened to it."""
        lease = self._inflight.pop(request, None)
        if lease is None:
            return
        outcome = self._responses.pop(request, None)
        if outcome is None:
            outcome = Outcome(error="timeout")
            netloc = request.meta.get("frontier_robots")
            if netloc and self.robots is not None:
                self.robots.record_error(netloc)
        crawl_delay = None if self.robots is None else self._robots_delay(lease.host)
        admin = self.host_rules.policy(host_of(lease.url)).crawl_delay
        outcome = Outcome(
            status=outcome.status,
            latency=outcome.latency,
            error=outcome.error,
            retry_after=outcome.retry_after,
            crawl_delay=crawl_delay,
            admin_delay=admin,
            ip=self.ip_of(host_of(lease.url)),
        )
        if self.dead_subtrees is not None and not lease.is_robots and outcome.status:
            self.dead_subtrees.record(lease.url, outcome.status)
        self._done.append((lease, outcome))
        self._settle()
        self._inc("frontier/done")
        if outcome.status is not None:
            self._inc(f"frontier/outcome/{outcome.status}")
        else:
            self._inc("frontier/outcome/error")

    def _robots_delay(self, netloc: str) -> float | None:
        rules = self.robots.rules(netloc)
        return None if rules is None else rules.crawl_delay(self.robots.user_agent)

    def cut_host_budget(self, host: str, budget: int, **kwargs) -> None:
        """Handler of ``host_budget_cut``: no more than ``budget`` pages from ``host``."""
        self.frontier.set_host_budget(host, budget)
        self._inc("frontier/budget_cuts")

    def condemn_host(self, host: str, netloc: str = "", reason: str = "condemned",
                     **kwargs) -> None:
        """Handler of ``host_condemned``: no new URLs of ``host``, queued ones dropped."""
        if host in self._condemned:
            return
        self._condemned[host] = reason
        if netloc:
            self.frontier.set_host_budget(netloc, 0)
        self._inc("frontier/budget_cuts")
        self._inc(f"frontier/condemned/{reason}")

    def acquit_host(self, host: str, netloc: str = "", **kwargs) -> None:
        """Handler of ``host_acquitted``: ``host``'s new URLs are queued again, its budget
        cut lifted (the entries' own budget applies)."""
        if self._condemned.pop(host, None) is None:
            return
        if netloc:
            self.frontier.set_host_budget(netloc, UNCUT_BUDGET)
        self._inc("frontier/acquitted")

    def trap_pattern(self, pattern: str, **kwargs) -> None:
        """Handler of ``pattern_trapped``: drop the URLs of a template-trap pattern."""
        self.traps.block_pattern(pattern)
        self._inc("frontier/trapped_patterns")

    def soft_404(self, url: str, **kwargs) -> None:
        """Handler of ``soft_404_found``: the fetch of ``url`` counts as dead."""
        if self.dead_subtrees is not None:
            self.dead_subtrees.soft_404(url)

    def score_host(self, host: str, quality: float, **kwargs) -> None:
        """Handler of ``host_scored``: rank the host's new URLs by its quality."""
        if self.value_order is not None:
            self.value_order.set_host_quality(host, quality)

    # -- timers ------------------------------------------------------------------------

    def tick(self) -> None:
        """Flush adds, pull seeds from Redis, and wake the engine if hosts may be ready."""
        self._ticks += 1
        self._settle()
        self._release_held()
        if self._ticks % 5 == 1:  # every second
            self._pull_seeds()
        self.flush()
        engine = getattr(self.crawler, "engine", None)
        slot = getattr(engine, "_slot", None)
        if slot is not None:
            self._release_orphans(slot.inprogress)
            if slot.nextcall is not None:
                slot.nextcall.schedule()

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
            self.frontier.done(lease, Outcome(fetched=False))
            self._inc("frontier/dropped/before_download")

    def release_expired(self) -> None:
        n = self.frontier.release_expired()
        if n:
            self._inc("frontier/expired_released", n)
            logger.info("released %d expired leases", n)

    def update_stats(self) -> None:
        """Copy the frontier's cluster-wide gauges and counters into Scrapy's stats."""
        if self.stats is None:
            return
        stats = self.frontier.stats()
        for key, value in stats.items():
            self.stats.set_value(f"frontier/cluster/{key}", value)
        self.stats.set_value("frontier/queued", stats["queue_depth"])

    def flush(self) -> None:
        """Send buffered adds (and drop counts) to the frontier in one call each."""
        if self._drops:
            drops, self._drops = self._drops, {}
            try:
                for reason in list(drops):
                    self.frontier.count(f"dropped/{reason}", drops.pop(reason))
            except STORE_DOWN:
                for reason, n in drops.items():
                    self._drops[reason] = self._drops.get(reason, 0) + n
                raise
        if not self._adds:
            self._push_standings()
            return
        adds, self._adds = self._adds, []
        try:
            counts = self.frontier.add(adds)
        except STORE_DOWN:
            # kept for the next flush; a part the store took already counts as seen then
            self._adds = adds + self._adds
            raise
        if counts["added"]:
            self._pending_cache = (0.0, 0)  # new work: the next pending check must see it
        if self.repush_urls and (counts["seen"] or counts["budget"]):
            # some of these were not queued (fetched before a restart, over the budget), and
            # the counts do not say which: none of them is moved up later
            for entry in adds:
                if entry.filter and self._recent.get(entry.url) is not None:
                    self._recent[entry.url] = None
        self._inc("frontier/added", counts["added"])
        if counts["seen"]:
            self._inc("frontier/dropped/seen", counts["seen"])
        if counts["budget"]:
            self._inc("frontier/dropped/budget", counts["budget"])
        self._push_standings()

    def _push_standings(self) -> None:
        """Hand the value order's changed host standings to the frontier (after the adds,
        so the hosts exist there)."""
        if self.value_order is None:
            return
        values = self.value_order.changed_standings()
        if values:
            try:
                self.frontier.set_host_values(values)
            except STORE_DOWN:
                self.value_order.not_sent(values)
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

    def _settle(self) -> None:
        """Report finished leases to the frontier, keeping those the store could not take."""
        try:
            while self._done:
                lease, outcome = self._done[0]
                self.frontier.done(lease, outcome)
                self._done.popleft()
        except STORE_DOWN as exc:
            self._store_down(exc)

    def _guarded(self, fn) -> None:
        """Run a timer's ``fn``; a store outage is logged once and the timer keeps going."""
        try:
            fn()
        except STORE_DOWN as exc:
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

    def _serialize(self, request: Request, queued_url: str) -> bytes:
        """``request.to_dict`` without its per-call scan of the spider's members, encoded
        compactly for the queue of ``queued_url`` (crawler/frontier/codec.py)."""
        return encode_request(self._request_dict(request), queued_url)

    def _template(self, template: Request) -> dict:
        """``_request_dict(template)``, computed once per template."""
        cached = self._templates.get(id(template))
        if cached is None or cached[0] is not template:
            cached = self._templates[id(template)] = (template, self._request_dict(template))
        return cached[1]

    def _request_dict(self, request: Request) -> dict:
        d = {
            "url": request.url,
            "callback": self._method_name(request.callback),
            "errback": self._method_name(request.errback),
            "headers": dict(request.headers),
        }
        for attr in request.attributes:
            d.setdefault(attr, getattr(request, attr))
        if type(request) is not Request:
            d["_class"] = f"{type(request).__module__}.{type(request).__name__}"
            return d
        # what request_from_dict fills in by itself need not be stored for each URL
        return {k: v for k, v in d.items() if k == "url" or _DEFAULTS.get(k, d) != v}

    def _method_name(self, func) -> str | None:
        """The name of the spider method ``func`` (ValueError if it is not one)."""
        if func is None or isinstance(func, str):
            return func
        name = getattr(func, "__name__", None)
        bound = getattr(self.spider, name, None) if name else None
        if bound is not None and getattr(bound, "__func__", None) is getattr(
            func, "__func__", func
        ):
            return name
        raise ValueError(f"{func!r} is not a method of the spider {self.spider!r}")

    def _tier(self, meta: dict) -> int:
        return min(max(request_tier(meta), 0), self.tiers - 1)

    def _drop(self, reason: str) -> bool:
        self._inc(f"frontier/dropped/{reason}")
        if reason != "seen":  # the frontier counts its own seen-filter drops
            self._drops[reason] = self._drops.get(reason, 0) + 1
        return False

    def _inc(self, key: str, n: int = 1) -> None:
        if self.stats is not None and n:
            self.stats.inc_value(key, n)


#: Seconds without a lease of a host in good standing after which the low-value lane opens
#: to every slot (better hosts are done, or all wait for their politeness delay): short, so
#: that a crawl whose last good host has a Crawl-delay of 1 s does not crawl the rest at a
#: tenth of that rate.
LOW_LANE_IDLE_S = 0.5
#: Seconds a lease held back for the low-value lane is kept before it goes back.
LOW_LANE_HOLD_S = 10.0
#: A held-back lease goes back to the frontier while it has at least this long left.
HELD_LEASE_MARGIN_S = 2.0
#: A lease kept in this process is served only while it has at least this long left.
SERVE_LEASE_MARGIN_S = 1.0
#: Fetches over which the low-value lane's share is counted.
LOW_LANE_WINDOW = 100
#: Ranks a queued URL's value must rise by before it is queued once more (0.002: about 5%
#: more value for a URL of a site's home page; ``ValueOrder.rank``).
REPUSH_GAIN = 0.002
#: Queued copies of one URL at most (the first and its re-pushes).
REPUSH_COPIES = 3

def _usable(lease: Lease, margin_s: float = SERVE_LEASE_MARGIN_S) -> bool:
    """Whether a lease kept in this process (buffered or held back) has ``margin_s`` left: one
    kept too long may have expired and gone to another worker, which fetches its URL too."""
    return time.time() < lease.deadline - margin_s


_BLANK = Request("http://blank.invalid/")
#: attribute values of a plain Request made from a URL alone
_DEFAULTS = {attr: getattr(_BLANK, attr) for attr in Request.attributes if attr != "url"}
_DEFAULTS["headers"] = {}


def _value_order(settings) -> ValueOrder | None:
    """The value order when ``FRONTIER_ORDER`` is ``value``; None for ``depth`` (breadth-first)."""
    order = setting(settings, "FRONTIER_ORDER", str)
    if order == "depth":
        return None
    if order != "value":
        raise ValueError(f"FRONTIER_ORDER must be 'value' or 'depth', not {order!r}")
    return ValueOrder(setting(settings, "FRONTIER_TIERS", int),
                      base=setting(settings, "FRONTIER_VALUE_BASE", float),
                      max_urls=setting(settings, "FRONTIER_VALUE_MAX_URLS", int),
                      max_hosts=setting(settings, "FRONTIER_VALUE_MAX_HOSTS", int))


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


def _origin(url: str) -> str:
    """``scheme://authority`` of an absolute URL."""
    end = url.find("/", url.find("//") + 2)
    return url if end < 0 else url[:end]


def _cached_ip(host: str) -> str | None:
    """The address Scrapy's DNS cache holds for ``host``, without resolving anything."""
    value = dnscache.get(host)
    if isinstance(value, str):
        return value
    if value:  # CachingHostnameResolver keeps a list of addresses
        return getattr(value[0], "host", None)
    return None


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
