"""The ranking batch, in-process: link graphs -> PageRank -> versioned scores -> index.

``run_rank`` is what ``python manage.py rank`` runs for the embedded default; the Celery
tasks in :mod:`batch.tasks` run the same two steps (``stage_and_commit``, ``publish``)
on workers. Every step is safe to repeat: a run keeps its version across retries, staging
rewrites whole batches, commit is one atomic pointer flip, and publishing resumes at the
first batch not yet written to the index.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from importlib import import_module
from typing import Any

import numpy as np

from batch.pagerank import DocIds, LinkGraph, pagerank, static_rank
from batch.rank_settings import RankSettings
from batch.store import RedisScoreStore, ScoreStore, SQLiteScoreStore
from crawler.config import Config, get_config
from crawler.urls import canonicalize, doc_id_for, host_of
from index.base import SearchBackend

logger = logging.getLogger(__name__)


@dataclass
class RunReport:
    """What one ranking run did."""

    run_id: str
    version: int
    pages: int = 0
    page_edges: int = 0
    hosts: int = 0
    host_edges: int = 0
    batches: int = 0
    committed: bool = False
    published: int = 0
    timings: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def load_object(path: str) -> Any:
    """The object at dotted ``path`` (``module.attr`` or ``module.Class.attr``)."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError:
            break
        return obj
    raise ImportError(f"cannot import {path!r}; check the RANK_* setting that names it")


def open_link_store(settings: RankSettings, config: Config | None = None):
    """The link store named by ``RANK_LINK_STORE`` (a callable taking the Config)."""
    return load_object(settings.link_store)(config or get_config())


def open_backend(settings: RankSettings, config: Config | None = None) -> SearchBackend:
    """The search backend named by ``RANK_INDEX_BACKEND`` (a callable taking the Config)."""
    return load_object(settings.index_backend)(config or get_config())


def open_store(config: Config | None = None) -> ScoreStore:
    """Redis when ``REDIS_URL`` is set (shared by workers), else SQLite under ``DATA_DIR``."""
    config = config or get_config()
    if config.redis_url:
        return RedisScoreStore.from_url(config.redis_url)
    return SQLiteScoreStore(config.path("rank", "scores.sqlite3"))


def close_quietly(resource) -> None:
    """Call ``resource.close()`` if it has one."""
    close = getattr(resource, "close", None)
    if callable(close):
        close()


def seed_personalization(seeds: tuple[str, ...]) -> tuple[dict | None, dict | None]:
    """Personalization vectors (pages, hosts) that jump back to the seed URLs only."""
    if not seeds:
        return None, None
    urls = [canonicalize(s) for s in seeds]
    return {doc_id_for(u): 1.0 for u in urls}, {host_of(u): 1.0 for u in urls}


@dataclass
class ComputedRanks:
    """Static ranks (``static_rank`` of PageRank) of the page and the host graph.

    ``page_count`` ... ``close`` are what staging reads; ``batch.spark.SparkRanks``
    offers the same for the Spark engine.
    """

    pages: LinkGraph
    page_ranks: np.ndarray
    hosts: LinkGraph
    host_ranks: np.ndarray

    @property
    def page_count(self) -> int:
        return self.pages.n

    @property
    def page_edge_count(self) -> int:
        return self.pages.edges

    @property
    def host_count(self) -> int:
        return self.hosts.n

    @property
    def host_edge_count(self) -> int:
        return self.hosts.edges

    def page_batches(self, size: int) -> Iterator[dict[str, float]]:
        """``{doc_id: static rank}`` in batches of ``size``, in index order."""
        return self.pages.batches(self.page_ranks, size)

    def host_scores(self) -> dict[str, float]:
        """``{host: static rank}`` of every host of the host graph."""
        return dict(zip(self.hosts.node_ids(), self.host_ranks.tolist(), strict=True))

    def close(self) -> None:
        """Nothing to release: the ranks are in memory."""


def compute_ranks(
    link_store,
    settings: RankSettings,
    version: int,
    config: Config | None = None,
    timings: dict | None = None,
):
    """Rank both graphs of ``link_store`` on the configured engine (``RANK_ENGINE``).

    Returns ``ComputedRanks`` (SciPy) or ``batch.spark.SparkRanks``; close it when staged.
    """
    if settings.engine == "spark":
        from batch import spark

        page_seeds, host_seeds = seed_personalization(settings.seeds)
        workdir = settings.spark_workdir(config or get_config(), version)
        return spark.compute(link_store, settings, workdir, page_seeds, host_seeds, timings)
    return compute(link_store, settings, timings)


