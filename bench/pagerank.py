"""Benchmark: PageRank load + compute, ours (SciPy over key arrays) vs networkx.pagerank.

A power-law-ish graph (default 1,000,000 nodes, 10,000,000 edges, node keys random 64-bit
like document ids) is generated once and saved as .npy files. Each contender then runs in
its own subprocess that loads those files, builds its graph and computes PageRank, so its
wall time and peak RSS are its own. Write-back to the embedded index is timed on its own,
as documents per second. Progress goes to stderr; the last stdout line is one JSON object.

    python bench/pagerank.py            # full size (networkx needs minutes and ~4.4 GB)
    python bench/pagerank.py --quick    # 20,000 nodes / 200,000 edges
    python bench/pagerank.py --engine spark [--spark-master local[*]]

With ``--engine spark`` the contenders are the batch's two engines at the batch's own
settings (``RankSettings``: tol 1e-10, alpha 0.85): the SciPy path and Spark
(``batch.spark``) on the same graph, written as Parquet as the batch writes it. Spark's
``wall_s`` is reading the Parquet graph + PageRank + collecting the scores, its session
start-up and the Parquet export reported apart; ``peak_rss_mb`` is the peak resident set
of the JVM (``VmHWM`` of every ``java`` process under the worker: in local mode the driver
is the one executor) plus any PySpark Python workers, read when the run is done; the
Python driver's own peak is ``driver_python_rss_mb``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def log(msg: str) -> None:
    print(f"[bench/pagerank {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def generate(nodes: int, edges: int, seed: int, out: Path) -> None:
    """Write ``nodes.npy``, ``src.npy``, ``dst.npy`` (uint64 keys) of a skewed random graph.

    Out-degree and in-degree both follow steep power laws (u**2 and u**4 of a uniform u over
    a random node order), so there are hubs, many dangling and many unlinked nodes.
    """
    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(1, 2**64 - 1, int(nodes * 1.01), dtype=np.uint64))
    keys = rng.permutation(keys)[:nodes]
    out_order = rng.permutation(nodes)
    in_order = rng.permutation(nodes)
    linking = nodes - nodes // 10
    src = keys[out_order[(linking * rng.random(edges) ** 2).astype(np.int64)]]
    dst = keys[in_order[(nodes * rng.random(edges) ** 4).astype(np.int64)]]
    np.save(out / "nodes.npy", keys)
    np.save(out / "src.npy", src)
    np.save(out / "dst.npy", dst)


def run_ours(data: Path, out: Path) -> dict:
    """Load the key arrays, build the CSR graph, run PageRank; save (keys, scores)."""
    from batch.pagerank import LinkGraph, pagerank

    cpu_start = time.process_time()
    start = time.perf_counter()
    graph = LinkGraph.from_arrays(
        np.load(data / "src.npy"), np.load(data / "dst.npy"), np.load(data / "nodes.npy")
    )
    loaded = time.perf_counter()
    info: dict = {}
    scores = pagerank(graph, info=info)
    done = time.perf_counter()
    cpu_s = time.process_time() - cpu_start
    np.save(out / "keys.npy", graph.node_keys())
    np.save(out / "scores.npy", scores)
    # networkx's tolerance is n * tol in L1, loose at this size; show a tight run's cost too.
    tight: dict = {}
    tight_start = time.perf_counter()
    pagerank(graph, tol=1e-12, max_iter=1000, info=tight)
    tight_s = time.perf_counter() - tight_start
    return {
        "wall_s": done - start,
        "cpu_s": cpu_s,
        "load_s": loaded - start,
        "compute_s": done - loaded,
        "iterations": info["iterations"],
        "tight_tol": 1e-12,
        "tight_compute_s": tight_s,
        "tight_iterations": tight["iterations"],
        "unique_edges": graph.edges,
        "dangling": len(graph.dangling),
    }


def run_networkx(data: Path, out: Path) -> dict:
    """networkx's own ``pagerank`` on a ``DiGraph`` built from the same arrays."""
    import networkx as nx

    cpu_start = time.process_time()
    start = time.perf_counter()
    g = nx.DiGraph()
    g.add_nodes_from(np.load(data / "nodes.npy").tolist())
    g.add_edges_from(
        zip(np.load(data / "src.npy").tolist(), np.load(data / "dst.npy").tolist(), strict=True)
    )
    loaded = time.perf_counter()
    scores = nx.pagerank(g)
    done = time.perf_counter()
    cpu_s = time.process_time() - cpu_start
    np.save(out / "keys.npy", np.fromiter(scores.keys(), dtype=np.uint64, count=len(scores)))
    np.save(out / "scores.npy", np.fromiter(scores.values(), dtype=np.float64, count=len(scores)))
    return {
        "wall_s": done - start,
        "cpu_s": cpu_s,
        "load_s": loaded - start,
        "compute_s": done - loaded,
    }


