"""The Celery app of the ranking batch: broker from ``CELERY_BROKER_URL`` (default Redis).

Run a worker and the scheduler with::

    celery -A batch.celery_app worker --loglevel=INFO
    celery -A batch.celery_app beat

With no broker configured (the embedded default) tasks run eagerly in the calling
process; ``python manage.py rank`` does the same without Celery.
"""

from __future__ import annotations

from celery import Celery

from batch.rank import RankSettings
from crawler.config import get_config


class CeleryConfig:
    """Celery settings, read when the app is first configured (not at import time)."""

    task_acks_late = True
    task_reject_on_worker_lost = True
    worker_prefetch_multiplier = 1
    task_ignore_result = True
    task_serializer = "json"
    accept_content = ("json",)
    broker_connection_retry_on_startup = True
    #: Seconds before a task whose worker died unacknowledged is delivered again; longer
    #: than the longest ranking run, or a slow run is started twice (harmless but wasted).
    broker_transport_options = {"visibility_timeout": 4 * 3600}

    @property
    def broker_url(self) -> str:
        return get_config().celery_broker_url or "memory://"

    @property
    def task_always_eager(self) -> bool:
        return get_config().celery_broker_url is None

    @property
    def beat_schedule(self) -> dict:
        from crawler.options import setting_default

        return {
            "rank-pages-and-hosts": {
                "task": "ranking.rank",
                "schedule": RankSettings.from_settings(None).interval_s,
            },
            "embed-pages": {
                "task": "semantic.embed",
                "schedule": float(setting_default("SEARCH_SEMANTIC_EMBED_INTERVAL")),
            },
        }


def make_app() -> Celery:
    """A Celery app with the ranking tasks, configured lazily from ``crawler.config``."""
    celery = Celery("ranking", include=["batch.tasks"])
    celery.config_from_object(CeleryConfig())
    return celery


app = make_app()
