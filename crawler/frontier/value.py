"""Crawl order by value: an online importance estimate turned into a front-queue rank.

OPIC (Abiteboul, Preda, Cobena, "Adaptive On-Line Page Importance Computation", WWW 2003):
every seed starts with the same cash; a fetched page hands its cash out in equal shares to
its outlinks (at least ``min_outlinks`` shares, so that chains of pages with one or two
links, such as calendars and pagers, do not pass their whole cash down), and the cash a URL
holds when it is queued is its importance estimate. The estimate is scaled by its host's
standing:

- *quality*, 1 for a host with no spam signals, down to ``min_quality`` for a host whose
  pages trip the spam rules (``crawler.quality.judges``, through ``set_host_quality``);
- *authority*, from the in-link counts of the link graph at host level: 1 for a host that
  pages of ``trusted_hosts`` other hosts link to, ``base ** -0.5`` for a host nobody else
  links to (a trap or a spam host reached from its seed alone), in between for fewer. A
  page whose links go mostly to other hosts (a directory, a link farm's pages) vouches for
  none of them: the five farms of the test web, linking to each other, had full authority
  and a quarter of the early fetches before their spam verdicts.

The rank keeps breadth-first's levels and orders within them by value: its integer part is
the link depth (capped at ``tiers - 1``), one level lower for a host of quality under 0.5
and two under 0.2; its fractional part is ``x / (1 + x)`` for ``x = -log_base(value)``
(rounded to 1/1000), so within a level more valuable URLs come first. ``Entry.rank``
orders each host's back queue by it and a host waits in the front tier of its head entry's
integer part, so the same ranks order every backend (local, Redis, partitioned). On the
test web (bench/crawl_value.py) a rank from value alone, without the depth levels, held
less PageRank after a quarter of the fetches than breadth-first: OPIC's cash favours hosts
with small home pages (a calendar, a shop of 30 items) over sites whose home links to a
hundred articles.

The frontier's seen filter keeps one entry per URL, so a queued URL keeps the rank it was
queued with; the scheduler hands the value order every link of a fetched page (those
queued before too, so their cash grows) and moves a queued URL up when its rank rose
(``FrontierScheduler._repush``, ``FRONTIER_VALUE_REPUSH_URLS``): the pages every page
of a site links to (its sidebar) otherwise waited behind the home page's list. Cash is kept
for at most ``max_urls`` URLs in this process (least recently touched forgotten first); a
URL it does not know gets little cash (``base ** -(2 * depth + 2)``), so it comes after the
linked URLs of its level: sitemap entries (``base ** -3`` before, more than a home page's
hundred links get each) went before the pages a site's home links to. The per-host state
(quality, the hosts linking in, the standing last sent) is kept for at most ``max_hosts``
hosts, the least recently noted forgotten first: a forgotten host is back to quality 1 and
no in-links until its pages and links are seen again. So a worker's memory for the order
is bounded (``FRONTIER_VALUE_MAX_URLS``, about 200 bytes a URL, and
``FRONTIER_VALUE_MAX_HOSTS``); the frontier in Redis keeps every queued URL and its rank
whatever this process forgets.
"""

from __future__ import annotations

import math
from collections import OrderedDict

from crawler.bounded import bound
from crawler.options import setting


def _host(url: str) -> str:
    start = url.find("//") + 2
    end = url.find("/", start)
    return (url[start:] if end < 0 else url[start:end]).lower()


