"""gunicorn's configuration for the web UI:

    gunicorn -c webui/gunicorn.conf.py [--bind 127.0.0.1:8000] webui.wsgi

Values come from the ``WEB_*`` settings in webui/settings.py (their defaults live there);
gunicorn's own command-line flags and ``GUNICORN_CMD_ARGS`` win over them. Access and
error logs go to stderr. Every worker records its metrics in ``WEB_METRICS_DIR``
(prometheus_client's multiprocess mode, which must be chosen before any metric exists, so
the variable is set here in the master, before the workers are forked; the directory is
emptied when gunicorn starts, and a dead worker's files are marked as such).
"""

import os
import shutil
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webui.settings")

from django.conf import settings  # noqa: E402  (needs the variable above)

_metrics_dir = Path(settings.WEB_METRICS_DIR)
os.environ.update(PROMETHEUS_MULTIPROC_DIR=str(_metrics_dir))

wsgi_app = "webui.wsgi:application"
bind = [settings.WEB_BIND]
workers = settings.WEB_WORKERS
threads = settings.WEB_THREADS
timeout = settings.WEB_TIMEOUT_S
graceful_timeout = settings.WEB_GRACEFUL_TIMEOUT_S
keepalive = settings.WEB_KEEPALIVE_S
# The reverse proxies whose X-Forwarded-Proto gunicorn believes (then Django's
# request.is_secure() and redirects see https): the web UI's one trusted-proxy setting,
# WEB_TRUSTED_PROXIES (CIDRs), the same that X-Forwarded-For is believed from; unset,
# gunicorn's default (loopback).
forwarded_allow_ips = ",".join(settings.TRUSTED_PROXIES) or "127.0.0.1,::1"
proc_name = "websearch-web"
accesslog = "-"
errorlog = "-"
# gunicorn's control socket (for gunicornc) would be one path per user, shared by every
# server of that user (the stack, the demo, tests): off.
control_socket_disable = True


def on_starting(server) -> None:
    """Before the first worker: an empty metrics directory (counters restart at zero)."""
    shutil.rmtree(_metrics_dir, ignore_errors=True)
    _metrics_dir.mkdir(parents=True, exist_ok=True)


def child_exit(server, worker) -> None:
    """A worker exited: its live gauges leave the merged metrics."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid, str(_metrics_dir))
