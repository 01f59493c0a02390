"""Adaptive recrawl policy: when to fetch a known URL again, and which due URL first.

Pure functions of a URL's ``CrawlState`` and the time, shared by the crawler
(``crawler/freshness.py``) and the simulation in ``bench/freshness.py``, so the benchmark
measures the code the crawler runs.

The interval shrinks when a fetch finds the page changed and grows when it finds it
unchanged (multiplicative, like TCP's AIMD but both ways), bounded per front tier; errors
back off exponentially. Due URLs are ordered by ``value x staleness``: the tier's value
times the expected time the stored copy has been out of date, under a Poisson model of
changes whose rate is the inverse of the current interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

from crawler.options import Option, settings_to_options

#: Change instants kept per URL (the newest).
HISTORY = 16


@dataclass
class CrawlState:
    """What the crawler knows about one URL between fetches.

    ``interval`` is the current recrawl interval (s); ``changes`` the instants at which a
    fetch found new content (newest last, at most ``HISTORY``); ``failures`` consecutive
    failed fetches; ``gone`` consecutive 404/410 answers; ``tombstone`` set once the URL is
    known dead (never fetched again through a stale link); ``moved_to`` the target of a
    permanent redirect.
    """

    url: str
    tier: int = 0
    last_fetch: float = 0.0
    status: int = 0
    etag: str = ""
    last_modified: str = ""
    content_hash: str = ""
    interval: float = 0.0
    changes: list[float] = field(default_factory=list)
    failures: int = 0
    gone: int = 0
    tombstone: bool = False
    moved_to: str = ""
    next_fetch_at: float = 0.0

    @property
    def validators(self) -> dict[str, str]:
        """Conditional-request headers for the stored copy (empty without one)."""
        headers = {}
        if self.status == 200 and self.etag:
            headers["If-None-Match"] = self.etag
        if self.status == 200 and self.last_modified:
            headers["If-Modified-Since"] = self.last_modified
        return headers


@dataclass(frozen=True)
class RecrawlPolicy:
    """Adaptive recrawl intervals and priorities.

    Tier ``t`` (0 = most important) has bounds ``[min_interval, max_interval] x
    tier_factor**t`` and value ``1 / (1 + t)``. A change multiplies the interval by
    ``shrink``, an unchanged fetch by ``grow``. The ``n``-th consecutive failure waits
    ``min_interval x 2**n`` (capped at the tier's maximum); a first 404/410 is checked again
    after ``min_interval``.
    """

    min_interval: float
    max_interval: float
    initial_interval: float
    shrink: float
    grow: float
    tier_factor: float

    #: Setting -> field; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "RECRAWL_MIN_INTERVAL": ("min_interval", float),
        "RECRAWL_MAX_INTERVAL": ("max_interval", float),
        "RECRAWL_INITIAL_INTERVAL": ("initial_interval", float),
        "RECRAWL_SHRINK": ("shrink", float),
        "RECRAWL_GROW": ("grow", float),
        "RECRAWL_TIER_FACTOR": ("tier_factor", float),
    }

    @classmethod
    def from_settings(cls, settings: Any, **fields: float) -> RecrawlPolicy:
        """The policy the ``RECRAWL_*`` settings describe, ``fields`` on top."""
        return cls(**settings_to_options(settings, cls.SETTINGS, **fields))

    def bounds(self, tier: int) -> tuple[float, float]:
        """``(shortest, longest)`` interval of ``tier``."""
        scale = self.tier_factor ** max(tier, 0)
        return self.min_interval * scale, self.max_interval * scale

    def value(self, tier: int) -> float:
        """How much a fresh copy of a URL in ``tier`` is worth relative to tier 0."""
        return 1.0 / (1 + max(tier, 0))

    def next_interval(self, state: CrawlState, changed: bool) -> float:
        """The interval after a successful fetch that found the page ``changed`` or not."""
        low, high = self.bounds(state.tier)
        if state.interval <= 0:
            interval = self.initial_interval
        else:
            interval = state.interval * (self.shrink if changed else self.grow)
        return min(max(interval, low), high)

    def error_delay(self, state: CrawlState) -> float:
        """Seconds to wait after ``state.failures`` consecutive failures (at least one)."""
        low, high = self.bounds(state.tier)
        return min(high, low * 2.0 ** max(state.failures, 1))

    def staleness(self, state: CrawlState, now: float) -> float:
        """Expected seconds the stored copy has been out of date (Poisson changes at rate
        1 / interval): ``e - (1 - exp(-e / interval)) x interval`` for ``e`` seconds since
        the last fetch; a URL never fetched counts as stale for the longest interval."""
        if state.last_fetch <= 0:
            return self.bounds(state.tier)[1]
        interval = state.interval if state.interval > 0 else self.initial_interval
        elapsed = max(now - state.last_fetch, 0.0)
        return elapsed - (1.0 - math.exp(-elapsed / interval)) * interval

    def priority(self, state: CrawlState, now: float) -> float:
        """``value x staleness``: due URLs with a higher priority are fetched first."""
        return self.value(state.tier) * self.staleness(state, now)

    # -- transitions: each updates ``state`` after one fetch at ``now`` ---------------------

    def fetched(self, state: CrawlState, now: float, content_hash: str, etag: str = "",
                last_modified: str = "") -> bool:
        """A 200 answer with content ``content_hash``; returns whether it changed."""
        changed = bool(state.content_hash) and content_hash != state.content_hash
        state.interval = self.next_interval(state, changed)
        if changed:
            state.changes = [*state.changes, now][-HISTORY:]
        state.content_hash = content_hash
        state.etag, state.last_modified = etag, last_modified
        self._success(state, now, 200)
        return changed

    def not_modified(self, state: CrawlState, now: float) -> None:
        """A 304 answer: the stored copy is still current."""
        state.interval = self.next_interval(state, False)
        self._success(state, now, 200)  # the stored copy stays the 200 it was

    def gone(self, state: CrawlState, now: float, status: int) -> bool:
        """A 404/410 answer; returns True when the URL is now dead (seen twice in a row)."""
        state.gone += 1
        state.last_fetch, state.status = now, status
        low, high = self.bounds(state.tier)
        if state.gone >= 2:
            state.tombstone = True
            state.next_fetch_at = now + high
        else:
            state.next_fetch_at = now + low
        return state.tombstone

    def moved(self, state: CrawlState, now: float, status: int, target: str) -> None:
        """A permanent redirect to ``target``: the document now lives there."""
        state.moved_to = target
        state.last_fetch, state.status = now, status
        state.gone = state.failures = 0
        state.next_fetch_at = now + self.bounds(state.tier)[1]

    def redirected(self, state: CrawlState, now: float) -> None:
        """A temporary redirect: an answer, not a failure; look again after the interval."""
        low, high = self.bounds(state.tier)
        interval = state.interval if state.interval > 0 else self.initial_interval
        state.failures = 0
        state.next_fetch_at = now + min(max(interval, low), high)

    def failed(self, state: CrawlState, now: float, status: int = 0) -> None:
        """A failed fetch (5xx, 429, download error): back off exponentially."""
        state.failures += 1
        state.next_fetch_at = now + self.error_delay(state)

    def _success(self, state: CrawlState, now: float, status: int) -> None:
        state.last_fetch, state.status = now, status
        state.failures = state.gone = 0
        state.tombstone = False
        state.moved_to = ""
        state.next_fetch_at = now + state.interval


def observe(policy: RecrawlPolicy, state: CrawlState, now: float, status: int,
            content_hash: str = "", etag: str = "", last_modified: str = "",
            location: str = "") -> str:
    """Update ``state`` with one answer and name what it meant.

    Returns ``"new"`` (first copy), ``"changed"``, ``"unchanged"`` (same content in a 200),
    ``"not_modified"`` (304), ``"missing"`` (a first 404/410), ``"deleted"`` (the second
    404/410 in a row: drop the document), ``"moved"`` (301/308 to ``location``),
    ``"redirected"`` (a temporary redirect) or ``"failed"``.
    """
    if status == 304 and state.content_hash:
        policy.not_modified(state, now)
        return "not_modified"
    if 200 <= status < 300:
        first = not state.content_hash
        changed = policy.fetched(state, now, content_hash, etag, last_modified)
        return "new" if first else "changed" if changed else "unchanged"
    if status in (404, 410):
        return "deleted" if policy.gone(state, now, status) else "missing"
    if status in (301, 308) and location:
        policy.moved(state, now, status, location)
        return "moved"
    if 300 <= status < 400 and status != 304:
        policy.redirected(state, now)
        return "redirected"
    policy.failed(state, now, status)
    return "failed"
