"""PageRank on Apache Spark: the ranking batch for graphs larger than one machine.

``RANK_ENGINE = "spark"`` (or ``PAGERANK_ENGINE=spark``) runs the batch's compute step here
instead of in SciPy (:mod:`batch.pagerank`, still the default). The master is
``RANK_SPARK_MASTER`` / ``SPARK_MASTER``: ``local[*]`` runs Spark inside this box, a
``spark://`` (or ``yarn``, ``k8s://``) URL runs the same job on a cluster. Staging, the
atomic commit and publishing stay in :mod:`batch.rank`; only the numbers come from here.

The iteration is the SciPy path's, step for step, so scores agree to float rounding:

- duplicate edges count once, self-loops count, each edge carries ``1 / outdegree(src)``;
- ``x' = alpha * (M x + sum(x[dangling]) * p) + (1 - alpha) * p`` with ``p`` the
  personalization (uniform, or the given weights normalized over the ids in the graph);
- start at ``1 / n``; stop when the L1 change is below ``n * tol``, or raise
  ``PowerIterationFailedConvergence`` after ``max_iter`` steps.

One step is two shuffles of DataFrames held by the JVM (no Python worker): the weighted
edges, partitioned by source once and cached, join the rank vector by source; the
contributions are summed by target. Each step's rank vector is checkpointed on the
executors (so the plan never grows with the steps), and its L1 change and dangling mass
are observed while it is computed: one Spark job per step.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from batch import graphfiles
from batch.pagerank import PowerIterationFailedConvergence

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from batch.rank_settings import RankSettings

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def spark_session(settings: RankSettings) -> Iterator[SparkSession]:
    """The active Spark session if this process has one (kept), else a new one (stopped).

    A new session gets ``RANK_SPARK_MASTER``, ``RANK_SPARK_PARTITIONS`` shuffle partitions,
    ``RANK_SPARK_DRIVER_MEMORY`` and any ``spark.*`` keys of ``RANK_SPARK_CONF``.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - pyspark is pinned in requirements.txt
        raise RuntimeError(
            "RANK_ENGINE=spark needs pyspark: bash scripts/setup.sh installs it"
        ) from exc
    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(settings.spark_partitions),
        "spark.driver.memory": settings.spark_driver_memory,
        # Frees the checkpointed rank vectors of past steps (see _checkpoint).
        "spark.cleaner.periodicGC.interval": "1min",
        # Adaptive execution hides a checkpoint's partitioning (its plan reports none), so
        # every step would shuffle the rank vector twice more; the job's shape is fixed.
        "spark.sql.adaptive.enabled": "false",
        **dict(settings.spark_conf),
    }
    builder = SparkSession.builder.master(settings.spark_master).appName("websearch-pagerank")
    for key, value in conf.items():
        builder = builder.config(key, str(value))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    try:
        yield session
    finally:
        session.stop()


