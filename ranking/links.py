"""What the link graph gives the index: anchor text per page and a static rank per page.

Both are computed from crawled pages (``PageItem``-like records: ``url``, ``links`` with
``url`` and ``text``), so any crawl output can feed them: a feed file, the WARC store or a
link-graph table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from index.base import doc_id_for
from ranking.pagerank import LinkGraph, pagerank, static_rank


@dataclass
class AnchorText:
    """Distinct anchor texts of the links pointing at each page, from other pages.

    Navigation repeats the same label ("next", "index") on every page of a site; keeping
    each distinct label once per target stops it from drowning what the label says.
    ``max_texts`` caps the labels kept per page, ``max_chars`` the length of one label.
    """

    max_texts: int = 50
    max_chars: int = 200
    _texts: dict[str, dict[str, None]] = field(default_factory=dict)

    def add(self, source_url: str, target_url: str, text: str) -> None:
        """Record one link; self-links and empty labels are ignored."""
        text = " ".join(text.split())[: self.max_chars]
        if not text or target_url == source_url:
            return
        seen = self._texts.setdefault(target_url, {})
        if len(seen) < self.max_texts:
            seen.setdefault(text.lower(), None)

    def add_page(self, url: str, links: Iterable[Mapping | object]) -> None:
        """Record every link of one page (mappings or objects with ``url`` and ``text``)."""
        for link in links:
            target = link["url"] if isinstance(link, Mapping) else link.url
            text = link.get("text", "") if isinstance(link, Mapping) else link.text
            self.add(url, target, text or "")

    def for_url(self, url: str) -> str:
        """The anchor texts of ``url``, one per line ('' if nothing links to it)."""
        return "\n".join(self._texts.get(url, ()))


def page_static_ranks(
    pages: Iterable[tuple[str, Iterable[str]]], alpha: float = 0.85
) -> dict[str, float]:
    """Static rank in [0, 1] (``static_rank`` of PageRank) per document id.

    ``pages`` yields ``(url, outlink urls)`` for every crawled page; links to pages that
    were not crawled are dropped, so rank is not spread onto the unknown.
    """
    pages = [(url, list(targets)) for url, targets in pages]
    known = {doc_id_for(url) for url, _ in pages}
    edges = []
    for url, targets in pages:
        source = doc_id_for(url)
        for target in targets:
            target_id = doc_id_for(target)
            if target_id in known and target_id != source:
                edges.append((source, target_id))
    graph = LinkGraph.from_doc_edges(edges, nodes=sorted(known))
    scores = static_rank(pagerank(graph, alpha=alpha, tol=1e-8, max_iter=200))
    return dict(zip(graph.node_ids(), scores.tolist(), strict=True))
