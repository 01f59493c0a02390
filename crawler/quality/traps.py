"""Crawler-trap guards, applied to a URL before it enters the frontier.

Separate from the seen filter: a calendar that links to tomorrow forever produces URLs
that were never seen. Each check names the reason a URL is dropped, so drops are counted
per reason (``frontier/dropped/<reason>``). The per-host page budget is the frontier's job
(it is shared by every worker); this module holds the checks that need only the URL.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any, ClassVar
from urllib.parse import parse_qsl

from crawler.options import Option, enabled, settings_to_options
from crawler.urls import split_url

_DIGITS = re.compile(r"\d+")


def url_pattern(url: str) -> str:
    """A URL's pattern: netloc, path with digit runs folded to ``#``, and the sorted names
    of its query parameters (``/cal/2024/05?view=w`` ~ ``/cal/2025/11?view=m``)."""
    return _pattern(*split_url(url))


def _pattern(netloc: str, path: str, query: str) -> str:
    path = _DIGITS.sub("#", path)
    if not query:
        return f"{netloc}{path}"
    names = ",".join(sorted({k for k, _ in parse_qsl(query, keep_blank_values=True)}))
    return f"{netloc}{path}?{names}"


class TrapGuard:
    """Drops URLs that look like traps; ``check`` returns the reason or ``None``.

    - ``depth``: deeper than ``max_depth`` links from a seed (0 = no limit);
    - ``url_length``: longer than ``max_url_length`` characters;
    - ``repeated_segments``: a path segment occurring ``max_segment_repeats`` times or more
      (``/a/b/a/b/a/b``), the shape of relative-link loops;
    - ``template_trap``: a URL pattern (``url_pattern``) found to be a template trap and
      given to ``block_pattern`` (by the quality pipeline);
    - ``query_explosion``: more than ``max_query_variants`` distinct URLs with a query seen
      for one path pattern and set of parameter names (digits folded: ``/cal/2024/05`` ~
      ``/cal/2025/11``), the shape of session ids, sort orders and calendars. Counted in a
      bounded LRU of ``max_patterns`` patterns.
    """

    #: Setting -> option; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "FRONTIER_MAX_DEPTH": ("max_depth", int),
        "FRONTIER_MAX_URL_LENGTH": ("max_url_length", int),
        "FRONTIER_MAX_SEGMENT_REPEATS": ("max_segment_repeats", int),
        "FRONTIER_MAX_QUERY_VARIANTS": ("max_query_variants", int),
    }

    def __init__(
        self,
        *,
        max_depth: int,
        max_url_length: int,
        max_segment_repeats: int,
        max_query_variants: int,
        max_patterns: int = 10_000,
    ):
        self.max_depth = max_depth
        self.max_url_length = max_url_length
        self.max_segment_repeats = max_segment_repeats
        self.max_query_variants = max_query_variants
        self.max_patterns = max_patterns
        self._variants: OrderedDict[str, set[int]] = OrderedDict()
        self._blocked: set[str] = set()

    def block_pattern(self, pattern: str) -> None:
        """Drop every later URL of ``pattern`` (a ``url_pattern``) as ``template_trap``."""
        self._blocked.add(pattern)

    def blocked(self, url: str) -> bool:
        """Whether ``url``'s pattern was blocked."""
        return bool(self._blocked) and url_pattern(url) in self._blocked

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> TrapGuard:
        """The guard the ``FRONTIER_MAX_*`` settings describe, ``overrides`` on top."""
        return cls(**settings_to_options(settings, cls.SETTINGS, **overrides))

    def check(self, url: str, depth: int = 0) -> str | None:
        """The reason to drop ``url`` (reached at ``depth``), or ``None`` to keep it."""
        if self.max_depth and depth > self.max_depth:
            return "depth"
        if self.max_url_length and len(url) > self.max_url_length:
            return "url_length"
        netloc, path, query = split_url(url)
        if self._blocked and _pattern(netloc, path, query) in self._blocked:
            return "template_trap"
        if self.max_segment_repeats and self._repeats(path):
            return "repeated_segments"
        if self.max_query_variants and query and self._explodes(netloc, path, query):
            return "query_explosion"
        return None

    def _repeats(self, path: str) -> bool:
        segments = [s for s in path.split("/") if s]
        limit = self.max_segment_repeats
        # a segment can occur ``limit`` times only if ``limit - 1`` of them repeat others
        if len(segments) - len(set(segments)) < limit - 1:
            return False
        counts: dict[str, int] = {}
        for segment in segments:
            counts[segment] = counts.get(segment, 0) + 1
        return max(counts.values()) >= limit

    def _explodes(self, netloc: str, path: str, query: str) -> bool:
        pattern = _pattern(netloc, path, query)
        variants = self._variants.get(pattern)
        if variants is None:
            variants = self._variants[pattern] = set()
            if len(self._variants) > self.max_patterns:
                self._variants.popitem(last=False)
        else:
            self._variants.move_to_end(pattern)
        key = hash((path, query))
        if key in variants:
            return False
        if len(variants) >= self.max_query_variants:
            return True
        variants.add(key)
        return False


