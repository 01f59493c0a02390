"""Verdicts of the pipelines for the frontier: one typed interface, ``Feedback``.

The dedup and quality pipelines judge hosts, URL patterns and pages as they see them; what
the crawl should do about it (cut a budget, stop a host, drop a pattern, count a soft 404,
rank a host's URLs) is the scheduler's. A pipeline holds ``crawl_feedback(crawler)`` and
calls its methods; with ``FrontierScheduler`` they reach its ``FrontierFeedback`` directly
(no signal, so a misspelt name or argument is an error, not a silent no-op), with another
scheduler they do nothing. A condemned or acquitted host is also announced to the other
pipelines through the ``host_condemned`` and ``host_acquitted`` signals (the index pipeline
removes its pages, the quality pipeline skips or indexes its later ones).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from crawler.signals import host_acquitted, host_condemned

if TYPE_CHECKING:
    from crawler.admission import Admission
    from crawler.frontier import Frontier
    from crawler.ordering import Ordering


#: The budget cut an acquitted host gets: above any entry's own, so that one applies.
UNCUT_BUDGET = 2**31 - 1


class Feedback(ABC):
    """What the pipelines tell the crawl about hosts, patterns and pages."""

    @abstractmethod
    def cut_host_budget(self, host: str, budget: int) -> bool:
        """No more than ``budget`` pages from ``host`` (a netloc, the frontier's key),
        cluster-wide; True when a frontier took the cut."""

    @abstractmethod
    def condemn_host(self, host: str, netloc: str, reason: str) -> None:
        """``host`` (a host name; ``netloc`` its frontier key) is not worth fetching any
        more (``reason``: ``"mirror"``, ``"spam"``): no new URLs, queued ones dropped
        (``frontier/dropped/<reason>``), unless a host rule trusts it."""

    @abstractmethod
    def acquit_host(self, host: str, netloc: str, reason: str) -> None:
        """A condemned ``host`` is acquitted (later pages contradicted the verdict): its new
        URLs are queued again within their own budget; URLs dropped meanwhile stay dropped."""

    @abstractmethod
    def trap_pattern(self, pattern: str, netloc: str) -> None:
        """URLs of ``pattern`` (``crawler.quality.traps.url_pattern``) are a template trap: dropped
        from now on, queued ones when leased (``frontier/dropped/template_trap``)."""

    @abstractmethod
    def soft_404(self, url: str) -> None:
        """``url`` answered 200 with a "not found" page: a dead fetch for its directory."""

    @abstractmethod
    def score_host(self, host: str, quality: float) -> None:
        """``host``'s (a netloc's) quality, 0..1 (1: no spam signal): value-ordered crawls
        rank its new URLs and its standing by it."""


class FrontierFeedback(Feedback):
    """The scheduler's side: verdicts applied to its admission, ordering and frontier."""

    def __init__(self, frontier: Frontier, admission: Admission, ordering: Ordering,
                 stats=None):
        self.frontier = frontier
        self.admission = admission
        self.ordering = ordering
        self.stats = stats

    def cut_host_budget(self, host: str, budget: int) -> bool:
        self.frontier.set_host_budget(host, budget)
        self._inc("frontier/budget_cuts")
        return True

    def condemn_host(self, host: str, netloc: str, reason: str) -> None:
        if not self.admission.condemn(host, reason):
            return
        if netloc:
            self.frontier.set_host_budget(netloc, 0)
        self._inc("frontier/budget_cuts")
        self._inc(f"frontier/condemned/{reason}")

    def acquit_host(self, host: str, netloc: str, reason: str = "") -> None:
        if not self.admission.acquit(host):
            return
        if netloc:
            self.frontier.set_host_budget(netloc, UNCUT_BUDGET)
        self._inc("frontier/acquitted")

    def trap_pattern(self, pattern: str, netloc: str = "") -> None:
        self.admission.block_pattern(pattern)
        self._inc("frontier/trapped_patterns")

    def soft_404(self, url: str) -> None:
        self.admission.soft_404(url)

    def score_host(self, host: str, quality: float) -> None:
        self.ordering.score_host(host, quality)

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)


class CrawlFeedback(Feedback):
    """A pipeline's handle: forwards to the running scheduler's ``feedback`` (a
    ``FrontierFeedback``) when it has one, found when a verdict is sent (pipelines are
    built before the scheduler); does nothing otherwise."""

    def __init__(self, crawler):
        self.crawler = crawler

    def _target(self) -> Feedback | None:
        try:
            engine = self.crawler.engine
        except RuntimeError:  # Scrapy 2.19: not set until the crawl starts
            return None
        scheduler = getattr(engine, "scheduler", None) if engine is not None else None
        return getattr(scheduler, "feedback", None)

    def cut_host_budget(self, host: str, budget: int) -> bool:
        target = self._target()
        return target is not None and target.cut_host_budget(host, budget)

    def condemn_host(self, host: str, netloc: str, reason: str) -> None:
        target = self._target()
        if target is not None:
            target.condemn_host(host, netloc, reason)
        self.crawler.signals.send_catch_log(host_condemned, host=host, netloc=netloc,
                                            reason=reason)

    def acquit_host(self, host: str, netloc: str, reason: str) -> None:
        target = self._target()
        if target is not None:
            target.acquit_host(host, netloc, reason)
        self.crawler.signals.send_catch_log(host_acquitted, host=host, netloc=netloc,
                                            reason=reason)

    def trap_pattern(self, pattern: str, netloc: str) -> None:
        target = self._target()
        if target is not None:
            target.trap_pattern(pattern, netloc)

    def soft_404(self, url: str) -> None:
        target = self._target()
        if target is not None:
            target.soft_404(url)

    def score_host(self, host: str, quality: float) -> None:
        target = self._target()
        if target is not None:
            target.score_host(host, quality)


def crawl_feedback(crawler) -> Feedback:
    """The ``Feedback`` a pipeline of ``crawler`` sends its verdicts to."""
    return CrawlFeedback(crawler)
