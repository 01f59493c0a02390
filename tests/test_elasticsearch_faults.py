"""Faults in a two-node cluster: a node killed while documents stream in and queries run."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from crawler.urls import doc_id_for
from index.base import Document
from index.elasticsearch import ElasticsearchBackend

pytest_plugins = ["tests.fixtures_es"]
pytestmark = pytest.mark.services

DOCS = 2000


def make_docs(prefix: str, n: int) -> list[Document]:
    return [
        Document(
            id=doc_id_for(f"http://{prefix}{i}.test/"),
            url=f"http://{prefix}{i}.test/",
            host=f"{prefix}{i}.test",
            title=f"Fault page {i}",
            body=f"resilient cluster text number {i}",
        )
        for i in range(n)
    ]


def test_killing_a_node_loses_no_document_and_queries_keep_answering(es_cluster2, tmp_path):
    def backend(**options) -> ElasticsearchBackend:
        b = ElasticsearchBackend(
            es_cluster2.url,
            index_prefix=f"fault-{uuid.uuid4().hex[:8]}",
            spool_dir=tmp_path / uuid.uuid4().hex,
            shards=2,
            bulk_docs=100,
            bulk_interval_s=0.05,
            **options,
        )
        b.ensure_index()
        return b

    replicated = backend(replicas=1)
    single_copy = backend(replicas=0)
    es_cluster2.health(wait_for_status="green", timeout="60s")
    single_copy.index(make_docs("s", 200))
    single_copy.refresh()

    answered, failures, partial = [], [], []
    stop = threading.Event()

    def query_loop():
        searcher = ElasticsearchBackend(es_cluster2.url, index_prefix=replicated.alias)
        while not stop.is_set():
            try:
                results = searcher.search("resilient cluster")
                answered.append(results.total)
                partial.append(results.partial)
            except Exception as exc:  # a query that fails is what this test looks for
                failures.append(exc)
            time.sleep(0.02)
        searcher.client.close()

    queries = threading.Thread(target=query_loop)
    queries.start()
    try:
        docs = make_docs("r", DOCS)
        for start in range(0, DOCS, 100):
            replicated.index(docs[start : start + 100])
            if start == DOCS // 2:
                replicated.writer.flush()
                es_cluster2.kill("es2-b")
            time.sleep(0.01)
        replicated.refresh()
        time.sleep(0.5)
    finally:
        stop.set()
        queries.join()

    assert es_cluster2.pid("es2-b") is None
    assert not failures, failures[:3]
    assert len(answered) > 20
    assert replicated.stats()["docs"] == DOCS
    ids = {d.id for d in replicated.iter_documents()}
    assert ids == {d.id for d in docs}
    assert replicated.stats_.get("index/bulk/rejected") == 0

    # Without replicas the shard on the dead node is gone: answers go on, flagged partial.
    results = single_copy.search("resilient")
    assert results.partial and 0 < results.total < 200
    assert not any(partial[-3:]) and answered[-1] == DOCS
