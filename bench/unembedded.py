"""Time the embedding batch's question to the embedded index: the first pages without the
model's vectors (``EmbeddedBackend.unembedded``), by the ``embedded_by`` term against the
walk of the stored hits that an index written before that field still takes.

The pages are those of an existing embedded index (``--from``, e.g. the 100,000 pages
``python -m bench.query --real --keep DIR`` built), copied first so it is never written,
or ``--docs`` generated ones (2,000 with ``--quick``), then indexed again into ``--keep``
(a temporary directory without it), every page with (fake) vectors of the transformer's
version except ``--unembedded`` of them, spread evenly over the index. Both ways answer
on the same index in each round, in alternating order (``--rounds``; the medians):

- ``query_ms`` / ``walk_ms``: the first ``--limit`` pages without the transformer's vectors;
- ``fresh_query_ms`` / ``fresh_walk_ms``: the same for a model no page has vectors of
  (a fresh crawl, or a model switch: every page is listed);
- ``copy_walk_ms``: the walk on the copy as it was (the older schema, no vectors).

    python -m bench.unembedded --from /tmp/plan-q100k/tantivy --keep DIR [--reuse]
    python -m bench.unembedded --quick        # 2,000 generated pages

Progress goes to stderr; the last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from harness.documents import document  # noqa: E402
from index.engines.embedded.backend import EmbeddedBackend  # noqa: E402
from index.semantic import TRANSFORMER, pack  # noqa: E402

#: A version no page has vectors of.
OTHER = "bench-none"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def generate(path: Path, docs: int) -> None:
    """An embedded index at ``path`` of ``docs`` generated pages on 50 hosts."""
    backend = EmbeddedBackend(path, commit_every_docs=5000)
    backend.ensure_index()
    backend.index(document(f"http://s{i % 50}.test/{i}", f"Page {i}",
                           f"Words of page {i} about the things it says. " * 30)
                  for i in range(docs))
    backend.close()


def build(source: Path | None, docs: int, keep: Path, unembedded: int) -> int:
    """Copy ``source`` (or generate ``docs`` pages) to ``keep/copy``, then index its
    documents into ``keep/index``, all with 16 windows of the transformer's vectors but
    ``unembedded`` spread evenly."""
    copy, target = keep / "copy", keep / "index"
    for path in (copy, target):
        if path.exists():
            shutil.rmtree(path)
    started = time.monotonic()
    if source is not None:
        shutil.copytree(source, copy)
    else:
        generate(copy, docs)
    log(f"{source or 'generated'} in {copy} in {time.monotonic() - started:.0f} s")
    reader = EmbeddedBackend(copy)
    docs = reader.stats()["docs"]
    every = max(1, docs // max(1, unembedded))
    vectors = pack(np.zeros((16, 384), np.int8))
    writer = EmbeddedBackend(target, commit_every_docs=5000)
    writer.ensure_index()

    def marked():
        for at, doc in enumerate(reader.iter_documents()):
            doc.vectors = "" if at % every == every // 2 else vectors
            if at % 10_000 == 0:
                log(f"  {at} pages ({time.monotonic() - started:.0f} s)")
            yield doc

    count = writer.index(marked())
    writer.close()
    reader.close()
    log(f"indexed {count} pages in {time.monotonic() - started:.0f} s")
    return count


def timed(backend: EmbeddedBackend, walk: bool, limit: int,
          version: str) -> tuple[float, list[str]]:
    """Milliseconds of one ``unembedded`` call by the term (or the walk), and its pages."""
    backend._embedded_by = not walk
    started = time.perf_counter()
    found = backend.unembedded(limit, version)
    return (time.perf_counter() - started) * 1000, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", metavar="DIR",
                        help="an embedded index whose pages are used (copied, never written)")
    parser.add_argument("--docs", type=int,
                        help="generated pages without --from (default 100,000)")
    parser.add_argument("--quick", action="store_true", help="2,000 generated pages")
    parser.add_argument("--keep", metavar="DIR",
                        help="where the copy and the index are built and kept")
    parser.add_argument("--reuse", action="store_true", help="reuse what --keep holds")
    parser.add_argument("--unembedded", type=int, default=1000,
                        help="pages without vectors (default 1,000)")
    parser.add_argument("--limit", type=int, default=64, help="pages asked for (default 64)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    args = parser.parse_args()
    docs = args.docs or (2000 if args.quick else 100_000)
    unembedded = min(args.unembedded, docs // 4)
    temporary = None if args.keep else tempfile.TemporaryDirectory(prefix="bench-unembedded-")
    keep = Path(args.keep or temporary.name)
    keep.mkdir(parents=True, exist_ok=True)
    if not (args.reuse and (keep / "index" / "meta.json").exists()):
        build(Path(args.source) if args.source else None, docs, keep, unembedded)
    backend, copy = EmbeddedBackend(keep / "index"), EmbeddedBackend(keep / "copy")
    backend.ensure_index()
    copy.ensure_index()
    copy_has_field = copy._embedded_by  # False for an index written before embedded_by
    samples: dict[str, list[float]] = {}
    found: dict[str, list[str]] = {}
    for round_ in range(args.rounds):
        ways = [("query", False), ("walk", True)]
        for name, walk in ways if round_ % 2 == 0 else ways[::-1]:
            for prefix, version in (("", TRANSFORMER), ("fresh_", OTHER)):
                ms, n = timed(backend, walk, args.limit, version)
                samples.setdefault(f"{prefix}{name}_ms", []).append(ms)
                found[f"{prefix}{name}"] = n
        ms, n = timed(copy, True, args.limit, TRANSFORMER)
        samples.setdefault("copy_walk_ms", []).append(ms)
        found["copy_walk"] = n
        log(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in samples.items()))
    figures = {k: round(statistics.median(v), 2) for k, v in samples.items()}
    result = {
        "docs": backend.stats()["docs"],
        "unembedded": unembedded,
        "limit": args.limit,
        "rounds": args.rounds,
        **figures,
        "walk_over_query": round(figures["walk_ms"] / figures["query_ms"], 1),
        "fresh_walk_over_query": round(figures["fresh_walk_ms"] / figures["fresh_query_ms"], 1),
        "copy_has_embedded_by": copy_has_field,
        "found": {k: len(v) for k, v in found.items()},
        # both ways list the same pages, in index order
        "same_pages": found["query"] == found["walk"] and found["fresh_query"] == found[
            "fresh_walk"],
    }
    backend.close()
    copy.close()
    if temporary is not None:
        temporary.cleanup()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
