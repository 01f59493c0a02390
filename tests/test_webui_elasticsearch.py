"""Blocking a host on Elasticsearch: ``delete_by_host`` and the admin path, on a private
server (tests/fixtures_es.py; skipped only when Elasticsearch is not installed)."""

import uuid

import pytest

from crawler.config import Config
from crawler.urls import doc_id_for
from index.base import Document
from index.engines.elasticsearch.backend import ElasticsearchBackend
from tests.fixtures_es import es_url  # noqa: F401  (fixture)

pytestmark = pytest.mark.services

URLS = ["http://a.test/1", "http://a.test/2", "http://sub.a.test/1", "http://b.test/1"]


@pytest.fixture
def es_backend(es_url, tmp_path):  # noqa: F811
    backend = ElasticsearchBackend(es_url, index_prefix=f"t-{uuid.uuid4().hex[:8]}",
                                   config=Config(data_dir=tmp_path))
    backend.ensure_index()
    backend.index(Document(id=doc_id_for(u), url=u, host=u.split("/")[2], title="word",
                           body="word") for u in URLS)
    backend.refresh()
    yield backend
    backend.drop()
    backend.close()


def test_delete_by_host_on_elasticsearch(es_backend):
    assert es_backend.delete_by_host("a.test") == 2
    assert {h.url for h in es_backend.search("word").hits} == {"http://sub.a.test/1",
                                                              "http://b.test/1"}
    assert es_backend.delete_by_host("*.a.test") == 1
    assert es_backend.delete_by_host("nowhere.test") == 0
    assert {h.url for h in es_backend.search("word").hits} == {"http://b.test/1"}
    assert es_backend.get(doc_id_for("http://a.test/1")) is None
