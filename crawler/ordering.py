"""Which URL of a host goes next, and which host first: the scheduler's ordering.

A URL is queued with a rank (``Entry.rank``): its link depth (breadth-first,
``FRONTIER_ORDER = "depth"``, or a request's ``meta["frontier_tier"]``), or with the value
order (``"value"``, the default) the rank ``crawler.frontier.value.ValueOrder`` gives it. The
frontier orders each host's queue by it and, among the eligible hosts of a tier, leases the
host of best standing first (``Frontier.set_host_values``). Ordering never holds work back:
a host that is due and has work is leased whenever a slot is free, whatever its standing.

The frontier's seen filter keeps one entry per URL, so a URL keeps the rank it was queued
with; when in-links found later raise it by ``REPUSH_GAIN`` or more, the URL is re-pushed
(``FRONTIER_VALUE_REPUSH_URLS``, embedded frontier only): a copy with the rank it waits at
(``Entry.was``), which the local frontier makes a move of its queued entry; of the copies
a backend queues instead, only the first leased is fetched.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from crawler.bounded import bound
from crawler.config import config_from_settings
from crawler.frontier.base import Lease
from crawler.frontier.value import ValueOrder
from crawler.options import setting
from crawler.urls import netloc_of

#: Ranks a queued URL's value must rise by before it is queued once more (0.002: about 5%
#: more value for a URL of a site's home page; ``ValueOrder.rank``).
REPUSH_GAIN = 0.002
#: Queued copies of one URL at most (the first and its re-pushes).
REPUSH_COPIES = 3


class Ordering:
    """Ranks for new URLs, host standings for the frontier, and re-pushes of URLs whose
    value rose while they waited."""

    def __init__(self, tiers: int, value_order: ValueOrder | None = None,
                 repush_urls: int = 0):
        self.tiers = tiers
        self.value_order = value_order
        self.repush_urls = repush_urls if value_order is not None else 0
        # URL queued lately, not handed out yet -> (rank, link depth) it waits with
        self._waiting: OrderedDict[str, tuple[float, int]] = OrderedDict()
        # URL re-pushed -> [one copy was handed out, ranks of its copies not leased yet]
        self._copies: OrderedDict[str, list] = OrderedDict()

    @classmethod
    def from_crawler(cls, crawler) -> Ordering:
        """``FRONTIER_ORDER``, ``FRONTIER_TIERS`` and the ``FRONTIER_VALUE_*`` settings;
        no re-push with a Redis frontier (a worker cannot tell whether another fetched a
        copy)."""
        s = crawler.settings
        tiers = setting(s, "FRONTIER_TIERS", int)
        order = setting(s, "FRONTIER_ORDER", str)
        if order not in ("value", "depth"):
            raise ValueError(f"FRONTIER_ORDER must be 'value' or 'depth', not {order!r}")
        if order == "depth":
            return cls(tiers)
        value_order = ValueOrder(tiers, base=setting(s, "FRONTIER_VALUE_BASE", float),
                                 max_urls=setting(s, "FRONTIER_VALUE_MAX_URLS", int),
                                 max_hosts=setting(s, "FRONTIER_VALUE_MAX_HOSTS", int))
        shared = bool(config_from_settings(s).frontier_urls)
        return cls(tiers, value_order,
                   0 if shared else setting(s, "FRONTIER_VALUE_REPUSH_URLS", int) or 0)

    def tier(self, requested: int) -> int:
        """A requested tier capped to the frontier's tiers."""
        return min(max(requested, 0), self.tiers - 1)

    def rank(self, url: str, netloc: str, depth: int, tier: int, *, valued: bool,
             dying: bool = False) -> float:
        """The rank to queue ``url`` (of frontier host ``netloc``, found at ``depth``) with:
        ``tier`` unless ``valued`` and a value order ranks it; the lowest tier when its
        directory is ``dying``."""
        if dying:
            return self.tiers - 1
        if valued and self.value_order is not None:
            return self.value_order.rank(url, netloc, depth)
        return tier

    def queued(self, url: str, rank: float, depth: int) -> None:
        """``url`` joins the add batch at ``rank``: it may be moved up until handed out."""
        if self.repush_urls:
            self._waiting[url] = (rank, depth)
            bound(self._waiting, self.repush_urls)

    def not_queued(self, urls: Iterable[str]) -> None:
        """These URLs of an add batch may not have been queued (the frontier's seen filter or
        a budget refused some, and its counts do not say which): none is moved up later."""
        if self.repush_urls:
            for url in urls:
                self._waiting.pop(url, None)

    def handed_out(self, url: str) -> None:
        """``url`` goes to the engine: it is not moved up any more."""
        if self._waiting:
            self._waiting.pop(url, None)

    def links_found(self, page_url: str, links: list[str], depth: int,
                    outlinks: int) -> None:
        """A page of ``outlinks`` links was fetched; ``links`` are the ones followed (new or
        queued before): their value grows."""
        if self.value_order is not None:
            self.value_order.distribute(page_url, links, depth, outlinks)

    def moved_up(self, url: str, depth: int) -> tuple[float, int, float] | None:
        """``(rank, depth, was)`` to queue a copy of ``url``, found again at ``depth``,
        with, when it waits (at rank ``was``) and its rank rose by ``REPUSH_GAIN`` since
        (at most ``REPUSH_COPIES`` copies); else None. The copy is recorded as queued."""
        waiting = self._waiting.get(url) if self.repush_urls else None
        if waiting is None:
            return None
        queued, queued_depth = waiting
        copies = self._copies.get(url) or [False, [round(queued, 3)]]
        if copies[0] or len(copies[1]) >= REPUSH_COPIES:
            return None
        depth = min(depth, queued_depth)
        rank = self.value_order.rank(url, netloc_of(url), depth)
        if rank > queued - REPUSH_GAIN:
            return None
        self._waiting[url] = (rank, depth)
        copies[1].append(round(rank, 3))
        self._copies[url] = copies
        self._copies.move_to_end(url)
        bound(self._copies, self.repush_urls)
        return rank, depth, queued

    def extra_copy(self, lease: Lease) -> bool:
        """Whether ``lease`` is a copy of a re-pushed URL (known by its rank: a probe, a
        retry or a recrawl of the URL is none) of which another copy went out before; if it
        is the first, it goes out."""
        if not self._copies:
            return False
        copies = self._copies.get(lease.url)
        rank = round(lease.rank, 3)
        if copies is None or rank not in copies[1]:
            return False
        went, copies[0] = copies[0], True
        copies[1].remove(rank)
        if not copies[1]:
            del self._copies[lease.url]
        return went

    def score_host(self, netloc: str, quality: float) -> None:
        """``netloc``'s quality (0..1): the rank of its new URLs and its standing."""
        if self.value_order is not None:
            self.value_order.set_host_quality(netloc, quality)

    def changed_standings(self) -> dict[str, float]:
        """Host standings changed since the last call, for ``Frontier.set_host_values``."""
        return self.value_order.changed_standings() if self.value_order is not None else {}

    def not_sent(self, hosts: Iterable[str]) -> None:
        """The standings of ``hosts`` did not reach the frontier: return them next time."""
        if self.value_order is not None:
            self.value_order.not_sent(hosts)
