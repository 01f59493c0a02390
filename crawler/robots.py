"""robots.txt policy: fetched once per host per TTL, stored in the frontier, shared by all.

The fetch itself goes through the frontier as the first leased request of a host (so it
obeys politeness), and the host's pages wait behind it. Status handling follows RFC 9309:
2xx is parsed; 4xx (except 429) means no rules (allow all); 5xx, 429 and network errors mean
disallow all until ``error_ttl`` passes and robots.txt is tried again. A body that cannot be
decoded or parsed is logged and treated as allow-all.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from protego import Protego

from crawler.frontier.base import Frontier
from crawler.options import Option, setting, settings_to_options

logger = logging.getLogger(__name__)

#: Pseudo status stored for a robots.txt fetch that got no response at all.
NETWORK_ERROR = 599


@dataclass(frozen=True)
class RobotsRules:
    """The rules of one host: ``parser`` when parsed, else a blanket allow or disallow."""

    allow_all: bool
    parser: Protego | None
    expires_at: float

    def allowed(self, url: str, user_agent: str) -> bool:
        if self.parser is None:
            return self.allow_all
        return self.parser.can_fetch(url, user_agent)

    def crawl_delay(self, user_agent: str) -> float | None:
        if self.parser is None:
            return None
        return self.parser.crawl_delay(user_agent)


class RobotsPolicy:
    """Answers "may this URL be fetched" per host from robots.txt kept in ``store``.

    ``rules(netloc)`` is ``None`` when robots.txt is unknown or expired: the caller must
    fetch it (``robots_url``) and report with ``record_response``/``record_error``.
    Parsed rules are cached in-process (LRU of ``cache_size`` hosts) until they expire.
    """

    def __init__(
        self,
        store: Frontier,
        user_agent: str,
        *,
        ttl: float,
        error_ttl: float,
        cache_size: int = 10_000,
        clock: Callable[[], float] = time.time,
    ):
        self.store = store
        self.user_agent = user_agent
        self.ttl = ttl
        self.error_ttl = error_ttl
        self.cache_size = cache_size
        self.clock = clock
        self._cache: OrderedDict[str, RobotsRules] = OrderedDict()

    #: Setting -> option; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "FRONTIER_ROBOTS_TTL": ("ttl", float),
        "FRONTIER_ROBOTS_ERROR_TTL": ("error_ttl", float),
    }

    @classmethod
    def from_settings(cls, settings: Any, store: Frontier, **overrides: Any) -> RobotsPolicy:
        """The policy of the crawl's settings (Scrapy or Django) over ``store``: its user
        agent (``ROBOTSTXT_USER_AGENT``, else ``USER_AGENT``) and robots.txt TTLs."""
        return cls(store, user_agent(settings),
                   **settings_to_options(settings, cls.SETTINGS, **overrides))

    @staticmethod
    def robots_url(scheme: str, netloc: str) -> str:
        return f"{scheme}://{netloc}/robots.txt"

    def rules(self, netloc: str) -> RobotsRules | None:
        """The current rules of ``netloc`` or ``None`` if robots.txt must be (re)fetched."""
        now = self.clock()
        cached = self._cache.get(netloc)
        if cached is not None and cached.expires_at > now:
            self._cache.move_to_end(netloc)
            return cached
        stored = self.store.robots_get(netloc)
        if stored is None or stored[2] <= now:
            self._cache.pop(netloc, None)
            return None
        rules = self._build(netloc, *stored)
        self._remember(netloc, rules)
        return rules

    def allowed(self, url: str, netloc: str) -> bool | None:
        """Whether ``url`` may be fetched; ``None`` when robots.txt is not known yet."""
        rules = self.rules(netloc)
        return None if rules is None else rules.allowed(url, self.user_agent)

    def crawl_delay(self, netloc: str) -> float | None:
        """The Crawl-delay robots.txt asks of us (uncapped), if known."""
        rules = self.rules(netloc)
        return None if rules is None else rules.crawl_delay(self.user_agent)

    def record_response(self, netloc: str, status: int, body: bytes) -> RobotsRules:
        """Store what the robots.txt fetch of ``netloc`` returned, for every worker."""
        ok = 200 <= status < 300 or (400 <= status < 500 and status != 429)
        expires = self.clock() + (self.ttl if ok else self.error_ttl)
        self.store.robots_set(netloc, status, body if 200 <= status < 300 else b"", expires)
        rules = self._build(netloc, status, body, expires)
        self._remember(netloc, rules)
        return rules

    def record_error(self, netloc: str) -> RobotsRules:
        """The fetch got no response: disallow all until ``error_ttl`` passes."""
        return self.record_response(netloc, NETWORK_ERROR, b"")

    def _build(self, netloc: str, status: int, body: bytes, expires: float) -> RobotsRules:
        if 200 <= status < 300:
            try:
                return RobotsRules(True, Protego.parse(body.decode("utf-8")), expires)
            except (UnicodeDecodeError, ValueError, TypeError) as exc:
                logger.warning("unparseable robots.txt of %s (%s): allowing all", netloc, exc)
                return RobotsRules(True, None, expires)
        if 300 <= status < 500 and status != 429:
            return RobotsRules(True, None, expires)
        return RobotsRules(False, None, expires)

    def _remember(self, netloc: str, rules: RobotsRules) -> None:
        self._cache[netloc] = rules
        self._cache.move_to_end(netloc)
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)


def user_agent(settings: Any) -> str:
    """The user agent the crawl matches robots.txt groups with."""
    return setting(settings, "ROBOTSTXT_USER_AGENT") or setting(settings, "USER_AGENT")
