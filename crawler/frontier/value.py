"""Crawl order by value: an online importance estimate turned into a front-queue rank.

OPIC (Abiteboul, Preda, Cobena, "Adaptive On-Line Page Importance Computation", WWW 2003):
every seed starts with the same cash; a fetched page hands its cash out in equal shares to
its outlinks, and the cash a URL holds when it is queued is its importance estimate. The
estimate is scaled by the host's quality (1 for a host with no spam signals, down to
``min_quality`` for a host whose pages trip the spam rules; ``crawler.quality``) and bucketed
on a log scale into the frontier's ranks: rank 0 for a seed's cash, one rank more per factor
``base`` less. ``Entry.rank`` orders each host's back queue (rank, then arrival) and puts the
host in the front tier of its head entry, so the same ranks order every backend (local,
Redis, partitioned) without a change to any of them.

The estimate is the cash a URL holds *when it is queued*: the frontier's seen filter keeps
one entry per URL, so later in-links do not move a queued URL up. Cash is kept for at most
``max_urls`` URLs in this process (least recently touched forgotten first); a URL it does
not know gets the cash of a page at its link depth (``base ** -depth``).
"""

from __future__ import annotations

import math
from collections import OrderedDict


class ValueOrder:
    """Ranks URLs by OPIC cash x host quality (see the module docstring)."""

    def __init__(self, tiers: int = 4, base: float = 8.0, min_quality: float = 0.05,
                 max_urls: int = 1_000_000):
        if tiers < 1:
            raise ValueError("tiers must be >= 1")
        self.tiers = tiers
        self.base = base
        self.min_quality = min_quality
        self.max_urls = max_urls
        self._cash: OrderedDict[str, float] = OrderedDict()
        self._quality: dict[str, float] = {}

    def cash(self, url: str, depth: int = 0) -> float:
        """The cash ``url`` holds (``base ** -depth`` when it is not known)."""
        held = self._cash.get(url)
        return self.base ** -depth if held is None else held

    def distribute(self, url: str, links: list[str], depth: int, outlinks: int = 0) -> None:
        """``url`` was fetched: its cash goes in equal shares to its ``outlinks`` links (at
        least ``len(links)``), of which ``links`` are the ones still to be queued."""
        cash = self._cash.pop(url, None)
        if cash is None:
            cash = self.base ** -max(depth - 1, 0)
        share = cash / max(outlinks, len(links), 1)
        store = self._cash
        for link in links:
            store[link] = store.get(link, 0.0) + share
            store.move_to_end(link)
        while len(store) > self.max_urls:
            store.popitem(last=False)

    def set_host_quality(self, host: str, quality: float) -> None:
        """``host``'s quality, 0..1 (1: no spam signal); stored at least ``min_quality``."""
        self._quality[host] = max(self.min_quality, min(1.0, quality))
        if len(self._quality) > self.max_urls:
            self._quality.clear()

    def rank(self, url: str, host: str, depth: int = 0) -> int:
        """The rank (0 = most valuable .. ``tiers - 1``) to queue ``url`` of ``host`` with."""
        value = self.cash(url, depth) * self._quality.get(host, 1.0)
        if value <= 0:
            return self.tiers - 1
        steps = math.floor(-math.log(value, self.base) + 1e-9)
        return min(max(steps, 0), self.tiers - 1)