def _batch_settings(spark_master: str = "local[*]"):
    from batch.rank import RankSettings

    return RankSettings.from_settings(None, engine="spark", spark_master=spark_master)


def run_scipy_batch(data: Path, out: Path) -> dict:
    """The SciPy engine at the batch's settings (the side-by-side baseline of Spark)."""
    from batch.pagerank import LinkGraph, pagerank

    settings = _batch_settings()
    cpu_start = time.process_time()
    start = time.perf_counter()
    graph = LinkGraph.from_arrays(
        np.load(data / "src.npy"), np.load(data / "dst.npy"), np.load(data / "nodes.npy")
    )
    info: dict = {}
    scores = pagerank(
        graph, alpha=settings.alpha, tol=settings.tol, max_iter=settings.max_iter, info=info
    )
    done = time.perf_counter()
    np.save(out / "keys.npy", graph.node_keys())
    np.save(out / "scores.npy", scores)
    return {
        "wall_s": done - start,
        "cpu_s": time.process_time() - cpu_start,
        "iterations": info["iterations"],
    }


def run_spark(data: Path, out: Path) -> dict:
    """``batch.spark.pagerank`` on the graph as Parquet, at the batch's settings."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from batch import graphfiles
    from batch import spark as engine

    settings = _batch_settings(os.environ.get("BENCH_SPARK_MASTER", "local[*]"))
    start = time.perf_counter()

    class Arrays:
        def edge_arrays(self):
            return np.load(data / "src.npy"), np.load(data / "dst.npy")

    graphfiles.write_page_edges(Arrays(), data / "parquet" / "edges" / "part-0.parquet")
    nodes = pa.table({"id": np.load(data / "nodes.npy").view(np.int64)})
    pq.write_table(nodes, data / "parquet" / "nodes.parquet")
    del nodes
    export_s = time.perf_counter() - start
    start = time.perf_counter()
    with engine.spark_session(settings) as spark:
        startup_s = time.perf_counter() - start
        start = time.perf_counter()
        info: dict = {}
        ranks = engine.pagerank(
            spark.read.parquet(str(data / "parquet" / "edges")),
            spark.read.parquet(str(data / "parquet" / "nodes.parquet")),
            alpha=settings.alpha,
            tol=settings.tol,
            max_iter=settings.max_iter,
            info=info,
        )
        ranks.write.parquet(str(data / "parquet" / "ranks"))
        table = pq.read_table(data / "parquet" / "ranks")
        wall_s = time.perf_counter() - start
        jvm_mb = _descendants_peak_rss_mb()
    np.save(out / "keys.npy", table.column("id").to_numpy().view(np.uint64))
    np.save(out / "scores.npy", table.column("rank").to_numpy())
    return {
        "wall_s": wall_s,
        "startup_s": startup_s,
        "export_s": export_s,
        "iterations": info["iterations"],
        "unique_edges": info["edges"],
        "spark_master": settings.spark_master,
        "partitions": settings.spark_partitions,
        "driver_memory": settings.spark_driver_memory,
        "executor_peak_rss_mb": jvm_mb,
    }


def _descendants_peak_rss_mb() -> float:
    """Sum of the peak RSS (``VmHWM``) of every process under this one: Spark's JVM and any
    Python workers it started."""
    import psutil

    total_kb = 0
    for child in psutil.Process().children(recursive=True):
        try:
            with open(f"/proc/{child.pid}/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        total_kb += int(line.split()[1])
        except OSError:
            continue
    return total_kb / 1024


WORKERS = {
    "ours": run_ours,
    "networkx": run_networkx,
    "scipy-batch": run_scipy_batch,
    "spark": run_spark,
}


def worker_main(name: str, data: Path, out: Path) -> None:
    result = WORKERS[name](data, out)
    # cpu_s (of load + compute) is a check on wall times taken on a busy machine.
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if "executor_peak_rss_mb" in result:
        result["driver_python_rss_mb"] = result["peak_rss_mb"]
        result["peak_rss_mb"] = result.pop("executor_peak_rss_mb")
    print(json.dumps(result))


def in_subprocess(name: str, data: Path, env: dict | None = None) -> tuple[dict, Path]:
    out = data / name
    out.mkdir()
    log(f"{name}: load + compute in a subprocess")
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", name, "--data", str(data), "--out", str(out)],
        stdout=subprocess.PIPE,
        check=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    log(f"{name}: {json.dumps(result)}")
    return result, out


def l1_between(a: Path, b: Path) -> float:
    keys_a, keys_b = np.load(a / "keys.npy"), np.load(b / "keys.npy")
    order_a, order_b = np.argsort(keys_a), np.argsort(keys_b)
    if not np.array_equal(keys_a[order_a], keys_b[order_b]):
        raise SystemExit("the two runs ranked different node sets")
    scores_a = np.load(a / "scores.npy")[order_a]
    scores_b = np.load(b / "scores.npy")[order_b]
    return float(np.abs(scores_a - scores_b).sum())


def writeback_rate(docs: int, batch_size: int) -> float | None:
    """Documents per second through the embedded backend's ``update_rank``, in batches."""
    try:
        from index.engines.embedded.backend import EmbeddedBackend
    except ImportError as exc:
        log(f"write-back: embedded backend unavailable ({exc}); not measured")
        return None
    from batch.rank import write_ranks
    from crawler.urls import doc_id_for
    from index.base import Document

    with tempfile.TemporaryDirectory(prefix="bench-rank-index-") as tmp:
        backend = EmbeddedBackend(Path(tmp))
        backend.ensure_index()
        urls = [f"https://h{i % 997}.test/p/{i}" for i in range(docs)]
        log(f"write-back: indexing {docs} documents")
        backend.index(
            Document(
                id=doc_id_for(u),
                url=u,
                host=u.split("/")[2],
                title=f"page {i}",
                body=f"text of page {i} with a few words to index",
            )
            for i, u in enumerate(urls)
        )
        backend.refresh()
        scores = {doc_id_for(u): 1.0 / (i + 1) for i, u in enumerate(urls)}
        log(f"write-back: update_rank of {docs} documents in batches of {batch_size}")
        start = time.perf_counter()
        changed = write_ranks(backend, scores, batch_size)
        backend.refresh()
        elapsed = time.perf_counter() - start
        backend.close()
    if changed != docs:
        raise SystemExit(f"update_rank changed {changed} of {docs} documents")
    return docs / elapsed


