"""Disaster recovery: back up and restore the serving index, the frontier and the control
database (``manage.py backup`` / ``manage.py restore``, ``scripts/backup.sh`` /
``scripts/restore.sh``; docs/operations.md "Backup and restore").

A backup is a directory with ``manifest.json`` and one part per configured service:

- ``elasticsearch`` (``ELASTICSEARCH_URL``): a snapshot of every ``<ES_INDEX_PREFIX>-*``
  index with its aliases, in a filesystem repository under the nodes' ``path.repo``
  (``scripts/services.sh`` sets it; the snapshot stays there, the manifest names it);
- ``redis`` (``REDIS_URL`` and each ``FRONTIER_REDIS_URLS`` primary): ``BGSAVE``, waited for
  until the server reports it done, and the RDB file copied (point in time: the fork's);
  restored by loading the copy into a private ``redis-server`` and copying every key
  (``DUMP``/``RESTORE`` with its TTL) into the live server after ``FLUSHALL``, so the
  server need not stop and its AOF records the restored state;
- ``database``: SQLite through its online backup API, PostgreSQL with ``pg_dump -Fc`` and
  ``pg_restore --clean``.

Each part records what it saw (documents, keys, rows) and a restore checks that it finds
the same again. Rebuilding the index from WARC (``manage.py reindex --from-warc``) stays
the last resort, for when no snapshot is left.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["BACKUP_PARTS", "Part", "backup", "parts_for", "read_manifest", "restore"]

MANIFEST = "manifest.json"
#: The name of the snapshot repository this project registers in the cluster.
ES_REPOSITORY = "websearch-backups"
#: Seconds a part waits for its service (BGSAVE, a snapshot, a restore to turn yellow).
WAIT_S = 600.0

Progress = Callable[[str], None]


def _redact(url: str) -> str:
    """``url`` without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username or ''}:***@{parts.hostname}" + (
        f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(
        p.stat().st_size for p in path.rglob("*") if p.is_file())


def human_bytes(n: float) -> str:
    """``1.2 MB``-style size."""
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


class BackupError(Exception):
    """A part could not be backed up or restored; the message says what to do."""


@dataclass
class Part:
    """One service's share of a backup: ``backup`` writes under ``directory`` and returns
    what the manifest keeps; ``restore`` reads it back and returns what it found."""

    name: str

    def describe(self) -> str:
        """What this part covers, for the confirmation and the summary."""
        raise NotImplementedError

    def backup(self, directory: Path, progress: Progress) -> dict:
        """Save this service's state; the returned dict goes into the manifest."""
        raise NotImplementedError

    def restore(self, directory: Path, saved: dict, progress: Progress) -> dict:
        """Replace the service's state with the saved one; returns the counts it found."""
        raise NotImplementedError

    @staticmethod
    def summary(saved: dict) -> str:
        """One line on what the manifest entry holds."""
        return saved.get("summary", "")


# --- Elasticsearch -------------------------------------------------------------------------


