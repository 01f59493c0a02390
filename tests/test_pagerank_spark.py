"""PageRank on a real local Spark (``RANK_ENGINE=spark``) against the SciPy path.

One Spark session for the whole module (its JVM takes seconds to start); the engine uses
the active session instead of starting its own.
"""

from __future__ import annotations

import numpy as np
import pytest

from batch import graphfiles
from batch import spark as spark_engine
from batch.edgefiles import EdgeFiles
from batch.pagerank import LinkGraph, pagerank
from batch.rank import RankSettings, run_rank, stage_and_commit
from batch.store import SQLiteScoreStore
from crawler.urls import doc_id_for
from index.base import Document
from index.engines.embedded.backend import EmbeddedBackend
from tests.test_ranking_store import site_edges

pytest.importorskip("pyspark")

SPARK = {"RANK_ENGINE": "spark", "RANK_SPARK_MASTER": "local[2]", "RANK_SPARK_PARTITIONS": 2}


@pytest.fixture(scope="module")
def spark():
    settings = RankSettings.from_settings(SPARK)
    with spark_engine.spark_session(settings) as session:
        yield session


def test_spark_pagerank_equals_scipy_with_dangling_nodes_and_personalization(spark):
    rng = np.random.default_rng(3)
    n = 400
    linking = rng.choice(n, 320, replace=False)  # the other 80 are dangling
    src = linking[(rng.random(3000) ** 2 * len(linking)).astype(int)]
    dst = (rng.random(3000) ** 3 * n).astype(int)
    src = np.concatenate([src, src[:50], [5, 7]])  # duplicate edges, self-loops
    dst = np.concatenate([dst, dst[:50], [5, 7]])
    unlinked = np.arange(n, n + 10)  # nodes that no edge names
    seeds = {int(dst[0]): 2.0, int(src[1]): 1.0, 10**9: 5.0}  # the last one is not a node
    graph = LinkGraph.from_arrays(src, dst, unlinked)
    want = pagerank(graph, personalization=seeds, tol=1e-9, max_iter=200, info=(steps := {}))
    edges = spark.createDataFrame(
        list(zip(src.tolist(), dst.tolist(), strict=True)), "src long, dst long"
    )
    nodes = spark.createDataFrame([(int(i),) for i in unlinked], "id long")
    info: dict = {}
    got = spark_engine.pagerank(
        edges, nodes, personalization=seeds, tol=1e-9, max_iter=200, info=info
    ).collect()
    assert info["n"] == graph.n and info["edges"] == graph.edges
    assert info["iterations"] == steps["iterations"]
    by_id = {row.id: row.rank for row in got}
    ours = np.array([by_id[i] for i in graph.node_ids()])
    assert np.abs(ours - want).sum() <= 1e-6
    assert abs(ours.sum() - 1) < 1e-9


def test_batch_on_spark_commits_the_scipy_scores_and_publishes_them(spark, tmp_path):
    EdgeFiles.write(tmp_path / "edges" / "0.tsv", site_edges(hub_links=20))
    links = EdgeFiles(tmp_path / "edges")
    store = SQLiteScoreStore(tmp_path / "scores.sqlite3")
    common = {"RANK_TOL": 1e-7, "RANK_BATCH_SIZE": 7, "RANK_SPARK_DIR": str(tmp_path / "spark")}
    scipy_run = stage_and_commit(links, store, "scipy", RankSettings.from_settings(common))
    scipy_pages = {}
    for number in range(scipy_run.batches):
        scipy_pages.update(store.page_batch(scipy_run.version, number))
    scipy_hosts = store.host_ranks()

    urls = [f"https://h{h}.test/p{i}" for h in range(5) for i in range(6)] + ["https://hub.test/"]
    backend = EmbeddedBackend(tmp_path / "index")
    backend.ensure_index()
    backend.index(
        Document(id=doc_id_for(u), url=u, host=u.split("/")[2], title="page", body="text")
        for u in urls
    )
    backend.refresh()
    settings = RankSettings.from_settings({**SPARK, **common})
    report = run_rank(settings, "spark", link_store=links, store=store, backend=backend)
    assert report.committed and store.current() == report.version > scipy_run.version
    assert (report.pages, report.page_edges) == (scipy_run.pages, scipy_run.page_edges)
    assert (report.hosts, report.host_edges) == (scipy_run.hosts, scipy_run.host_edges)
    assert report.batches == scipy_run.batches == -(-31 // 7)
    spark_pages = {}
    for number in range(report.batches):
        batch = store.page_batch(report.version, number)
        assert len(batch) == (7 if number < report.batches - 1 else 31 - 7 * number)
        spark_pages.update(batch)
    assert spark_pages.keys() == scipy_pages.keys()
    assert sum(abs(spark_pages[k] - scipy_pages[k]) for k in spark_pages) <= 1e-6
    spark_hosts = store.host_ranks()
    assert spark_hosts.keys() == scipy_hosts.keys()
    assert sum(abs(spark_hosts[k] - scipy_hosts[k]) for k in spark_hosts) <= 1e-6
    assert report.published == 31
    assert backend.get(doc_id_for("https://hub.test/")).pagerank == pytest.approx(
        spark_pages[doc_id_for("https://hub.test/")]
    )
    assert not (tmp_path / "spark" / f"v{report.version}").exists()  # Parquet cleaned up
    backend.close()
    store.close()


def test_celery_task_runs_the_spark_engine(spark, data_dir):
    from batch.celery_app import make_app
    from batch.rank import open_store

    app = make_app()
    app.conf.update(
        RANK_LINK_STORE="batch.edgefiles.EdgeFiles.from_config", RANK_TOL=1e-7, **SPARK
    )
    app.loader.import_default_modules()
    EdgeFiles.write(data_dir / "edges" / "0.tsv", site_edges(hub_links=10))
    report = app.tasks["ranking.rank"].delay().get()
    assert report["committed"] and report["pages"] == 31
    assert report["timings"]["export_s"] >= 0  # the Spark engine's own step
    store = open_store()
    assert store.current() == report["version"] == store.published()
    store.close()


def test_engine_comes_from_the_environment_unless_a_setting_names_it():
    from crawler.config import Config

    env = Config.from_env({"PAGERANK_ENGINE": "spark", "SPARK_MASTER": "spark://m:7077"})
    assert RankSettings.from_settings({}, env).engine == "spark"
    assert RankSettings.from_settings({}, env).spark_master == "spark://m:7077"
    assert RankSettings.from_settings({"RANK_ENGINE": "scipy"}, env).engine == "scipy"
    assert RankSettings.from_settings({}, Config.from_env({})).engine == "scipy"
    with pytest.raises(ValueError, match="PAGERANK_ENGINE"):
        RankSettings.from_settings({"RANK_ENGINE": "hadoop"})


def test_graph_files_round_trip_doc_ids_through_int64_keys(tmp_path):
    ids = ["ffffffffffffffff", "0000000000000001", "8000000000000000"]
    keys = graphfiles.page_keys(ids)
    assert keys.dtype == np.int64 and keys[0] == -1
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "scores"
    out.mkdir()
    pq.write_table(pa.table({"id": keys, "score": [0.5, 1.0, 0.25]}), out / "part-0.parquet")
    batches = list(graphfiles.read_score_batches(out, 2, doc_ids=True))
    assert batches == [{ids[0]: 0.5, ids[1]: 1.0}, {ids[2]: 0.25}]
