"""The page shown for a duplicate cluster is elected by evidence
(``crawler.quality.dedup.election``), on every engine: a crawl of an original and its mirror
shows the original whichever host arrived first, and a later election swaps the page shown."""

from __future__ import annotations

import pytest

import testweb
from crawler.extract import extract, page_item
from crawler.quality.dedup.core import Deduplicator
from crawler.quality.dedup.pipeline import DedupPipeline
from pipelines.index import IndexPipeline
from tests.contract.conftest import doc

PATHS = ["/", *(f"/p/{i}" for i in range(12))]


def _items(web: testweb.TestWeb, host: str) -> list:
    items = []
    for path in PATHS:
        url = web.url(host, path)
        items.append(page_item(extract(web.render(host, path).body.decode(), url), url, 200,
                               0.0))
    return items


@pytest.mark.parametrize("mirror_first", [False, True])
def test_the_same_two_host_crawl_in_both_arrival_orders_shows_the_original(backend,
                                                                           mirror_first):
    web = testweb.TestWeb(hosts=3, port=8000, pages_per_host=200)
    original, mirror = _items(web, "site0.test"), _items(web, "mirror.test")
    index = IndexPipeline(backend, batch_size=5, flush_interval=3600, pace=0.0,
                           pace_when="slack")
    # the mirror check is off: only the election decides which copy is shown
    dedup = DedupPipeline(Deduplicator.from_settings(None), host_min_pages=1000,
                          host_copy_ratio=1.0, elected=lambda cluster_id, e: index.elected(
                              e.shown, e.hidden))
    first, second = (mirror, original) if mirror_first else (original, mirror)
    for a, b in zip(first, second, strict=True):  # two hosts crawled side by side
        for item in (a, b):
            index.process_item(dedup.process_item(item))
    index.flush()
    backend.refresh()
    for path in PATHS[1:]:
        keyword = web.page("site0.test", path).keyword
        hits = backend.search(keyword).hits
        assert [h.url for h in hits] == [web.url("site0.test", path)], keyword
        assert hits[0].similar == 1  # the mirror's copy, counted, not shown


def test_a_new_election_swaps_the_page_shown(backend):
    a = doc("http://a.test/guide", "Guide", "the zebra guide", cluster_id="k")
    b = doc("http://b.test/guide", "Guide", "the zebra guide", cluster_id="k", shown=False)
    backend.index([a, b])
    backend.refresh()
    assert [h.url for h in backend.search("zebra").hits] == [a.url]
    assert backend.set_shown({a.id: False, b.id: True, "unknown": True}) == 2
    backend.refresh()
    assert [h.url for h in backend.search("zebra").hits] == [b.url]
    assert backend.set_shown({b.id: True}) == 0  # no change