def spark_side_by_side(nodes: int, edges: int, seed: int, master: str) -> dict:
    """Spark and the SciPy path on one generated graph, at the batch's settings."""
    with tempfile.TemporaryDirectory(prefix="bench-pagerank-spark-") as tmp:
        data = Path(tmp)
        log(f"generating {nodes} nodes / {edges} edges; load average {os.getloadavg()}")
        generate(nodes, edges, seed, data)
        scipy, scipy_out = in_subprocess("scipy-batch", data)
        spark, spark_out = in_subprocess("spark", data, {"BENCH_SPARK_MASTER": master})
        l1 = l1_between(spark_out, scipy_out)
        log(f"L1 between Spark and SciPy: {l1:.3e}; load average {os.getloadavg()}")
    return {
        "engine": "spark",
        "nodes": nodes,
        "edges": edges,
        "wall_s": round(spark["wall_s"], 3),
        "peak_rss_mb": round(spark["peak_rss_mb"], 1),
        "l1_vs_scipy": l1,
        "iterations": spark["iterations"],
        "startup_s": round(spark["startup_s"], 3),
        "export_s": round(spark["export_s"], 3),
        "driver_python_rss_mb": round(spark["driver_python_rss_mb"], 1),
        "spark_master": spark["spark_master"],
        "partitions": spark["partitions"],
        "driver_memory": spark["driver_memory"],
        "scipy_wall_s": round(scipy["wall_s"], 3),
        "scipy_peak_rss_mb": round(scipy["peak_rss_mb"], 1),
        "scipy_iterations": scipy["iterations"],
        "load_average": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20k nodes / 200k edges")
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--edges", type=int)
    parser.add_argument("--writeback-docs", type=int)
    parser.add_argument("--writeback-batch", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--engine",
        choices=("scipy", "spark"),
        default="scipy",
        help="scipy: ours vs networkx (default); spark: Spark vs the SciPy path, batch settings",
    )
    parser.add_argument("--spark-master", default="local[*]", help="with --engine spark")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_main(args.worker, args.data, args.out)
        return
    nodes = args.nodes or (20_000 if args.quick else 1_000_000)
    edges = args.edges or (200_000 if args.quick else 10_000_000)
    wb_docs = args.writeback_docs or (2_000 if args.quick else 50_000)
    if args.engine == "spark":
        print(json.dumps(spark_side_by_side(nodes, edges, args.seed, args.spark_master)))
        return
    with tempfile.TemporaryDirectory(prefix="bench-pagerank-") as tmp:
        data = Path(tmp)
        log(f"generating {nodes} nodes / {edges} edges; load average {os.getloadavg()}")
        generate(nodes, edges, args.seed, data)
        ours, ours_out = in_subprocess("ours", data)
        base, base_out = in_subprocess("networkx", data)
        l1 = l1_between(ours_out, base_out)
        log(f"L1 between the two score vectors: {l1:.3e}")
    rate = writeback_rate(wb_docs, args.writeback_batch)
    print(
        json.dumps(
            {
                "nodes": nodes,
                "edges": edges,
                "wall_s": round(ours["wall_s"], 3),
                "peak_rss_mb": round(ours["peak_rss_mb"], 1),
                "baseline_wall_s": round(base["wall_s"], 3),
                "baseline_peak_rss_mb": round(base["peak_rss_mb"], 1),
                "writeback_docs_per_s": None if rate is None else round(rate, 1),
                "l1_vs_networkx": l1,
            }
        )
    )


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
