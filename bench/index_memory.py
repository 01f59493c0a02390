"""Benchmark the embedded index writer's memory: a crawl worker's writer with glibc's mmap
threshold fixed (``MEMORY_MMAP_THRESHOLD``, the project's default) against glibc's dynamic
threshold (``MEMORY_MMAP_THRESHOLD=0``, the baseline), same documents, same process set-up.

Each side runs in a fresh process that sets up the allocator as ``crawler.memory.MemoryMonitor``
does in a worker (arenas capped at 2, the threshold fixed or not), then indexes ``--docs``
generated test web pages (harness/documents.py) into an ``EmbeddedBackend`` in batches
of 200, committing every ``--commit-docs`` documents (330: what a soak worker writes between
its 5-second commits), so segments and merges come as in a crawl. Every ``--docs``/20
documents it trims the heap (as the worker's minute sample does) and records the anonymous
RSS (``RssAnon``: the mapped index files are page cache, not the process's), the C heap in
use and the free heap memory left resident. ``--rounds`` rounds (default 2) alternate the
order of the two sides; each figure is the median over the rounds with its ``[min, max]``
under ``range``, and the load average is sampled every 5 s (``load_avg``). Prints one JSON
object on its last stdout line.

    python -m bench.index_memory [--docs 500000] [--rounds 2] [--quick]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crawler.settings import MEMORY_MMAP_THRESHOLD as FIXED
from harness import ROOT, log
from harness.rounds import DEFAULT_ROUNDS, LoadSampler, run_rounds, side_by_side
from harness.series import growth

MB = 2**20



def rss_anon() -> int:
    """Bytes of this process's anonymous resident memory."""
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"^RssAnon:\s+(\d+) kB", status, re.M).group(1)) * 1024


def child(docs: int, commit_docs: int, threshold: int, workdir: Path) -> None:
    """One side: index ``docs`` documents, print one JSON sample line per sample point."""
    from crawler.memory import GlibcHeap, MemoryMonitor
    from harness.documents import generate
    from index.engines.embedded.backend import EmbeddedBackend

    heap = GlibcHeap.load()
    if heap is None:
        raise SystemExit("index_memory: needs glibc 2.33 or later (mallinfo2)")
    MemoryMonitor(None, 60, trim=True, heap=heap, arenas=2, mmap_threshold=threshold)
    backend = EmbeddedBackend(workdir / "index", commit_every_docs=commit_docs,
                              commit_interval_s=1e9)
    backend.ensure_index()
    every = max(docs // 20, 1)
    started = time.perf_counter()

    def sample(done: int) -> None:
        heap.trim()
        in_use, free = heap.usage()
        print(json.dumps({"docs": done, "s": round(time.perf_counter() - started, 2),
                          "rss_anon": rss_anon(), "heap_in_use": in_use, "heap_free": free}),
              flush=True)

    batch = []
    for n, doc in enumerate(generate(docs, 5000), 1):
        batch.append(doc)
        if len(batch) == 200:
            backend.index(batch)
            batch = []
        if n % every == 0:
            sample(n)
    backend.index(batch)
    backend.close()
    index_bytes = sum(f.stat().st_size for f in (workdir / "index").iterdir() if f.is_file())
    print(json.dumps({"done": docs, "s": round(time.perf_counter() - started, 2),
                      "index_bytes": index_bytes}), flush=True)


def _trend(samples: list[dict], key: str) -> float:
    """Growth of ``key`` (MB) over the samples after the first quarter: the soak's
    least-squares trend, over documents instead of seconds."""
    series = [(r["docs"], r[key] / MB) for r in samples]
    return round(growth(series, warmup=series[len(series) // 4][0], end=series[-1][0]), 1)


def side(name: str, docs: int, commit_docs: int, threshold: int) -> dict:
    """Run one side in a fresh process; its figures."""
    log(f"index_memory: {name} (MEMORY_MMAP_THRESHOLD={threshold}), {docs} docs")
    with tempfile.TemporaryDirectory(prefix="bench-index-memory-") as tmp:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.index_memory", "--child", str(threshold),
             "--docs", str(docs), "--commit-docs", str(commit_docs), "--workdir", tmp],
            cwd=ROOT, stdout=subprocess.PIPE, text=True)
        samples, end = [], {}
        for line in proc.stdout:
            row = json.loads(line)
            if "done" in row:
                end = row
                continue
            samples.append(row)
            log(f"  {row['docs']:7d} docs {row['s']:7.1f}s  anon RSS "
                f"{row['rss_anon'] / MB:6.1f} MB  heap in use {row['heap_in_use'] / MB:6.1f}"
                f"  free {row['heap_free'] / MB:6.1f}")
        if proc.wait() != 0 or not end:
            raise SystemExit(f"index_memory: the {name} side failed (exit {proc.returncode})")
    late = samples[len(samples) // 2:]
    return {
        "rss_anon_mb": round(statistics.mean(r["rss_anon"] for r in late) / MB, 1),
        "rss_anon_max_mb": round(max(r["rss_anon"] for r in samples) / MB, 1),
        "rss_anon_growth_mb": _trend(samples, "rss_anon"),
        "heap_free_mb": round(statistics.mean(r["heap_free"] for r in late) / MB, 1),
        "heap_free_growth_mb": _trend(samples, "heap_free"),
        "heap_in_use_mb": round(statistics.mean(r["heap_in_use"] for r in late) / MB, 1),
        "docs_per_s": round(docs / end["s"], 1),
        "index_mb": round(end["index_bytes"] / MB, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, help="documents per side (default 500,000; 100,000 "
                                                 "with --quick)")
    parser.add_argument("--commit-docs", type=int, default=330,
                        help="documents per commit (a soak worker's: ~330)")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="alternating rounds of both sides")
    parser.add_argument("--quick", action="store_true", help="100,000 documents")
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    docs = args.docs or (100_000 if args.quick else 500_000)
    if args.child is not None:
        child(docs, args.commit_docs, args.child, args.workdir)
        return
    with LoadSampler() as load:
        runs = run_rounds({
            "project": lambda _: side("project", docs, args.commit_docs, FIXED),
            "baseline": lambda _: side("baseline", docs, args.commit_docs, 0),
        }, args.rounds)
    result = side_by_side(runs, {"project": "", "baseline": "baseline_"}, load, digits=1)
    log(f"index_memory: anon RSS (second half) {result['rss_anon_mb']} MB against "
        f"{result['baseline_rss_anon_mb']}; free heap left after trims "
        f"{result['heap_free_mb']} MB against {result['baseline_heap_free_mb']}; "
        f"{result['docs_per_s']} docs/s against {result['baseline_docs_per_s']}")
    print(json.dumps({"docs": docs, "commit_docs": args.commit_docs,
                      "mmap_threshold": FIXED, "baseline_mmap_threshold": 0, **result}))

if __name__ == "__main__":
    main()
