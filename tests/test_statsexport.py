"""Crawl stats snapshots: file and Redis stores, and the Scrapy extension."""

import json

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from crawler.statsexport import (
    FileStatsStore,
    HostCounter,
    RedisStatsStore,
    StatsExport,
    numeric_stats,
)
from harness.redisserver import running_redis


def _snap(worker, ts, pages):
    return {"ts": ts, "worker": worker, "stats": {"response_received_count": pages}, "hosts": {}}


def _exercise(store):
    store.append(_snap("w1", 100.0, 1))
    store.append(_snap("w2", 101.0, 5))
    store.append(_snap("w1", 110.0, 9))
    got = store.read()
    assert [(s["worker"], s["ts"]) for s in got] == [("w1", 100.0), ("w2", 101.0), ("w1", 110.0)]
    assert [s["worker"] for s in store.read(since=101.0)] == ["w2", "w1"]


def test_file_store(tmp_path):
    store = FileStatsStore(tmp_path / "stats")
    assert store.read() == []
    _exercise(store)
    assert sorted(p.name for p in (tmp_path / "stats").iterdir()) == ["w1.jsonl", "w2.jsonl"]
    with open(tmp_path / "stats" / "w1.jsonl", "a") as f:
        f.write('{"ts": 120, "work')  # a line still being written is skipped
    assert len(store.read()) == 3


def test_file_store_keeps_the_newest(tmp_path):
    store = FileStatsStore(tmp_path, max_lines=300)
    for n in range(2000):
        store.append(_snap("w/1", float(n), n))
    kept = store.read()
    assert len(kept) <= 1300 and kept[-1]["ts"] == 1999.0
    assert (tmp_path / "w_1.jsonl").exists()


def test_redis_store(tmp_path):
    from redis import Redis

    with running_redis(tmp_path) as server:
        client = Redis.from_url(server.url)
        _exercise(RedisStatsStore(client, prefix="t"))
        capped = RedisStatsStore(client, prefix="c", max_entries=5)
        for n in range(20):
            capped.append(_snap("w", float(n), n))
        assert [s["ts"] for s in capped.read()] == [15.0, 16.0, 17.0, 18.0, 19.0]
        client.close()


def test_numeric_stats_and_host_counter():
    assert numeric_stats({"a": 1, "b": 2.5, "start_time": "x", "flag": True}) == {"a": 1, "b": 2.5}
    hosts = HostCounter(capacity=3)
    for n in range(50):
        hosts.add(f"h{n % 10}.test")
    for _ in range(30):
        hosts.add("big.test")
    assert list(hosts.top(1)) == ["big.test"]
    assert len(hosts.counts) <= 6


def test_extension_exports_snapshots(tmp_path):
    crawler = get_crawler(settings_dict={"DATA_DIR": str(tmp_path), "STATS_EXPORT_INTERVAL": 5})
    stats = MemoryStatsCollector(crawler)
    crawler.stats = stats
    ext = StatsExport.from_crawler(crawler)
    stats.set_value("response_received_count", 7)
    stats.set_value("start_time", "not a number")
    for url in ("http://a.test/1", "http://a.test/2", "http://b.test/"):
        ext.response_received(Response(url))
    ext.export()
    ext.spider_closed(reason="finished")
    (path,) = (tmp_path / "stats").glob("*.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 2
    assert lines[0]["stats"] == {"response_received_count": 7}
    assert lines[0]["hosts"] == {"a.test": 2, "b.test": 1}
    assert lines[0]["worker"] == ext.worker


def test_extension_can_be_switched_off(tmp_path):
    crawler = get_crawler(settings_dict={"DATA_DIR": str(tmp_path), "STATS_EXPORT_INTERVAL": 0})
    with pytest.raises(NotConfigured):
        StatsExport.from_crawler(crawler)


def test_reads_only_the_window_from_the_end(tmp_path):
    from redis import Redis

    snaps = [_snap("w", float(n), n) for n in range(500)]
    files = FileStatsStore(tmp_path / "files")
    for snap in snaps:
        files.append(snap)
    path = tmp_path / "files" / "w.jsonl"
    for block in (7, 64, 1000, 1 << 20):  # block edges fall inside lines
        got = files._read_tail(path, since=123.0, block=block)
        assert [s["ts"] for s in got] == [float(n) for n in range(123, 500)]
    assert len(files.read(since=0)) == 500 and files.read(since=1000) == []
    with running_redis(tmp_path / "redis") as server:
        client = Redis.from_url(server.url)
        store = RedisStatsStore(client, prefix="r")
        for snap in snaps:
            store.append(snap)
        for chunk in (1, 50, 200, 1000):
            assert [s["ts"] for s in store.read(since=123.0, chunk=chunk)] == [
                float(n) for n in range(123, 500)]
        assert len(store.read()) == 500
        client.close()
