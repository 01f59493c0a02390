"""The query benchmark's ``--real --quick`` run: real pages, both sides, rounds and load."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_real_quick_prints_both_sides_over_rounds():
    out = subprocess.run(
        [sys.executable, "-m", "bench.query", "--real", "--quick", "--queries", "150"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=True,
    )
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["real"] is True
    assert figures["docs"] == 3000
    # The four small sites hold a few hundred pages, so the 3,000 documents are copies.
    assert 300 <= figures["pages"] < 3000
    assert figures["rounds"] == 2 and figures["timed_queries"] == 150
    for key in ("query_p50_ms", "query_p95_ms", "snippet_p95_ms", "index_docs_per_s",
                "index_docs_per_cpu_s", "query_cpu_p95_ms", "tantivy_query_p95_ms",
                "fts5_query_p50_ms", "fts5_query_p95_ms", "fts5_index_docs_per_s"):
        assert figures[key] > 0, key
    for key in ("query_p50_ms", "query_p95_ms", "snippet_p95_ms", "fts5_query_p95_ms"):
        low, high = figures[key + "_range"]
        assert low <= figures[key] <= high, key
    assert figures["query_p50_ms"] <= figures["query_p95_ms"]
    assert figures["query_p95_over_tantivy_p95"] == round(
        figures["query_p95_ms"] / figures["tantivy_query_p95_ms"], 2)
    # tantivy's own search is part of search(): the baseline is the floor (of the process's
    # CPU: search() runs its checks in a helper thread).
    assert figures["tantivy_query_process_cpu_p50_ms"] <= figures["query_process_cpu_p50_ms"]
    assert figures["query_cpu_p50_ms"] <= figures["query_process_cpu_p50_ms"]
    # Snippets are part of the timed search(), so they cannot take longer than it.
    assert figures["snippet_p95_ms"] <= figures["query_p95_ms_range"][1]
    # The judged queries and title words match pages of these sites.
    assert figures["median_total_hits"] > 0
    assert figures["load_avg_samples"] >= 2
    assert figures["load_avg_1m_min"] <= figures["load_avg_1m_median"] <= figures[
        "load_avg_1m_max"]
