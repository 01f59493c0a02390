"""Versioned static ranks: a run stages its scores under its own version, then one atomic
pointer flip commits it. Readers only ever see the committed version, complete.

A ranking run is identified by a run id (the Celery task id, so a redelivered task finds
its own version again). Its page ranks are staged in numbered batches and its host ranks
in one map; ``commit`` checks that everything announced is there and moves the ``current``
pointer forward in one atomic step. A run killed half-way leaves an uncommitted version
that nobody reads; its retry rewrites the same batches; ``prune`` drops old versions.

Two stores share this contract: Redis (distributed, next to the Celery broker) and SQLite
(embedded default, under ``DATA_DIR``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from pathlib import Path

from crawler import sqlitedb

PAGE = "page"
HOST = "host"


class ScoreStore(ABC):
    """Static ranks by version with one committed version; see the module docstring."""

    @abstractmethod
    def version_for(self, run_id: str) -> int:
        """The version of run ``run_id``: new and larger than all before, or the same again."""

    @abstractmethod
    def stage_pages(self, version: int, batch: int, scores: Mapping[str, float]) -> None:
        """Store page batch number ``batch`` of ``version``; rewriting a batch is harmless."""

    @abstractmethod
    def stage_hosts(self, version: int, scores: Mapping[str, float]) -> None:
        """Store the host ranks of ``version`` (hosts are few: one map)."""

    @abstractmethod
    def staged_batches(self, version: int) -> set[int]:
        """Numbers of the page batches of ``version`` stored so far."""

    @abstractmethod
    def commit(self, version: int, batches: int, pages: int, hosts: int) -> bool:
        """Make ``version`` current, atomically, if it holds ``batches`` page batches with
        ``pages`` pages in all and ``hosts`` hosts, and is newer than the current one.
        Returns whether it is current now."""

    @abstractmethod
    def current(self) -> int | None:
        """The committed version, or ``None`` before the first commit."""

    @abstractmethod
    def page_batch(self, version: int, batch: int) -> dict[str, float]:
        """Page batch ``batch`` of ``version`` (doc id -> static rank)."""

    @abstractmethod
    def batch_count(self, version: int) -> int:
        """How many page batches ``version`` was committed with (0 if not committed)."""

    @abstractmethod
    def host_ranks(self, hosts: Iterable[str] | None = None) -> dict[str, float]:
        """Host ranks of the committed version: of ``hosts``, or all of them."""

    @abstractmethod
    def mark_published(self, version: int, batch: int) -> None:
        """Record that page batch ``batch`` of ``version`` reached the search index."""

    @abstractmethod
    def published_batches(self, version: int) -> set[int]:
        """Page batches of ``version`` already written to the search index."""

    @abstractmethod
    def set_published(self, version: int) -> None:
        """Record that all of ``version`` reached the search index."""

    @abstractmethod
    def published(self) -> int | None:
        """The last version written whole to the search index."""

    @abstractmethod
    def drop(self, version: int) -> None:
        """Delete everything of ``version``; refuses the current one."""

    @abstractmethod
    def versions(self) -> list[int]:
        """Versions that hold data, ascending."""

    def prune(self, keep: int = 2) -> list[int]:
        """Drop versions older than the ``keep`` newest committed ones; returns them."""
        current = self.current()
        if current is None:
            return []
        older = [v for v in self.versions() if v <= current]
        doomed = older[: max(0, len(older) - keep)]
        for version in doomed:
            self.drop(version)
        return doomed

    def close(self) -> None:
        """Release connections."""


class RedisScoreStore(ScoreStore):
    """Score versions in Redis hashes under ``prefix``; commit is one Lua script."""

    _COMMIT = """
    local prefix, version = KEYS[1], tonumber(ARGV[1])
    local batches, pages, hosts = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
    local current = tonumber(redis.call('GET', prefix .. 'current') or '0')
    if current >= version then return current == version and 1 or 0 end
    local vkey = prefix .. 'v' .. version
    local counted = 0
    for b = 0, batches - 1 do
        if redis.call('SISMEMBER', vkey .. ':staged', b) == 0 then return 0 end
        counted = counted + redis.call('HLEN', vkey .. ':page:' .. b)
    end
    if counted ~= pages or redis.call('HLEN', vkey .. ':host') ~= hosts then return 0 end
    redis.call('HSET', vkey .. ':meta', 'batches', batches, 'pages', pages, 'hosts', hosts,
               'committed', ARGV[5])
    redis.call('SET', prefix .. 'current', version)
    return 1
    """

    def __init__(self, client, prefix: str = "rank:"):
        self.redis = client
        self.prefix = prefix
        self._commit_script = client.register_script(self._COMMIT)

    @classmethod
    def from_url(cls, url: str, prefix: str = "rank:") -> RedisScoreStore:
        """A store on the Redis at ``url``."""
        import redis

        return cls(redis.Redis.from_url(url, decode_responses=True), prefix)

    def _v(self, version: int) -> str:
        return f"{self.prefix}v{version}"

    def version_for(self, run_id: str) -> int:
        runs = self.prefix + "runs"
        known = self.redis.hget(runs, run_id)
        if known is not None:
            return int(known)
        version = int(self.redis.incr(self.prefix + "seq"))
        if not self.redis.hsetnx(runs, run_id, version):
            return int(self.redis.hget(runs, run_id))
        self.redis.sadd(self.prefix + "versions", version)
        return version

    def stage_pages(self, version: int, batch: int, scores: Mapping[str, float]) -> None:
        key = f"{self._v(version)}:page:{batch}"
        pipe = self.redis.pipeline(transaction=True)
        pipe.delete(key)
        if scores:
            pipe.hset(key, mapping=dict(scores))
        pipe.sadd(f"{self._v(version)}:staged", batch)
        pipe.execute()

    def stage_hosts(self, version: int, scores: Mapping[str, float]) -> None:
        key = f"{self._v(version)}:host"
        pipe = self.redis.pipeline(transaction=True)
        pipe.delete(key)
        if scores:
            pipe.hset(key, mapping=dict(scores))
        pipe.execute()

    def staged_batches(self, version: int) -> set[int]:
        return {int(b) for b in self.redis.smembers(f"{self._v(version)}:staged")}

    def commit(self, version: int, batches: int, pages: int, hosts: int) -> bool:
        done = self._commit_script(
            keys=[self.prefix], args=[version, batches, pages, hosts, time.time()]
        )
        return bool(done)

    def current(self) -> int | None:
        value = self.redis.get(self.prefix + "current")
        return None if value is None else int(value)

    def page_batch(self, version: int, batch: int) -> dict[str, float]:
        raw = self.redis.hgetall(f"{self._v(version)}:page:{batch}")
        return {k: float(v) for k, v in raw.items()}

    def batch_count(self, version: int) -> int:
        return int(self.redis.hget(f"{self._v(version)}:meta", "batches") or 0)

    def host_ranks(self, hosts: Iterable[str] | None = None) -> dict[str, float]:
        version = self.current()
        if version is None:
            return {}
        key = f"{self._v(version)}:host"
        if hosts is None:
            return {k: float(v) for k, v in self.redis.hgetall(key).items()}
        hosts = list(hosts)
        if not hosts:
            return {}
        values = self.redis.hmget(key, hosts)
        return {h: float(v) for h, v in zip(hosts, values, strict=True) if v is not None}

    def mark_published(self, version: int, batch: int) -> None:
        self.redis.sadd(f"{self._v(version)}:published", batch)

    def published_batches(self, version: int) -> set[int]:
        return {int(b) for b in self.redis.smembers(f"{self._v(version)}:published")}

    def set_published(self, version: int) -> None:
        self.redis.set(self.prefix + "published", version)

    def published(self) -> int | None:
        value = self.redis.get(self.prefix + "published")
        return None if value is None else int(value)

    def drop(self, version: int) -> None:
        if version == self.current():
            raise ValueError(f"version {version} is current; commit a newer one first")
        keys = list(self.redis.scan_iter(match=f"{self._v(version)}:*", count=1000))
        for start in range(0, len(keys), 1000):
            self.redis.delete(*keys[start : start + 1000])
        self.redis.srem(self.prefix + "versions", version)

    def versions(self) -> list[int]:
        return sorted(int(v) for v in self.redis.smembers(self.prefix + "versions"))

    def close(self) -> None:
        self.redis.close()


class SQLiteScoreStore(ScoreStore):
    """Score versions in one SQLite file; commit is one transaction."""

    _SCHEMA = """
    CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, version INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS versions (
        version INTEGER PRIMARY KEY AUTOINCREMENT, batches INTEGER, committed REAL);
    CREATE TABLE IF NOT EXISTS pages (
        version INTEGER, batch INTEGER, id TEXT, score REAL,
        PRIMARY KEY (version, batch, id)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS batches (
        version INTEGER, batch INTEGER, published INTEGER DEFAULT 0,
        PRIMARY KEY (version, batch)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS hosts (
        version INTEGER, host TEXT, score REAL, PRIMARY KEY (version, host)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS pointers (name TEXT PRIMARY KEY, version INTEGER);
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connection().executescript(self._SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlitedb.connect(self.path)
            self._local.db = db
        return db

    def _tx(self, write: bool = False) -> _Transaction:
        return _Transaction(self._connection(), write)

    def version_for(self, run_id: str) -> int:
        with self._tx(write=True) as db:
            row = db.execute("SELECT version FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row:
                return row[0]
            version = db.execute("INSERT INTO versions (batches) VALUES (NULL)").lastrowid
            db.execute("INSERT INTO runs VALUES (?, ?)", (run_id, version))
            return version

    def stage_pages(self, version: int, batch: int, scores: Mapping[str, float]) -> None:
        with self._tx(write=True) as db:
            db.execute("DELETE FROM pages WHERE version = ? AND batch = ?", (version, batch))
            db.executemany(
                "INSERT INTO pages VALUES (?, ?, ?, ?)",
                ((version, batch, k, float(v)) for k, v in scores.items()),
            )
            db.execute(
                "INSERT OR IGNORE INTO batches (version, batch) VALUES (?, ?)", (version, batch)
            )

    def stage_hosts(self, version: int, scores: Mapping[str, float]) -> None:
        with self._tx(write=True) as db:
            db.execute("DELETE FROM hosts WHERE version = ?", (version,))
            db.executemany(
                "INSERT INTO hosts VALUES (?, ?, ?)",
                ((version, k, float(v)) for k, v in scores.items()),
            )

    def staged_batches(self, version: int) -> set[int]:
        with self._tx() as db:
            rows = db.execute("SELECT batch FROM batches WHERE version = ?", (version,))
            return {r[0] for r in rows}

    def commit(self, version: int, batches: int, pages: int, hosts: int) -> bool:
        with self._tx(write=True) as db:
            current = self._pointer(db, "current")
            if current is not None and current >= version:
                return current == version
            have_batches, have_pages = db.execute(
                "SELECT (SELECT COUNT(*) FROM batches WHERE version = ?1 AND batch < ?2),"
                " (SELECT COUNT(*) FROM pages WHERE version = ?1 AND batch < ?2)",
                (version, batches),
            ).fetchone()
            have_hosts = db.execute(
                "SELECT COUNT(*) FROM hosts WHERE version = ?", (version,)
            ).fetchone()[0]
            if (have_batches, have_pages, have_hosts) != (batches, pages, hosts):
                return False
            db.execute(
                "UPDATE versions SET batches = ?, committed = ? WHERE version = ?",
                (batches, time.time(), version),
            )
            db.execute("INSERT OR REPLACE INTO pointers VALUES ('current', ?)", (version,))
            return True

    @staticmethod
    def _pointer(db: sqlite3.Connection, name: str) -> int | None:
        row = db.execute("SELECT version FROM pointers WHERE name = ?", (name,)).fetchone()
        return None if row is None else row[0]

    def current(self) -> int | None:
        with self._tx() as db:
            return self._pointer(db, "current")

    def page_batch(self, version: int, batch: int) -> dict[str, float]:
        with self._tx() as db:
            rows = db.execute(
                "SELECT id, score FROM pages WHERE version = ? AND batch = ?", (version, batch)
            )
            return dict(rows.fetchall())

    def batch_count(self, version: int) -> int:
        with self._tx() as db:
            row = db.execute(
                "SELECT batches FROM versions WHERE version = ? AND committed IS NOT NULL",
                (version,),
            ).fetchone()
            return row[0] if row else 0

    def host_ranks(self, hosts: Iterable[str] | None = None) -> dict[str, float]:
        with self._tx() as db:
            version = self._pointer(db, "current")
            if version is None:
                return {}
            rows = db.execute("SELECT host, score FROM hosts WHERE version = ?", (version,))
            ranks = dict(rows.fetchall())
        if hosts is None:
            return ranks
        return {h: ranks[h] for h in hosts if h in ranks}

    def mark_published(self, version: int, batch: int) -> None:
        with self._tx(write=True) as db:
            db.execute(
                "UPDATE batches SET published = 1 WHERE version = ? AND batch = ?",
                (version, batch),
            )

    def published_batches(self, version: int) -> set[int]:
        with self._tx() as db:
            rows = db.execute(
                "SELECT batch FROM batches WHERE version = ? AND published = 1", (version,)
            )
            return {r[0] for r in rows}

    def set_published(self, version: int) -> None:
        with self._tx(write=True) as db:
            db.execute("INSERT OR REPLACE INTO pointers VALUES ('published', ?)", (version,))

    def published(self) -> int | None:
        with self._tx() as db:
            return self._pointer(db, "published")

    def drop(self, version: int) -> None:
        with self._tx(write=True) as db:
            if version == self._pointer(db, "current"):
                raise ValueError(f"version {version} is current; commit a newer one first")
            for table in ("pages", "batches", "hosts", "runs", "versions"):
                db.execute(f"DELETE FROM {table} WHERE version = ?", (version,))

    def versions(self) -> list[int]:
        with self._tx() as db:
            rows = db.execute(
                "SELECT DISTINCT version FROM batches UNION SELECT version FROM hosts"
                " UNION SELECT version FROM versions WHERE committed IS NOT NULL"
            )
            return sorted(r[0] for r in rows)

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


class _Transaction:
    """``with`` block = one SQLite transaction on ``db``; a writing one locks at the start."""

    def __init__(self, db: sqlite3.Connection, write: bool):
        self.db = db
        self.write = write

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE" if self.write else "BEGIN")
        return self.db

    def __exit__(self, exc_type, exc, tb) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")
