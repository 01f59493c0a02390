"""Exact and near-duplicate detection as the first item pipeline, with feedback to the frontier.

Every item gets ``doc_id`` and ``cluster_id``; an exact duplicate also gets ``dup_of`` (the
first document's id) and goes on, so the WARC store and the link graph still see it; the
index pipeline skips it and records the alias.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, ClassVar

from scrapy.exceptions import NotConfigured

from crawler.bounded import RecentCounts, RecentKeys
from crawler.config import config_from_settings, get_config
from crawler.feedback import crawl_feedback
from crawler.hostrules import HostRules
from crawler.items import PageItem
from crawler.options import Option, enabled, setting, settings_to_options
from crawler.quality.dedup.core import METHODS, Deduplicator
from crawler.quality.dedup.election import ClusterElection, Election, Member, doc_key, link_key
from crawler.quality.dedup.store import PairCounts
from crawler.quality.verdicts import MIRROR, Verdict, VerdictStore, open_verdicts
from crawler.signals import cluster_elected, documents_removed
from crawler.urls import InvalidURL, canonicalize, doc_id_for, host_of, netloc_of

logger = logging.getLogger(__name__)

#: Off-host links (page -> page) the mirror check and the election remember: at least this
#: many, the latest, at most twice; 8 MB fixed (``RecentKeys``, 4 bytes a link per filter)
#: where 100,000 pages' links as frozensets of id strings took ~450 bytes a page and grew.
REMEMBERED_LINKS = 1_000_000
#: Pages whose links from other hosts are counted, for the election of the page shown: at
#: least the last this many linked to, at most twice; 9.6 MB fixed (``RecentCounts``).
COUNTED_INLINKS = 200_000


#: Without links back, a host is a mirror on arrival order alone only when at least this
#: share of its shared pages arrived after their twins: two copies crawled side by side
#: (a real site and its mirror seeded together) interleave, and neither is cut on a coin
#: flip (results still show one page per cluster, ``crawler.quality.dedup.election``).
MIRROR_LATER_SHARE = 0.9
#: ... and only when the other host is well ahead, holding at least this many times its
#: pages both when the two began to share pages and when the host is judged; at the start
#: the other also holds ``mirror_min_pages`` pages or more. Two copies seeded together and
#: crawled in lockstep, one some steps behind the other, have nearly all the laggard's
#: copies arriving later (a real site was cut as the mirror of its own mirror that way): a
#: lag of 8 pages at 30 pages each met the lead at judgement alone; at the start the leader
#: holds only the lag. A copy crawled after the original meets a host that already holds
#: many pages.
MIRROR_LATER_LEAD = 1.25


def signal_budget_cut(crawler) -> Callable[[str, int], bool]:
    """Cut a host's budget through the crawl's feedback to the frontier
    (``crawler.feedback``); True when a frontier scheduler took it."""
    return crawl_feedback(crawler).cut_host_budget


def signal_condemned(crawler) -> Callable[..., None]:
    """Tell the crawl (scheduler, quality and index pipelines) that a host is not worth
    fetching any more (``crawler.feedback``: the frontier, then the ``host_condemned``
    signal)."""
    return crawl_feedback(crawler).condemn_host


def signal_elected(crawler) -> Callable[[str, Election], None]:
    """Tell the index pipeline that the page shown for a cluster changed
    (``cluster_elected``)."""
    def elected(cluster_id: str, election: Election) -> None:
        crawler.signals.send_catch_log(cluster_elected, cluster_id=cluster_id,
                                       shown=election.shown, hidden=list(election.hidden))

    return elected


class DedupPipeline:
    """Sets ``doc_id``, ``cluster_id`` and ``dup_of`` on each ``PageItem``; never drops one.

    A host with at least ``host_min_pages`` pages of which a share ``host_copy_ratio`` are
    copies of its own other pages is a trap: its budget is cut once to the pages it already
    has, through ``cut_budget(netloc, pages)`` (in a crawl: the scheduler's
    feedback, ``crawler.feedback``, keyed like the frontier by ``netloc_of(url)``).

    A host with at least ``mirror_min_pages`` pages (0: no mirror check) of which a share
    ``mirror_copy_ratio`` are in a duplicate cluster with pages of one other host is a
    *mirror* of it, unless the
    evidence points the other way: the copy whose pages link to their twin on the other host
    is the mirror; without such links, the one whose copies nearly all arrived later
    (``MIRROR_LATER_SHARE``) while the other held well more pages (``MIRROR_LATER_LEAD``)
    already when their first shared page arrived.
    A mirror is condemned once (``condemn(host, netloc, "mirror")``: budget cut, queue
    dropped, pages out of the index) and its verdict, with the evidence, goes to
    ``verdicts``; with ``dry_run`` it is stored and logged only.

    Each page's cluster elects the page it shows (``crawler.quality.dedup.election``: the copy
    the others link to or name as canonical, links from other hosts, the host with more pages, the
    shorter URL) each time a member arrives; ``item.shown`` says whether it is this page,
    and when a page shown before loses, ``elected(cluster_id, election)`` hands the change
    on (in a crawl: the ``cluster_elected`` signal, to the index pipeline).
    """

    #: Setting -> option; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "DEDUP_HOST_MIN_PAGES": ("host_min_pages", int),
        "DEDUP_HOST_COPY_RATIO": ("host_copy_ratio", float),
        "DEDUP_MIRROR_MIN_PAGES": ("mirror_min_pages", int),
        "DEDUP_MIRROR_COPY_RATIO": ("mirror_copy_ratio", float),
    }

    def __init__(
        self,
        dedup: Deduplicator,
        stats=None,
        cut_budget: Callable[[str, int], bool] | None = None,
        *,
        host_min_pages: int,
        host_copy_ratio: float,
        mirror_min_pages: int = 0,
        mirror_copy_ratio: float = 1.0,
        condemn: Callable[[str, str, str], None] | None = None,
        verdicts: VerdictStore | None = None,
        trusted: Callable[[str], bool] | None = None,
        elected: Callable[[str, Election], None] | None = None,
        dry_run: bool = False,
    ):
        self.dedup = dedup
        self.stats = stats
        self._cut_budget = cut_budget
        self.host_min_pages = host_min_pages
        self.host_copy_ratio = host_copy_ratio
        self._condemn = condemn
        self.verdicts = verdicts
        self.mirror_min_pages = mirror_min_pages
        self.mirror_copy_ratio = mirror_copy_ratio
        self._trusted = trusted or (lambda host: False)
        self.dry_run = dry_run
        self._cut_hosts: set[str] = set()
        self.mirrors: dict[str, str] = {}
        # (later host, earlier host) -> their pages when the pair's first shared page came
        self._pair_start: dict[tuple[str, str], tuple[int, int]] = {}
        self._netlocs: dict[str, str] = {}
        # the links (``link_key``) of the pages seen lately to pages on other hosts
        self._offhost = RecentKeys(REMEMBERED_LINKS)
        # doc key -> links to it from pages of other hosts
        self._inlinks = RecentCounts(COUNTED_INLINKS)
        self._elected = elected
        self.election = ClusterElection(inlinks=lambda doc_id: self._inlinks.get(
                                            doc_key(doc_id), 0),
                                        host_pages=self.dedup.store.host_pages,
                                        links=self.links)

    @classmethod
    def from_crawler(cls, crawler) -> DedupPipeline:
        settings = crawler.settings
        if not enabled(settings, "DEDUP_ENABLED"):
            raise NotConfigured("DEDUP_ENABLED is off")
        method = setting(settings, "DEDUP_METHOD")
        if method not in METHODS:
            raise NotConfigured(f"DEDUP_METHOD must be one of {METHODS}, not {method!r}")
        redis_url = settings.get("REDIS_URL") or get_config().redis_url
        dedup = Deduplicator.from_settings(settings, redis_url=redis_url)
        rules = HostRules.from_crawler(crawler)
        crawl = settings.get("FRONTIER_CRAWL") or crawler.spidercls.name
        pipeline = cls(dedup, stats=crawler.stats, cut_budget=signal_budget_cut(crawler),
                       condemn=signal_condemned(crawler),
                       verdicts=open_verdicts(config_from_settings(settings), crawl),
                       trusted=lambda host: rules.policy(host).quality == "trusted",
                       elected=signal_elected(crawler),
                       dry_run=setting(settings, "QUALITY_DRY_RUN", bool),
                       **settings_to_options(settings, cls.SETTINGS))
        crawler.signals.connect(pipeline.forget, signal=documents_removed)
        return pipeline

    def forget(self, ids, **kwargs) -> None:
        """Handler of ``documents_removed``: pages gone or moved leave their clusters'
        elections, so a copy found later (a moved page at its new URL) can be shown."""
        for cluster_id, election in self.election.remove(ids):
            self._inc("dedup/reelected")
            if self._elected is not None:
                self._elected(cluster_id, election)

    def close_spider(self, spider=None) -> None:
        if self.verdicts is not None:
            self.verdicts.close()

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        if not item.doc_id:
            item.doc_id = doc_id_for(item.url)
        features = item.text_features
        verdict = self.dedup.check(item.doc_id, item.host, item.text,
                                   features.dedup if features is not None else None,
                                   title=item.title)
        item.cluster_id = verdict.cluster_id
        self._inc("dedup/checked")
        if verdict.kind == "exact":
            item.dup_of = verdict.match
            self._inc("dedup/exact")
        elif verdict.kind == "near":
            self._inc("dedup/near")
        if verdict.kind == "known":  # fetched again: shown as its cluster last elected
            item.shown = self.election.shown(item.cluster_id or item.doc_id) in (
                None, item.doc_id)
        else:
            self._remember_links(item)
            netloc = netloc_of(item.url)
            self._netlocs.setdefault(item.host, netloc)
            own_copy = verdict.kind in ("exact", "near") and verdict.match_host == item.host
            self._watch_host(item.host, netloc, own_copy, verdict.host_totals)
            if verdict.kind in ("exact", "near") and verdict.match_host not in ("", item.host):
                self._watch_mirror(item, verdict.match, verdict.match_host)
            self._elect(item)
        return item

    def _elect(self, item: PageItem) -> None:
        """Elect the page ``item``'s cluster shows, now that ``item`` is a member."""
        canonical = ""
        if item.canonical:
            try:
                canonical = doc_id_for(canonicalize(item.canonical))
            except InvalidURL:
                pass
        member = Member(item.doc_id, item.url, sys.intern(item.host), canonical)
        election = self.election.add(item.cluster_id or item.doc_id, member)
        item.shown = election.shown == item.doc_id
        if election.hidden:
            self._inc("dedup/reelected")
            if self._elected is not None:
                self._elected(item.cluster_id or item.doc_id, election)

    def links(self, source: str, target: str) -> bool:
        """Whether page ``source`` was seen lately linking to page ``target`` (on another
        host; a false yes ~0.1 % of the time, see ``RecentKeys``)."""
        return link_key(source, target) in self._offhost

    def _remember_links(self, item: PageItem) -> None:
        """Keep the ids of the off-host pages ``item`` links to (a copy may arrive later and
        find that its twin links to it as the original)."""
        targets = {doc_id_for(link.url) for link in item.links
                   if host_of(link.url) != item.host}
        for doc_id in targets:
            self._offhost.add(link_key(item.doc_id, doc_id))
            self._inlinks.add(doc_key(doc_id))

    def _watch_mirror(self, item: PageItem, match: str, other: str) -> None:
        """Count a page shared with another host; condemn whichever of the two is a mirror."""
        backlink = self.links(item.doc_id, match)
        other_backlink = self.links(match, item.doc_id)
        counts = self.dedup.store.count_shared(item.host, other, backlink, other_backlink)
        if (item.host, other) not in self._pair_start and (
                other, item.host) not in self._pair_start:
            store = self.dedup.store
            self._pair_start[item.host, other] = (store.host_pages(item.host),
                                                  store.host_pages(other))
        self._judge_mirror(item.host, other, counts)
        self._judge_mirror(other, item.host, counts.flipped())

    def _judge_mirror(self, host: str, other: str, counts: PairCounts) -> None:
        if (not self.mirror_min_pages or host in self.mirrors or other in self.mirrors
                or self._trusted(host)):
            return
        pages = self.dedup.store.host_pages(host)
        if pages < self.mirror_min_pages or counts.shared < self.mirror_copy_ratio * pages:
            return
        if counts.backlinks or counts.other_backlinks:
            if counts.backlinks <= counts.other_backlinks:
                return  # the other links to its twins as the originals: it is the copy
        elif (counts.later < MIRROR_LATER_SHARE * counts.shared
              or counts.later <= counts.other_later
              or self.dedup.store.host_pages(other) < MIRROR_LATER_LEAD * pages
              or not self._started_behind(host, other)):
            return
        self.mirrors[host] = other
        self._inc("dedup/mirror")
        netloc = self._netlocs.get(host, host)
        logger.info("%s is a mirror of %s (%d of %d pages shared, %d link back)", host, other,
                    counts.shared, pages, counts.backlinks)
        if self.verdicts is not None:
            self.verdicts.put(Verdict(
                netloc, MIRROR, round(min(1.0, counts.shared / pages), 3), of=other,
                reasons=(f"{counts.shared} of its {pages} pages are near-copies of pages of "
                         f"{other}", f"{counts.backlinks} of them link to their twin on "
                         f"{other}, {counts.other_backlinks} the other way"),
                action="dry_run" if self.dry_run else "budget_cut",
                detail={"pages": pages, "shared": counts.shared,
                        "original_shared": counts.other_shared,
                        "backlinks": counts.backlinks,
                        "original_backlinks": counts.other_backlinks,
                        "arrived_later": counts.later,
                        "original_arrived_later": counts.other_later}))
        if self._condemn is not None and not self.dry_run:
            self._condemn(host, netloc, "mirror")

    def _started_behind(self, host: str, other: str) -> bool:
        """Whether ``other`` was well ahead of ``host`` when their first shared page came:
        it held ``mirror_min_pages`` pages or more, ``MIRROR_LATER_LEAD`` times ``host``'s."""
        start = self._pair_start.get((host, other))
        if start is None:  # host held the page first
            return False
        pages, other_pages = start
        return other_pages >= max(self.mirror_min_pages, MIRROR_LATER_LEAD * pages)

    def _watch_host(
        self, host: str, netloc: str, own_copy: bool, totals: tuple[int, int] | None
    ) -> None:
        pages, copies = totals or self.dedup.store.count_host(host, own_copy)
        if (
            host in self._cut_hosts
            or pages < self.host_min_pages
            or copies < self.host_copy_ratio * pages
        ):
            return
        self._cut_hosts.add(host)
        self._inc("dedup/host_trap")
        if self._cut_budget is None or not self._cut_budget(netloc, pages):
            logger.info(
                "host %s is mostly near-copies (%d of %d pages); no frontier to cut its budget",
                host,
                copies,
                pages,
            )
            return
        self._inc("dedup/host_budget_cut")
        logger.info("cut the budget of %s to %d pages: %d are copies", host, pages, copies)

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)
