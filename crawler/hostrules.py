"""Per-host rules set in the admin (block, allow, crawl-delay override, page budget, render).

The crawl reads what the operator set (host rules, seeds) through ``ControlStore``, which the
setting ``CONTROL_STORE`` names by dotted path; the Django app implements it
(``webui.control.rules.DjangoControlStore``), so importing the crawl imports no Django and a
crawl runs without it (``CONTROL_STORE = ""``). ``HostRules`` caches the rules and reloads
them every ``ttl`` seconds, so a database outage keeps the last known values; a load that
fails is tried again within seconds (``RETRY_S``, doubling up to the TTL), not after a whole
TTL. A crawl holds one ``HostRules`` (``HostRules.from_crawler``): the spider's scope, the
frontier's admission and the quality pipelines read the same rules, loaded at the same time.
"""

from __future__ import annotations

import fnmatch
import logging
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from scrapy.utils.misc import load_object

from crawler.options import setting

logger = logging.getLogger(__name__)

#: Seconds before a failed load of the rules is tried again; doubled after each failure in
#: a row, up to the TTL.
RETRY_S = 1.0


@dataclass(frozen=True)
class HostRule:
    """One rule; ``pattern`` is a host name or a glob such as ``*.example.test``."""

    pattern: str
    action: str = "allow"  # "allow" or "block"
    crawl_delay: float | None = None
    page_budget: int | None = None
    render_js: bool = False
    #: "" (the crawl decides), "trusted" (never judged spam or a mirror) or "spam"
    quality: str = ""
    #: The crawl takes no host verdict on it (spam, mirror, template trap): implies trusted.
    never_judge: bool = False

    def matches(self, host: str) -> bool:
        return fnmatch.fnmatchcase(host.lower(), self.pattern.lower())


@dataclass(frozen=True)
class HostPolicy:
    """The effective rule for one host after all matching rules are applied."""

    blocked: bool = False
    allowed: bool = False
    crawl_delay: float | None = None
    page_budget: int | None = None
    render_js: bool = False
    #: "" (the crawl decides), "trusted" or "spam"; "trusted" when ``never_judge`` is set
    #: unless a rule says "spam" (the admin's own verdict)
    quality: str = ""
    #: Verdicts about the host are computed and shown but never acted on.
    never_judge: bool = False


class ControlNotReady(RuntimeError):
    """The control store cannot serve the crawl until its operator acts; the message says how."""


class ControlStore(ABC):
    """Where the crawl reads what the operator set: host rules and seed URLs.

    Built with no arguments from the dotted path ``CONTROL_STORE``; methods may be called
    from any thread, and each call reads the store afresh (callers cache).
    """

    def prepare(self) -> None:  # noqa: B027 (a store with nothing to prepare keeps it)
        """Make the store ready before the crawl starts; raise ``ControlNotReady`` when only
        its operator can (for example, a shared database that needs a migration)."""

    @abstractmethod
    def host_rules(self) -> list[HostRule]:
        """Every host rule; raises when the store is unreachable (``HostRules`` then keeps
        the last rules it loaded)."""

    @abstractmethod
    def seed_urls(self) -> list[str]:
        """The active seed URLs, as the operator entered them."""


def control_store(settings: Any) -> ControlStore | None:
    """The store ``CONTROL_STORE`` names, built; None when the setting is empty."""
    path = settings.get("CONTROL_STORE")
    return load_object(path)() if path else None


class HostRules:
    """Resolves a host to its policy. Exact patterns win over globs; block wins over allow.

    Resolved policies are cached per host until the next reload, at most ``max_cached``
    hosts (the cache starts over beyond that: rules that never reload, ``static``, would
    otherwise keep one entry per host the crawl ever met).
    """

    def __init__(self, loader: Callable[[], Iterable[HostRule]], *, ttl: float,
                 max_cached: int = 100_000):
        self._loader = loader
        self._ttl = ttl
        self.max_cached = max_cached
        self._rules: list[HostRule] = []
        self._loaded_at = float("-inf")
        self._retry_at = float("-inf")
        self._failures = 0
        self._cache: dict[str, HostPolicy] = {}

    @classmethod
    def from_crawler(cls, crawler: Any) -> HostRules:
        """The crawl's one ``HostRules`` (built from its settings on first use): every
        component of a crawl applies the same rules, with one load per TTL."""
        rules = _PER_CRAWLER.get(crawler)
        if rules is None:
            rules = _PER_CRAWLER[crawler] = cls.from_settings(crawler.settings)
        return rules

    @classmethod
    def from_settings(cls, settings: Any) -> HostRules:
        """The rules of the store ``CONTROL_STORE`` names (empty: no rules), reloaded every
        ``HOST_RULES_TTL`` seconds."""
        store = control_store(settings)
        if store is None:
            return cls.static([])
        return cls(store.host_rules, ttl=setting(settings, "HOST_RULES_TTL", float))

    @classmethod
    def static(cls, rules: Iterable[HostRule]) -> HostRules:
        frozen = list(rules)
        return cls(lambda: frozen, ttl=float("inf"))

    def _maybe_reload(self) -> None:
        now = time.monotonic()
        if now - self._loaded_at < self._ttl or now < self._retry_at:
            return
        try:
            rules = list(self._loader())
        except Exception as exc:  # keep last known rules when the store is down
            retry = min(RETRY_S * 2 ** self._failures, self._ttl)
            self._failures += 1
            self._retry_at = now + retry
            logger.warning(
                "host rules unavailable (%s): keeping the last %d rules, trying again in "
                "%.0f s", exc, len(self._rules), retry
            )
            return
        rules.sort(key=lambda r: ("*" in r.pattern or "?" in r.pattern, -len(r.pattern)))
        self._rules, self._cache, self._loaded_at = rules, {}, now
        self._failures = 0

    @property
    def has_allow_rules(self) -> bool:
        self._maybe_reload()
        return any(r.action == "allow" for r in self._rules)

    def policy(self, host: str) -> HostPolicy:
        """The policy for ``host`` (lower-case, no port)."""
        self._maybe_reload()
        cached = self._cache.get(host)
        if cached is not None:
            return cached
        blocked = allowed = render = never_judge = False
        delay = budget = None
        quality = ""
        for rule in self._rules:  # most specific first
            if not rule.matches(host):
                continue
            blocked |= rule.action == "block"
            allowed |= rule.action == "allow"
            render |= rule.render_js
            if delay is None and rule.crawl_delay is not None:
                delay = rule.crawl_delay
            if budget is None and rule.page_budget is not None:
                budget = rule.page_budget
            quality = quality or rule.quality
            never_judge |= rule.never_judge
        if never_judge and quality != "spam":
            quality = "trusted"
        result = HostPolicy(blocked, allowed, delay, budget, render, quality, never_judge)
        if len(self._cache) >= self.max_cached:
            self._cache.clear()
        self._cache[host] = result
        return result


#: ``HostRules.from_crawler``'s instances, one per crawler (gone with the crawler).
_PER_CRAWLER: weakref.WeakKeyDictionary[Any, HostRules] = weakref.WeakKeyDictionary()
