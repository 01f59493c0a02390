"""The result cache (index/cache.py) in front of real backends: hits, TTL, invalidation on
every publication (reindex, update_rank, delete_by_host), in local memory and in Redis."""

from __future__ import annotations

import time
import uuid

import pytest

from crawler.config import Config
from crawler.urls import doc_id_for
from harness.clock import FakeClock
from index import get_backend
from index.base import Document
from index.cache import CachedBackend, LocalResultCache, RedisResultCache, cache_key
from index.engines.embedded.backend import EmbeddedBackend
from index.query import parse

pytest_plugins = ["tests.fixtures_es"]


def page(host: str, path: str, title: str, body: str) -> Document:
    url = f"http://{host}/{path}"
    return Document(id=doc_id_for(url), url=url, host=host, title=title, body=body)


DOCS = [
    page("zebra.test", "", "Zebra home", "zebra stripes savanna grazing"),
    page("zebra.test", "more", "Zebra more", "zebra herd migration stripes"),
    page("okapi.test", "", "Okapi", "okapi forest giraffe relative stripes"),
]


@pytest.fixture
def embedded(tmp_path):
    backend = EmbeddedBackend(tmp_path / "index")
    backend.ensure_index()
    backend.index(DOCS)
    backend.refresh()
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    from harness.redisserver import running_redis

    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


def test_key_is_the_normalized_query_page_size_and_explain():
    assert cache_key(parse("Zebra  STRIPES"), 1, 10, False) == cache_key(
        parse("zebra stripes"), 1, 10, False)
    keys = {cache_key(parse("zebra stripes"), p, s, e)
            for p, s, e in [(1, 10, False), (2, 10, False), (1, 20, False), (1, 10, True)]}
    assert len(keys) == 4
    assert cache_key(parse("zebra"), 1, 10, False) != cache_key(parse("-zebra okapi"), 1, 10,
                                                                  False)


def test_a_repeated_query_is_served_from_the_cache(embedded):
    cached = CachedBackend(embedded, LocalResultCache(ttl=60))
    first = cached.search("zebra stripes")
    again = cached.search("Zebra  Stripes")
    assert "cached" not in first.extra and again.extra["cached"] is True
    assert [h.url for h in again.hits] == [h.url for h in first.hits]
    assert again.query == "Zebra  Stripes" and again.parsed is not None
    assert cached.stats()["cache/hits"] == 1 and cached.stats()["cache/misses"] == 1
    assert cached.search("zebra stripes", page=2).extra.get("cached") is None


def test_entries_expire_after_the_ttl(embedded):
    clock = FakeClock()
    cache = LocalResultCache(ttl=30, clock=clock)
    cached = CachedBackend(embedded, cache)
    cached.search("zebra")
    clock.advance(29)
    assert cached.search("zebra").extra.get("cached") is True
    clock.advance(2)
    assert cached.search("zebra").extra.get("cached") is None


def test_the_lru_is_bounded(embedded):
    cache = LocalResultCache(ttl=60, max_entries=2)
    cached = CachedBackend(embedded, cache)
    for q in ("zebra", "okapi", "stripes", "zebra"):
        cached.search(q)
    assert len(cache) == 2
    assert cache.stats()["cache/hits"] == 0  # "zebra" was evicted before it came back


def test_update_rank_and_delete_by_host_publish_a_new_version(embedded):
    cached = CachedBackend(embedded, LocalResultCache(ttl=60))
    before = cached.search("stripes")
    assert cached.search("stripes").extra.get("cached") is True
    okapi = doc_id_for("http://okapi.test/")
    cached.update_rank({okapi: 50.0})
    cached.refresh()
    ranked = cached.search("stripes")
    assert ranked.extra.get("cached") is None
    assert next(h.pagerank for h in ranked.hits if h.id == okapi) == 50.0
    cached.search("stripes")
    assert cached.delete_by_host("zebra.test") == 2
    after = cached.search("stripes")
    assert after.extra.get("cached") is None
    assert {h.host for h in after.hits} == {"okapi.test"} != {h.host for h in before.hits}


