"""Worker memory monitor: heap figures that follow real allocations, a trim that returns
freed pages to the kernel, stats under ``memory/``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import psutil
import pytest
from scrapy.exceptions import NotConfigured
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from crawler.memory import GlibcHeap, MemoryMonitor, pymalloc_stats

MB = 2**20

heap = GlibcHeap.load()
needs_glibc = pytest.mark.skipif(heap is None, reason="glibc 2.33+ only")


def _rss() -> int:
    return psutil.Process().memory_info().rss


@needs_glibc
def test_heap_in_use_follows_allocations():
    before, _ = heap.usage()
    chunks = [bytes(2000) for _ in range(50_000)]  # > 512 bytes: malloc, not pymalloc
    during, _ = heap.usage()
    assert during - before >= 50_000 * 2000 * 0.9
    del chunks
    after, _ = heap.usage()
    assert during - after >= 50_000 * 2000 * 0.9


@needs_glibc
def test_trim_returns_fragmented_free_pages():
    heap.trim()
    chunks = [bytes(1000) for _ in range(150_000)]
    # Keep one chunk in a hundred, and the last: the freed memory lies between live chunks,
    # so free() cannot shrink the heap and RSS keeps it.
    kept = chunks[::100] + chunks[-1:]
    del chunks
    in_use, free = heap.usage()
    assert free >= 100 * MB
    before = _rss()
    assert heap.trim()
    assert before - _rss() >= 80 * MB
    assert heap.usage()[0] == pytest.approx(in_use, rel=0.01)
    del kept


@needs_glibc
def test_sample_trims_and_records_stats():
    crawler = get_crawler()
    stats = MemoryStatsCollector(crawler)
    monitor = MemoryMonitor(stats, interval=60, trim=True, heap=heap)
    figures = monitor.sample()
    assert stats.get_value("memory/trims") == 1
    for name in ("memory/rss_bytes", "memory/heap_in_use_bytes", "memory/heap_free_bytes",
                 "memory/python_blocks"):
        assert stats.get_value(name) == figures[name]
    assert figures["memory/rss_bytes"] > 10 * MB
    assert figures["memory/heap_in_use_bytes"] > MB
    assert stats.get_value("memory/rss_max_bytes") == figures["memory/rss_bytes"]


def test_without_glibc_no_heap_figures_and_no_trim():
    stats = MemoryStatsCollector(get_crawler())
    figures = MemoryMonitor(stats, interval=60, trim=True, heap=None).sample()
    assert set(figures) == {"memory/rss_bytes", "memory/python_blocks",
                            "memory/pymalloc_arenas", "memory/pymalloc_used_bytes"}
    assert stats.get_value("memory/trims") is None


def test_off_when_interval_is_zero():
    crawler = get_crawler(settings_dict={"MEMORY_SAMPLE_INTERVAL": 0})
    with pytest.raises(NotConfigured):
        MemoryMonitor.from_crawler(crawler)


def test_pymalloc_figures_follow_small_objects(capfd):
    before = pymalloc_stats()
    strings = [str(n) * 4 for n in range(500_000)]  # ~60 bytes each: pymalloc's blocks
    during = pymalloc_stats()
    assert during["memory/pymalloc_used_bytes"] - before["memory/pymalloc_used_bytes"] >= 25 * MB
    assert during["memory/pymalloc_arenas"] - before["memory/pymalloc_arenas"] >= 25
    del strings
    after = pymalloc_stats()
    assert during["memory/pymalloc_used_bytes"] - after["memory/pymalloc_used_bytes"] >= 25 * MB
    # The allocator's report went to the figures, not to the process's stderr.
    assert capfd.readouterr().err == ""


def test_pymalloc_figures_absent_without_pymalloc():
    code = "from crawler.memory import pymalloc_stats; print(pymalloc_stats())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONMALLOC": "malloc"}, check=True)
    assert out.stdout.strip() == "{}"
    assert out.stderr == ""


def test_pymalloc_figures_without_stderr_or_temporary_directory(monkeypatch):
    # A daemon with descriptor 2 closed still gets them (the temporary file takes it) ...
    code = ("import os; from crawler.memory import pymalloc_stats; os.close(2); "
            "print(sorted(pymalloc_stats()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "['memory/pymalloc_arenas', 'memory/pymalloc_used_bytes']"
    # ... and without a writable temporary directory the sample goes on without them.
    monkeypatch.setattr(tempfile, "tempdir", "/nonexistent/websearch-test")
    assert pymalloc_stats() == {}


# In a fresh process: a mapped block of 8 MiB freed, then a 1 MiB block allocated and freed;
# prints the bytes mapped on their own while it was held and how much the heap's free memory
# grew once it was released.
_MMAP_PROBE = """
import ctypes, json, sys
from scrapy.utils.test import get_crawler
from crawler.memory import GlibcHeap, MemoryMonitor
MemoryMonitor.from_crawler(get_crawler(settings_dict=json.loads(sys.argv[1])))
heap = GlibcHeap.load()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.free(libc.malloc(8 << 20))
before = heap._mallinfo2()
block = libc.malloc(1 << 20)
held = heap._mallinfo2()
libc.free(block)
after = heap._mallinfo2()
print(json.dumps({"mapped": held.hblkhd - before.hblkhd, "free": after.fordblks - before.fordblks}))
"""


def _large_block(settings: dict) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-c", _MMAP_PROBE, json.dumps(settings)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@needs_glibc
def test_mmap_threshold_fixed_large_blocks_leave_no_free_heap():
    # Fixed (the default): the 1 MiB block is mapped on its own and unmapped when freed.
    for settings in ({}, {"MEMORY_MMAP_THRESHOLD": 512 * 1024}):
        block = _large_block(settings)
        assert block["mapped"] >= MB
        assert block["free"] < 64 * 1024
    # glibc's dynamic threshold rose to 8 MiB with the first block freed, so the 1 MiB
    # block came from the heap and stays there, free, when released (less what it took from
    # free memory already at the heap's top).
    block = _large_block({"MEMORY_MMAP_THRESHOLD": 0})
    assert block["mapped"] == 0
    assert block["free"] >= MB // 2


@needs_glibc
def test_index_memory_benchmark_prints_both_sides():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-m", "bench.index_memory", "--docs", "2000"], cwd=root,
                         capture_output=True, text=True, check=True)
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["docs"] == 2000
    for side in ("", "baseline_"):
        for key in ("rss_anon_mb", "rss_anon_max_mb", "heap_free_mb", "docs_per_s", "index_mb"):
            assert figures[side + key] > 0, side + key
        # a trend in MB over the run: never more than the memory it measures (a unit or
        # window mistake shows as a growth of thousands of MB)
        largest = figures[side + "rss_anon_max_mb"]
        assert figures[side + "rss_anon_mb"] <= largest
        for key in ("rss_anon_growth_mb", "heap_free_growth_mb"):
            assert abs(figures[side + key]) <= largest, (side + key, figures)
        assert f"baseline_{key}" in figures
