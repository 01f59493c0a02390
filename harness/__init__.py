"""What the benchmarks (``bench/``) and the tests (``tests/``) share, so neither imports the
other: running the project's crawler as a user does (``crawlrun``), the politeness audit of
a test web's log (``politeness``), memory trends (``series``), alternating rounds with the
box's load sampled throughout (``rounds``), the relevance evaluation (``relevance``), the
synthetic documents (``documents``), a fake clock (``clock``), private services
(``services``: PostgreSQL; ``redisserver``: redis-server) and one ``log()`` for progress on
stderr. No production package imports it (``tests/test_layout.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

#: The repository's root directory.
ROOT = Path(__file__).resolve().parent.parent


def log(message: str) -> None:
    """One progress line on stderr, tagged with the running script's name (``[soak] ...``);
    stdout is kept for the benchmark's JSON."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("bench")
    name = script.parent.name if script.stem == "__main__" else script.stem
    print(f"[{name}] {message}", file=sys.stderr, flush=True)
