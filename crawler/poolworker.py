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
import pickle
import signal
import threading
import traceback
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import Any


def exit_with_parent() -> None:
    """Start a daemon thread that ends this process as soon as its parent process is gone
    (the first thing ``serve`` does in an extraction worker; a no-op in a process
    that multiprocessing did not start)."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch() -> None:
        wait([parent.sentinel])  # readable once the parent's end of its pipe is closed
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def serve(conn, function: Callable[..., Any],
          initializer: Callable[[], Any] | None = None, nice: int = 0) -> None:
    """An extraction worker's loop (``crawler.extractpool``): ``nice`` added to its
    niceness (``EXTRACT_WORKER_NICE``) and ``initializer()`` first (an
    exception it raises is printed and the worker goes on), then each message on ``conn``
    is a pickled ``(function, kwargs)`` (None: the pool's ``function``), answered with the
    pickled ``(True, result)`` or ``(False, exception)``, in order; an empty message or
    the pool's end of the pipe closed ends it. A Ctrl-C reaches the whole process group:
    a worker ignores it and goes on with the pages of the crawl's graceful stop, which
    closes the pool (a second Ctrl-C kills the crawl, and its workers exit with it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent()
    if nice:
        os.nice(nice)
    if initializer is not None:
        try:
            initializer()
        except Exception:  # noqa: BLE001 - what it prepares is made on first use instead
            traceback.print_exc()
    while True:
        try:
            message = conn.recv_bytes()
        except EOFError:
            return
        if not message:
            return
        called, kwargs = pickle.loads(message)
        try:
            answer = pickle.dumps((True, (called or function)(**kwargs)), protocol=5)
        except Exception as exc:  # noqa: BLE001 - handed to the caller
            answer = _error(exc)
        conn.send_bytes(answer)


def _error(exc: Exception) -> bytes:
    """``(False, exc)`` pickled, its traceback in this process as a note; an exception
    that does not pickle goes as a ``RuntimeError`` naming it."""
    exc.add_note("".join(traceback.format_exception(exc)).rstrip())
    try:
        return pickle.dumps((False, exc), protocol=5)
    except Exception:  # noqa: BLE001 - an exception of a type pickle cannot carry
        return pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")), protocol=5)