def pagerank(
    edges: DataFrame,
    nodes: DataFrame | None = None,
    alpha: float = 0.85,
    personalization: Mapping | None = None,
    max_iter: int = 100,
    tol: float = 1.0e-6,
    info: dict | None = None,
) -> DataFrame:
    """PageRank of the graph ``edges`` (columns ``src``, ``dst``) as a DataFrame ``id, rank``.

    ``nodes`` (column ``id``) adds nodes that no edge names. ``personalization`` maps node
    ids to non-negative weights; ids not in the graph are ignored. ``info`` receives ``n``,
    ``edges`` (distinct) and ``iterations``. Same semantics as ``batch.pagerank.pagerank``.
    """
    from pyspark import StorageLevel
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    spark = edges.sparkSession
    info = {} if info is None else info
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    links = edges.select("src", "dst").distinct()
    degree = links.groupBy("src").agg(F.count(F.lit(1)).alias("degree"))
    weighted = (
        links.join(degree, "src")
        .select("src", "dst", (F.lit(1.0) / F.col("degree")).alias("w"))
        .repartition(partitions, "src")
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    ids = links.select(F.col("src").alias("id")).union(links.select(F.col("dst").alias("id")))
    if nodes is not None:
        ids = ids.union(nodes.select("id"))
    state = ids.distinct().join(degree.withColumnRenamed("src", "id"), "id", "left").select(
        "id", F.col("degree").isNull().alias("dangling")
    )
    state = _checkpoint(state)
    n = state.count()
    info["n"] = n
    info["edges"] = weighted.count()
    if n == 0:
        weighted.unpersist()
        return state.select("id", F.lit(0.0).alias("rank"))
    state = state.withColumn("p", _personalization(state, personalization, n))
    # Partitioned like the weighted edges: each step's joins then shuffle nothing but the
    # contributions (the checkpoint keeps the partitioning, and the step's join keeps it).
    state = state.select("id", "dangling", "p", F.lit(1.0 / n).alias("rank"))
    state = _checkpoint(state.repartition(partitions, "id"))
    dangling_sum = _dangling_mass(state).first()[0] or 0.0
    for step in range(1, max_iter + 1):
        ranks = state.select(F.col("id").alias("src"), "rank").hint("shuffle_hash")
        contributions = (
            weighted.join(ranks, "src")
            .groupBy("dst")
            .agg(F.sum(F.col("w") * F.col("rank")).alias("c"))
            .withColumnRenamed("dst", "id")
        )
        moved = alpha * (F.coalesce(F.col("c"), F.lit(0.0)) + F.lit(dangling_sum) * F.col("p"))
        following = state.join(contributions, "id", "left").select(
            "id",
            "dangling",
            "p",
            (moved + (1 - alpha) * F.col("p")).alias("rank"),
            F.col("rank").alias("last"),
        )
        # The step's L1 change and dangling mass are observed while it is materialized.
        observed = Observation(f"step-{step}")
        state = _checkpoint(
            following.observe(
                observed,
                F.sum(F.abs(F.col("rank") - F.col("last"))).alias("change"),
                F.sum(F.when(F.col("dangling"), F.col("rank")).otherwise(0.0)).alias("mass"),
            ).drop("last")
        )
        change, dangling_sum = observed.get["change"], observed.get["mass"] or 0.0
        logger.info("ranking/spark: step %d, L1 change %.3e", step, change)
        if change < n * tol:
            info["iterations"] = step
            weighted.unpersist()
            return state.select("id", "rank")
    weighted.unpersist()
    raise PowerIterationFailedConvergence(
        f"PageRank did not converge to tol={tol} in {max_iter} iterations; raise max_iter"
    )


def _checkpoint(frame: DataFrame) -> DataFrame:
    """``frame`` computed now and kept by the executors, its lineage cut.

    A step's plan then never grows with the steps before it. Old steps are freed by Spark's
    context cleaner once unreferenced (``spark.cleaner.periodicGC.interval``). An executor
    lost mid-run loses its blocks and fails the run, which the Celery task retries.
    """
    from pyspark import StorageLevel

    return frame.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)