def compute(link_store, settings: RankSettings, timings: dict | None = None) -> ComputedRanks:
    """Build both graphs from ``link_store`` and rank them in this process (SciPy)."""
    timings = {} if timings is None else timings
    page_seeds, host_seeds = seed_personalization(settings.seeds)
    started = time.perf_counter()
    edge_arrays = getattr(link_store, "edge_arrays", None)
    if edge_arrays is not None:
        # Fast path: the store hands over uint64 key arrays, no Python object per edge.
        src, dst = edge_arrays()
        pages = LinkGraph.from_arrays(src, dst, ids=DocIds())
    else:
        pages = LinkGraph.from_doc_edges(link_store.iter_edges())
    hosts = LinkGraph.from_host_edges(link_store.iter_host_edges())
    timings["load_s"] = time.perf_counter() - started
    started = time.perf_counter()
    page_ranks = static_rank(_rank(pages, page_seeds, settings))
    host_ranks = static_rank(_rank(hosts, host_seeds, settings))
    timings["compute_s"] = time.perf_counter() - started
    return ComputedRanks(pages, page_ranks, hosts, host_ranks)


def _rank(graph: LinkGraph, seeds: dict | None, settings: RankSettings) -> np.ndarray:
    if seeds is not None and (graph.index_of(list(seeds)) < 0).all():
        logger.warning("ranking: no seed is in the graph; using uniform teleportation")
        seeds = None
    return pagerank(
        graph,
        alpha=settings.alpha,
        personalization=seeds,
        max_iter=settings.max_iter,
        tol=settings.tol,
    )


def stage_and_commit(
    link_store,
    store: ScoreStore,
    run_id: str,
    settings: RankSettings,
    on_batch: Callable[[int, int], None] | None = None,
    config: Config | None = None,
) -> RunReport:
    """Compute the run's ranks, stage them under its version in batches, then commit.

    Repeating it for the same ``run_id`` (a retried task) rewrites the same version.
    ``on_batch(done, total)`` is called after each staged batch. ``config`` locates the
    Spark engine's files (``DATA_DIR``).
    """
    version = store.version_for(run_id)
    report = RunReport(run_id=run_id, version=version)
    current = store.current()
    if current is not None and current >= version:
        # Committed already (a retry after the commit) or superseded: never rewrite it.
        report.committed = current == version
        report.batches = store.batch_count(version)
        return report
    ranks = compute_ranks(link_store, settings, version, config, report.timings)
    try:
        report.pages, report.page_edges = ranks.page_count, ranks.page_edge_count
        report.hosts, report.host_edges = ranks.host_count, ranks.host_edge_count
        started = time.perf_counter()
        store.stage_hosts(version, ranks.host_scores())
        total = -(-ranks.page_count // settings.batch_size)
        report.batches = total
        for number, scores in enumerate(ranks.page_batches(settings.batch_size)):
            store.stage_pages(version, number, scores)
            if on_batch:
                on_batch(number + 1, total)
            if settings.write_pause_s:
                time.sleep(settings.write_pause_s)
        report.timings["stage_s"] = time.perf_counter() - started
    finally:
        ranks.close()
    report.committed = store.commit(version, total, ranks.page_count, ranks.host_count)
    if report.committed:
        store.prune(settings.keep_versions)
    logger.info("ranking: run %s version %s committed=%s", run_id, version, report.committed)
    return report


def write_ranks(backend: SearchBackend, scores: Mapping[str, float], batch_size: int) -> int:
    """``update_rank`` in batches of ``batch_size``; returns how many documents changed."""
    items = list(scores.items())
    changed = 0
    for start in range(0, len(items), batch_size):
        changed += backend.update_rank(dict(items[start : start + batch_size]))
    return changed


def publish(store: ScoreStore, backend: SearchBackend, version: int, settings: RankSettings) -> int:
    """Write committed ``version`` to the index batch by batch, resuming after a crash.

    Stops early (returns -1) when a newer version was committed meanwhile: that run
    publishes itself. Returns how many documents changed.
    """
    if store.current() != version:
        return -1
    total = store.batch_count(version)
    done = store.published_batches(version)
    changed = 0
    for number in range(total):
        if number in done:
            continue
        if store.current() != version:
            return -1
        changed += backend.update_rank(store.page_batch(version, number))
        store.mark_published(version, number)
        if settings.write_pause_s:
            time.sleep(settings.write_pause_s)
    backend.refresh()
    backend.publish_tiers()  # tier 1 cut again at the new ranks (a tiered index)
    store.set_published(version)
    return changed


def run_rank(
    settings: RankSettings,
    run_id: str | None = None,
    config: Config | None = None,
    link_store=None,
    store: ScoreStore | None = None,
    backend: SearchBackend | None = None,
) -> RunReport:
    """One whole ranking run in this process: stage, commit, publish. ``manage.py rank``."""
    config = config or get_config()
    link_store = link_store if link_store is not None else open_link_store(settings, config)
    store = store or open_store(config)
    backend = backend or open_backend(settings, config)
    run_id = run_id or f"local-{time.time_ns()}"
    try:
        report = stage_and_commit(link_store, store, run_id, settings, config=config)
    finally:
        close_quietly(link_store)
    if report.committed:
        started = time.perf_counter()
        report.published = publish(store, backend, report.version, settings)
        report.timings["publish_s"] = time.perf_counter() - started
    return report
