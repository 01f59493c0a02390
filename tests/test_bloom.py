"""Bloom seen-filter: size per URL, measured false-positive rate, persistence, and the
Redis bitmap setting exactly the bits the local filter sets."""

import numpy as np
import pytest
from redis import Redis

from crawler.frontier.base import Entry, bloom_size
from crawler.frontier.bloom import BloomHasher, LocalBloom
from crawler.frontier.redis_backend import RedisFrontier
from harness.redisserver import running_redis
from tests.frontiers import options


def urls(prefix: str, n: int) -> list[str]:
    return [f"http://{prefix}{i % 997}.test/page/{i}" for i in range(n)]


def test_size_is_at_most_1_2_bytes_per_url_at_1_percent():
    bits, hashes = bloom_size(1_000_000, 0.01)
    assert bits / 8 / 1_000_000 <= 1.2
    assert hashes == 7


def test_measured_fpr_within_20_percent_of_target():
    bloom = LocalBloom(None, 100_000, 0.01)
    bloom.add_many(urls("seen", 100_000))
    assert bloom.contains_many(urls("seen", 100_000)).all()  # no false negatives
    fpr = bloom.contains_many(urls("unseen", 200_000)).mean()
    assert 0.008 <= fpr <= 0.012


def test_scalar_and_vectorized_positions_agree():
    hasher = BloomHasher(50_000, 0.01)
    sample = urls("x", 500)
    assert hasher.positions_many(sample).tolist() == [hasher.positions(u) for u in sample]


def test_add_reports_new_and_persists(tmp_path):
    path = tmp_path / "seen.bloom"
    bloom = LocalBloom(path, 10_000, 0.01)
    assert bloom.add("http://a.test/") is True
    assert bloom.add("http://a.test/") is False
    bloom.flush()
    again = LocalBloom(path, 10_000, 0.01)
    assert "http://a.test/" in again
    assert "http://b.test/" not in again
    with pytest.raises(ValueError, match="sized for another capacity"):
        LocalBloom(path, 20_000, 0.01)


@pytest.mark.parametrize("capacity", [50_000, 300])  # a filter sparse, and one saturated
def test_add_each_finds_what_adding_one_by_one_finds(tmp_path, capacity):
    # repeats within a batch and across batches, batches below and above ADD_EACH_VECTOR
    sample = [f"http://h{j % 13}.test/p/{j}" for j in ((i * 7919) % 2500 for i in range(6000))]
    one_by_one = LocalBloom(None, capacity, 0.01)
    batched = LocalBloom(tmp_path / "b", capacity, 0.01)
    expected = [one_by_one.add(url) for url in sample]
    found, at = [], 0
    for size in [1, 5, 23, 24, 30, 200, 1000] * 20:
        found += batched.add_each(sample[at:at + size])
        at += size
        if at >= len(sample):
            break
    assert found == expected[:len(found)] and len(found) == len(sample)
    assert 0 < sum(found) < len(found)
    assert bytes(batched.array) == bytes(one_by_one.array)
    assert batched.add_each([]) == []


def test_sync_soon_writes_the_file_on_its_own_thread_and_close_waits(tmp_path, monkeypatch):
    import os
    import threading

    import crawler.frontier.bloom as bloom_module

    synced = threading.Event()
    threads = []

    def fsync(fd):
        threads.append(threading.current_thread().name)
        synced.set()

    monkeypatch.setattr(bloom_module.os, "fsync", fsync)
    path = tmp_path / "seen.bloom"
    bloom = LocalBloom(path, 10_000, 0.01)
    bloom.add("http://a.test/")
    bloom.sync_soon()  # returns at once: the caller's thread writes nothing
    assert synced.wait(5)
    assert threads == ["bloom-sync"]
    bloom.add("http://b.test/")
    bloom.close()
    assert bloom._syncer is None
    bloom.sync_soon()  # closed: no thread again
    assert bloom._syncer is None
    again = LocalBloom(path, 10_000, 0.01)
    assert "http://a.test/" in again and "http://b.test/" in again
    assert os.path.getsize(path) == again.nbytes


def test_a_killed_process_loses_no_url_it_added(tmp_path):
    import signal
    import subprocess
    import sys
    import textwrap

    path = tmp_path / "seen.bloom"
    child = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from crawler.frontier.bloom import LocalBloom
        bloom = LocalBloom(Path({str(path)!r}), 10_000, 0.01)
        for i in range(500):
            bloom.add(f"http://k.test/{{i}}")
        bloom.sync_soon()
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    done = subprocess.run([sys.executable, "-c", child], timeout=60)
    assert done.returncode == -signal.SIGKILL
    again = LocalBloom(path, 10_000, 0.01)
    assert all(f"http://k.test/{i}" in again for i in range(500))


def test_redis_bitmap_sets_the_same_bits(tmp_path):
    sample = urls("r", 2_000)
    local = LocalBloom(None, 10_000, 0.01)
    local.add_many(sample)
    with running_redis(tmp_path / "redis") as server:
        frontier = RedisFrontier(Redis.from_url(server.url), "bloomtest",
                                 **options(bloom_capacity=10_000))
        frontier.add(Entry(u, u.split("/")[2]) for u in sample)
        raw = Redis.from_url(server.url).get(frontier.bloom_key)
        frontier.close()
    redis_bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="big")
    local_bits = np.unpackbits(np.asarray(local.array), bitorder="little")
    assert np.array_equal(np.flatnonzero(redis_bits), np.flatnonzero(local_bits))
