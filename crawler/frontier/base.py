"""The ``Frontier`` contract: what every backend (local SQLite, Redis) promises.

Mercator layout: entries wait in one back queue per host; hosts with pending work sit in
one of several front (priority) tiers, keyed by their next-eligible time; a biased
round-robin selector picks the tier, so the lowest tier is still served. A host handed out
is *leased*: no other worker gets that host until the lease is done or times out.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from scrapy.settings import default_settings as scrapy_defaults

from crawler.options import Option, enabled, setting, settings_to_options

#: ``Entry.rank`` of a robots.txt fetch: always at the head of its host's queue.
ROBOTS_RANK = -1
#: Within a front tier, the host leased next is the best (``host_priority``) of this many
#: hosts that have been eligible longest: a bounded look at each lease.
HOST_WINDOW = 32
#: A host's priority grows by its value for every this many seconds it has waited while
#: eligible, so no host waits for ever behind better ones: one of value v waits at most
#: ``HOST_AGE_S * (1 / v - 1)`` seconds for hosts of value 1 that just became eligible.
HOST_AGE_S = 60.0


def host_priority(value: float, waited: float) -> float:
    """The priority of an eligible host of ``value`` that has waited ``waited`` seconds
    since its next-eligible time; every backend computes the same."""
    return value * (1.0 + max(0.0, waited) / HOST_AGE_S)


def request_tier(meta: dict) -> int:
    """The front tier a request asks for: ``meta["frontier_tier"]``, else its link depth
    (not capped: callers cap it to their number of tiers)."""
    tier = meta.get("frontier_tier")
    return int(meta.get("depth", 0) if tier is None else tier)


#: Status codes and download errors that make a host back off exponentially.
BACKOFF_STATUSES = frozenset({429, 500, 502, 503, 504})
BACKOFF_ERRORS = frozenset({"timeout", "connection"})


class Entry(NamedTuple):
    """A URL to crawl: its canonical ``url``, ``host``, and the serialized request.

    ``rank`` is the front-queue tier (0 = most important) or ``ROBOTS_RANK``; it may be
    fractional (in steps of 1/1000, the value order's): the queue is ordered by it, the host
    waits in the tier of its integer part;
    ``filter`` runs the URL through the seen filter; ``budget`` is the host's page budget
    (``None`` = unlimited; a page refused by it waits on the host's waiting list, see
    ``Frontier.add``); an entry with neither (a copy of a page queued before, as the value
    order's re-push) takes none of the budget; ``ip`` groups hosts that share a per-IP
    concurrency limit; ``was``, on a copy of a page queued before, is the rank that page
    was queued with: a backend moves the queued page up instead of queuing the copy where
    it can (``Frontier.add``). A named tuple: one is made for each URL queued, at a fifth
    of a frozen dataclass's cost.
    """

    url: str
    host: str
    payload: bytes = b""
    rank: float = 0
    filter: bool = True
    budget: int | None = None
    ip: str = ""
    was: float | None = None

    @property
    def is_robots(self) -> bool:
        return self.rank == ROBOTS_RANK


@dataclass(frozen=True)
class Lease:
    """A host handed to one worker together with the head entry of its queue.

    ``latency`` and ``backoff`` are the host's politeness state when it was leased, so the
    worker can compute the next delay without another round trip (it owns the host until
    it reports the outcome). ``wait``: seconds from the lease until the host's
    next-eligible time (0 when it was due), for a host leased ahead of it
    (``Frontier.next_ready``'s ``ahead``): its request must not start sooner.
    """

    id: str
    host: str
    entry_id: str
    url: str
    payload: bytes
    rank: float
    deadline: float
    attempts: int = 0
    latency: float = 0.0
    backoff: int = 0
    wait: float = 0.0

    @property
    def is_robots(self) -> bool:
        return self.rank == ROBOTS_RANK


@dataclass(frozen=True)
class Outcome:
    """What happened to a leased request.

    ``status``/``latency``/``error``/``retry_after`` describe a fetch; ``crawl_delay`` is
    the host's configured delay (robots Crawl-delay, already capped) and ``admin_delay``
    an admin override that wins over it. ``fetched=False`` means no request reached the
    host (e.g. robots-disallowed): the entry is finished without a politeness delay.
    ``requeue=True`` puts the entry back at the head of its queue instead of finishing it.
    ``refund=True`` (with ``fetched=False``): the entry took a page of its host's budget
    when added and was dropped unfetched (robots.txt, a dead directory, scope, a condemned
    host found when leased): the host gets that page back, and the best URL of its waiting
    list takes it. ``ip``, when known after the fetch, regroups the host under that address
    for the per-IP limit. ``age``: how long before this report the response arrived (a
    report settled in a batch comes a little after it): the host's delay runs from the
    arrival.
    """

    status: int | None = None
    latency: float | None = None
    error: str | None = None
    retry_after: float | None = None
    crawl_delay: float | None = None
    admin_delay: float | None = None
    fetched: bool = True
    requeue: bool = False
    ip: str | None = None
    refund: bool = False
    age: float = 0.0


@dataclass(frozen=True)
class HostState:
    """One host's crawl state, for inspection: entries queued (a leased one included),
    whether it is leased, when it may be fetched next (epoch s), pages added against its
    budget, a budget cut, its politeness state (latency average, backoff level) and the
    pages its budget refused that wait for a page of it (``Frontier.add``)."""

    host: str
    queued: int
    leased: bool
    next_eligible: float
    pages_added: int
    budget_cut: int | None
    latency: float
    backoff: int
    waiting: int = 0


def _scrapy_setting(settings: Any, name: str) -> float:
    """A float setting whose default is Scrapy's own (``scrapy.settings.default_settings``)."""
    value = setting(settings, name, float)
    return float(getattr(scrapy_defaults, name)) if value is None else value


@dataclass(frozen=True)
class Politeness:
    """Computes a host's next delay from its state and the last outcome.

    delay = admin override, else max(default, min(robots Crawl-delay, max_crawl_delay));
    then at least ``k`` x the latency moving average (that term capped at
    ``max_latency_delay``); after a host's first fetch at least ``start_delay``; doubled per
    consecutive 429/5xx/timeout (capped at ``max_backoff``); at least Retry-After (capped at
    ``max_retry_after``). The delay runs from the response's arrival to the next request's
    start, and a host has one request in flight at a time (its lease). The first four are
    the ``FRONTIER_*`` settings of ``SETTINGS`` (``from_settings``).
    """

    default_delay: float
    max_crawl_delay: float
    latency_factor: float
    max_backoff: float
    latency_alpha: float = 0.3
    max_retry_after: float = 3600.0
    max_latency_delay: float = math.inf
    start_delay: float = 0.0

    #: Setting -> field; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "FRONTIER_DELAY": ("default_delay", float),
        "FRONTIER_MAX_CRAWL_DELAY": ("max_crawl_delay", float),
        "FRONTIER_LATENCY_FACTOR": ("latency_factor", float),
        "FRONTIER_MAX_BACKOFF": ("max_backoff", float),
    }

    @classmethod
    def from_settings(cls, settings: Any, **fields: float) -> Politeness:
        """The policy of the ``FRONTIER_*`` settings (unset names: their defaults), ``fields``
        on top; with ``AUTOTHROTTLE_ENABLED``, Scrapy's ``AUTOTHROTTLE_*`` settings mapped
        onto it (docs/frontier.md):

        - ``AUTOTHROTTLE_TARGET_CONCURRENCY`` N (requests in flight per host on average):
          AutoThrottle starts a request every latency/N seconds; here a request starts
          ``k`` x latency after the previous response, i.e. every (1 + k) x latency, so
          k = 1/N - 1 (0 for N >= 1: the lease never allows more than one at a time);
        - ``AUTOTHROTTLE_MAX_DELAY`` caps that latency term (robots Crawl-delay, admin
          delays, backoff and Retry-After are not AutoThrottle's and keep their own caps);
        - ``AUTOTHROTTLE_START_DELAY`` is the delay after a host's first response, before
          its latency is known (AutoThrottle starts every new slot there).

        The floor stays ``FRONTIER_DELAY`` (Scrapy's ``DOWNLOAD_DELAY`` stays 0: Scrapy's
        slots must not delay on top of the frontier).
        """
        policy = cls(**settings_to_options(settings, cls.SETTINGS, **fields))
        if not enabled(settings, "AUTOTHROTTLE_ENABLED"):
            return policy
        target = _scrapy_setting(settings, "AUTOTHROTTLE_TARGET_CONCURRENCY")
        if target <= 0:
            raise ValueError(
                f"AUTOTHROTTLE_TARGET_CONCURRENCY must be above 0 (it is {target!r}): the "
                "average number of requests in flight to one host, e.g. 0.5"
            )
        return dataclasses.replace(
            policy,
            latency_factor=max(0.0, 1.0 / target - 1.0),
            max_latency_delay=_scrapy_setting(settings, "AUTOTHROTTLE_MAX_DELAY"),
            start_delay=_scrapy_setting(settings, "AUTOTHROTTLE_START_DELAY"),
        )

    def next_delay(
        self, latency: float, backoff: int, outcome: Outcome
    ) -> tuple[float, float, int]:
        """Return ``(delay, new latency average, new backoff level)``."""
        if outcome.requeue or not outcome.fetched:
            return 0.0, latency, backoff
        first = latency <= 0
        if outcome.latency is not None:
            latency = (
                outcome.latency
                if latency <= 0
                else (1 - self.latency_alpha) * latency + self.latency_alpha * outcome.latency
            )
        if outcome.admin_delay is not None:
            base = outcome.admin_delay
        else:
            base = self.default_delay
            if outcome.crawl_delay is not None:
                base = max(base, min(outcome.crawl_delay, self.max_crawl_delay))
        delay = max(base, min(self.latency_factor * latency, self.max_latency_delay))
        if first:
            delay = max(delay, self.start_delay)
        if outcome.status in BACKOFF_STATUSES or outcome.error in BACKOFF_ERRORS:
            backoff += 1
            delay = max(delay, min(self.max_backoff, max(base, 1.0) * 2.0**backoff))
        elif outcome.error is None:
            backoff = 0
        if outcome.retry_after is not None and outcome.retry_after > 0:
            delay = max(delay, min(outcome.retry_after, self.max_retry_after))
        return delay, latency, backoff


@dataclass
class TierSelector:
    """Smooth weighted round-robin over front tiers; every non-empty tier gets its share.

    Tier ``t`` of ``n`` has weight ``2 ** (n - 1 - t)``: with all tiers ready, the lowest
    tier still gets one pick in ``2 ** n - 1``.
    """

    tiers: int = 4
    current: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.current:
            self.current = [0.0] * self.tiers

    def weights(self) -> list[int]:
        return [2 ** (self.tiers - 1 - t) for t in range(self.tiers)]

    def pick(self, ready: Sequence[int]) -> int | None:
        """Pick one tier among ``ready`` (tier numbers that have an eligible host)."""
        if not ready:
            return None
        w = self.weights()
        total = 0
        best = None
        for t in ready:
            self.current[t] += w[t]
            total += w[t]
            if best is None or self.current[t] > self.current[best]:
                best = t
        self.current[best] -= total
        return best


def tier_of(rank: float, tiers: int) -> int:
    """The front tier a host with head entry of ``rank`` waits in (a fractional rank, as
    the value order gives, orders its host's queue finely and waits in its floor's tier)."""
    return min(max(int(rank), 0), tiers - 1)


@dataclass(frozen=True, kw_only=True)
class FrontierOptions:
    """The options every backend takes, declared once: the crawl's ``FRONTIER_*`` settings
    (``crawler.frontier.frontier_options`` reads them); the per-IP limit and robots.txt
    first are off unless given."""

    #: URLs the seen filter is sized for (``FRONTIER_BLOOM_CAPACITY``) and its
    #: false-positive rate at that size (``FRONTIER_BLOOM_FPR``).
    bloom_capacity: int
    bloom_fpr: float
    #: Priority front queues (``FRONTIER_TIERS``).
    tiers: int
    #: Seconds before a leased URL returns to its queue (``FRONTIER_LEASE_S``).
    lease_s: float
    #: Leases that may expire before a URL is dropped (``FRONTIER_MAX_ATTEMPTS``).
    max_attempts: int
    politeness: Politeness
    #: Leases at once over hosts that share an IP address (``FRONTIER_IP_CONCURRENCY``;
    #: 0: no limit), and the seconds a host held back by it waits before it is tried again.
    ip_limit: int = 0
    ip_wait: float = 0.25
    #: A host's robots.txt is fetched before its pages (``FRONTIER_ROBOTS``).
    robots_first: bool = False
    #: Pages a host's budget refused that wait, at most, for a page of it to come back
    #: (``FRONTIER_BUDGET_WAITING``; 0: a refused page is dropped).
    budget_waiting: int = 0


class Frontier(ABC):
    """Crawl state shared by every worker of one crawl.

    Invariants every backend keeps:
    - at most one lease per host across all workers and processes;
    - a host is not leased before its next-eligible time (set by ``done``), or
      ``next_ready``'s ``ahead`` before it, its lease then saying how long its request
      waits (``Lease.wait``);
    - a lease not reported by its deadline returns its entry to the queue on
      ``release_expired`` (after ``max_attempts`` expiries the entry is dropped);
    - everything added and not yet done survives a restart of the process (and of Redis,
      with AOF).
    """

    #: Entries whose lease expired this many times are dropped (poison URLs).
    max_attempts: int

    def _take_options(self, options: FrontierOptions) -> None:
        """Keep a backend's ``FrontierOptions`` as its attributes (``self.tiers``...)."""
        self.options = options
        self.tiers = options.tiers
        self.lease_s = options.lease_s
        self.max_attempts = options.max_attempts
        self.politeness = options.politeness
        self.ip_limit = options.ip_limit
        self.ip_wait = options.ip_wait
        self.robots_first = options.robots_first
        self.budget_waiting = options.budget_waiting

    @abstractmethod
    def add(self, entries: Iterable[Entry]) -> dict[str, int]:
        """Queue entries; returns counts ``{"added": n, "seen": n, "budget": n,
        "waiting": n, "moved": n}``.

        Entries with ``filter`` set are dropped when the seen filter already holds their
        URL (then the URL is recorded as seen). Page entries beyond the host's budget (the
        smaller of ``Entry.budget`` and a ``set_host_budget`` cut) are refused; an entry
        with neither ``filter`` nor ``budget`` (a copy of a page) counts against none. A
        page refused by its own ``Entry.budget`` (not by a cut: a cut stops a host) waits on
        the host's waiting list, in rank order (then arrival), of at most ``budget_waiting``
        entries: a better page pushes the worst out (``"budget"``: refused or pushed out,
        dropped for good; ``"waiting"``: set aside). Whenever a page of the budget comes
        back (``done`` with ``refund``, a cut raised), the best waiting page is queued
        and takes it: the host never has more pages added than its budget, and no page
        slot stays unused while a refused page waits. ``pending`` does not count the
        waiting pages. A backend built with ``robots_first`` puts a robots.txt fetch
        (``scheme://host/robots.txt``, empty payload, not counted as added) at the head of
        every host it sees first.

        A copy of a page with ``was`` (the value order moving a queued page up) moves the
        page's entry queued at rank ``was`` to the copy's rank and payload, counted as
        ``"moved"``, where the backend finds entries by URL (the local one); there no copy
        is queued, and none when that entry is gone (fetched or dropped). A backend that
        does not (Redis) queues the copy like one without ``was``, and the worker drops
        the stale copy when it is leased.
        """

    @abstractmethod
    def next_ready(self, n: int, ahead: float = 0.0) -> list[Lease]:
        """Lease up to ``n`` eligible hosts (one entry each), biased by tier, never starving.

        A host is eligible when it has pending entries, is not leased, its next-eligible
        time is at most ``ahead`` seconds away (``Lease.wait`` says how far) and its IP
        group is under the per-IP limit. Within the tier picked,
        the host is the one of highest ``host_priority`` among the ``HOST_WINDOW`` eligible
        longest.
        """

    @abstractmethod
    def due_in(self) -> float | None:
        """Seconds until the next unleased host with queued work becomes eligible (0 when
        one is eligible now), or None when no unleased host has work: a worker that got
        fewer leases than it asked for polls again then, not on a fixed tick."""

    @abstractmethod
    def done(self, lease: Lease, outcome: Outcome) -> bool:
        """Finish (or requeue) the leased entry and set the host's next-eligible time; an
        unfetched entry finished with ``refund`` gives its host one page of budget back
        (never below none added), which the best page of its waiting list takes (``add``).

        Returns False when the lease was already released as expired (the report is stale
        and ignored).
        """

    def done_many(self, reports: Sequence[tuple[Lease, Outcome]]) -> list[bool]:
        """``done`` for each ``(lease, outcome)`` in order, as one store operation where the
        backend can (one transaction, one round trip); returns ``done``'s answers."""
        return [self.done(lease, outcome) for lease, outcome in reports]

    @abstractmethod
    def release_expired(self) -> int:
        """Return the entries of leases past their deadline to their queues; count them."""

    @abstractmethod
    def stats(self) -> dict[str, float]:
        """Gauges and counters for the dashboard (queue depth, hosts, leases, drops...)."""

    @abstractmethod
    def set_host_budget(self, host: str, budget: int) -> None:
        """Cut ``host``'s page budget (e.g. a detected trap); queued entries stay. A cut
        raised (a host acquitted) lets waiting pages in up to the new budget."""

    @abstractmethod
    def drop_queue(self, host: str) -> int:
        """Drop every entry queued for ``host`` but the one leased, and its waiting list,
        in one operation (a condemned host: its queue is not leased entry by entry only to
        be refused); the host keeps its politeness state and budget. Returns the entries
        dropped (waiting pages not counted)."""

    @abstractmethod
    def set_host_values(self, values: dict[str, float]) -> None:
        """Set hosts' standing (0..1; a host never set has 1): within a front tier, of the
        ``HOST_WINDOW`` hosts eligible longest, the one of highest ``host_priority`` (its
        value, growing while it waits) is leased first (ties: the one eligible longest).
        The value order sets it from host quality and in-links."""

    @abstractmethod
    def seen(self, urls: Sequence[str]) -> list[bool]:
        """Whether each URL is (probably) in the seen filter; does not add."""

    @abstractmethod
    def robots_get(self, host: str) -> tuple[int, bytes, float] | None:
        """The stored robots.txt of ``host``: ``(status, body, expires_at)`` or None."""

    @abstractmethod
    def robots_set(self, host: str, status: int, body: bytes, expires_at: float) -> None:
        """Store ``host``'s robots.txt for every worker until ``expires_at`` (epoch s)."""

    @abstractmethod
    def count(self, key: str, n: int = 1) -> None:
        """Add ``n`` to the shared counter ``key`` (reported by ``stats``)."""

    @abstractmethod
    def host_state(self, host: str) -> HostState | None:
        """The state of ``host`` (a netloc, as in ``Entry.host``); None if never added."""

    @abstractmethod
    def pending(self) -> int:
        """Entries queued or leased (0 means the crawl has nothing left)."""

    @abstractmethod
    def clear(self) -> None:
        """Drop all state of this crawl (queues, leases, seen filter, robots)."""

    def close(self) -> None:
        """Flush and release resources; state stays on disk / in Redis."""


def bloom_size(capacity: int, fpr: float) -> tuple[int, int]:
    """Bits and hash count of a Bloom filter for ``capacity`` items at ``fpr``."""
    bits = math.ceil(-capacity * math.log(fpr) / math.log(2) ** 2)
    bits = (bits + 7) // 8 * 8
    hashes = max(1, round(bits / capacity * math.log(2)))
    return bits, hashes
