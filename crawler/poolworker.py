"""What an extraction worker process (``crawler.extractpool``) runs besides its tasks.

A worker is spawned, so it shares nothing with the crawl process but the pipes the pool
talks through, and it would wait on them for ever once that process is gone without
closing its pool: a crawl killed by SIGKILL, the OOM killer or a timeout, whose workers
then outlived it, each holding its memory and the crawl's stdout. ``exit_with_parent``
makes a worker exit when the process that started it does, whatever the way it died.

Like every module a worker imports, it imports neither Scrapy nor Twisted.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from multiprocessing.connection import wait


def exit_with_parent() -> None:
    """Start a daemon thread that ends this process as soon as its parent process is gone
    (the ``ProcessPoolExecutor`` initializer of the extraction pool; a no-op in a process
    that multiprocessing did not start)."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch() -> None:
        wait([parent.sentinel])  # readable once the parent's end of its pipe is closed
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
