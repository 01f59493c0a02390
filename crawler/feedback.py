"""Verdicts of the pipelines for the frontier: one typed interface, ``Feedback``.

The dedup and quality pipelines judge hosts, URL patterns and pages as they see them; what
the crawl should do about it (cut a budget, stop a host, drop a pattern, count a soft 404,
rank a host's URLs) is the scheduler's. A pipeline holds ``crawl_feedback(crawler)`` and
calls its methods; with ``FrontierScheduler`` they reach its ``FrontierFeedback`` directly
(no signal, so a misspelt name or argument is an error, not a silent no-op), with another
scheduler they do nothing. A condemned or acquitted host is also announced to the other
pipelines through the ``host_condemned`` and ``host_acquitted`` signals (the index pipeline
removes its pages, the quality pipeline skips or indexes its later ones).

One answer goes the other way: ``Feedback.has_slack()``, whether the crawl is held by
politeness rather than by capacity now (``Slack``, noted by the scheduler at each poll of
the frontier). The index writer thread paces its batches only then (``INDEX_WRITER_PACE``).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from crawler.signals import host_acquitted, host_condemned

if TYPE_CHECKING:
    from crawler.admission import Admission
    from crawler.frontier import Frontier
    from crawler.ordering import Ordering


#: The budget cut an acquitted host gets: above any entry's own, so that one applies.
UNCUT_BUDGET = 2**31 - 1
#: Seconds after a poll that filled every free slot during which the crawl has no slack.
SLACK_AFTER_FULL_S = 1.0


class Slack:
    """Whether the crawl has capacity to spare. The scheduler notes each poll of the
    frontier: full (as many leases as the engine had free slots: requests wait for a slot)
    or short (fewer: the other hosts wait on politeness). The crawl has slack while its
    last poll was short and none was full in the last ``SLACK_AFTER_FULL_S`` seconds; read
    from any thread."""

    def __init__(self, after_full_s: float = SLACK_AFTER_FULL_S):
        self.after_full_s = after_full_s
        self._last_full = float("-inf")
        self._short = False

    def polled(self, full: bool) -> None:
        if full:
            self._last_full = time.monotonic()
        self._short = not full

    def __bool__(self) -> bool:
        return self._short and time.monotonic() - self._last_full >= self.after_full_s


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

    @abstractmethod
    def has_slack(self) -> bool:
        """True while the crawl is held by politeness, not by capacity (``Slack``); False
        when it is throughput-bound or unknown. Cheap; may be asked from any thread."""


class FrontierFeedback(Feedback):
    """The scheduler's side: verdicts applied to its admission, ordering and frontier."""

    def __init__(self, frontier: Frontier, admission: Admission, ordering: Ordering,
                 stats=None, slack: Slack | None = None):
        self.frontier = frontier
        self.admission = admission
        self.ordering = ordering
        self.stats = stats
        self.slack = slack if slack is not None else Slack()

    def cut_host_budget(self, host: str, budget: int) -> bool:
        self.frontier.set_host_budget(host, budget)
        self._inc("frontier/budget_cuts")
        return True

    def condemn_host(self, host: str, netloc: str, reason: str) -> None:
        if not self.admission.condemn(host, reason):
            return
        if netloc:
            self.frontier.set_host_budget(netloc, 0)
            if self.admission.host_rules.policy(host).quality != "trusted":
                self._drop_queue(netloc, reason)
        self._inc("frontier/budget_cuts")
        self._inc(f"frontier/condemned/{reason}")

    def _drop_queue(self, netloc: str, reason: str) -> None:
        """The queue of a condemned host dropped in one frontier call: leased one by one
        only to be refused (``Admission.not_worth``), a few spam hosts' queues made 1,500
        leases and their reports in one second of the reactor thread
        (``bench/realweb.py``), as their verdicts came, in the crawl's busiest seconds."""
        dropped = self.frontier.drop_queue(netloc)
        if dropped:
            self.frontier.count(f"dropped/{reason}", dropped)
            self._inc(f"frontier/dropped/{reason}", dropped)

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

    def has_slack(self) -> bool:
        return bool(self.slack)

    def _inc(self, key: str, n: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, n)


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

    def has_slack(self) -> bool:
        target = self._target()
        return target is not None and target.has_slack()


def crawl_feedback(crawler) -> Feedback:
    """The ``Feedback`` a pipeline of ``crawler`` sends its verdicts to."""
    return CrawlFeedback(crawler)
