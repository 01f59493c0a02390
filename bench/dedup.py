"""Benchmark near-duplicate detection: throughput per core and precision/recall per method.

Runs MinHash LSH and SimHash (both through ``crawler.quality.dedup.core.Deduplicator``, tokenizing
included) and, as the baseline, datasketch as a user who cares about speed configures it
(``MinHash.update_batch`` over shingle strings with a fast hash function,
``hashfunc=xxhash.xxh32_intdigest``, instead of its default SHA-1, plus ``MinHashLSH``) on
the same labelled near-copy set. The baseline's settings are written beside its figures
(``baseline_settings``). ``--rounds`` rounds (default 2) alternate the order of the two
sides; each figure is the median over the rounds with its ``[min, max]`` under ``range``,
and the load average is sampled every second (``load_avg``). Prints one JSON object on its
last stdout line.

With ``--redis`` it also starts a private redis-server and measures both methods with
their state in Redis (as with ``REDIS_URL`` set), wall-clock documents per second, and
``redis_bytes_per_doc``: the MinHash state per document of the compact layout (the
default), with datasketch's layout beside it (``redis_datasketch_*``), by ``MEMORY USAGE``.

    python -m bench.dedup [--quick] [--rounds 2] [--redis]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import datasketch
import redis
import xxhash
from datasketch import MinHash, MinHashLSH

from crawler.quality.dedup.compact import partition_bits_for
from crawler.quality.dedup.core import Deduplicator
from crawler.quality.dedup.evaluate import Score, evaluate
from crawler.quality.dedup.text import words
from crawler.urls import doc_id_for
from harness import log
from harness.rounds import DEFAULT_ROUNDS, LoadSampler, run_rounds, side_by_side
from harness.roundtrips import count_round_trips
from testweb.nearcopies import generate


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A throw-away redis-server on a free port; yields its URL."""
    from harness.redisserver import running_redis

    with tempfile.TemporaryDirectory() as tmp, running_redis(Path(tmp)) as server:
        yield server.url


def run_method(
    method: str, pages, visible: bool = False, redis_url: str | None = None
) -> tuple[Score, float]:
    """Score and CPU seconds of one method over the pages' main (or all visible) text."""
    dedup = Deduplicator.from_settings(None, method=method, redis_url=redis_url,
                                       prefix=f"bench-{method}")
    start = time.process_time()
    score = evaluate(dedup, pages, (lambda p: p.visible_text) if visible else (lambda p: p.text))
    return score, time.process_time() - start


#: How the baseline runs datasketch: what a user would pass, written next to its figures.
BASELINE_SETTINGS = {
    "library": f"datasketch {datasketch.__version__}",
    "hashfunc": "xxhash.xxh32_intdigest",  # datasketch's default is SHA-1 (hashlib)
    "num_perm": 128,
    "threshold": 0.7,
    "shingle_size": 3,
    "shingles": "word 3-grams of crawler.quality.dedup.text.words(main text), UTF-8",
    "lsh": "MinHashLSH(threshold, num_perm): query, confirm by jaccard >= threshold, insert",
}


def run_baseline(pages, threshold: float = 0.7, shingle_size: int = 3) -> tuple[Score, float]:
    """datasketch as a user configures it: xxhash per shingle string (``hashfunc=``),
    ``update_batch``, LSH query then insert."""
    lsh = MinHashLSH(threshold=threshold, num_perm=128)
    signatures: dict[str, MinHash] = {}
    label_of: dict[str, str] = {}
    seen: set[str] = set()
    true_pos = false_pos = positives = 0
    start = time.process_time()
    for page in pages:
        doc_id = doc_id_for(page.url)
        label_of[doc_id] = page.label
        positives += page.label in seen
        seen.add(page.label)
        tokens = words(page.text)
        shingles = {
            " ".join(tokens[i : i + shingle_size]).encode("utf-8")
            for i in range(max(1, len(tokens) - shingle_size + 1))
        }
        signature = MinHash(num_perm=128, hashfunc=xxhash.xxh32_intdigest)
        signature.update_batch(shingles)
        best = max(
            ((signature.jaccard(signatures[k]), k) for k in lsh.query(signature)),
            default=None,
        )
        if best is not None and best[0] >= threshold:
            if label_of[best[1]] == page.label:
                true_pos += 1
            else:
                false_pos += 1
        lsh.insert(doc_id, signature)
        signatures[doc_id] = signature
    return Score(true_pos, false_pos, positives), time.process_time() - start


def project_side(pages) -> dict[str, float]:
    """Both methods' scores and documents per CPU-second over main and all visible text."""
    result: dict[str, float] = {}
    for method in ("minhash", "simhash"):
        log(f"running {method} over {len(pages)} documents")
        score, cpu = run_method(method, pages)
        result[f"{method}_precision"] = round(score.precision, 4)
        result[f"{method}_recall"] = round(score.recall, 4)
        result[f"{method}_docs_per_s"] = round(len(pages) / cpu, 1)
        log(f"  {method}: {score} {result[f'{method}_docs_per_s']} docs/s/core")
        score, cpu = run_method(method, pages, visible=True)
        result[f"{method}_visible_text_precision"] = round(score.precision, 4)
        result[f"{method}_visible_text_recall"] = round(score.recall, 4)
        log(f"  {method} on all visible text (boilerplate included): {score}")
    return result


