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
several workers elects among the copies each worker fetched. Which member links to which
is asked of ``links`` (in a crawl the dedup pipeline's fixed-size memory of recent
off-host links), not kept with each member.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import xxhash

__all__ = ["ClusterElection", "Election", "Member", "doc_key", "elect", "link_key"]

#: Clusters whose members are remembered (least recently touched forgotten first).
MAX_CLUSTERS = 50_000
#: Members remembered per cluster (a larger cluster elects among its first ones).
MAX_MEMBERS = 32


def doc_key(doc_id: str) -> int:
    """A doc id as a 64-bit integer (xxh64): 36 bytes as a key where the id string is 65.
    Two ids share a key with probability 2**-64."""
    return xxhash.xxh64_intdigest(doc_id.encode())


def link_key(source: str, target: str) -> int:
    """The 64-bit key of a link from doc id ``source`` to doc id ``target``."""
    return xxhash.xxh64_intdigest(f"{source}>{target}".encode())


@dataclass(frozen=True, slots=True)  # no instance dict: one per remembered page
class Member:
    """A page of a duplicate cluster: its id, canonical URL and host, and the doc id its
    ``rel=canonical`` names (``""`` for none)."""

    doc_id: str
    url: str
    host: str
    canonical: str = ""


def elect(members: Iterable[Member], inlinks: Callable[[str], int] = lambda doc_id: 0,
          host_pages: Callable[[str], int] = lambda host: 0,
          links: Callable[[str, str], bool] = lambda source, target: False) -> str:
    """The doc id of the page to show among ``members`` (see the module for the order of
    evidence; ``links(a, b)``: page ``a`` links to page ``b``); the same members give the
    same answer in any order."""
    pool = list(members)
    if not pool:
        raise ValueError("a cluster to elect from needs at least one member")
    if len(pool) == 1:
        return pool[0].doc_id
    ids = {m.doc_id for m in pool}
    declared: Counter[str] = Counter()
    for m in pool:
        declared.update(t for t in ids if t != m.doc_id and links(m.doc_id, t))
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
    """Members of the clusters seen lately, and their elected page.

    Nearly every page is alone in its cluster, so such a cluster is kept as its ``Member``
    alone: no dict of members, no shown page recorded (it is the member), and no entry in
    the member-to-clusters map when the cluster is named after the page (a page's own doc
    id, the usual case). A second member turns it into a dict of members."""

    def __init__(self, inlinks: Callable[[str], int] = lambda doc_id: 0,
                 host_pages: Callable[[str], int] = lambda host: 0,
                 max_clusters: int = MAX_CLUSTERS, max_members: int = MAX_MEMBERS,
                 links: Callable[[str, str], bool] = lambda source, target: False):
        self.inlinks = inlinks
        self.host_pages = host_pages
        self.links = links
        self.max_clusters = max_clusters
        self.max_members = max_members
        self._members: OrderedDict[str, Member | dict[str, Member]] = OrderedDict()
        #: the page shown of each cluster of several members
        self._shown: dict[str, str] = {}
        #: the clusters each remembered member is in, other than the one named after it, so
        #: a removal finds them directly: the cluster id itself for a member of one
        self._clusters_of: dict[str, str | set[str]] = {}

    def shown(self, cluster_id: str) -> str | None:
        """The doc id shown for ``cluster_id`` (None if not remembered)."""
        entry = self._members.get(cluster_id)
        return entry.doc_id if isinstance(entry, Member) else self._shown.get(cluster_id)

    def add(self, cluster_id: str, member: Member) -> Election:
        """``member`` arrived in ``cluster_id``: elect again."""
        if cluster_id == member.doc_id:
            cluster_id = member.doc_id  # one string for both
        entry = self._members.get(cluster_id)
        if entry is None or (isinstance(entry, Member) and entry.doc_id == member.doc_id):
            self._members[cluster_id] = member
            self._members.move_to_end(cluster_id)
            self._join(member.doc_id, cluster_id)
            if entry is None and len(self._members) > self.max_clusters:
                self._forget_oldest()
            return Election(member.doc_id)
        self._members.move_to_end(cluster_id)
        if isinstance(entry, Member):
            self._shown[cluster_id] = entry.doc_id
            entry = self._members[cluster_id] = {entry.doc_id: entry}
        if member.doc_id in entry or len(entry) < self.max_members:
            entry[member.doc_id] = member
            self._join(member.doc_id, cluster_id)
        before = self._shown.get(cluster_id)
        winner = elect(entry.values(), self.inlinks, self.host_pages, self.links)
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
        touched.update(doc_id for doc_id in gone if doc_id in self._members)
        changed = []
        for cluster_id in sorted(touched):
            entry = self._members.get(cluster_id)
            if isinstance(entry, Member):
                if entry.doc_id in gone:
                    del self._members[cluster_id]
                continue
            if entry is None:
                continue
            for doc_id in gone & entry.keys():
                del entry[doc_id]
            if not entry:
                del self._members[cluster_id]
                self._shown.pop(cluster_id, None)
                continue
            if self._shown.get(cluster_id) in gone:
                winner = elect(entry.values(), self.inlinks, self.host_pages, self.links)
                self._shown[cluster_id] = winner
                changed.append((cluster_id, Election(winner)))
        return changed

    def _forget_oldest(self) -> None:
        """Forget the least recently touched cluster."""
        old, forgotten = self._members.popitem(last=False)
        self._shown.pop(old, None)
        for doc_id in ((forgotten.doc_id,) if isinstance(forgotten, Member) else forgotten):
            self._leave(doc_id, old)

    def _join(self, doc_id: str, cluster_id: str) -> None:
        """``doc_id`` is remembered in ``cluster_id`` (too)."""
        if doc_id == cluster_id:
            return  # found by its own id
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
        if clusters is None or doc_id == cluster_id:
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
