"""The ranking batch on a real Celery worker (subprocess) with a real Redis broker.

The worker is killed (SIGKILL, whole process group) in the middle of staging a run and
again in the middle of publishing one; readers must only ever see whole committed
versions, and the redelivered task must finish the job.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from celery import Celery

from batch.edgefiles import EdgeFiles
from batch.store import RedisScoreStore
from crawler.urls import doc_id_for
from harness.redisserver import running_redis
from index.base import Document
from index.engines.embedded.backend import EmbeddedBackend

ROOT = Path(__file__).resolve().parent.parent
HOSTS = 10
PAGES_PER_HOST = 30


def url(host: int, page: int) -> str:
    return f"https://h{host}.test/" if page == 0 else f"https://h{host}.test/p{page}"


ALL_URLS = [url(h, p) for h in range(HOSTS) for p in range(PAGES_PER_HOST)]
ALL_IDS = [doc_id_for(u) for u in ALL_URLS]


def write_graph(edges_dir: Path, hub: int) -> None:
    """Every page links to the next page on its host and to host ``hub``'s home page."""
    rows = []
    for h in range(HOSTS):
        for p in range(PAGES_PER_HOST):
            a = url(h, p)
            for b in (url(h, (p + 1) % PAGES_PER_HOST), url(hub, 0), url((h + 1) % HOSTS, p)):
                if a != b:
                    rows.append((doc_id_for(a), doc_id_for(b), f"h{h}.test", b.split("/")[2]))
    EdgeFiles.write(edges_dir / "edges.tsv", rows)


def wait_for(
    what: str, check: Callable[[], object], timeout: float = 60, log: Path | None = None
) -> object:
    t0 = time.monotonic()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            print(f"{what}: {time.monotonic() - t0:.1f}s")
            return value
        time.sleep(0.01)
    tail = log.read_text(errors="replace")[-4000:] if log and log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


class Worker:
    """``celery -A tests.rank_worker worker`` in its own process group."""

    def __init__(self, env: dict, log: Path):
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "tests.rank_worker",
                "worker",
                "--pool=solo",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.log.close()


@pytest.fixture
def setup(tmp_path):
    data = tmp_path / "data"
    with running_redis(tmp_path / "redis") as server:
        redis_url = server.url
        env = {
            **os.environ,
            "DATA_DIR": str(data),
            "REDIS_URL": redis_url,
            "CELERY_BROKER_URL": redis_url,
            "PYTHONPATH": str(ROOT),
        }
        backend = EmbeddedBackend(data / "index")
        backend.ensure_index()
        backend.index(
            Document(id=i, url=u, host=u.split("/")[2], title="page")
            for i, u in zip(ALL_IDS, ALL_URLS, strict=True)
        )
        backend.close()
        client = Celery("test-client", broker=redis_url)
        store = RedisScoreStore.from_url(redis_url)
        workers: list[Worker] = []

        def start_worker() -> Worker:
            worker = Worker(env, tmp_path / "worker.log")
            workers.append(worker)
            return worker

        try:
            yield data, client, store, start_worker
        finally:
            for worker in workers:
                worker.stop()
            store.close()
            if any(w.proc.returncode not in (0, -9, -15) for w in workers):
                print((tmp_path / "worker.log").read_text(errors="replace"))


def index_scores(data: Path) -> dict[str, float]:
    reader = EmbeddedBackend(data / "index")
    reader.refresh()
    return {i: reader.get(i).pagerank for i in ALL_IDS}


def committed_scores(store: RedisScoreStore, version: int) -> dict[str, float]:
    scores: dict[str, float] = {}
    for batch in range(store.batch_count(version)):
        scores.update(store.page_batch(version, batch))
    return scores


def version_of(store: RedisScoreStore, task_id: str) -> int:
    return int(wait_for("the run's version", lambda: store.redis.hget("rank:runs", task_id)))


def test_worker_killed_mid_batch_leaves_no_mixed_versions(setup):
    data, client, store, start_worker = setup
    edges = data / "edges"
    log = data.parent / "worker.log"

    # Run 1 completes: committed, then published to the index.
    write_graph(edges, hub=0)
    worker = start_worker()
    v1 = version_of(store, client.send_task("ranking.rank").id)
    wait_for("run 1 published", lambda: store.published() == v1, log=log)
    first = committed_scores(store, v1)
    assert len(first) == len(ALL_IDS)
    assert index_scores(data) == first
    hosts_v1 = store.host_ranks()
    assert max(hosts_v1, key=hosts_v1.get) == "h0.test"

    # Run 2 is killed while staging: nothing of it is visible.
    write_graph(edges, hub=5)
    v2 = version_of(store, client.send_task("ranking.rank").id)
    total = -(-len(ALL_IDS) // 20)
    wait_for("run 2 half staged", lambda: 3 <= len(store.staged_batches(v2)) < total - 3)
    worker.kill()
    assert 0 < len(store.staged_batches(v2)) < total
    assert store.current() == v1
    assert store.host_ranks() == hosts_v1
    assert index_scores(data) == first

    # The redelivered task finishes run 2 on a new worker.
    worker = start_worker()
    wait_for("run 2 published", lambda: store.published() == v2, timeout=90, log=log)
    second = committed_scores(store, v2)
    assert second != first and len(second) == len(ALL_IDS)
    assert index_scores(data) == second
    hosts_v2 = store.host_ranks()
    assert max(hosts_v2, key=hosts_v2.get) == "h5.test"

    # Run 3 is killed while publishing: it is committed, and publishing resumes.
    write_graph(edges, hub=7)
    v3 = version_of(store, client.send_task("ranking.rank").id)
    wait_for("run 3 half published", lambda: 3 <= len(store.published_batches(v3)) < total - 3)
    worker.kill()
    assert store.current() == v3 and store.published() == v2
    third = committed_scores(store, v3)
    now = index_scores(data)
    # Every document carries the score of a committed version; none of an unfinished run.
    assert all(now[i] in (second[i], third[i]) for i in ALL_IDS)
    worker = start_worker()
    wait_for("run 3 published", lambda: store.published() == v3, timeout=90, log=log)
    assert index_scores(data) == third
    assert store.versions() == [v2, v3]  # older versions pruned


def test_both_tasks_ack_late_and_retry_when_a_store_fails():
    """The task options are declared once (``batch.tasks.DurableTask``) and both tasks have
    them: a lost worker's message is delivered again, a failed store retried."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    from batch import tasks

    for task in (tasks.rank, tasks.publish):
        name = task.name
        assert (task.acks_late, task.reject_on_worker_lost, task.retry_backoff,
                task.max_retries) == (True, True, True, 5), name
        assert {RedisConnectionError, ConnectionError, TimeoutError} <= set(task.autoretry_for)