class ElasticsearchPart(Part):
    """A snapshot of the prefix's indices (and aliases) in a filesystem repository."""

    def __init__(self, url: str, prefix: str, repository: str = ES_REPOSITORY):
        super().__init__("elasticsearch")
        from elasticsearch import Elasticsearch

        self.url = url
        self.prefix = prefix
        self.repository = repository
        self.client = Elasticsearch([u.strip() for u in url.split(",") if u.strip()],
                                    request_timeout=120, max_retries=3, retry_on_timeout=True)

    def describe(self) -> str:
        return f"Elasticsearch {_redact(self.url)}: indices {self.prefix}-* and their aliases"

    def _ensure_repository(self, location: str | None = None) -> str:
        """Register the repository (at ``location``, else under the nodes' common
        ``path.repo``); returns its location."""
        if location is None:
            info = self.client.nodes.info(metric="settings",
                                          filter_path="nodes.*.name,nodes.*.settings.path.repo")
            repos = {}
            for node in info.body.get("nodes", {}).values():
                paths = node.get("settings", {}).get("path", {}).get("repo")
                repos[node["name"]] = [paths] if isinstance(paths, str) else list(paths or [])
            common = set.intersection(*(set(p) for p in repos.values())) if repos else set()
            if not common:
                missing = sorted(n for n, p in repos.items() if not p) or sorted(repos)
                raise BackupError(
                    f"no snapshot directory shared by every Elasticsearch node (nodes "
                    f"without one in common: {', '.join(missing)}): set `path.repo: [DIR]` in "
                    f"each node's elasticsearch.yml to one directory they all reach (shared "
                    f"storage on several machines) and restart them; scripts/services.sh "
                    f"does this (ES_SNAPSHOT_DIR)")
            location = str(Path(sorted(common)[0]) / self.repository)
        self.client.snapshot.create_repository(
            name=self.repository, repository={"type": "fs", "settings": {"location": location}})
        return location

    def _indices(self) -> list[str]:
        found = self.client.options(ignore_status=404).indices.get(
            index=f"{self.prefix}-*", expand_wildcards="open")
        return sorted(found.body) if found.meta.status == 200 else []

    def _docs(self, indices: list[str]) -> int:
        counts = self.client.count(index=",".join(indices)) if indices else {"count": 0}
        return int(counts["count"])

    def backup(self, directory: Path, progress: Progress) -> dict:
        location = self._ensure_repository()
        indices = self._indices()
        if not indices:
            raise BackupError(f"no index {self.prefix}-* in {_redact(self.url)}: nothing to "
                              f"snapshot (check ES_INDEX_PREFIX)")
        self.client.indices.refresh(index=",".join(indices))
        docs = self._docs(indices)
        snapshot = f"{self.prefix}-{datetime.now(UTC):%Y%m%d-%H%M%S-%f}"
        progress(f"elasticsearch: snapshot {snapshot} of {', '.join(indices)} ({docs:,} docs) "
                 f"to repository {self.repository} at {location}")
        self.client.snapshot.create(repository=self.repository, snapshot=snapshot,
                                    indices=",".join(indices), include_global_state=False,
                                    wait_for_completion=False)
        self._wait_snapshot(snapshot, progress)
        aliases = self.client.indices.get_alias(index=",".join(indices)).body
        return {
            "repository": self.repository, "location": location, "snapshot": snapshot,
            "indices": indices, "docs": docs,
            "aliases": {i: sorted(a.get("aliases", {})) for i, a in aliases.items()},
            "summary": f"snapshot {snapshot}: {len(indices)} index(es), {docs:,} docs, "
                       f"repository {self.repository} at {location}",
        }

    def _wait_snapshot(self, snapshot: str, progress: Progress) -> None:
        deadline = time.monotonic() + WAIT_S
        last = ""
        while True:
            info = self.client.snapshot.get(repository=self.repository, snapshot=snapshot)
            state = info["snapshots"][0]["state"]
            if state == "SUCCESS":
                shards = info["snapshots"][0]["shards"]
                progress(f"elasticsearch: snapshot done, {shards['successful']}/"
                         f"{shards['total']} shards")
                return
            if state in ("FAILED", "PARTIAL", "INCOMPATIBLE"):
                raise BackupError(f"snapshot {snapshot} ended {state}: "
                                  f"{info['snapshots'][0].get('failures')}")
            status = self.client.snapshot.status(repository=self.repository, snapshot=snapshot)
            stats = status["snapshots"][0]["shards_stats"] if status["snapshots"] else {}
            line = f"elasticsearch: {stats.get('done', 0)}/{stats.get('total', '?')} shards"
            if line != last:
                progress(line)
                last = line
            if time.monotonic() > deadline:
                raise BackupError(f"snapshot {snapshot} not done after {WAIT_S:.0f} s "
                                  f"(state {state}); see the master node's log")
            time.sleep(0.5)

    def restore(self, directory: Path, saved: dict, progress: Progress) -> dict:
        self.repository = saved["repository"]
        self._ensure_repository(saved["location"])
        existing = self._indices()
        if existing:
            progress(f"elasticsearch: deleting the live {', '.join(existing)}")
            self.client.indices.delete(index=",".join(existing))
        progress(f"elasticsearch: restoring {', '.join(saved['indices'])} from "
                 f"{saved['snapshot']}")
        # one request that returns when every restored shard is; never re-sent (a second
        # restore of the same indices would fail while the first runs)
        self.client.options(request_timeout=WAIT_S, max_retries=0).snapshot.restore(
            repository=self.repository, snapshot=saved["snapshot"],
            indices=",".join(saved["indices"]), include_aliases=True,
            include_global_state=False, wait_for_completion=True)
        self.client.options(request_timeout=WAIT_S + 30).cluster.health(
            index=",".join(saved["indices"]), wait_for_status="yellow", timeout=f"{WAIT_S:.0f}s")
        docs = self._docs(saved["indices"])
        progress(f"elasticsearch: {docs:,} docs searchable again")
        return {"docs": docs}


# --- Redis ---------------------------------------------------------------------------------


