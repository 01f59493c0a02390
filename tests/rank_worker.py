"""The ranking Celery app as the worker in tests/test_celery_rank.py runs it: edge files as
the link store, small batches with a pause so a test can kill the worker mid-batch, and a
short visibility timeout so the killed worker's task is delivered again within seconds."""

from ranking.celery_app import app

app.conf.update(
    RANK_LINK_STORE="ranking.edgefiles.EdgeFiles.from_config",
    RANK_BATCH_SIZE=20,
    RANK_WRITE_PAUSE_S=0.05,
    broker_transport_options={"visibility_timeout": 2},
    worker_hijack_root_logger=False,
)