def baseline_side(pages) -> dict[str, float]:
    """The datasketch baseline's score and documents per CPU-second."""
    log("running the baseline: datasketch MinHash (xxhash) + LSH")
    score, cpu = run_baseline(pages)
    result = {"precision": round(score.precision, 4), "recall": round(score.recall, 4),
              "docs_per_s": round(len(pages) / cpu, 1)}
    log(f"  baseline: {score} {result['docs_per_s']} docs/s/core")
    return result


def redis_memory(pages, layouts=("compact", "datasketch")) -> dict:
    """MinHash state per document in Redis, the compact layout beside datasketch's.

    Each layout runs alone on a fresh redis-server over the same pages; the compact
    layout's partitions are sized for the set (``partition_bits_for``). Bytes are Redis'
    own ``MEMORY USAGE key SAMPLES 0`` (every element counted) summed over every key the run
    left, grouped by key family; ``used_memory`` growth is given as a cross-check. Round
    trips are the client's requests (a pipeline or a script call is one), counted on the
    deduplicator's Redis client.
    """
    out: dict = {}
    for layout in layouts:
        with redis_server() as url:
            client = redis.Redis.from_url(url)
            before = client.info("memory")["used_memory"]
            dedup = Deduplicator.from_settings(
                None,
                method="minhash",
                redis_url=url,
                prefix="m",
                redis_layout=layout,
                compact_options={"partition_bits": partition_bits_for(len(pages))},
            )
            trips = count_round_trips(dedup.store.redis)
            started = time.perf_counter()
            score = evaluate(dedup, pages, lambda p: p.text)
            wall = time.perf_counter() - started
            families: dict[str, int] = {}
            for key in client.scan_iter(match="m:*", count=1000):
                family = _family(key.decode("utf-8", "replace"))
                families[family] = families.get(family, 0) + client.memory_usage(key, samples=0)
            used = client.info("memory")["used_memory"] - before
        total = sum(families.values())
        name = "redis" if layout == "compact" else "redis_datasketch"
        out[f"{name}_bytes_per_doc"] = round(total / len(pages), 1)
        out[f"{name}_used_memory_per_doc"] = round(used / len(pages), 1)
        out[f"{name}_families"] = {k: round(v / len(pages), 1) for k, v in families.items()}
        out[f"{name}_precision"] = round(score.precision, 4)
        out[f"{name}_recall"] = round(score.recall, 4)
        out[f"{name}_docs_per_s"] = round(len(pages) / wall, 1)
        if layout == "compact":
            out["redis_round_trips_per_doc"] = round(trips[0] / len(pages), 2)
        log(f"  MinHash, {layout} layout: {score}, {out[f'{name}_bytes_per_doc']} B/doc "
            f"by MEMORY USAGE ({out[f'{name}_used_memory_per_doc']} by used_memory), "
            f"{out[f'{name}_families']}")
    return out


def _family(key: str) -> str:
    """A key's family: ``m:c:d:123`` -> ``c:d``; datasketch's keys by their readable part."""
    parts = key.split(":")
    if len(parts) > 2 and parts[1] == "c":
        return ":".join(parts[1:3])
    for marker in ("_bucket_", "_keys", ":sig"):
        if marker in key:
            return "minhash" + marker
    return parts[1] if len(parts) > 1 else key


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small set, for smoke runs")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--redis", action="store_true", help="also measure with state in Redis")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="alternating rounds of the project's methods and the baseline")
    args = parser.parse_args(argv)
    articles, short_pages = (200, 60) if args.quick else (3000, 1000)
    log(f"generating {articles} articles with near-copies and {short_pages} short pages")
    pages = generate(articles=articles, short_pages=short_pages, seed=args.seed)
    result: dict = {
        "docs": len(pages),
        "near_copies": sum(p.copy for p in pages),
        "avg_doc_bytes": round(sum(len(p.text.encode("utf-8")) for p in pages) / len(pages)),
        "avg_page_bytes": round(sum(len(p.html.encode("utf-8")) for p in pages) / len(pages)),
    }
    with LoadSampler(every=1.0) as load:
        runs = run_rounds({"project": lambda _: project_side(pages),
                           "baseline": lambda _: baseline_side(pages)}, args.rounds)
    result.update(side_by_side(runs, {"project": "", "baseline": "baseline_datasketch_"},
                               load, digits=4))
    result["baseline_settings"] = BASELINE_SETTINGS
    if args.redis:
        with redis_server() as url:
            for method in ("minhash", "simhash"):
                log(f"running {method} with its state in Redis")
                started = time.perf_counter()
                score, _ = run_method(method, pages, redis_url=url)
                wall = time.perf_counter() - started
                result[f"{method}_redis_docs_per_s"] = round(len(pages) / wall, 1)
                result[f"{method}_redis_recall"] = round(score.recall, 4)
                log(f"  {method} in Redis: {score} {result[f'{method}_redis_docs_per_s']} docs/s")
    if args.redis:
        result.update(redis_memory(pages))
    result["default_method"] = "minhash"
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
