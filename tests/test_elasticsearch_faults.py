"""Faults in the three-node cluster of services.sh es2: sizing from the cluster, a data node
and then the elected master killed while documents stream in and queries run."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from crawler.urls import doc_id_for
from index.base import Document
from index.engines.elasticsearch.backend import ElasticsearchBackend

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


def test_a_new_index_is_sharded_and_replicated_from_the_cluster(es_cluster2, tmp_path):
    backend = ElasticsearchBackend(es_cluster2.url, index_prefix=f"size-{uuid.uuid4().hex[:8]}",
                                   spool_dir=tmp_path / "spool")
    try:
        backend.ensure_index()
        index = backend.client.indices.get_settings(index=backend.alias)
        settings = next(iter(index.values()))["settings"]["index"]
        # two data nodes (es2-c holds none): a primary on each, each with a replica
        assert (settings["number_of_shards"], settings["number_of_replicas"]) == ("2", "1")
        assert es_cluster2.health(wait_for_status="green", timeout="60s")["status"] == "green"
    finally:
        backend.drop()
        backend.close()


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
    # Leave the cluster as found: a one-copy index with a shard on a node that a later test
    # kills would keep the cluster red.
    for b in (replicated, single_copy):
        b.drop()
        b.close()


def test_losing_the_elected_master_keeps_serving_and_loses_nothing(es_cluster2, tmp_path):
    """The stack's defaults (auto shards and replicas, three master-eligible nodes): SIGKILL
    of the elected master while documents stream in and queries run."""
    es_cluster2.start()  # the node an earlier test killed comes back
    backend = ElasticsearchBackend(es_cluster2.url, index_prefix=f"master-{uuid.uuid4().hex[:8]}",
                                   spool_dir=tmp_path / "spool", bulk_docs=100,
                                   bulk_interval_s=0.05)
    backend.ensure_index()
    es_cluster2.health(wait_for_status="green", timeout="60s")
    master = backend.client.cat.master(format="json")[0]["node"]
    survivor = next(i for i, n in enumerate(es_cluster2.nodes) if n != master)
    docs = make_docs("m", DOCS)
    backend.index(docs[: DOCS // 2])
    backend.refresh()

    answered, failures = [], []
    stop = threading.Event()

    def query_loop():
        searcher = ElasticsearchBackend(es_cluster2.url, index_prefix=backend.alias,
                                        spool_dir=tmp_path / "searcher")
        while not stop.is_set():
            try:
                answered.append(searcher.search("resilient cluster").total)
            except Exception as exc:  # a query that fails is what this test looks for
                failures.append(exc)
            time.sleep(0.02)
        searcher.client.close()

    queries = threading.Thread(target=query_loop)
    queries.start()
    try:
        es_cluster2.kill(master)
        at_kill = len(answered)
        for start in range(DOCS // 2, DOCS, 100):
            backend.index(docs[start : start + 100])
        deadline = time.monotonic() + 120
        while True:  # the writes spooled while no master was elected are replayed
            try:
                backend.refresh()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        at_refresh = len(answered)  # answers from here on see every document
        deadline = time.monotonic() + 120
        while (len(answered) < at_refresh + 20 and not failures
               and time.monotonic() < deadline):
            time.sleep(0.2)  # queries go on answering after the failover
    finally:
        stop.set()
        queries.join()

    # a loaded box may take a while to promote the replicas of the lost node's shards
    health = es_cluster2.health(survivor, wait_for_status="yellow", timeout="180s")
    assert health["number_of_nodes"] == 2
    assert not failures, failures[:3]
    assert len(answered) >= at_refresh + 20 > at_kill
    assert answered[-1] == DOCS
    assert backend.stats()["docs"] == DOCS
    assert {d.id for d in backend.iter_documents()} == {d.id for d in docs}
    es_cluster2.start()  # the killed node rejoins
    assert es_cluster2.health(survivor, wait_for_status="green",
                              timeout="120s")["status"] == "green"
    backend.drop()
    backend.close()
