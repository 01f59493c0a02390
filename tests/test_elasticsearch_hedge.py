"""Hedged searches on the three-node cluster of services.sh es2 (two data nodes, one
replica): with one data node stalled by SIGSTOP, searches still answer, from the other
node's copies, while it stays stalled; a partial answer stays flagged."""

from __future__ import annotations

import threading
import uuid

import pytest

from crawler.urls import doc_id_for
from index.base import Document
from index.engines.elasticsearch.backend import ElasticsearchBackend

pytest_plugins = ["tests.fixtures_es"]
pytestmark = pytest.mark.services

DOCS = 300
QUERIES = 20
#: Far longer than a hedged answer takes, far shorter than the client's own timeout below
#: and the cluster's fault detection (which would drop the stalled node after ~30 s).
WAIT_S = 25.0


def make_docs(n: int) -> list[Document]:
    return [
        Document(
            id=doc_id_for(f"http://hedge{i}.test/"),
            url=f"http://hedge{i}.test/",
            host=f"hedge{i}.test",
            title=f"Hedge page {i}",
            body=f"stalled node text {'seven' if i % 7 == 0 else 'other'} number {i}",
        )
        for i in range(n)
    ]


def backend(cluster, tmp_path, prefix: str, **options) -> ElasticsearchBackend:
    return ElasticsearchBackend(cluster.url, index_prefix=prefix,
                                spool_dir=tmp_path / uuid.uuid4().hex, **options)


def test_hedged_searches_answer_while_a_data_node_is_stalled(es_cluster2, tmp_path):
    prefix = f"hedge-{uuid.uuid4().hex[:8]}"
    writer = backend(es_cluster2, tmp_path, prefix, shards=2, replicas=1)
    writer.ensure_index()
    writer.index(make_docs(DOCS))
    writer.refresh()
    es_cluster2.health(wait_for_status="green", timeout="60s")
    # request_timeout far past WAIT_S: an unhedged search to the stalled node would wait it out
    hedged = backend(es_cluster2, tmp_path, prefix, hedge=True, hedge_delay_s=0.2,
                     request_timeout_s=120.0)
    expected = hedged.search("seven", size=100)
    assert expected.total == len(range(0, DOCS, 7)) and not expected.partial
    assert len(hedged.requests.hedger.routes()) == 2  # es2-a and es2-b; es2-c holds no data

    answers: list = []
    failures: list = []
    finished = threading.Event()

    def query_loop() -> None:
        try:
            for _ in range(QUERIES):
                answers.append(hedged.search("seven", size=100))
        except Exception as exc:  # what this test looks for
            failures.append(exc)
        finished.set()

    es_cluster2.pause("es2-b")
    try:
        queries = threading.Thread(target=query_loop, daemon=True)
        queries.start()
        answered_while_stalled = finished.wait(WAIT_S)
    finally:
        es_cluster2.resume("es2-b")
    queries.join(150)

    assert answered_while_stalled, f"{len(answers)} of {QUERIES} answered while stalled"
    assert not failures, failures[:3]
    assert [r.total for r in answers] == [expected.total] * QUERIES
    assert all({h.id for h in r.hits} == {h.id for h in expected.hits} for r in answers)
    assert not any(r.partial for r in answers)
    stats = hedged.stats()
    # half the searches start on es2-b (routes alternate); the other node answered them
    assert stats["search/hedge_wins"] >= QUERIES // 2 - 1
    assert stats["search/hedged"] >= stats["search/hedge_wins"]

    unhedged = backend(es_cluster2, tmp_path, prefix, hedge=False)
    assert unhedged.requests.hedger is None
    assert unhedged.search("seven", size=100).total == expected.total
    for b in (unhedged, hedged):
        b.close()
    writer.drop()
    writer.close()


def test_a_partial_answer_stays_flagged_through_the_hedge(es_cluster2, tmp_path):
    """A one-copy index with a shard on a dead node: the hedge answers from the other
    node, and says the answer is partial."""
    prefix = f"hedge-partial-{uuid.uuid4().hex[:8]}"
    writer = backend(es_cluster2, tmp_path, prefix, shards=2, replicas=0)
    writer.ensure_index()
    writer.index(make_docs(DOCS))
    writer.refresh()
    es_cluster2.health(wait_for_status="green", timeout="60s")
    hedged = backend(es_cluster2, tmp_path, prefix, hedge=True, hedge_delay_s=0.2)
    assert hedged.search("seven", size=100).partial is False
    es_cluster2.kill("es2-b")
    try:
        results = hedged.search("seven", size=100)
        assert results.partial
        assert 0 < results.total < len(range(0, DOCS, 7))
    finally:
        hedged.close()
        writer.drop()
        writer.close()