class RedisPart(Part):
    """An RDB copy of one Redis server (every database in it) taken by ``BGSAVE``."""

    def __init__(self, url: str, number: int = 0):
        super().__init__("redis" if number == 0 else f"redis-{number}")
        from redis import Redis

        self.url = url
        self.number = number
        self.client = Redis.from_url(url, socket_timeout=WAIT_S)

    def describe(self) -> str:
        return f"Redis {_redact(self.url)}: every key of the server (FLUSHALL on restore)"

    def _keys(self) -> dict[str, int]:
        return {db: int(v["keys"]) for db, v in self.client.info("keyspace").items()}

    def backup(self, directory: Path, progress: Progress) -> dict:
        persistence = self.client.info("persistence")
        before = (self.client.lastsave(), persistence.get("rdb_saves"))
        keys = self._keys()
        progress(f"{self.name}: BGSAVE on {_redact(self.url)} ({sum(keys.values()):,} keys)")
        deadline = time.monotonic() + WAIT_S
        while True:  # one already running would not see what was written since it forked
            try:
                self.client.bgsave(schedule=True)  # after an AOF rewrite under way
                break
            except Exception as exc:
                if "in progress" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        while True:
            persistence = self.client.info("persistence")
            after = (self.client.lastsave(), persistence.get("rdb_saves"))
            if not persistence["rdb_bgsave_in_progress"] and after != before:
                break
            if time.monotonic() > deadline:
                raise BackupError(f"BGSAVE on {_redact(self.url)} not done after "
                                  f"{WAIT_S:.0f} s; see the Redis log")
            time.sleep(0.1)
        if persistence["rdb_last_bgsave_status"] != "ok":
            raise BackupError(f"BGSAVE on {_redact(self.url)} failed: see the Redis log "
                              f"(disk full? the directory not writable?)")
        config = self.client.config_get("dir")
        config.update(self.client.config_get("dbfilename"))
        source = Path(config["dir"]) / config["dbfilename"]
        target = directory / "redis" / f"{self.number}.rdb"
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(source, "rb") as rdb, open(target, "wb") as out:
                shutil.copyfileobj(rdb, out)  # the open file stays whole if a save replaces it
        except FileNotFoundError as exc:
            raise BackupError(f"the RDB file {source} of {_redact(self.url)} is not on this "
                              f"machine: run the backup on the Redis host") from exc
        size = target.stat().st_size
        progress(f"{self.name}: copied {source} ({human_bytes(size)})")
        return {
            "url": _redact(self.url), "file": str(target.relative_to(directory)),
            "keys": keys, "bytes": size,
            "summary": f"{_redact(self.url)}: {sum(keys.values()):,} keys, "
                       f"{human_bytes(size)} RDB",
        }

    def restore(self, directory: Path, saved: dict, progress: Progress) -> dict:
        from redis import Redis

        from operations.ports import free_port

        rdb = directory / saved["file"]
        if shutil.which("redis-server") is None:
            raise BackupError("restoring Redis needs redis-server on this machine, to read "
                              "the RDB file: run scripts/install-services.sh")
        with tempfile.TemporaryDirectory(prefix="websearch-restore-") as tmp:
            shutil.copy(rdb, Path(tmp) / "dump.rdb")
            port = free_port()
            server = subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", tmp,
                 "--dbfilename", "dump.rdb", "--appendonly", "no", "--save", ""],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                source = Redis(port=port, socket_timeout=WAIT_S)
                self._wait_loaded(source, server)
                progress(f"{self.name}: FLUSHALL on {_redact(self.url)}, then copying the "
                         f"saved keys")
                self.client.flushall()
                for db in (int(name[2:]) for name in source.info("keyspace")):
                    self._copy(Redis(port=port, db=db, socket_timeout=WAIT_S), db, progress)
            finally:
                server.terminate()
                server.wait(30)
        keys = self._keys()
        return {"keys": keys}

    @staticmethod
    def _wait_loaded(source, server: subprocess.Popen) -> None:
        deadline = time.monotonic() + WAIT_S
        while True:
            if server.poll() is not None:
                raise BackupError("the saved RDB file could not be loaded (a redis-server "
                                  "older than the one that wrote it?)")
            try:
                if not int(source.info("persistence")["loading"]):
                    return
            except Exception:  # not listening yet, or still loading
                pass
            if time.monotonic() > deadline:
                raise BackupError("the saved RDB file did not load in time")
            time.sleep(0.1)

    def _copy(self, source, db: int, progress: Progress) -> None:
        from redis import Redis

        # the URL's own database number gives way to the saved one's
        target = Redis.from_url(urlunsplit(urlsplit(self.url)._replace(path=f"/{db}")),
                                socket_timeout=WAIT_S)
        batch: list[bytes] = []
        copied = 0

        def flush() -> int:
            read = source.pipeline(transaction=False)
            for key in batch:
                read.dump(key)
                read.pttl(key)
            values = read.execute()
            write = target.pipeline(transaction=False)
            n = 0
            for key, payload, ttl in zip(batch, values[::2], values[1::2], strict=True):
                if payload is None or ttl == -2:
                    continue  # expired while copying
                write.restore(key, max(ttl, 0), payload, replace=True)
                n += 1
            write.execute()
            batch.clear()
            return n

        for key in source.scan_iter(count=1000):
            batch.append(key)
            if len(batch) == 500:
                copied += flush()
                if copied % 50_000 < 500:
                    progress(f"{self.name}: db {db}: {copied:,} keys")
        if batch:
            copied += flush()
        progress(f"{self.name}: db {db}: {copied:,} keys restored")


