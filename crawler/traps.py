"""Crawler-trap guards, applied to a URL before it enters the frontier.

Separate from the seen filter: a calendar that links to tomorrow forever produces URLs
that were never seen. Each check names the reason a URL is dropped, so drops are counted
per reason (``frontier/dropped/<reason>``). The per-host page budget is the frontier's job
(it is shared by every worker); this module holds the checks that need only the URL.
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

from crawler.options import Option, settings_to_options

_DIGITS = re.compile(r"\d+")


class TrapGuard:
    """Drops URLs that look like traps; ``check`` returns the reason or ``None``.

    - ``depth``: deeper than ``max_depth`` links from a seed (0 = no limit);
    - ``url_length``: longer than ``max_url_length`` characters;
    - ``repeated_segments``: a path segment occurring ``max_segment_repeats`` times or more
      (``/a/b/a/b/a/b``), the shape of relative-link loops;
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
        parts = urlsplit(url)
        if self.max_segment_repeats and self._repeats(parts.path):
            return "repeated_segments"
        if self.max_query_variants and parts.query and self._explodes(parts):
            return "query_explosion"
        return None

    def _repeats(self, path: str) -> bool:
        segments = [s for s in path.split("/") if s]
        if len(segments) < self.max_segment_repeats:
            return False
        counts = Counter(segments)
        return counts.most_common(1)[0][1] >= self.max_segment_repeats

    def _explodes(self, parts) -> bool:
        names = ",".join(sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)}))
        pattern = f"{parts.netloc}{_DIGITS.sub('#', parts.path)}?{names}"
        variants = self._variants.get(pattern)
        if variants is None:
            variants = self._variants[pattern] = set()
            if len(self._variants) > self.max_patterns:
                self._variants.popitem(last=False)
        else:
            self._variants.move_to_end(pattern)
        key = hash((parts.path, parts.query))
        if key in variants:
            return False
        if len(variants) >= self.max_query_variants:
            return True
        variants.add(key)
        return False
