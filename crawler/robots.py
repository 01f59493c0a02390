"""robots.txt policy: fetched once per host per TTL, stored in the frontier, shared by all.

The fetch itself goes through the frontier as the first leased request of a host (so it
obeys politeness), and the host's pages wait behind it. Status handling follows RFC 9309:
2xx is parsed; 4xx (except 429) means no rules (allow all); 5xx, 429 and network errors mean
disallow all until ``error_ttl`` passes and robots.txt is tried again. A body that cannot be
decoded or parsed is logged and treated as allow-all.

What one robots.txt may cost is bounded: the fetch reads at most ``ROBOTS_MAX_BYTES``
(500 KiB, RFC 9309 2.5; ``RobotsFetchMiddleware``), the body is parsed once, by the worker
that fetched it (Protego's grammar), into the rules of the crawl's user agent
(``CompiledRules``), and those are what the frontier stores: every other worker and the URL
inspector load them without parsing. A check looks rules up by length instead of trying
each: a few microseconds where Protego took ~0.2-0.9 ms per URL on a 500 KiB file and
16-43 ms on a 10 MB one (measured with 18,000 and 437,000 ``Disallow`` lines).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from protego import Protego
from protego._urlpattern import _URLPattern
from protego._utils import _quote_path
from scrapy import Request

from crawler.frontier.base import Frontier
from crawler.options import Option, setting, settings_to_options

logger = logging.getLogger(__name__)

#: Pseudo status stored for a robots.txt fetch that got no response at all.
NETWORK_ERROR = 599
#: Most bytes of a robots.txt read and parsed (RFC 9309 2.5 asks for at least 500 KiB).
ROBOTS_MAX_BYTES = 500 * 1024
#: Rules kept parsed in each process, all hosts together (~100 bytes each; a 500 KiB
#: robots.txt holds up to ~25,000): hosts past it are loaded from the frontier again.
CACHED_RULES = 250_000
#: First line of the compiled rules as stored (a comment, should a parser ever read it).
COMPILED_MAGIC = b"#websearch-robots 1 "


class RobotsFetchMiddleware:
    """Downloader middleware: a robots.txt fetched for the frontier (``meta["frontier_robots"]``)
    is read up to ``ROBOTS_MAX_BYTES`` (``crawler.fetch`` cuts the transfer there), asked for
    uncompressed so that the cut lands in the text."""

    def process_request(self, request: Request) -> None:
        if request.meta.get("frontier_robots"):
            request.meta["download_maxsize"] = ROBOTS_MAX_BYTES
            request.headers[b"Accept-Encoding"] = b"identity"


def truncated(body: bytes, limit: int = ROBOTS_MAX_BYTES) -> bytes:
    """``body`` cut to its whole lines within ``limit`` bytes (a cut line could read as a
    shorter, wider rule; a cut character would not decode)."""
    if len(body) <= limit:
        return body
    body = body[:limit]
    return body[: body.rfind(b"\n") + 1]


class CompiledRules:
    """The robots.txt rules of one user agent, indexed for checks in microseconds.

    Decides as Protego's ``can_fetch`` does (RFC 9309: the longest matching pattern wins,
    ``Allow`` on a tie; ``/robots.txt`` is always allowed), from the patterns Protego
    normalized. Plain patterns and ``$``-anchored ones are looked up by the path's prefix of
    each pattern length present; wildcard patterns are tried only when their literal head
    is a prefix of the path and they would beat the best match so far.
    """

    def __init__(self, rules: Iterable[tuple[str, bool]], crawl_delay: float | None = None):
        self.crawl_delay = crawl_delay
        self.rules: list[tuple[str, bool]] = []
        self._plain: dict[str, bool] = {}
        self._exact: dict[str, bool] = {}
        self._wild: dict[str, list[tuple[int, bool, _URLPattern]]] = {}
        for pattern, allow in rules:
            self.rules.append((pattern, allow))
            if "*" in pattern:
                head = pattern[: pattern.index("*")]
                self._wild.setdefault(head, []).append((len(pattern), allow,
                                                        _URLPattern(pattern)))
            elif pattern.endswith("$"):
                key = pattern[:-1]
                self._exact[key] = self._exact.get(key, False) or allow
            else:
                self._plain[pattern] = self._plain.get(pattern, False) or allow
        for group in self._wild.values():
            group.sort(key=lambda r: (r[0], r[1]), reverse=True)
        self._plain_lengths = sorted({len(p) for p in self._plain}, reverse=True)
        self._wild_lengths = sorted({len(h) for h in self._wild}, reverse=True)

    @classmethod
    def parse(cls, text: str, user_agent: str) -> CompiledRules:
        """The rules of ``user_agent``'s group of a robots.txt (Protego's grammar)."""
        rule_set = Protego.parse(text)._get_matching_rule_set(user_agent)
        if rule_set is None:
            return cls(())
        return cls(((rule.value._pattern, rule.field == "allow") for rule in rule_set._rules),
                   rule_set.crawl_delay)

    def __len__(self) -> int:
        return len(self.rules)

    def allowed(self, url: str) -> bool:
        """Whether the rules let ``url`` be fetched."""
        path = _quote_path(url)
        if path == "/robots.txt":
            return True
        size = len(path)
        best = (-1, True)
        for n in self._plain_lengths:
            if n <= size:
                allow = self._plain.get(path[:n])
                if allow is not None:
                    best = (n, allow)
                    break
        allow = self._exact.get(path)
        if allow is not None:
            best = max(best, (size + 1, allow))
        for n in self._wild_lengths:
            if n > size:
                continue
            for priority, allow, pattern in self._wild.get(path[:n], ()):
                if (priority, allow) <= best:
                    break
                if pattern.match(path):
                    best = (priority, allow)
                    break
        return best[1]

    def to_bytes(self, user_agent: str) -> bytes:
        """The stored form: a header naming the user agent, the crawl delay, a rule a line."""
        lines = [COMPILED_MAGIC + user_agent.encode("utf-8")]
        if self.crawl_delay is not None:
            lines.append(f"#crawl-delay {self.crawl_delay!r}".encode())
        lines += [(("A" if allow else "D") + pattern).encode("utf-8")
                  for pattern, allow in self.rules]
        return b"\n".join(lines) + b"\n"

    @classmethod
    def from_bytes(cls, data: bytes, user_agent: str) -> CompiledRules | None:
        """Rules stored by ``to_bytes``; None when they were compiled for another agent."""
        lines = data.decode("utf-8").split("\n")
        if lines[0].encode("utf-8") != COMPILED_MAGIC + user_agent.encode("utf-8"):
            return None
        delay = None
        rules = []
        for line in lines[1:]:
            if line.startswith("#crawl-delay "):
                delay = float(line[len("#crawl-delay "):])
            elif line:
                rules.append((line[1:], line[0] == "A"))
        return cls(rules, delay)


@dataclass(frozen=True)
class RobotsRules:
    """The rules of one host: ``compiled`` (for the policy's user agent) when parsed, else
    a blanket allow or disallow."""

    allow_all: bool
    compiled: CompiledRules | None
    expires_at: float

    def allowed(self, url: str, user_agent: str = "") -> bool:
        """Whether ``url`` may be fetched (the rules are the policy's user agent's)."""
        if self.compiled is None:
            return self.allow_all
        return self.compiled.allowed(url)

    def crawl_delay(self, user_agent: str = "") -> float | None:
        """The Crawl-delay of the policy's user agent's group, if any."""
        return None if self.compiled is None else self.compiled.crawl_delay

    @property
    def size(self) -> int:
        """Rules held (the in-process cache's measure)."""
        return 1 + (len(self.compiled) if self.compiled is not None else 0)


class RobotsPolicy:
    """Answers "may this URL be fetched" per host from robots.txt kept in ``store``.

    ``rules(netloc)`` is ``None`` when robots.txt is unknown or expired: the caller must
    fetch it (``robots_url``) and report with ``record_response``/``record_error``.
    ``record_response`` parses a body once (its first ``ROBOTS_MAX_BYTES``) and stores the
    compiled rules of ``user_agent``; rules are cached in-process until they expire, least
    recently used first out, for at most ``cache_size`` hosts and ``cache_rules`` rules.
    """

    def __init__(
        self,
        store: Frontier,
        user_agent: str,
        *,
        ttl: float,
        error_ttl: float,
        cache_size: int = 10_000,
        cache_rules: int = CACHED_RULES,
        clock: Callable[[], float] = time.time,
    ):
        self.store = store
        self.user_agent = user_agent
        self.ttl = ttl
        self.error_ttl = error_ttl
        self.cache_size = cache_size
        self.cache_rules = cache_rules
        self.clock = clock
        self._cache: OrderedDict[str, RobotsRules] = OrderedDict()
        self._cached_rules = 0

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
            self._forget(netloc)
            return None
        rules = self._load(netloc, *stored)
        if rules is not None:
            self._remember(netloc, rules)
        return rules

    def allowed(self, url: str, netloc: str) -> bool | None:
        """Whether ``url`` may be fetched; ``None`` when robots.txt is not known yet."""
        rules = self.rules(netloc)
        return None if rules is None else rules.allowed(url, self.user_agent)

    def refuses(self, url: str, netloc: str) -> bool:
        """Whether the rules this process holds for ``netloc`` refuse ``url``; reads no
        store (False when they are not held here: the URL is checked when leased)."""
        cached = self._cache.get(netloc)
        return (cached is not None and cached.expires_at > self.clock()
                and not cached.allowed(url, self.user_agent))

    def crawl_delay(self, netloc: str) -> float | None:
        """The Crawl-delay robots.txt asks of us (uncapped), if known."""
        rules = self.rules(netloc)
        return None if rules is None else rules.crawl_delay(self.user_agent)

    def record_response(self, netloc: str, status: int, body: bytes) -> RobotsRules:
        """Store what the robots.txt fetch of ``netloc`` returned, for every worker."""
        ok = 200 <= status < 300 or (400 <= status < 500 and status != 429)
        expires = self.clock() + (self.ttl if ok else self.error_ttl)
        compiled = self._compile(netloc, body) if 200 <= status < 300 else None
        stored = compiled.to_bytes(self.user_agent) if compiled is not None else b""
        self.store.robots_set(netloc, status, stored, expires)
        rules = self._decide(status, compiled, expires)
        self._remember(netloc, rules)
        return rules

    def record_error(self, netloc: str) -> RobotsRules:
        """The fetch got no response: disallow all until ``error_ttl`` passes."""
        return self.record_response(netloc, NETWORK_ERROR, b"")

    def _compile(self, netloc: str, body: bytes) -> CompiledRules | None:
        """The rules of our agent in a robots.txt body; None (allow all) if unreadable."""
        try:
            return CompiledRules.parse(truncated(body).decode("utf-8"), self.user_agent)
        except (UnicodeDecodeError, ValueError, TypeError) as exc:
            logger.warning("unparseable robots.txt of %s (%s): allowing all", netloc, exc)
            return None

    def _load(self, netloc: str, status: int, body: bytes, expires: float) -> RobotsRules | None:
        """Stored rules: compiled (or a raw body, as stored before); None when they were
        compiled for another user agent (robots.txt must be fetched again)."""
        compiled = None
        if 200 <= status < 300 and body:
            if body.startswith(COMPILED_MAGIC):
                compiled = CompiledRules.from_bytes(body, self.user_agent)
                if compiled is None:
                    return None
            else:
                compiled = self._compile(netloc, body)
        return self._decide(status, compiled, expires)

    @staticmethod
    def _decide(status: int, compiled: CompiledRules | None, expires: float) -> RobotsRules:
        if 200 <= status < 300:
            return RobotsRules(True, compiled, expires)
        if 300 <= status < 500 and status != 429:
            return RobotsRules(True, None, expires)
        return RobotsRules(False, None, expires)

    def _remember(self, netloc: str, rules: RobotsRules) -> None:
        self._forget(netloc)
        self._cache[netloc] = rules
        self._cached_rules += rules.size
        while len(self._cache) > 1 and (len(self._cache) > self.cache_size
                                        or self._cached_rules > self.cache_rules):
            _, evicted = self._cache.popitem(last=False)
            self._cached_rules -= evicted.size

    def _forget(self, netloc: str) -> None:
        dropped = self._cache.pop(netloc, None)
        if dropped is not None:
            self._cached_rules -= dropped.size


def user_agent(settings: Any) -> str:
    """The user agent the crawl matches robots.txt groups with."""
    return setting(settings, "ROBOTSTXT_USER_AGENT") or setting(settings, "USER_AGENT")
