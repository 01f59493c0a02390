"""What may enter the frontier, and what a lease may still fetch: the scheduler's admission.

A URL is admitted when it is a valid URL that no trap guard refuses (``crawler.quality.traps``), its
host is neither blocked by a host rule nor condemned (a mirror or spam host, unless a rule
trusts it), and this process did not queue it lately (a bounded cache in front of the
frontier's seen filter: links are mostly repeats, and the cache drops those before the cost
of canonicalizing and serializing). A leased URL is re-checked before it is fetched: a host
condemned, a pattern found to be a template trap or a directory found dead since it was
queued makes it not worth the fetch. The refusals are named, so the scheduler counts them
per reason (``frontier/dropped/<reason>``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

from scrapy.resolver import dnscache

from crawler.bounded import bound
from crawler.hostrules import HostRules
from crawler.options import setting
from crawler.quality.traps import DeadSubtrees, TrapGuard
from crawler.resolver import parse_overrides, resolve_override
from crawler.urls import InvalidURL, canonicalize, host_of, netloc_of

#: URLs queued lately that this process remembers, to drop repeats before the frontier.
SEEN_CACHE = 100_000


class Admitted(NamedTuple):
    """A URL let in: its canonical form, host name, frontier host key (``netloc_of``),
    page budget (None: unlimited, as for a recrawl), the address its host shares a per-IP
    limit with, and whether its directory is dying (it waits in the lowest tier). A named
    tuple: one is made for each link queued, at a third of a frozen dataclass's cost."""

    url: str
    host: str
    netloc: str
    budget: int | None
    ip: str
    dying: bool


class Admission:
    """Trap guards, host rules, condemned hosts and the seen cache, before the frontier."""

    def __init__(
        self,
        host_rules: HostRules,
        traps: TrapGuard,
        dead_subtrees: DeadSubtrees | None = None,
        *,
        host_budget: int | None = None,
        ip_of: Callable[[str], str] | None = None,
        seen_cache: int = SEEN_CACHE,
    ):
        self.host_rules = host_rules
        self.traps = traps
        self.dead_subtrees = dead_subtrees
        self.host_budget = host_budget
        self.ip_of = ip_of or (lambda host: host)
        self.seen_cache = seen_cache
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._condemned: dict[str, str] = {}

    @classmethod
    def from_crawler(cls, crawler) -> Admission:
        """Host rules, trap guards and dead-directory tracking from the crawl's settings
        (``HOST_RULES_*``, ``FRONTIER_MAX_*``, ``FRONTIER_DEAD_DIR*``,
        ``FRONTIER_HOST_PAGE_BUDGET``); addresses from ``RESOLVE_OVERRIDES`` or Scrapy's
        DNS cache."""
        s = crawler.settings
        overrides = parse_overrides(s.get("RESOLVE_OVERRIDES"))
        return cls(
            HostRules.from_crawler(crawler),
            TrapGuard.from_settings(s),
            DeadSubtrees.from_settings(s),
            host_budget=setting(s, "FRONTIER_HOST_PAGE_BUDGET", int) or None,
            ip_of=_address_finder(overrides),
        )

    def admit(self, raw_url: str, depth: int, *, filter: bool = True,
              recrawl: bool = False, canonical: bool = False) -> Admitted | str:
        """``raw_url`` found at link ``depth`` let in, or the reason it is refused.

        ``filter=False`` (a request with ``dont_filter``) skips the seen cache; a
        ``recrawl`` is no new page (no budget) and is let in on a condemned host;
        ``canonical``: ``raw_url`` is canonical already (``canonicalize`` gave it, as it
        gives the extraction's links), so it is not canonicalized again."""
        if filter and raw_url in self._recent:
            return "seen"
        if canonical:
            url = raw_url
        else:
            try:
                url = canonicalize(raw_url)
            except InvalidURL as exc:
                return exc.reason
        reason = self.traps.check(url, depth)
        if reason:
            return reason
        host = host_of(url)
        policy = self.host_rules.policy(host)
        if policy.blocked:
            return "blocked"
        if self._condemned and not recrawl and policy.quality != "trusted":
            condemned = self._condemned.get(host)
            if condemned:
                return condemned
        if filter:
            if not canonical and url in self._recent:
                return "seen"
            self._recent[url] = None
            bound(self._recent, self.seen_cache)
        return Admitted(url, host, netloc_of(url),
                        None if recrawl else (policy.page_budget or self.host_budget),
                        self.ip_of(host), self.dying(url))

    def forget(self, url: str) -> None:
        """``url`` was not queued after all (it could not be stored): let it in again."""
        self._recent.pop(url, None)

    def dying(self, url: str) -> bool:
        """Whether ``url``'s directory has mostly answered 404 so far."""
        return self.dead_subtrees is not None and self.dead_subtrees.dying(url)

    def not_worth(self, url: str) -> str | None:
        """Why a leased ``url``, admitted earlier, is not worth its fetch now, or None."""
        if self._condemned:
            host = host_of(url)
            reason = self._condemned.get(host)
            if reason and self.host_rules.policy(host).quality != "trusted":
                return reason
        if self.traps.blocked(url):
            return "template_trap"
        if self.dead_subtrees is not None and self.dead_subtrees.dead(url):
            return "dead_subtree"
        return None

    def condemn(self, host: str, reason: str) -> bool:
        """No new URLs of ``host`` (a host name) from now on, and queued ones dropped when
        leased, unless a host rule trusts it; False if it was condemned already."""
        if host in self._condemned:
            return False
        self._condemned[host] = reason
        return True

    def acquit(self, host: str) -> bool:
        """``host`` is condemned no longer; False if it was not condemned."""
        return self._condemned.pop(host, None) is not None

    def block_pattern(self, pattern: str) -> None:
        """Refuse the URLs of a template-trap ``pattern``
        (``crawler.quality.traps.url_pattern``)."""
        self.traps.block_pattern(pattern)

    def soft_404(self, url: str) -> None:
        """``url`` answered 200 with a "not found" page: a dead fetch for its directory."""
        if self.dead_subtrees is not None:
            self.dead_subtrees.soft_404(url)

    def fetched(self, url: str, status: int) -> None:
        """``url`` answered ``status``: counted for its directory."""
        if self.dead_subtrees is not None:
            self.dead_subtrees.record(url, status)

    def admin_delay(self, host: str) -> float | None:
        """The delay a host rule sets for ``host`` (a host name), or None."""
        return self.host_rules.policy(host).crawl_delay


def _address_finder(overrides: dict[str, str]) -> Callable[[str], str]:
    """``host`` -> the address its per-IP limit counts it under: its ``RESOLVE_OVERRIDES``
    address (looked up once per host: the patterns are matched one by one), else the one
    Scrapy's DNS cache holds (it may come later, with the host's first fetch), else the
    host itself."""
    overridden: dict[str, str | None] = {}

    def ip_of(host: str) -> str:
        try:
            ip = overridden[host]
        except KeyError:
            if len(overridden) >= SEEN_CACHE:
                overridden.clear()
            ip = overridden[host] = resolve_override(host, overrides)
        return ip or _cached_ip(host) or host

    return ip_of


def _cached_ip(host: str) -> str | None:
    """The address Scrapy's DNS cache holds for ``host``, without resolving anything."""
    value = dnscache.get(host)
    if isinstance(value, str):
        return value
    if value:  # CachingHostnameResolver keeps a list of addresses
        return getattr(value[0], "host", None)
    return None
