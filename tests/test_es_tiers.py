"""The tiered Elasticsearch index on a real server: which pages tier 1 holds, when a query
falls through to the full index, and that both aliases move together."""

from __future__ import annotations

import threading
import uuid

import pytest

from crawler.urls import doc_id_for
from index.base import Document
from index.engines.elasticsearch.backend import ElasticsearchBackend
from index.engines.elasticsearch.reindex import version_of

pytest_plugins = ["tests.fixtures_es"]
pytestmark = pytest.mark.services


def page(i: int, rank: float, body: str) -> Document:
    url = f"http://h{i % 7}.test/p{i}"
    return Document(id=doc_id_for(url), url=url, host=f"h{i % 7}.test", title=f"Page {i}",
                    body=body, pagerank=rank)


@pytest.fixture
def tiered(es_url, tmp_path):
    backend = ElasticsearchBackend(es_url, index_prefix=f"test-tier-{uuid.uuid4().hex[:8]}",
                                   spool_dir=tmp_path / "spool", bulk_interval_s=0.05,
                                   tiered=True, tier1_share=0.1, tier1_min_hits=5)
    backend.ensure_index()
    yield backend
    backend.drop()
    backend.close()


def corpus() -> list[Document]:
    # 200 pages: every page says "common"; the 20 best ranked (pagerank 1.0 .. 0.81) also
    # say "orchard"; "meadow" is only on the ten worst.
    docs = []
    for i in range(200):
        words = ["common", "garden"]
        if i < 20:
            words.append("orchard")
        if i >= 190:
            words.append("meadow")
        docs.append(page(i, round(1.0 - i * 0.01, 2) if i < 100 else 0.0, " ".join(words)))
    return docs


def test_tier1_holds_the_top_share_by_static_rank(tiered):
    tiered.index(corpus())
    tiered.refresh()
    assert tiered.tier1.min_rank(fresh=True) is None  # nothing published yet
    tiered.publish_tiers()
    tier1 = tiered.client.search(index=tiered.tier1.alias, size=100,
                                 _source=["doc.pagerank"])["hits"]
    ranks = sorted((h["_source"]["doc"]["pagerank"] for h in tier1["hits"]), reverse=True)
    assert tier1["total"]["value"] == 20  # 10% of 200
    assert ranks == [round(1.0 - i * 0.01, 2) for i in range(20)]
    assert tiered.tier1.min_rank(fresh=True) == pytest.approx(0.81)
    # later writes: a page at or above the floor goes into tier 1 too, others do not
    tiered.index([page(500, 0.9, "common newcomer"), page(501, 0.5, "common latecomer")])
    tiered.refresh()
    ids = {h["_id"] for h in tiered.client.search(index=tiered.tier1.alias, size=100,
                                                  _source=False)["hits"]["hits"]}
    assert page(500, 0, "").id in ids and page(501, 0, "").id not in ids
    # a deletion leaves both tiers
    tiered.delete([page(0, 0, "").id])
    tiered.refresh()
    assert tiered.client.count(index=tiered.tier1.alias)["count"] == 20
    assert tiered.get(page(0, 0, "").id) is None


def test_a_query_falls_through_when_tier1_has_too_few_good_results(tiered):
    tiered.index(corpus())
    tiered.refresh()
    tiered.publish_tiers()
    broad = tiered.search("common garden")  # every tier-1 page holds both words
    assert broad.extra["tier"] == 1
    assert broad.total == 20 and len(broad.hits) == 10
    assert all(h.pagerank >= 0.81 for h in broad.hits)
    rare = tiered.search("meadow")  # only on pages tier 1 lacks
    assert rare.extra["tier"] == 2
    assert rare.total == 10 and {h.url for h in rare.hits} == {
        f"http://h{i % 7}.test/p{i}" for i in range(190, 200)}
    deep = tiered.search("orchard", page=3, size=10)  # tier 1 has 20: page 3 is beyond it
    assert deep.extra["tier"] == 2
    assert tiered.search("orchard", page=2, size=10).extra["tier"] == 1
    stats = tiered.tier1.stats()
    assert stats["tier/tier1"] == 2 and stats["tier/fallthrough"] == 2
    assert stats["tier/fallthrough_rate"] == 0.5
    # the same backend untiered answers from the full index only
    tiered.tier1.enabled = False
    flat = tiered.search("common garden")
    assert "tier" not in flat.extra and flat.total == 200


def test_reindex_publishes_both_tiers_in_one_alias_swap(tiered):
    tiered.index(corpus())
    tiered.refresh()
    tiered.publish_tiers()
    names = f"{tiered.alias},{tiered.tier1.alias}"
    seen: set[tuple[int, int]] = set()
    stop = threading.Event()

    def watch() -> None:
        # one cluster-state read gives both aliases at the same instant
        while not stop.is_set():
            state = tiered.client.indices.get_alias(name=names).body
            full = [version_of(i) for i, a in state.items() if tiered.alias in a["aliases"]]
            tier1 = [version_of(i) for i, a in state.items()
                     if tiered.tier1.alias in a["aliases"]]
            seen.add((max(full), max(tier1)))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        new = tiered.reindex()
    finally:
        stop.set()
        watcher.join()
    assert new.endswith("-v2")
    assert tiered.tier1.min_rank(fresh=True) == pytest.approx(0.81)
    assert seen <= {(1, 1), (2, 2)}, seen  # never one tier's new index with the other's old
    assert sorted(tiered.client.indices.get(index=tiered.tier1.index_pattern())) == [
        f"{tiered.tier1.alias}-v2"]
    assert tiered.search("common garden").extra["tier"] == 1
