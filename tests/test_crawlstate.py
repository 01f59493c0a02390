"""The crawl-state store contract, on SQLite and on a real redis-server."""

import pytest

from crawler.crawlstate import LocalCrawlStateStore, RedisCrawlStateStore
from crawler.recrawl import CrawlState, RecrawlPolicy

H = 3600.0


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    from crawler.redisserver import running_redis

    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


@pytest.fixture(params=["local", "redis"])
def store(request, tmp_path):
    if request.param == "local":
        s = LocalCrawlStateStore(tmp_path / "cs" / "web.sqlite3")
    else:
        from redis import Redis

        s = RedisCrawlStateStore(Redis.from_url(request.getfixturevalue("redis_url")), "t")
        s.clear()
    yield s
    s.close()


def test_put_get_roundtrip(store):
    assert store.get("http://a.test/") is None
    state = CrawlState("http://a.test/", tier=1, last_fetch=5.0, status=200, etag='"x"',
                       content_hash="h", interval=H, changes=[1.0, 2.0], next_fetch_at=9.0)
    store.put([state])
    assert store.get("http://a.test/") == state
    state.etag = '"y"'
    store.put([state])
    assert store.get("http://a.test/").etag == '"y"'


def test_due_ordering_claims_and_priority(store):
    policy = RecrawlPolicy.from_settings(None, min_interval=H, max_interval=100 * H,
                                         initial_interval=10 * H)
    now = 1000 * H
    states = [
        CrawlState("http://a.test/slow", last_fetch=now - 20 * H, interval=50 * H,
                   next_fetch_at=now - 10),
        CrawlState("http://a.test/fast", last_fetch=now - 20 * H, interval=H,
                   next_fetch_at=now - 5),
        CrawlState("http://a.test/later", last_fetch=now, interval=H, next_fetch_at=now + H),
    ]
    store.put(states)
    assert store.count_due(now) == 2
    assert [s.url for s in store.due_urls(now, 10)] == ["http://a.test/slow",
                                                       "http://a.test/fast"]
    taken = store.take_due(now, 1, policy, hold=600)
    assert [s.url for s in taken] == ["http://a.test/fast"]
    assert store.get("http://a.test/fast").next_fetch_at == now + 600
    assert store.count_due(now) == 1
    # a URL someone else already claimed is not claimed twice
    assert store.claim(["http://a.test/fast", "http://a.test/slow"], now, now + 600) == [
        "http://a.test/slow"]
    assert store.take_due(now, 5, policy, hold=600) == []
    assert store.count_due(now + 2 * H) == 3


def test_local_store_survives_reopen(tmp_path):
    path = tmp_path / "web.sqlite3"
    store = LocalCrawlStateStore(path)
    store.put([CrawlState("http://a.test/", tombstone=True, next_fetch_at=3.0)])
    store.close()
    again = LocalCrawlStateStore(path)
    assert again.get("http://a.test/").tombstone
    again.clear()
    assert again.get("http://a.test/") is None
    again.close()
