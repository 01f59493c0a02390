"""A Django cache in one SQLite file, shared by every web process of a box, with atomic
``add`` and ``incr``: the cache the rate limiter and login throttling count in when there is
no Redis (``REDIS_URL`` unset).

Django's own caches do not fit that case: local memory is per process (under gunicorn each
worker would count alone, so N workers let N times the limit through), and the file and
database caches implement ``incr`` as a read then a write, which concurrent requests race.
Here ``incr`` is one ``UPDATE ... RETURNING`` statement, and SQLite runs writes one at a
time, so concurrent increments from any process or thread each see a distinct count.

Integers are stored as SQLite integers (so ``incr`` is arithmetic in SQL), anything else
pickled. Expired rows are ignored on read and deleted every ``CULL_EVERY`` writes. A write
costs ~0.1 ms (WAL journal, ``synchronous=NORMAL``: no fsync per write; the counters are
not worth one).
"""

from __future__ import annotations

import pickle
import sqlite3
import threading
import time
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT, BaseCache

from crawler import sqlitedb

_SCHEMA = ("CREATE TABLE IF NOT EXISTS cache "
           "(key TEXT PRIMARY KEY, value, expires REAL NOT NULL) WITHOUT ROWID")
_NEVER = float("inf")


class SQLiteCache(BaseCache):
    """``BACKEND: "webui.sqlitecache.SQLiteCache"``, ``LOCATION``: the database file."""

    CULL_EVERY = 1000

    def __init__(self, location: str, params: dict):
        super().__init__(params)
        self.path = location
        self._local = threading.local()
        self._writes = 0

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlitedb.connect(self.path, timeout=10, synchronous="NORMAL",
                                  check_same_thread=False)
            db.execute(_SCHEMA)
            self._local.db = db
        return db

    def _expiry(self, timeout) -> float:
        timeout = self.get_backend_timeout(timeout)
        return _NEVER if timeout is None else timeout

    @staticmethod
    def _dump(value: Any) -> Any:
        if type(value) is int:
            return value
        return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)

    @staticmethod
    def _load(stored: Any) -> Any:
        return pickle.loads(stored) if isinstance(stored, bytes) else stored

    def _wrote(self) -> None:
        self._writes += 1
        if self._writes % self.CULL_EVERY == 0:
            self._db().execute("DELETE FROM cache WHERE expires <= ?", (time.time(),))

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None) -> bool:
        """Set ``key`` unless it holds an unexpired value; whether it was set."""
        key = self.make_and_validate_key(key, version=version)
        cursor = self._db().execute(
            "INSERT INTO cache (key, value, expires) VALUES (?, ?, ?) ON CONFLICT (key) "
            "DO UPDATE SET value = excluded.value, expires = excluded.expires "
            "WHERE cache.expires <= ?",
            (key, self._dump(value), self._expiry(timeout), time.time()))
        self._wrote()
        return cursor.rowcount > 0

    def get(self, key, default=None, version=None) -> Any:
        key = self.make_and_validate_key(key, version=version)
        row = self._db().execute("SELECT value FROM cache WHERE key = ? AND expires > ?",
                                 (key, time.time())).fetchone()
        return default if row is None else self._load(row[0])

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None) -> None:
        key = self.make_and_validate_key(key, version=version)
        self._db().execute("INSERT OR REPLACE INTO cache (key, value, expires) VALUES (?, ?, ?)",
                           (key, self._dump(value), self._expiry(timeout)))
        self._wrote()

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        cursor = self._db().execute(
            "UPDATE cache SET expires = ? WHERE key = ? AND expires > ?",
            (self._expiry(timeout), key, time.time()))
        return cursor.rowcount > 0

    def incr(self, key, delta=1, version=None) -> int:
        """Add ``delta`` to an unexpired integer in one statement (atomic across processes);
        raises ValueError when the key is missing, as Django's caches do."""
        key = self.make_and_validate_key(key, version=version)
        row = self._db().execute(
            "UPDATE cache SET value = value + ? WHERE key = ? AND expires > ? "
            "AND typeof(value) = 'integer' RETURNING value",
            (delta, key, time.time())).fetchone()
        if row is None:
            raise ValueError(f"Key '{key}' not found")
        return row[0]

    def delete(self, key, version=None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        return self._db().execute("DELETE FROM cache WHERE key = ?", (key,)).rowcount > 0

    def has_key(self, key, version=None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        return self._db().execute("SELECT 1 FROM cache WHERE key = ? AND expires > ?",
                                  (key, time.time())).fetchone() is not None

    def clear(self) -> None:
        self._db().execute("DELETE FROM cache")

    def close(self, **kwargs) -> None:
        """Kept open: one connection per thread, reused by its requests."""