def test_get_backend_puts_the_cache_in_front_unless_the_ttl_is_zero(tmp_path):
    config = Config(data_dir=tmp_path)
    backend = get_backend(config, settings={"SEARCH_CACHE_TTL": 5, "SEARCH_CACHE_SIZE": 3})
    try:
        assert isinstance(backend, CachedBackend)
        assert isinstance(backend.backend, EmbeddedBackend)
        assert backend.cache.ttl == 5 and backend.cache.max_entries == 3
        assert backend.path == tmp_path / "index"  # attributes of the backend pass through
    finally:
        backend.close()
    plain = get_backend(config, settings={"SEARCH_CACHE_TTL": 0})
    try:
        assert isinstance(plain, EmbeddedBackend)
    finally:
        plain.close()


@pytest.mark.services
def test_redis_cache_is_shared_and_invalidated_across_processes(embedded, redis_url):
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    web = CachedBackend(embedded, RedisResultCache.from_url(redis_url, ttl=60, prefix=prefix))
    # another process (the ranking batch) with its own connection to the same Redis
    batch_cache = RedisResultCache.from_url(redis_url, ttl=60, prefix=prefix)
    other_web = CachedBackend(embedded, RedisResultCache.from_url(redis_url, 60, prefix))
    web.search("zebra")
    assert other_web.search("zebra").extra.get("cached") is True  # one cache for all workers
    CachedBackend(embedded, batch_cache).update_rank({doc_id_for("http://zebra.test/"): 2.0})
    assert web.search("zebra").extra.get("cached") is None
    assert other_web.search("zebra").extra.get("cached") is True  # the new version's entry
    for b in (web, other_web):
        b.cache.close()
    batch_cache.close()


@pytest.mark.services
def test_redis_entries_expire_after_the_ttl(embedded, redis_url):
    cache = RedisResultCache.from_url(redis_url, ttl=0.5, prefix=f"t-{uuid.uuid4().hex[:8]}")
    cached = CachedBackend(embedded, cache)
    cached.search("okapi")
    key = f"{cache.prefix}:{cache.version()}:{cache_key(parse('okapi'), 1, 10, False)}"
    assert 0 < cache.client.pttl(key) <= 500  # Redis itself expires it
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if cached.search("okapi").extra.get("cached") is None:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the cached page was still served 30 s after its 0.5 s TTL")
    cache.close()


@pytest.mark.services
def test_reindex_swap_empties_the_cache_and_a_hit_costs_no_request(es_url, tmp_path):
    from index.engines.elasticsearch.backend import ElasticsearchBackend

    es = ElasticsearchBackend(es_url, index_prefix=f"cache-{uuid.uuid4().hex[:8]}",
                              spool_dir=tmp_path / "spool")
    cached = CachedBackend(es, LocalResultCache(ttl=60))
    try:
        es.ensure_index()
        es.index(DOCS)
        es.refresh()
        cached.search("zebra stripes")
        requests = es.stats()["search/requests"]
        assert cached.search("zebra stripes").extra.get("cached") is True
        assert es.stats()["search/requests"] == requests
        old = es.current_index()
        assert cached.reindex() != old
        assert cached.search("zebra stripes").extra.get("cached") is None
        assert es.stats()["search/requests"] > requests
    finally:
        es.drop()
        es.close()


def test_a_redis_cache_that_is_down_misses_and_searches_still_answer(embedded):
    """Redis unreachable (nothing listens on port 1): its errors are caught by the cache,
    which imports them only when a Redis cache is made; every search answers uncached."""
    cache = RedisResultCache.from_url("redis://127.0.0.1:1", ttl=60)
    backend = CachedBackend(embedded, cache)
    assert cache.version() == -1 and cache.bump() == -1
    for _ in range(2):
        results = backend.search("zebra")
        assert results.total == 2 and results.extra.get("cached") is None
    cache.close()
