"""The crawl-state store contract, on SQLite and on a real redis-server."""

import pytest

from crawler.crawlstate import LocalCrawlStateStore, RedisCrawlStateStore, WriteBehind
from crawler.recrawl import CrawlState, RecrawlPolicy
from harness.clock import FakeClock

H = 3600.0


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    from harness.redisserver import running_redis

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


def test_packed_state_roundtrips_every_field():
    from crawler.crawlstate import pack, unpack

    full = CrawlState("https://www.a.test/p?q=1", tier=3, last_fetch=1764662400.123,
                      status=200, etag='W/"x-1"', last_modified="Wed, 02 Dec 2026 06:00:00 GMT",
                      content_hash="0123456789abcdef0123456789abcdef01234567",
                      interval=5400.5, changes=[1.25, 7.5], failures=2, gone=1,
                      tombstone=True, moved_to="http://b.test/é")
    odd = CrawlState("ftp://x.test/\udc80", tier=-2, status=301, content_hash="h",
                     last_modified="Mon, 1 Jan 2001 00:00:00 +0100")  # no fixdate: as text
    for state in (full, odd, CrawlState("http://a.test/"), CrawlState("")):
        assert unpack(pack(state)) == state
    assert len(pack(full)) < 110 and len(pack(CrawlState("http://a.test/"))) == 10


def test_redis_store_stays_in_compact_encodings_across_partitions(redis_url):
    """Thousands of URLs over few partitions: every key a listpack, ~150 bytes a URL, the
    due order and counts exact across partitions, a shorter record leaves no stale chunk."""
    import random

    from redis import Redis

    from crawler.crawlstate import pack

    client = Redis.from_url(redis_url)
    store = RedisCrawlStateStore(client, "compact", partition_bits=5)
    store.clear()
    rng = random.Random(5)
    states = [CrawlState(f"http://site{n % 300}.test:39295/p/{n}", tier=1,
                         last_fetch=1.7e9 + n, status=200, content_hash=f"{n:040x}",
                         interval=86400.0, next_fetch_at=rng.uniform(0, 2000))
              for n in range(1500)]
    store.put(states)
    keys = list(client.scan_iter(match="crawlstate:compact:*"))
    assert {client.object("encoding", k) for k in keys} == {b"listpack"}
    per_url = sum(client.memory_usage(k, samples=0) for k in keys) / len(states)
    assert per_url < 160, per_url  # the URL -> JSON hash and URL sorted set: ~550
    longer = [CrawlState(s.url + "/" + "x" * 150, next_fetch_at=s.next_fetch_at + 1)
              for s in states[:60]]  # 4 chunks each
    store.put(longer)
    states += longer
    assert all(store.get(s.url) == s for s in longer[:10])
    due = sorted((s for s in states if s.next_fetch_at <= 1000), key=lambda s: s.next_fetch_at)
    assert [s.url for s in store.due_urls(1000, 40)] == [s.url for s in due[:40]]
    assert store.due_urls(1000, 40)[0] == due[0]
    assert store.count_due(1000) == len(due)
    short = CrawlState(longer[0].url, next_fetch_at=5.0)  # one chunk now
    store.put([short])
    assert store.get(short.url) == short
    part = store._where(short.url)[0]
    latest = {s.url: s for s in [*states, short]}.values()
    assert client.hlen(f"crawlstate:compact:s:{part}") == sum(  # a chunk per 64 bytes
        -(-(len(pack(s)) + 1) // 64) for s in latest if store._where(s.url)[0] == part)
    store.clear()
    assert not list(client.scan_iter(match="crawlstate:compact:*"))


def test_write_behind_writes_a_batch_or_after_its_delay_and_reads_see_what_waits(store):
    clock = FakeClock()
    behind = WriteBehind(store, batch=3, delay=1.0, clock=clock)
    first = CrawlState("http://a.test/1", status=200, next_fetch_at=5.0)
    behind.put([first])
    assert store.get(first.url) is None  # waiting to be written
    assert behind.get(first.url) is first
    behind.put([CrawlState("http://a.test/2", next_fetch_at=50.0)])
    behind.put([CrawlState("http://a.test/3", next_fetch_at=6.0)])  # a batch: written
    assert store.get(first.url) == first and store.get("http://a.test/3").next_fetch_at == 6.0
    behind.put([CrawlState("http://a.test/4", next_fetch_at=7.0)])
    clock.advance(0.5)
    behind.put([CrawlState("http://a.test/5", next_fetch_at=8.0)])
    assert store.get("http://a.test/4") is None
    clock.advance(0.5)  # the oldest has waited its delay: the next put writes them all
    behind.put([CrawlState("http://a.test/6", next_fetch_at=60.0)])
    assert store.get("http://a.test/4") is not None and store.get("http://a.test/6") is not None
    behind.put([CrawlState("http://a.test/7", next_fetch_at=9.0)])
    assert behind.count_due(10.0) == 5  # reads write what waits first
    assert [s.url for s in behind.due_urls(10.0, 2)] == ["http://a.test/1", "http://a.test/3"]
    behind.put([CrawlState("http://a.test/8", next_fetch_at=9.5)])
    assert behind.claim(["http://a.test/8"], 10.0, 100.0) == ["http://a.test/8"]
    behind.put([CrawlState("http://a.test/9", next_fetch_at=1.0)])
    real_close, closed = store.close, []
    store.close = lambda: closed.append(store.get("http://a.test/9"))
    behind.close()  # writes what waits, then closes the store
    store.close = real_close
    assert closed and closed[0].next_fetch_at == 1.0


def test_write_behind_keeps_what_a_failed_write_held(store):
    behind = WriteBehind(store, batch=100)
    behind.put([CrawlState("http://a.test/1", next_fetch_at=5.0)])
    real_put, calls = store.put, []

    def failing(states):
        calls.append(list(states))
        raise ConnectionError("store away")

    store.put = failing
    with pytest.raises(ConnectionError):
        behind.flush()
    store.put = real_put
    assert len(calls) == 1 and behind.get("http://a.test/1") is not None
    behind.flush()
    assert store.get("http://a.test/1").next_fetch_at == 5.0
