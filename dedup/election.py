"""Which page of a duplicate cluster is shown: elected by evidence, not by arrival order.

Near-copies share a cluster id and results show one page per cluster. Which one used to be
the first to arrive, so a mirror crawled before its original took the original's place in
results. Here every member of a cluster is scored by evidence that does not depend on
arrival order, strongest first:

1. *declared the original*: other members link to it (a mirror's "read the original" link)
   or name it as their ``rel=canonical``;
2. links from pages of other hosts (in-links seen by the crawl, the online stand-in for
   PageRank: sites link to an original, rarely to its mirror);
3. the host holding more of the cluster's site (more pages of that host crawled: a mirror
   is cut after a sample, the original is crawled whole);
4. the shorter URL, then the URL itself, so that the election is total and stable.

``ClusterElection`` keeps the members of the clusters seen lately (bounded, in this
process) and elects again each time a member arrives, so a later page may swap the page
shown: the caller hands the change to the index (``SearchBackend.set_shown``). A crawl with
several workers elects among the copies each worker fetched.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["NO_LINKS", "ClusterElection", "Election", "Member", "elect"]

#: The links of a member that links to no page on another host: one shared empty set
#: (``frozenset()`` makes a new 216-byte object each call, and nearly every page has none).
NO_LINKS: frozenset[str] = frozenset()

#: Clusters whose members are remembered (least recently touched forgotten first).
MAX_CLUSTERS = 50_000
#: Members remembered per cluster (a larger cluster elects among its first ones).
MAX_MEMBERS = 32


@dataclass(frozen=True, slots=True)  # no instance dict: one per remembered page
class Member:
    """A page of a duplicate cluster: its id, canonical URL and host, the doc id its
    ``rel=canonical`` names (``""`` for none) and the ids of the pages it links to."""

    doc_id: str
    url: str
    host: str
    canonical: str = ""
    links: frozenset[str] = NO_LINKS


def elect(members: Iterable[Member], inlinks: Callable[[str], int] = lambda doc_id: 0,
          host_pages: Callable[[str], int] = lambda host: 0) -> str:
    """The doc id of the page to show among ``members`` (see the module for the order of
    evidence); the same members give the same answer in any order."""
    pool = list(members)
    if not pool:
        raise ValueError("a cluster to elect from needs at least one member")
    if len(pool) == 1:
        return pool[0].doc_id
    ids = {m.doc_id for m in pool}
    declared: Counter[str] = Counter()
    for m in pool:
        declared.update(t for t in m.links if t in ids and t != m.doc_id)
        if m.canonical in ids and m.canonical != m.doc_id:
            declared[m.canonical] += 1

    def evidence(m: Member) -> tuple:
        return (declared[m.doc_id], inlinks(m.doc_id), host_pages(m.host), -len(m.url))

    scored = [(evidence(m), m) for m in pool]
    best = max(score for score, _ in scored)
    return min((m for score, m in scored if score == best),
               key=lambda m: (m.url, m.doc_id)).doc_id


@dataclass(frozen=True)
class Election:
    """The outcome of a member's arrival: the page ``shown`` for the cluster and the
    members that were shown before and no longer are (``hidden``)."""

    shown: str
    hidden: tuple[str, ...] = ()


class ClusterElection:
    """Members of the clusters seen lately, and their elected page."""

    def __init__(self, inlinks: Callable[[str], int] = lambda doc_id: 0,
                 host_pages: Callable[[str], int] = lambda host: 0,
                 max_clusters: int = MAX_CLUSTERS, max_members: int = MAX_MEMBERS):
        self.inlinks = inlinks
        self.host_pages = host_pages
        self.max_clusters = max_clusters
        self.max_members = max_members
        self._members: OrderedDict[str, dict[str, Member]] = OrderedDict()
        self._shown: dict[str, str] = {}
        #: the clusters each remembered member is in, so a removal finds them directly: the
        #: cluster id itself for a member of one (nearly every page; a set is 216 bytes)
        self._clusters_of: dict[str, str | set[str]] = {}

    def shown(self, cluster_id: str) -> str | None:
        """The doc id shown for ``cluster_id`` (None if not remembered)."""
        return self._shown.get(cluster_id)

    def add(self, cluster_id: str, member: Member) -> Election:
        """``member`` arrived in ``cluster_id``: elect again."""
        members = self._members.get(cluster_id)
        if members is None:
            members = self._members[cluster_id] = {}
            if len(self._members) > self.max_clusters:
                old, forgotten = self._members.popitem(last=False)
                self._shown.pop(old, None)
                for doc_id in forgotten:
                    self._leave(doc_id, old)
        self._members.move_to_end(cluster_id)
        if member.doc_id in members or len(members) < self.max_members:
            members[member.doc_id] = member
            self._join(member.doc_id, cluster_id)
        before = self._shown.get(cluster_id)
        winner = elect(members.values(), self.inlinks, self.host_pages)
        self._shown[cluster_id] = winner
        hidden = (before,) if before is not None and before != winner else ()
        return Election(winner, hidden)

    def remove(self, doc_ids: Iterable[str]) -> list[tuple[str, Election]]:
        """Pages gone from the index (deleted or moved): they leave their clusters, and a
        cluster whose shown page left elects again among the others. Returns the
        ``(cluster_id, election)`` of each cluster whose shown page changed."""
        gone = set(doc_ids)
        touched = {cluster_id for doc_id in gone
                   for cluster_id in _ids(self._clusters_of.pop(doc_id, ()))}
        changed = []
        for cluster_id in sorted(touched):
            members = self._members[cluster_id]
            for doc_id in gone & members.keys():
                del members[doc_id]
            if not members:
                del self._members[cluster_id]
                self._shown.pop(cluster_id, None)
                continue
            if self._shown.get(cluster_id) in gone:
                winner = elect(members.values(), self.inlinks, self.host_pages)
                self._shown[cluster_id] = winner
                changed.append((cluster_id, Election(winner)))
        return changed

    def _join(self, doc_id: str, cluster_id: str) -> None:
        """``doc_id`` is remembered in ``cluster_id`` (too)."""
        clusters = self._clusters_of.get(doc_id)
        if clusters is None:
            self._clusters_of[doc_id] = cluster_id
        elif isinstance(clusters, str):
            if clusters != cluster_id:
                self._clusters_of[doc_id] = {clusters, cluster_id}
        else:
            clusters.add(cluster_id)

    def _leave(self, doc_id: str, cluster_id: str) -> None:
        """``doc_id`` is no longer remembered in ``cluster_id``."""
        clusters = self._clusters_of.get(doc_id)
        if clusters is None:
            return
        if isinstance(clusters, str):
            if clusters == cluster_id:
                del self._clusters_of[doc_id]
            return
        clusters.discard(cluster_id)
        if len(clusters) == 1:
            self._clusters_of[doc_id] = next(iter(clusters))
        elif not clusters:
            del self._clusters_of[doc_id]


def _ids(clusters: str | set[str] | tuple) -> Iterable[str]:
    """The cluster ids of a ``_clusters_of`` value."""
    return (clusters,) if isinstance(clusters, str) else clusters