def _dangling_mass(state: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return state.agg(F.sum(F.when(F.col("dangling"), F.col("rank")).otherwise(0.0)))


def _personalization(state: DataFrame, personalization, n: int):
    """The column ``p``: uniform, or the weights of ``personalization`` normalized."""
    from pyspark.sql import functions as F

    if personalization is None:
        return F.lit(1.0 / n)
    # A few seed ids: small enough to be a literal map, known to every executor.
    weights = {k: float(v) for k, v in personalization.items()}
    known = state.where(F.col("id").isin(list(weights))).select("id").collect()
    total = sum(weights[row.id] for row in known)
    if total <= 0:
        raise ValueError("personalization must give a positive weight to a node of the graph")
    mapping = F.create_map(*[F.lit(x) for k, v in weights.items() for x in (k, v / total)])
    return F.coalesce(mapping[F.col("id")], F.lit(0.0))


def static_rank(ranks: DataFrame, n: int) -> DataFrame:
    """``batch.pagerank.static_rank`` on a DataFrame ``id, rank`` -> ``id, score``."""
    from pyspark.sql import functions as F

    relative = F.log1p(F.col("rank") * F.lit(float(n)))
    best = ranks.agg(F.max(relative)).first()[0]
    return ranks.select("id", (relative / F.lit(best)).alias("score"))


@dataclass
class SparkRanks:
    """Static ranks computed on Spark, left as Parquet under ``workdir`` for staging.

    Offers what ``batch.rank.stage_and_commit`` stages: counts, page score batches in a
    fixed order, host scores.
    """

    workdir: Path
    page_count: int
    page_edge_count: int
    host_count: int
    host_edge_count: int
    info: dict

    def page_batches(self, size: int) -> Iterator[dict[str, float]]:
        """``{doc_id: static rank}`` in batches of ``size``, ordered by page key."""
        return graphfiles.read_score_batches(self.workdir / "ranks" / "pages", size, doc_ids=True)

    def host_scores(self) -> dict[str, float]:
        """``{host: static rank}`` of every host of the host graph."""
        scores: dict[str, float] = {}
        hosts = self.workdir / "ranks" / "hosts"
        for batch in graphfiles.read_score_batches(hosts, 1 << 16, doc_ids=False):
            scores.update(batch)
        return scores

    def close(self) -> None:
        """Delete the run's Parquet files."""
        shutil.rmtree(self.workdir, ignore_errors=True)


def compute(
    link_store,
    settings: RankSettings,
    workdir: Path,
    page_seeds: Mapping[str, float] | None = None,
    host_seeds: Mapping[str, float] | None = None,
    timings: dict | None = None,
) -> SparkRanks:
    """Write both graphs of ``link_store`` as Parquet under ``workdir``, rank them on Spark.

    ``page_seeds`` (doc ids) and ``host_seeds`` personalize the two graphs; a seed set with
    no node in its graph falls back to uniform teleportation, as the SciPy path does.
    """
    timings = {} if timings is None else timings
    shutil.rmtree(workdir, ignore_errors=True)
    started = time.perf_counter()
    graph = workdir / "graph"
    graphfiles.write_page_edges(link_store, graph / "pages" / "edges.parquet")
    graphfiles.write_host_edges(link_store.iter_host_edges(), graph / "hosts" / "edges.parquet")
    timings["export_s"] = time.perf_counter() - started
    with spark_session(settings) as spark:
        started = time.perf_counter()
        if page_seeds is not None:
            keys = graphfiles.page_keys(list(page_seeds)).tolist()
            page_seeds = dict(zip(keys, page_seeds.values(), strict=True))
        pages = _rank_to_parquet(spark, graph / "pages", workdir, "pages", page_seeds, settings)
        hosts = _rank_to_parquet(spark, graph / "hosts", workdir, "hosts", host_seeds, settings)
        timings["compute_s"] = time.perf_counter() - started
    return SparkRanks(
        workdir,
        pages["n"],
        pages["edges"],
        hosts["n"],
        hosts["edges"],
        {"pages": pages, "hosts": hosts, "master": settings.spark_master},
    )


def _rank_to_parquet(
    spark: SparkSession,
    graph: Path,
    workdir: Path,
    name: str,
    seeds: Mapping | None,
    settings: RankSettings,
) -> dict[str, Any]:
    """Rank one graph and write ``workdir/ranks/<name>`` (``id``, ``score``, by ``id``)."""
    edges = spark.read.parquet(str(graph))
    info: dict = {}
    if seeds is not None and not _any_node(edges, list(seeds)):
        logger.warning("ranking: no seed is in the %s graph; using uniform teleportation", name)
        seeds = None
    ranks = pagerank(
        edges,
        alpha=settings.alpha,
        personalization=seeds,
        max_iter=settings.max_iter,
        tol=settings.tol,
        info=info,
    )
    if info["n"]:
        scores = static_rank(ranks, info["n"])
    else:
        scores = ranks.withColumnRenamed("rank", "score")
    scores.orderBy("id").write.parquet(str(workdir / "ranks" / name))
    return info


def _any_node(edges: DataFrame, ids: list) -> bool:
    from pyspark.sql import functions as F

    return bool(edges.where(F.col("src").isin(ids) | F.col("dst").isin(ids)).limit(1).count())
