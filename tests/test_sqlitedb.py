"""crawler.sqlitedb.connect: the shared SQLite files open in WAL mode even when many
connections open a new file at once (the web cache under gunicorn: two workers' threads on
the first burst of logins, where a plain ``PRAGMA journal_mode=WAL`` failed about one
connection in a hundred with "database is locked", and the login that opened it with a 500)."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

import pytest

from crawler import sqlitedb

_THREADS = 4


def _open_and_count(path: str) -> list[str]:
    """What each of ``_THREADS`` threads of this process got from opening ``path`` and
    counting once in it."""
    out: list[str] = []

    def one() -> None:
        try:
            db = sqlitedb.connect(path, timeout=10, synchronous="NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS c (k TEXT PRIMARY KEY, n INTEGER)")
            db.execute("INSERT INTO c VALUES ('k', 0) ON CONFLICT (k) DO NOTHING")
            db.execute("UPDATE c SET n = n + 1 WHERE k = 'k'")
            out.append(db.execute("PRAGMA journal_mode").fetchone()[0])
            db.close()
        except sqlite3.OperationalError as exc:
            out.append(str(exc))

    threads = [threading.Thread(target=one) for _ in range(_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return out


def test_connections_opening_a_new_file_at_once_all_get_wal(tmp_path):
    seen: Counter[str] = Counter()
    with ProcessPoolExecutor(2) as pool:
        for run in range(60):
            path = str(tmp_path / f"cache{run}.sqlite3")
            for got in pool.map(_open_and_count, [path, path]):
                seen.update(got)
            assert sqlite3.connect(path).execute("SELECT n FROM c").fetchone() == (2 * _THREADS,)
    assert seen == {"wal": 60 * 2 * _THREADS}, seen


def test_it_waits_for_a_writer_holding_the_file(tmp_path):
    path = tmp_path / "held.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    threading.Timer(0.3, holder.execute, ("COMMIT",)).start()
    db = sqlitedb.connect(path, timeout=10)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.isolation_level is None  # autocommit unless asked


def test_options_reach_the_connection_and_memory_works():
    db = sqlitedb.connect(None, synchronous="NORMAL", isolation_level="")
    assert db.execute("PRAGMA journal_mode").fetchone() == ("memory",)
    assert db.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    assert db.isolation_level == ""


def test_other_errors_are_raised_at_once(tmp_path):
    (tmp_path / "not-a-db.sqlite3").write_bytes(b"this is not a database file" * 100)
    with pytest.raises(sqlite3.DatabaseError, match="not a database"):
        sqlitedb.connect(tmp_path / "not-a-db.sqlite3", timeout=30)
