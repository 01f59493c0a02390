"""One way to open the project's SQLite files that several processes and threads share (the
web cache, the crawl state, verdicts, the link graph, the batch store): WAL journal, a busy
timeout, and a journal-mode switch that survives a busy database.

SQLite's busy timeout does not cover every case of ``PRAGMA journal_mode=WAL``: the switch
needs the database to itself, and when two connections opening a new file at once (a
gunicorn worker's new threads during a first burst of logins) both hold a shared lock and
both want it to themselves, one gets "database is locked" at once instead of waiting.
:func:`connect` reads the mode first (a database already in WAL, the usual case, needs no
switch: the mode is stored in the file) and retries the switch until the timeout.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

_RETRY_S = 0.01


def connect(path: str | Path | None, *, timeout: float = 30.0, synchronous: str | None = None,
            **options) -> sqlite3.Connection:
    """A connection to ``path`` (None: in memory) in WAL mode, in autocommit unless
    ``isolation_level`` is given; ``synchronous`` sets that pragma too (e.g. ``"NORMAL"``).
    Other keyword arguments go to :func:`sqlite3.connect`."""
    options.setdefault("isolation_level", None)
    db = sqlite3.connect(":memory:" if path is None else str(path), timeout=timeout, **options)
    deadline = time.monotonic() + timeout
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] not in ("wal", "memory"):
                db.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) \
                    or time.monotonic() > deadline:
                db.close()
                raise
            time.sleep(_RETRY_S)
    if synchronous:
        db.execute(f"PRAGMA synchronous={synchronous}")
    return db
