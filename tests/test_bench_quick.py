"""Every benchmark in bench/ runs: ``python -m bench.NAME --quick`` exits 0 and prints one
JSON object on its last stdout line, so a refactor that breaks a benchmark fails CI.

The benchmarks are found in bench/ (every module but the ``HELPERS`` a benchmark runs), so
a new one is covered without touching this file; the few whose quick run another test
already makes (``COVERED``) are not run twice. ``SMALLER`` gives some of them sizes
beside ``--quick`` that keep a run to seconds (one round, fewer pages); the figures are
not judged here (bench/ holds the targets, and a run here shares the machine). The runs
go ``PARALLEL`` at a time, most of them wait on politeness delays or services: the
selected runs start with the first test and each test waits for its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"

pytest_plugins = ["tests.fixtures_es"]

#: Modules of bench/ that are not benchmarks: what a benchmark runs.
HELPERS = {"__init__", "baseline_spider"}

#: Benchmarks whose quick run another test makes (and checks): name -> that test file.
COVERED = {
    "freshness": "tests/test_recrawl.py",
    "index_memory": "tests/test_memory.py",
    "realweb": "tests/test_realweb.py",
}

#: Arguments beside ``--quick`` per run, to keep it to seconds; a run not named here runs
#: ``--quick`` alone. ``{cache}`` is a directory the relevance and ranker runs share (one
#: crawl), ``{es}`` the test session's Elasticsearch.
SMALLER: dict[str, list[str]] = {
    "complete": ["--docs", "2000", "--prefixes", "100", "--rounds", "1"],
    "crawl": ["--hosts", "60", "--rounds", "1"],
    "crawl_value": ["--timeout", "25"],
    "dedup": ["--rounds", "1"],
    "extract": ["--hosts", "5", "--pages", "10", "--rounds", "1"],
    "frontier": ["--rounds", "1", "--memory-urls", "20000"],
    "pagerank": ["--nodes", "5000", "--edges", "50000", "--writeback-docs", "500"],
    "pagerank-spark": ["--engine", "spark", "--nodes", "2000", "--edges", "10000"],
    "query": ["--docs", "1000", "--queries", "50", "--rounds", "1"],
    "ranker": ["--cache", "{cache}", "--max-pages", "300", "--folds", "2", "--passes", "1",
               "--per-site", "20"],
    "relevance": ["--cache", "{cache}", "--max-pages", "300", "--folds", "2"],
    "render": ["--rounds", "1"],
    "search": ["--url", "{es}", "--docs", "1000", "--queries", "50", "--rounds", "1",
               "--hedge", "off", "--index-prefix", "bench-quick"],
    "soak": ["--minutes", "1", "--hosts", "100", "--rounds", "1", "--concurrent"],
}
#: Runs of a second path of one benchmark: run name -> module.
VARIANTS = {"pagerank-spark": "pagerank"}
#: Runs that read what another run leaves (its crawl cache): run -> the run it waits for.
AFTER = {"ranker": "relevance"}
#: Runs that need the session's Elasticsearch.
NEEDS_ES = {"search"}
PARALLEL = 3
#: Seconds one run may take at most: a bound for a hung benchmark, not a speed target
#: (on a 2-core box loaded ~16 by others the longest, frontier and Spark, take ~7 minutes).
TIMEOUT = 900


def benchmarks() -> list[str]:
    """The benchmark modules of bench/."""
    return sorted(p.stem for p in BENCH.glob("*.py") if p.stem not in HELPERS)


def runs() -> list[str]:
    """Every run: one per benchmark, plus the variants."""
    return sorted([*(b for b in benchmarks() if b not in COVERED), *VARIANTS])


def command(run: str, cache: Path, es: str | None) -> list[str]:
    args = [a.format(cache=cache, es=es) for a in SMALLER.get(run, [])]
    return [sys.executable, "-m", f"bench.{VARIANTS.get(run, run)}", "--quick", *args]


def execute(argv: list[str]) -> subprocess.CompletedProcess:
    started = time.monotonic()
    try:
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        return subprocess.CompletedProcess(argv, -1, "", f"timed out after {TIMEOUT} s\n"
                                           + (stderr or "")[-3000:])
    done.stderr += f"\n[{time.monotonic() - started:.0f} s]"
    return done


@pytest.fixture(scope="module")
def quick_runs(request, tmp_path_factory) -> dict[str, Future]:
    """The selected runs, started ``PARALLEL`` at a time, longest first."""
    selected = [item.callspec.params["run"] for item in request.session.items
                if item.originalname == "test_quick_run_prints_one_json_object"
                and hasattr(item, "callspec")]
    es = request.getfixturevalue("es_url") if NEEDS_ES & set(selected) else None
    cache = tmp_path_factory.mktemp("bench-quick-cache")
    futures: dict[str, Future] = {}
    pool = ThreadPoolExecutor(PARALLEL)

    def job(run: str) -> subprocess.CompletedProcess:
        before = AFTER.get(run)
        if before in futures:
            futures[before].result()
        return execute(command(run, cache, es))

    for run in sorted(selected, key=lambda r: (r in AFTER, r not in SLOW, r)):
        futures[run] = pool.submit(job, run)
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


#: The longest runs, started first.
SLOW = {"pagerank-spark", "soak", "frontier", "crawl", "crawl_value", "relevance"}


@pytest.mark.timeout(TIMEOUT * 3)  # a test waits for its run, which may wait for others
@pytest.mark.parametrize("run", runs())
def test_quick_run_prints_one_json_object(run, quick_runs):
    done = quick_runs[run].result()
    assert done.returncode == 0, f"{' '.join(done.args)}:\n{done.stderr[-4000:]}"
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    figures = json.loads(last)
    assert isinstance(figures, dict) and figures, last
    print(done.stderr.splitlines()[-1], last[:300])  # the run's seconds and figures (-rA)


def test_every_named_run_exists():
    """The tables above name benchmarks that exist (a renamed one would escape them)."""
    names = set(runs())
    assert HELPERS <= {p.stem for p in BENCH.glob("*.py")}
    for table in (SMALLER, AFTER, SLOW, NEEDS_ES):
        assert set(table) <= names, set(table) - names
    assert set(VARIANTS.values()) <= set(benchmarks())
    for name, test in COVERED.items():
        assert name in benchmarks() and f'"bench.{name}"' in (ROOT / test).read_text(), name