class ValueOrder:
    """Ranks URLs by OPIC cash x host quality x host authority (see the module)."""

    def __init__(self, tiers: int = 4, base: float = 16.0, min_quality: float = 0.05,
                 min_outlinks: int = 10, trusted_hosts: int = 2, max_urls: int | None = None,
                 max_hosts: int | None = None):
        if tiers < 1:
            raise ValueError("tiers must be >= 1")
        self.tiers = tiers
        self.base = base
        self.min_quality = min_quality
        self.min_outlinks = min_outlinks
        self.trusted_hosts = trusted_hosts
        # None: the defaults in crawler/settings.py
        self.max_urls = setting(None, "FRONTIER_VALUE_MAX_URLS", int) if max_urls is None \
            else max_urls
        self.max_hosts = setting(None, "FRONTIER_VALUE_MAX_HOSTS", int) if max_hosts is None \
            else max_hosts
        self._cash: OrderedDict[str, float] = OrderedDict()
        self._quality: OrderedDict[str, float] = OrderedDict()
        self._linked_from: OrderedDict[str, set[str]] = OrderedDict()
        self._standing: OrderedDict[str, float] = OrderedDict()
        self._changed: set[str] = set()
        self._best = 0.0

    def cash(self, url: str, depth: int = 0) -> float:
        """The cash ``url`` holds; a URL no fetched page linked to (a seed, a sitemap entry,
        a redirect target) holds ``base ** -(2 * depth + 2)``: within its level, after the
        URLs pages link to (each level divides a seed's cash by a page's links, dozens)."""
        held = self._cash.get(url)
        return self.base ** -(2 * depth + 2) if held is None else held

    def distribute(self, url: str, links: list[str], depth: int, outlinks: int = 0) -> None:
        """``url`` was fetched: its cash goes in equal shares to its ``outlinks`` links (at
        least ``len(links)`` and ``min_outlinks``), of which ``links`` are followed; links
        to other hosts count towards those hosts' authority unless most of the page's links
        go to other hosts (a directory or a link farm vouches for nobody)."""
        cash = self.cash(url, max(depth - 1, 0))
        self._cash.pop(url, None)
        share = cash / max(outlinks, len(links), self.min_outlinks, 1)
        store = self._cash
        source = _host(url)
        targets = [_host(link) for link in links]
        vouches = 2 * sum(target != source for target in targets) <= max(outlinks, len(links))
        for link, target in zip(links, targets, strict=True):
            store[link] = store.get(link, 0.0) + share
            store.move_to_end(link)
            if vouches and target != source:
                linked = self._linked_from.get(target)
                if linked is None:
                    linked = self._linked_from[target] = set()
                    bound(self._linked_from, self.max_hosts)
                if len(linked) < self.trusted_hosts and source not in linked:
                    linked.add(source)
                    self._note(target)
        bound(store, self.max_urls)

    def set_host_quality(self, host: str, quality: float) -> None:
        """``host``'s quality, 0..1 (1: no spam signal); stored at least ``min_quality``."""
        self._quality[host] = max(self.min_quality, min(1.0, quality))
        self._quality.move_to_end(host)
        bound(self._quality, self.max_hosts)
        self._note(host)

    def standing(self, host: str) -> float:
        """``host``'s quality x authority (0..1): the frontier's host value
        (``Frontier.set_host_values``), which orders hosts within a front tier."""
        return self._quality.get(host, 1.0) * self.authority(host)

    def _note(self, host: str) -> None:
        standing = self.standing(host)
        self._best = max(self._best, standing)
        if self._standing.get(host) != standing:
            self._changed.add(host)

    def changed_standings(self) -> dict[str, float]:
        """The standing of every host seen (``rank``) or re-scored since the last call whose
        standing differs from the one last returned; the caller hands them to the
        frontier."""
        out = {}
        for host in self._changed:
            value = self.standing(host)
            if self._standing.get(host) != value:
                self._standing[host] = out[host] = value
        self._changed.clear()
        bound(self._standing, self.max_hosts)
        return out

    def not_sent(self, hosts) -> None:
        """The standings of ``hosts`` did not reach the frontier: return them next time."""
        for host in hosts:
            self._standing.pop(host, None)
            self._changed.add(host)

    def authority(self, host: str) -> float:
        """1 for a host linked from ``trusted_hosts`` other hosts, down to ``base ** -0.5``."""
        linked = len(self._linked_from.get(host, ()))
        return self.base ** -(0.5 - 0.5 * min(linked, self.trusted_hosts) / self.trusted_hosts)

    def value(self, url: str, host: str, depth: int = 0) -> float:
        """The importance estimate of ``url`` of ``host`` (a netloc)."""
        return (self.cash(url, depth) * self._quality.get(host, 1.0)
                * self.authority(host))

    def rank(self, url: str, host: str, depth: int = 0) -> float:
        """The rank (0 = most valuable .. below ``tiers``, in steps of 1/1000) to queue
        ``url`` of ``host`` with, found at link ``depth``."""
        if host not in self._standing:
            self._note(host)
        quality = self._quality.get(host, 1.0)
        level = depth + (quality < 0.5) + (quality < 0.2)
        level = min(max(level, 0), self.tiers - 1)
        value = self.value(url, host, depth)
        steps = max(0.0, -math.log(value, self.base)) if value > 0 else 1e9
        return level + min(0.999, round(steps / (1.0 + steps), 3))