class DeadSubtrees:
    """Directories whose fetches keep answering 404/410 (or soft 404s).

    A directory is the URL's netloc and path up to its last ``/``. Once ``min_fetches``
    fetches of a directory were all dead it is *dying*: new URLs in it go to the lowest
    tier. Once it has ``drop_after`` fetches of which ``dead_share`` are dead it is *dead*:
    its queued URLs are dropped when leased (``dead_subtree``). Bounded LRU of
    ``max_dirs`` directories; a live answer resets nothing but dilutes the share.
    """

    DEAD_STATUSES = frozenset({404, 410})

    SETTINGS: ClassVar[dict[str, Option]] = {
        "FRONTIER_DEAD_DIR_MIN_FETCHES": ("min_fetches", int),
        "FRONTIER_DEAD_DIR_DROP_AFTER": ("drop_after", int),
        "FRONTIER_DEAD_DIR_SHARE": ("dead_share", float),
    }

    def __init__(self, *, min_fetches: int, drop_after: int, dead_share: float,
                 max_dirs: int = 50_000):
        self.min_fetches = min_fetches
        self.drop_after = drop_after
        self.dead_share = dead_share
        self.max_dirs = max_dirs
        self._dirs: OrderedDict[str, list[int]] = OrderedDict()
        # how many of the directories held are dying and dead now: while none is, a URL is
        # answered without splitting it into its directory (every link of every page asks)
        self._dying = self._dead = 0

    @classmethod
    def from_settings(cls, settings: Any) -> DeadSubtrees | None:
        """The tracker the ``FRONTIER_DEAD_DIR_*`` settings describe; None when
        ``FRONTIER_DEAD_DIRS`` is off."""
        if not enabled(settings, "FRONTIER_DEAD_DIRS"):
            return None
        return cls(**settings_to_options(settings, cls.SETTINGS))

    @staticmethod
    def directory(url: str) -> str:
        netloc, path, _ = split_url(url)
        return netloc + path[:path.rfind("/") + 1]

    def record(self, url: str, status: int | None) -> None:
        """Count one fetch of ``url`` that answered ``status``."""
        counts = self._counts(url)
        self._tally(counts, -1)
        counts[0] += 1
        counts[1] += status in self.DEAD_STATUSES
        self._tally(counts, 1)

    def soft_404(self, url: str) -> None:
        """A fetch counted as live turned out to be a soft 404."""
        counts = self._counts(url)
        if counts[1] < counts[0]:
            self._tally(counts, -1)
            counts[1] += 1
            self._tally(counts, 1)

    def _counts(self, url: str) -> list[int]:
        key = self.directory(url)
        counts = self._dirs.get(key)
        if counts is None:
            counts = self._dirs[key] = [0, 0]
            self._tally(counts, 1)
            if len(self._dirs) > self.max_dirs:
                self._tally(self._dirs.popitem(last=False)[1], -1)
        else:
            self._dirs.move_to_end(key)
        return counts

    def _tally(self, counts: list[int], sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) a directory's ``counts`` from the numbers of
        dying and dead directories."""
        self._dying += sign * self._is_dying(counts)
        self._dead += sign * self._is_dead(counts)

    def _is_dying(self, counts: list[int]) -> bool:
        return counts[0] >= self.min_fetches and counts[1] == counts[0]

    def _is_dead(self, counts: list[int]) -> bool:
        return counts[0] >= self.drop_after and counts[1] >= self.dead_share * counts[0]

    def dying(self, url: str) -> bool:
        """Every fetch of the directory so far (at least ``min_fetches``) was dead."""
        counts = self._dirs.get(self.directory(url)) if self._dying else None
        return counts is not None and self._is_dying(counts)

    def dead(self, url: str) -> bool:
        """The directory has ``drop_after`` fetches, ``dead_share`` of them dead."""
        counts = self._dirs.get(self.directory(url)) if self._dead else None
        return counts is not None and self._is_dead(counts)
