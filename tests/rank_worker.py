"""The ranking Celery app as the worker in tests/test_celery_rank.py runs it: edge files as
the link store, small batches with a pause so a test can kill the worker mid-batch, and a
short visibility timeout, swept every second, so the killed worker's task is delivered
again within seconds (kombu sweeps every ~100 s by default)."""

from batch.celery_app import app

app.conf.update(
    RANK_LINK_STORE="batch.edgefiles.EdgeFiles.from_config",
    RANK_BATCH_SIZE=20,
    RANK_WRITE_PAUSE_S=0.05,
    broker_transport_options={
        "visibility_timeout": 2,
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
        "unacked_mutex_expire": 10,
    },
    worker_hijack_root_logger=False,
)
