"""Lossless streaming: documents written while Elasticsearch is down are spooled, then sent."""

from __future__ import annotations

import threading
import time

import pytest

from crawler.urls import doc_id_for
from harness.services import EsProcesses, not_installed_reason
from index.base import Document
from index.engines.elasticsearch.backend import ElasticsearchBackend

pytestmark = pytest.mark.services

DOWN_S = 10.0
CRAWL_DOWN_S = 30.0  # the outage a crawl must survive


@pytest.fixture(scope="module")
def es_node():
    """A private single node that this module stops and starts again."""
    reason = not_installed_reason()
    if reason:
        pytest.skip(reason)
    node = EsProcesses("es", ["es"])
    try:
        node.start()
        yield node
    finally:
        node.cleanup()


def page(i: int) -> Document:
    url = f"http://spool{i % 50}.test/page/{i}"
    return Document(id=doc_id_for(url), url=url, host=f"spool{i % 50}.test", title=f"Page {i}")


def test_documents_written_while_es_is_down_arrive_once(es_node, tmp_path):
    backend = ElasticsearchBackend(
        es_node.url,
        index_prefix="spool-test",
        spool_dir=tmp_path / "spool",
        bulk_docs=50,
        bulk_interval_s=0.1,
        bulk_max_retries=2,
        request_timeout_s=5,
    )
    backend.ensure_index()
    written: list[str] = []
    stop = threading.Event()

    def crawl():
        i = 0
        while not stop.is_set():
            batch = [page(i + k) for k in range(10)]
            # Some pages are fetched twice (a re-crawl): still one document each.
            batch.append(page(max(0, i - 5)))
            backend.index(batch)
            written.extend(d.id for d in batch)
            i += 10
            time.sleep(0.05)

    crawler = threading.Thread(target=crawl)
    crawler.start()
    try:
        time.sleep(2)
        es_node.kill("es")
        down_at = len(written)
        time.sleep(DOWN_S)
        assert len(written) > down_at, "indexing must not block while Elasticsearch is down"
        assert not backend.writer.available and backend.writer.spooled_files > 0
        es_node.start()
        time.sleep(2)
    finally:
        stop.set()
        crawler.join()
    backend.refresh()
    assert backend.writer.spooled_files == 0
    assert backend.stats_.get("index/bulk/spooled") > 0
    assert backend.stats_.get("index/bulk/replayed") == backend.stats_.get("index/bulk/spooled")
    stored = {d.id for d in backend.iter_documents()}
    assert stored == set(written)
    assert backend.stats()["docs"] == len(set(written))
    backend.drop()
    backend.client.close()


@pytest.mark.slow
def test_a_crawl_through_an_elasticsearch_outage_indexes_each_page_once(es_node, tmp_path):
    import re
    import subprocess
    import sys

    import testweb
    from harness.crawlrun import ROOT, TESTWEB_NETWORKS, crawl_env, migrate

    data_dir = tmp_path / "crawl"
    data_dir.mkdir()
    env = {"ELASTICSEARCH_URL": es_node.url}
    reader = ElasticsearchBackend(es_node.url, index_prefix="websearch", spool_dir=tmp_path / "r")
    with testweb.run(hosts=6, log=tmp_path / "testweb.log") as web:
        migrate(data_dir, env)
        seeds = [web.home_url(h) for h in web.hosts() if h.startswith("site")]
        cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", "seeds=" + ",".join(seeds)]
        cmd += ["-a", "allowed_hosts=*.test", "-a", "max_pages=300"]
        for setting in (
            "RESOLVE_OVERRIDES=*.test=127.0.0.1",
            "CRAWL_PROGRESS_INTERVAL=0",
            f"SSRF_ALLOWED_NETWORKS={TESTWEB_NETWORKS}",
            "FRONTIER_DELAY=0.6",  # slow enough that the outage falls in the crawl
            "FRONTIER_IP_CONCURRENCY=32",
            "INDEX_BATCH_SIZE=10",
        ):
            cmd += ["-s", setting]
        log = open(tmp_path / "crawl.err", "w+")  # a pipe could fill up and stall the crawl
        crawl = subprocess.Popen(
            cmd, cwd=ROOT, env=crawl_env(data_dir, env), stdout=subprocess.DEVNULL, stderr=log
        )
        try:
            deadline = time.monotonic() + 120
            while (
                reader.client.options(ignore_status=(404, 503))
                .count(index="websearch")
                .get("count", 0)
                == 0
            ):
                assert crawl.poll() is None and time.monotonic() < deadline, (
                    "nothing indexed: " + (tmp_path / "crawl.err").read_text()[-2000:]
                )
                time.sleep(0.5)
            es_node.kill("es")
            time.sleep(CRAWL_DOWN_S / 2)
            assert crawl.poll() is None, "the crawl must go on while Elasticsearch is down"
            time.sleep(CRAWL_DOWN_S / 2)
            es_node.start()
            crawl.wait(timeout=300)
        finally:
            if crawl.poll() is None:
                crawl.kill()
            log.seek(0)
            stderr = log.read()
            log.close()
    assert crawl.returncode == 0, stderr[-3000:]
    indexed = int(re.search(r"documents indexed\s+(\d+)", stderr).group(1))
    # What the crawl could not send before it ended is in its spool: the next writer sends it.
    late = ElasticsearchBackend(
        es_node.url, index_prefix="websearch", spool_dir=data_dir / "es-spool" / "websearch"
    )
    late.refresh()
    late.close()
    reader.client.indices.refresh(index="websearch")
    stored = [d.id for d in reader.iter_documents()]
    assert len(stored) == len(set(stored)) == indexed > 0
    reader.client.close()
