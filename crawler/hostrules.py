"""Per-host rules set in the admin (block, allow, crawl-delay override, page budget, render).

The crawler reads rules through ``HostRules``; the Django app stores them. Rules are cached
and refreshed every ``ttl`` seconds so a database outage keeps the last known values.
"""

from __future__ import annotations

import fnmatch
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from scrapy.utils.misc import load_object

from crawler.options import setting

logger = logging.getLogger(__name__)


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
        self._cache: dict[str, HostPolicy] = {}

    @classmethod
    def from_settings(cls, settings: Any) -> HostRules:
        """The admin's rules through the loader ``HOST_RULES_LOADER`` names (a dotted path;
        empty: no rules), reloaded every ``HOST_RULES_TTL`` seconds."""
        path = settings.get("HOST_RULES_LOADER")
        if not path:
            return cls.static([])
        return cls(load_object(path), ttl=setting(settings, "HOST_RULES_TTL", float))

    @classmethod
    def static(cls, rules: Iterable[HostRule]) -> HostRules:
        frozen = list(rules)
        return cls(lambda: frozen, ttl=float("inf"))

    def _maybe_reload(self) -> None:
        now = time.monotonic()
        if now - self._loaded_at < self._ttl:
            return
        try:
            rules = list(self._loader())
        except Exception as exc:  # keep last known rules when the store is down
            logger.warning(
                "host rules unavailable (%s): keeping the last %d rules", exc, len(self._rules)
            )
            self._loaded_at = now
            return
        rules.sort(key=lambda r: ("*" in r.pattern or "?" in r.pattern, -len(r.pattern)))
        self._rules, self._cache, self._loaded_at = rules, {}, now

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
