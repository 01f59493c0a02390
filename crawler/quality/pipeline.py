"""Pages and hosts not worth having: soft 404s, template traps and spam.

Runs after the dedup pipeline. Marks items the index must skip (``item.skip_index``) and
feeds the frontier back (``crawler.feedback``): a soft 404 counts as dead for its
directory (``soft_404_found``), a template-trap pattern stops being crawled
(``pattern_trapped``), a spam host is condemned (``host_condemned``: budget cut, queue
dropped, pages out of the index) and acquitted again (``host_acquitted``) when its later
pages contradict the verdict, and a host's novelty and, once condemned, its spam score order
its new URLs (``host_scored``; till its verdict a host is crawled at normal priority). Host
verdicts go to the verdict store with their evidence and what the crawl did with them,
where the admin and the URL inspector show them. A host rule overrides the crawl: its
``quality`` (``trusted`` / ``spam``), or ``never_judge`` (verdicts shown, never acted on);
``QUALITY_DRY_RUN`` stores and logs verdicts without acting on any.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from scrapy.exceptions import NotConfigured

from crawler.bounded import bound
from crawler.config import config_from_settings
from crawler.hostrules import HostRules
from crawler.items import PageItem
from crawler.options import enabled, setting, settings_to_options
from crawler.quality.judges import (
    LIFT_CONFIDENCE,
    HostVerdict,
    SpamJudge,
    TemplateTraps,
    browser_probe_fetched,
    is_soft_404,
    text_overlap,
)
from crawler.quality.verdicts import SPAM, TEMPLATE_TRAP, Verdict, VerdictStore, open_verdicts
from crawler.urls import host_of, netloc_of

logger = logging.getLogger(__name__)

#: A cloaking probe compares texts of at least this many words (an app shell that only a
#: browser renders has none in its HTML).
PROBE_MIN_WORDS = 20

#: Weight of the newest page in a host's moving average of novelty.
NOVELTY_ALPHA = 0.3

#: Pages tripping a rule kept per host as the verdict's examples.
EXAMPLES = 5


class QualityPipeline:
    """Judges every ``PageItem``; never drops one (the WARC store and link graph keep it).

    ``send(signal_name, **kwargs)`` reaches the scheduler (``crawler.scheduler``'s signals);
    ``probe(url)`` fetches a page again as a browser (the spider's ``probe_request``) for
    the cloaking check, on the ``probe_page``-th content page of each host (default: the
    last page of its spam sample, so a host the content rules already condemned costs no
    probe); a probe whose text overlaps the crawler's by less than ``cloak_overlap`` marks
    the host as cloaking. ``dry_run``: verdicts are stored and logged, never acted on.
    """

    def __init__(
        self,
        traps: TemplateTraps,
        judge: SpamJudge,
        *,
        stats=None,
        send: Callable[..., None] | None = None,
        verdicts: VerdictStore | None = None,
        host_rules: HostRules | None = None,
        probe: Callable[[str], None] | None = None,
        probe_page: int | None = None,
        cloak_overlap: float = 0.3,
        max_hosts: int,
        max_probes: int,
        dry_run: bool = False,
    ):
        self.traps = traps
        self.judge = judge
        self.stats = stats
        self._send = send or (lambda name, **kwargs: None)
        self.verdicts = verdicts
        self.host_rules = host_rules or HostRules.static([])
        self._probe = probe
        self.probe_page = judge.sample_pages if probe_page is None else probe_page
        self.cloak_overlap = cloak_overlap
        self.max_hosts = max_hosts
        self.max_probes = max_probes
        self.dry_run = dry_run
        # per host, each at most max_hosts (the oldest entry forgotten first)
        self.condemned: OrderedDict[str, str] = OrderedDict()
        # hosts with a spam verdict taken (acted on or not) -> its action
        self.judged: OrderedDict[str, str] = OrderedDict()
        self._examples: OrderedDict[str, list[str]] = OrderedDict()
        self._quality: OrderedDict[str, float] = OrderedDict()
        self._spam_scores: OrderedDict[str, float] = OrderedDict()
        # probes in flight (a probe whose answer never comes is forgotten after max_probes)
        self._probes: OrderedDict[str, tuple[str, str, str]] = OrderedDict()
        self._trap_patterns: OrderedDict[str, list[str]] = OrderedDict()
        self._pattern_docs: OrderedDict[str, list[str]] = OrderedDict()
        self._novelty: OrderedDict[str, float] = OrderedDict()

    @classmethod
    def from_crawler(cls, crawler) -> QualityPipeline:
        s = crawler.settings
        if not enabled(s, "QUALITY_ENABLED"):
            raise NotConfigured("QUALITY_ENABLED is off")
        from crawler import signals as crawl_signals
        from crawler.feedback import crawl_feedback

        feedback = crawl_feedback(crawler)
        # where each verdict goes: the frontier's typed interface (crawler/feedback.py), or
        # the index pipeline's signal for documents removed
        verdicts = {
            "documents_removed": lambda **kwargs: crawler.signals.send_catch_log(
                crawl_signals.documents_removed, **kwargs),
            "host_condemned": feedback.condemn_host,
            "host_acquitted": feedback.acquit_host,
            "pattern_trapped": feedback.trap_pattern,
            "soft_404_found": feedback.soft_404,
            "host_scored": feedback.score_host,
        }

        def send(name: str, **kwargs) -> None:
            verdicts[name](**kwargs)

        def probe(url: str) -> None:
            spider = crawler.spider
            if spider is not None and hasattr(spider, "probe_request"):
                crawler.engine.crawl(spider.probe_request(url))

        crawl = s.get("FRONTIER_CRAWL") or crawler.spidercls.name
        pipeline = cls(
            TemplateTraps(**settings_to_options(s, TemplateTraps.SETTINGS)),
            SpamJudge(**settings_to_options(s, SpamJudge.SETTINGS)),
            stats=crawler.stats,
            send=send,
            verdicts=open_verdicts(config_from_settings(s), crawl),
            host_rules=HostRules.from_crawler(crawler),
            probe=probe if enabled(s, "QUALITY_CLOAKING_PROBE") else None,
            max_hosts=setting(s, "QUALITY_MAX_HOSTS", int),
            max_probes=setting(s, "QUALITY_MAX_PENDING_PROBES", int),
            dry_run=setting(s, "QUALITY_DRY_RUN", bool),
        )
        crawler.signals.connect(pipeline.host_condemned, signal=crawl_signals.host_condemned)
        crawler.signals.connect(pipeline.probe_fetched, signal=browser_probe_fetched)
        return pipeline

    def close_spider(self, spider=None) -> None:
        if self.verdicts is not None:
            self.verdicts.close()

    # -- items -------------------------------------------------------------------------

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        host, netloc = item.host, netloc_of(item.url)
        policy = self.host_rules.policy(host)
        if policy.quality == "spam" and host not in self.condemned:
            self._condemn(host, netloc, SPAM, Verdict(
                netloc, SPAM, 1.0, reasons=("an admin host rule says spam",),
                action="overridden"))
        url = item.fetched_url or item.url
        if item.status == 200 and is_soft_404(item.title, item.text):
            item.skip_index = "soft_404"
            self._inc("quality/soft_404")
            self._send("soft_404_found", url=url)
        self._judge_template(item, url, netloc, self._action(policy.quality, "pattern_dropped"))
        if policy.quality != "spam":
            self._judge_spam(item, host, netloc, url, policy.quality)
        if host in self.condemned and policy.quality != "trusted":
            item.skip_index = self.condemned[host]
        return item

    def _action(self, override: str, acting: str) -> str:
        """What the crawl does with a verdict: ``acting``, or why not."""
        if override == "trusted":
            return "overridden"
        return "dry_run" if self.dry_run else acting

    def _judge_template(self, item: PageItem, url: str, netloc: str, action: str) -> None:
        features = item.text_features
        novelty = self.traps.observe(url, item.text, features and features.template_shingles,
                                     [link.url for link in item.links])
        if novelty is None:
            return
        # novelty within the host's own patterns: a copy of another host's page may be the
        # original of the two (the mirror check decides), so it is no reason to demote
        self._note_novelty(netloc, novelty.novelty)
        # the pages a trap verdict takes out of the index: its template and its stale pages
        docs = self._pattern_docs.setdefault(novelty.pattern, [])
        if (len(docs) < 2 * self.traps.min_pages and item.doc_id
                and (novelty.stale or not docs)):
            docs.append(item.doc_id)
        if len(self._pattern_docs) > self.traps.max_patterns:
            self._pattern_docs.popitem(last=False)
        acts = action == "pattern_dropped"
        if novelty.stale:
            self._inc("quality/template_stale")
        # a stale page is evidence for its pattern's verdict, no reason to drop it alone (a
        # project's bug-fix release notes are stale to their pattern); once the pattern is a
        # trap its pages stay out, and those indexed before go with the verdict
        if acts and novelty.pattern in self.traps.trapped:
            item.skip_index = item.skip_index or "template"
        if not novelty.trapped:
            return
        self._inc("quality/template_trap")
        logger.info("template trap: %s (pages add almost nothing new)%s", novelty.pattern,
                    "" if acts else f"; not acted on ({action})")
        if acts:
            self._send("pattern_trapped", pattern=novelty.pattern, netloc=netloc)
            # its first pages (the template, and those indexed before it was found) go too
            self._send("documents_removed", ids=self._pattern_docs.pop(novelty.pattern, []),
                       reason="template_trap")
        patterns = self._trap_patterns.setdefault(netloc, [])
        patterns.append(novelty.pattern)
        bound(self._trap_patterns, self.max_hosts)
        if self.verdicts is not None:
            self.verdicts.put(Verdict(
                netloc, TEMPLATE_TRAP, 1.0,
                reasons=tuple(f"{p}: pages differ only in dates, numbers or a few words, "
                              "and keep linking to more of them" for p in patterns),
                action=action, detail={
                    "patterns": list(patterns), "min_pages": self.traps.min_pages,
                    "trap_share": self.traps.trap_share,
                    "growth_share": self.traps.growth_share,
                    "min_novelty": self.traps.min_novelty}))

    def _note_novelty(self, netloc: str, novelty: float) -> None:
        """A moving average of how much new content the host's pages add: a host whose
        pages add nothing is worth little, spam or not."""
        average = self._novelty.get(netloc, 1.0)
        self._novelty[netloc] = (1 - NOVELTY_ALPHA) * average + NOVELTY_ALPHA * novelty
        self._novelty.move_to_end(netloc)
        if len(self._novelty) > self.max_hosts:
            self._novelty.popitem(last=False)
        self._score(netloc)

    def _score(self, netloc: str, spam_score: float | None = None) -> None:
        """Send the host's quality (``host_scored``) when it moved by 0.1 or more;
        ``spam_score`` replaces the host's last one."""
        if spam_score is not None:
            self._spam_scores[netloc] = spam_score
            bound(self._spam_scores, self.max_hosts)
        quality = round(min(1.0 - self._spam_scores.get(netloc, 0.0),
                            self._novelty.get(netloc, 1.0)), 2)
        if abs(self._quality.get(netloc, 1.0) - quality) >= 0.1:
            self._quality[netloc] = quality
            bound(self._quality, self.max_hosts)
            self._send("host_scored", host=netloc, quality=quality)

    def _judge_spam(self, item: PageItem, host: str, netloc: str, url: str,
                    override: str) -> None:
        link_hosts = [host_of(link.url) for link in item.links]
        features = item.text_features
        signals = self.judge.page_signals(host, item.title, item.text, link_hosts,
                                          item.hidden_words, features and features.stats)
        item.spam_score = 0.0 if override == "trusted" else signals.score
        self.judge.observe(host, signals,
                           [link.url for link, h in zip(item.links, link_hosts, strict=True)
                            if h != host])
        if signals.navigation:
            self._inc("quality/navigation_pages")
        if signals.rules:
            examples = self._examples.setdefault(host, [])
            if len(examples) < EXAMPLES:
                examples.append(url)
            bound(self._examples, self.max_hosts)
        self._decide(host, netloc, override)
        pages = self.judge.pages(host)
        if (pages == self.probe_page and not signals.navigation and self._probe is not None
                and host not in self.condemned):
            self._probes[url] = (host, netloc, item.text)
            bound(self._probes, self.max_probes)
            self._probe(url)

    def _decide(self, host: str, netloc: str, override: str) -> None:
        """Take, keep or lift the host's spam verdict (every content page re-judges it)."""
        verdict = self.judge.verdict(host)
        if verdict is None:
            return
        taken = self.judged.get(host)
        action = self._action(override, "budget_cut")
        if verdict.spam and taken != action:  # new, or a host rule changed since
            self.judged[host] = action
            bound(self.judged, self.max_hosts)
            self._inc("quality/verdicts/spam")
            record = self._spam_verdict(host, netloc, verdict, action)
            if action == "budget_cut":
                self._score(netloc, verdict.score)
                self._condemn(host, netloc, SPAM, record)
            else:
                logger.info("%s judged spam, not acted on (%s): %s", host, action,
                            "; ".join(record.reasons))
                self._store(record)
        elif taken is not None and not verdict.holds_at(LIFT_CONFIDENCE):
            self._lift(host, netloc, verdict, taken)

    def _spam_verdict(self, host: str, netloc: str, verdict: HostVerdict,
                      action: str) -> Verdict:
        return Verdict(
            netloc, SPAM, verdict.score, confidence=verdict.confidence,
            reasons=(*verdict.explain(),
                     f"confidence {verdict.confidence:.2f} that {self.judge.spam_share:.0%} "
                     f"or more of its pages trip "
                     f"{' and '.join(verdict.agreeing) or 'the rules'}; "
                     f"{verdict.pages} content pages judged, {verdict.navigation} "
                     "navigation pages left out"),
            action=action,
            detail={**verdict.evidence(), "examples": list(self._examples.get(host, ()))})

    def _lift(self, host: str, netloc: str, verdict: HostVerdict, taken: str) -> None:
        """Later pages contradict the verdict: the host is crawled and indexed again."""
        del self.judged[host]
        self._inc("quality/verdicts/lifted")
        record = self._spam_verdict(host, netloc, verdict, "lifted")
        logger.info("%s no longer judged spam: %d of %d content pages trip a rule "
                    "(confidence %.2f)", host, round(verdict.score * verdict.pages),
                    verdict.pages, verdict.confidence)
        self._store(record)
        self._score(netloc, 0.0)
        if taken == "budget_cut" and self.condemned.get(host) == SPAM:
            del self.condemned[host]
            self._send("host_acquitted", host=host, netloc=netloc, reason=SPAM)

    def _store(self, verdict: Verdict) -> None:
        if self.verdicts is not None:
            self.verdicts.put(verdict)

    def _condemn(self, host: str, netloc: str, reason: str, verdict: Verdict) -> None:
        self.condemned[host] = reason
        bound(self.condemned, self.max_hosts)
        self._inc(f"quality/condemned/{reason}")
        logger.info("%s condemned as %s: %s", host, reason, "; ".join(verdict.reasons))
        if self.verdicts is not None:
            self.verdicts.put(verdict)
        self._send("host_condemned", host=host, netloc=netloc, reason=reason)

    # -- signals -----------------------------------------------------------------------

    def host_condemned(self, host: str, reason: str = "condemned", **kwargs) -> None:
        """Handler of ``host_condemned`` (from any component): skip the host's pages."""
        self.condemned.setdefault(host, reason)
        bound(self.condemned, self.max_hosts)

    def probe_fetched(self, url: str, text: str, **kwargs) -> None:
        """Handler of ``browser_probe_fetched``: compare a browser's text with the crawler's."""
        probe = self._probes.pop(url, None)
        if probe is None:
            return
        host, netloc, crawler_text = probe
        if min(len(crawler_text.split()), len(text.split())) < PROBE_MIN_WORDS:
            self._inc("quality/probes_inconclusive")  # an app shell, an error page
            return
        overlap = text_overlap(crawler_text, text)
        self._inc("quality/probes")
        if overlap < self.cloak_overlap:
            self._inc("quality/cloaking")
            logger.info("%s serves browsers other content (word overlap %.2f)", host, overlap)
            self.judge.note_cloaking(host)
            quality = self.host_rules.policy(host).quality
            if quality != "spam":
                self._decide(host, netloc, quality)

    def _inc(self, key: str, n: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(key, n)
