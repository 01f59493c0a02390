"""Title completion (the search box's ``/api/complete``): the embedded index's prefix walk
of its ``title_key`` term dictionary vs a naive scan, side by side in the same run.

N pages get titles from the test web's Zipf text generator (``bench/query.py``'s
``title_for``; many titles share words, and some whole titles repeat, as on real sites);
their bodies are one short sentence, since only titles matter here. Prefixes are what a
user has typed of a title: its first 1 to 20 characters (often in the middle of a word),
lower-cased, so they match from one page to thousands.

- ``complete``: ``EmbeddedBackend.complete(prefix, 8)``: the top 8 by pages from the
  :class:`~index.completion.PrefixIndex` built from one walk of the ``title_key`` term
  dictionary (its build, on the first request after the index changes, is reported as
  ``prefix_index_build_ms`` and not in the percentiles);
- baseline ``scan``: every normalized title held in a Python list, each request checks
  ``startswith`` on all of them and counts the matches (what a completer without a prefix
  index does).

    python bench/complete.py            # N = 100,000
    python bench/complete.py --quick    # N = 10,000

Progress goes to stderr; the last stdout line is one JSON object: ``docs``, ``prefixes``,
``complete_p50_ms``, ``complete_p95_ms``, ``scan_p50_ms``, ``scan_p95_ms``, ``speedup_p95``,
``prefix_index_build_ms``,
``target_p95_ms`` (20) and ``meets_target``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.query import log, percentiles, time_queries  # noqa: E402
from crawler.urls import doc_id_for  # noqa: E402
from harness.documents import title_for  # noqa: E402
from harness.rounds import DEFAULT_ROUNDS, LoadSampler, ratio, run_rounds, side_by_side  # noqa: E402,E501
from index.base import Document  # noqa: E402
from index.engines.embedded.backend import EmbeddedBackend  # noqa: E402
from index.fields import completion_key, completion_prefix, completion_text  # noqa: E402
from testweb import text  # noqa: E402

SEED = 20261201
TARGET_P95_MS = 20.0
LIMIT = 8


def titles(n: int) -> list[str]:
    """n page titles; every seventh repeats an earlier one (shared page titles)."""
    out: list[str] = []
    for i in range(n):
        if i % 7 == 6:
            out.append(out[(i * 31) % len(out)])
        else:
            out.append(title_for(text.rng_for(SEED, i)))
    return out


def make_prefixes(all_titles: list[str], count: int) -> list[str]:
    rng = random.Random(SEED)
    out = []
    for _ in range(count):
        title = rng.choice(all_titles).lower()
        out.append(title[: rng.randint(1, min(20, len(title)))])
    return out


class ScanCompleter:
    """The baseline: a list of normalized titles, scanned in full per request."""

    def __init__(self, all_titles: list[str]):
        self.keys = [completion_key(t) for t in all_titles]

    def complete(self, prefix: str, limit: int = LIMIT) -> list[str]:
        key = completion_prefix(prefix)
        found = Counter(k for k in self.keys if k.startswith(key))
        ranked = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
        return [completion_text(k) for k, _ in ranked]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 pages, 500 prefixes")
    parser.add_argument("--docs", type=int, help="pages to index (default 100,000)")
    parser.add_argument("--prefixes", type=int, help="prefixes to time (default 2,000)")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="alternating rounds of the prefix index and the scan")
    args = parser.parse_args()
    n = args.docs or (10_000 if args.quick else 100_000)
    count = args.prefixes or (500 if args.quick else 2_000)
    work = Path(tempfile.mkdtemp(prefix="bench-complete-"))
    try:
        all_titles = titles(n)
        backend = EmbeddedBackend(work / "index", commit_every_docs=50_000)
        backend.ensure_index()
        started = time.perf_counter()
        backend.index(
            Document(id=doc_id_for(f"http://host{i % 500}.test/{i}"),
                     url=f"http://host{i % 500}.test/{i}", host=f"host{i % 500}.test",
                     title=title, body=f"Page {i}.")
            for i, title in enumerate(all_titles)
        )
        backend.refresh()
        log(f"indexed {n} pages in {time.perf_counter() - started:.1f} s")
        built = time.perf_counter()
        backend.complete("a", LIMIT)  # the first request builds the prefix index
        build_ms = (time.perf_counter() - built) * 1000
        log(f"prefix index built in {build_ms:.0f} ms")
        scan = ScanCompleter(all_titles)
        prefixes = make_prefixes(all_titles, count)
        mismatches = sum(backend.complete(p, LIMIT) != scan.complete(p, LIMIT)
                         for p in prefixes[:50])
        log(f"timing {count} prefixes (first 50 compared: {mismatches} differ), "
            f"{args.rounds} alternating rounds")

        def side(complete, warmup: int):
            def run(_round: int) -> dict:
                wall = time_queries(lambda p: complete(p, LIMIT), prefixes, warmup=warmup)[0]
                p50, p95 = percentiles(wall)
                return {"p50_ms": p50, "p95_ms": p95}
            return run

        with LoadSampler(every=1.0) as load:
            runs = run_rounds({"project": side(backend.complete, 50),
                               "baseline": side(scan.complete, 10)}, args.rounds)
        figures = side_by_side(runs, {"project": "complete_", "baseline": "scan_"}, load)
        backend.close()
        p95 = figures["complete_p95_ms"]
        print(json.dumps({
            "docs": n,
            "prefixes": count,
            **figures,
            "speedup_p95": ratio(figures["scan_p95_ms"], p95, 1),
            "prefix_index_build_ms": round(build_ms, 1),
            "answers_differ_of_50": mismatches,
            "target_p95_ms": TARGET_P95_MS,
            "meets_target": p95 <= TARGET_P95_MS,
            "baseline_settings": {"scan": "every normalized title per request, "
                                          "counted and sorted (Counter)"},
        }))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
