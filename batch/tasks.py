"""Celery tasks of the ranking batch: ``ranking.rank`` (graphs, PageRank, stage, commit)
then ``ranking.publish`` (write the committed version to the index in batches); and of the
embedding batch, ``semantic.embed`` (section vectors of the pages indexed without them,
:mod:`batch.embed`).

Both acknowledge late and retry: a worker killed in the middle leaves its message to be
delivered again, and the repeated task finds the same version (the run id is the task id)
or resumes publishing at the first unwritten batch. Settings are the ``RANK_*`` keys of
the Celery app's configuration (``RankSettings``).
"""

from __future__ import annotations

import logging

from celery import Task, shared_task
from redis.exceptions import ConnectionError as RedisConnectionError

from batch import embed as embed_job
from batch import rank as rank_job

logger = logging.getLogger(__name__)


class DurableTask(Task):
    """A batch task that survives its worker and its stores: acknowledged only when done
    (a worker lost mid-task leaves the message to be delivered again) and retried with
    exponential backoff, at most 5 times, when Redis or the network fails."""

    acks_late = True
    reject_on_worker_lost = True
    autoretry_for = (RedisConnectionError, ConnectionError, TimeoutError)
    retry_backoff = True
    max_retries = 5


def _settings(task) -> rank_job.RankSettings:
    return rank_job.RankSettings.from_settings(task.app.conf)


@shared_task(bind=True, base=DurableTask, name="ranking.rank")
def rank(self, run_id: str | None = None) -> dict:
    """Rank the page and host graphs under a new version, commit it, queue its publishing."""
    settings = _settings(self)
    run_id = run_id or self.request.id or "eager"
    store = rank_job.open_store()
    links = rank_job.open_link_store(settings)
    try:
        report = rank_job.stage_and_commit(
            links,
            store,
            run_id,
            settings,
            on_batch=lambda done, total: logger.info("ranking: staged %d/%d", done, total),
        )
    finally:
        rank_job.close_quietly(links)
        store.close()
    if report.committed:
        self.app.tasks["ranking.publish"].delay(report.version)
    else:
        logger.warning("ranking: run %s (version %s) was superseded", run_id, report.version)
    return report.to_dict()


@shared_task(bind=True, base=DurableTask, name="ranking.publish")
def publish(self, version: int) -> int:
    """Write committed ``version`` to the search index, resuming after the last written batch."""
    settings = _settings(self)
    store = rank_job.open_store()
    backend = rank_job.open_backend(settings)
    try:
        return rank_job.publish(store, backend, version, settings)
    finally:
        backend.close()
        store.close()


@shared_task(bind=True, base=DurableTask, name="semantic.embed")
def embed(self) -> dict:
    """Embed up to ``SEARCH_SEMANTIC_BUDGET`` pages indexed without section vectors and
    write them back, a group at a time (a repeated task starts with the pages still
    without them); nothing when semantic matching is off."""
    conf = self.app.conf
    match = embed_job.open_match(conf)
    if match is None:
        return embed_job.EmbedReport(enabled=False).to_dict()
    backend = rank_job.open_backend(_settings(self))
    try:
        report = embed_job.embed_pending(
            backend, match, embed_job.EmbedSettings.from_settings(conf),
            progress=lambda r: logger.info("semantic: %d pages embedded", r.embedded))
    finally:
        backend.close()
    return report.to_dict()