# --- the control database ------------------------------------------------------------------


class DatabasePart(Part):
    """The Django database: SQLite's online backup, or ``pg_dump``/``pg_restore``."""

    def __init__(self, alias: str = "default"):
        super().__init__("database")
        from django.db import connections

        self.connection = connections[alias]
        self.settings = self.connection.settings_dict
        self.vendor = self.connection.vendor
        if self.vendor not in ("sqlite", "postgresql"):
            raise BackupError(f"backing up a {self.vendor} database is not supported: use "
                              f"SQLite or PostgreSQL (DATABASE_URL)")

    def describe(self) -> str:
        if self.vendor == "sqlite":
            return f"control database (SQLite {self.settings['NAME']})"
        return (f"control database (PostgreSQL {self.settings['NAME']} on "
                f"{self.settings['HOST']}:{self.settings['PORT']})")

    def rows(self) -> dict[str, int]:
        """Rows of every table Django manages (what a restore is checked against)."""
        from django.apps import apps

        with self.connection.cursor() as cursor:
            tables = set(self.connection.introspection.table_names(cursor))
            counts = {}
            for model in apps.get_models(include_auto_created=True):
                table = model._meta.db_table
                if table in tables and table not in counts:
                    cursor.execute(f'SELECT COUNT(*) FROM "{table}"')
                    counts[table] = cursor.fetchone()[0]
        return counts

    def _pg(self, program: str, *args: str) -> None:
        binary = _pg_binary(program)
        env = dict(os.environ, PGPASSWORD=str(self.settings.get("PASSWORD") or ""))
        command = [binary, "-h", str(self.settings.get("HOST") or "127.0.0.1"),
                   "-p", str(self.settings.get("PORT") or 5432),
                   "-U", str(self.settings.get("USER") or ""), *args]
        result = subprocess.run(command, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise BackupError(f"{program} failed: {result.stderr.strip()[-2000:]}")

    def backup(self, directory: Path, progress: Progress) -> dict:
        rows = self.rows()
        target = directory / "database"
        target.mkdir(parents=True, exist_ok=True)
        if self.vendor == "sqlite":
            file = target / "db.sqlite3"
            progress(f"database: SQLite online backup of {self.settings['NAME']}")
            with sqlite3.connect(self.settings["NAME"]) as src, sqlite3.connect(file) as dst:
                src.backup(dst)
        else:
            file = target / "control.pgdump"
            progress(f"database: pg_dump of {self.settings['NAME']}")
            self._pg("pg_dump", "--format=custom", "--no-owner", "--file", str(file),
                     str(self.settings["NAME"]))
        size = file.stat().st_size
        return {
            "vendor": self.vendor, "file": str(file.relative_to(directory)), "rows": rows,
            "summary": f"{self.vendor}: {len(rows)} tables, {sum(rows.values()):,} rows, "
                       f"{human_bytes(size)}",
        }

    def restore(self, directory: Path, saved: dict, progress: Progress) -> dict:
        if saved["vendor"] != self.vendor:
            raise BackupError(f"the backup holds a {saved['vendor']} database and this one "
                              f"is {self.vendor}: restore with the DATABASE_URL it was made with")
        file = directory / saved["file"]
        self.connection.close()
        if self.vendor == "sqlite":
            progress(f"database: SQLite backup into {self.settings['NAME']}")
            Path(self.settings["NAME"]).parent.mkdir(parents=True, exist_ok=True)
            with sqlite3.connect(file) as src, sqlite3.connect(self.settings["NAME"]) as dst:
                src.backup(dst)
        else:
            progress(f"database: pg_restore --clean into {self.settings['NAME']}")
            self._pg("pg_restore", "--clean", "--if-exists", "--no-owner",
                     "--single-transaction", "-d", str(self.settings["NAME"]), str(file))
        return {"rows": self.rows()}


def _pg_binary(program: str) -> str:
    """The newest ``program`` of Debian's PostgreSQL packages, else the one on PATH."""
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{program}"),
                   key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    if found:
        return str(found[-1])
    on_path = shutil.which(program)
    if on_path is None:
        raise BackupError(f"{program} not found: install the PostgreSQL client "
                          f"(scripts/install-services.sh)")
    return on_path


# --- the whole backup -----------------------------------------------------------------------

BACKUP_PARTS = ("database", "redis", "elasticsearch")


def parts_for(config, es_prefix: str, only: set[str] | None = None,
              skipped: list[str] | None = None) -> list[Part]:
    """The parts the configuration has (``only``: some of ``BACKUP_PARTS``); a part that is
    not configured is named in ``skipped`` with the reason."""
    skipped = [] if skipped is None else skipped
    wanted = set(BACKUP_PARTS) if not only else only
    parts: list[Part] = []
    # The frontier before the index: a page fetched between the two is then in the index
    # and still queued (fetched again, indexed over itself), never marked done but missing.
    if "database" in wanted:
        parts.append(DatabasePart())
    if "redis" in wanted:
        urls = list(dict.fromkeys(u for u in (config.redis_url, *config.frontier_redis_urls)
                                  if u))
        if urls:
            parts.extend(RedisPart(url, n) for n, url in enumerate(urls))
        else:
            skipped.append("redis: REDIS_URL is not set (the local frontier lives in "
                           "DATA_DIR: copy it with the crawl stopped)")
    if "elasticsearch" in wanted:
        if config.elasticsearch_url:
            parts.append(ElasticsearchPart(config.elasticsearch_url, es_prefix))
        else:
            skipped.append("elasticsearch: ELASTICSEARCH_URL is not set (the embedded index "
                           "lives in DATA_DIR: copy it with the crawl stopped)")
    return parts


def backup(directory: Path, parts: list[Part], progress: Progress) -> dict:
    """Back up every part into ``directory`` (made; it must be new or empty) and write its
    manifest, last; returns the manifest. A backup that fails leaves no directory behind
    (a snapshot already taken stays in the repository)."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise BackupError(f"{directory} is not an empty directory: give a new one")
    directory.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"version": 1, "created": datetime.now(UTC).isoformat(),
                                "parts": {}}
    try:
        for part in parts:
            started = time.monotonic()
            saved = part.backup(directory, progress)
            saved["seconds"] = round(time.monotonic() - started, 2)
            manifest["parts"][part.name] = saved
        manifest["bytes"] = _size(directory)
        (directory / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return manifest


def read_manifest(directory: Path) -> dict:
    """The manifest of the backup in ``directory``; a clear error when it is none."""
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise BackupError(f"{path} not found: give the directory a backup was written to "
                          f"(scripts/backup.sh prints it)") from exc
    except json.JSONDecodeError as exc:
        raise BackupError(f"{path} is not a backup manifest ({exc})") from exc
    if manifest.get("version") != 1 or "parts" not in manifest:
        raise BackupError(f"{path} is not a backup manifest of this project")
    return manifest


def expected(name: str, saved: dict) -> dict:
    """What a restore of the part ``name`` must find again."""
    if name == "elasticsearch":
        return {"docs": saved["docs"]}
    if name.startswith("redis"):
        return {"keys": saved["keys"]}
    return {"rows": saved["rows"]}


def restore(directory: Path, manifest: dict, parts: list[Part],
            progress: Progress) -> list[tuple[str, bool | None, str]]:
    """Restore every part of ``parts`` that the backup holds; returns, per part, whether it
    found the counts the backup recorded (``None``: not in the backup) and a line saying
    what. Counts taken while something wrote differ a little from what was saved."""
    results: list[tuple[str, bool | None, str]] = []
    for part in parts:
        saved = manifest["parts"].get(part.name)
        if saved is None:
            results.append((part.name, None, "not in this backup: left as it is"))
            continue
        found = part.restore(directory, saved, progress)
        want = expected(part.name, saved)
        if found == want:
            results.append((part.name, True, part.summary(saved)))
        else:
            results.append((part.name, False, f"found {found}, the backup recorded {want}"))
    return results
