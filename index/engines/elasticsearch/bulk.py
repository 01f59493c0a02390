"""Lossless bulk streaming to Elasticsearch: batches, backpressure, retries, disk spool.

Writers hand whole bulk actions (action line + source line) to :class:`BulkWriter`, which
sends them from one background thread in batches closed by count, bytes or age. Memory is
bounded: ``add`` blocks while more than ``queue_bytes`` wait (backpressure on the crawl).

Nothing is lost while the cluster is away: a batch that still fails after ``max_retries``
(connection refused, 429, 5xx) is written to a spool file under ``spool_dir`` and later
batches go straight to the spool; every ``probe_interval_s`` the writer checks the cluster
and, once it answers, replays the spool files in order before sending anything new.

Nothing doubles either: documents are addressed by id, so a replay overwrites rather than
adds, and every action carries an external version (microseconds at ``add``), so an old
action replayed after a newer one is refused by Elasticsearch with a version conflict,
which counts as done.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout
from elasticsearch import ApiError, Elasticsearch

__all__ = ["BulkWriter", "Stats", "action_version"]

logger = logging.getLogger(__name__)

# Item statuses worth sending again: throttled or the cluster not (yet) able to take it.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_last_version = 0
_version_lock = threading.Lock()


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def action_version() -> int:
    """A strictly increasing external version for this process: microseconds since the epoch."""
    global _last_version
    with _version_lock:
        _last_version = max(_last_version + 1, time.time_ns() // 1000)
        return _last_version


class Stats:
    """Counters under hierarchical keys (``index/bulk/sent``), optionally mirrored to Scrapy's."""

    def __init__(self, crawler_stats=None):
        self.values: dict[str, int] = {}
        self.crawler_stats = crawler_stats
        self._lock = threading.Lock()

    def inc(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.values[key] = self.values.get(key, 0) + n
        if self.crawler_stats is not None:
            self.crawler_stats.inc_value(key, n)

    def get(self, key: str) -> int:
        return self.values.get(key, 0)

    def max(self, key: str, value: int) -> None:
        """Keep the largest ``value`` seen under ``key``."""
        with self._lock:
            self.values[key] = max(self.values.get(key, value), value)
        if self.crawler_stats is not None:
            self.crawler_stats.max_value(key, value)


@dataclass
class _Action:
    lines: bytes  # the action line and, except for deletes, the source line; newline-ended
    doc_id: str


class _Unavailable(Exception):
    """The cluster did not take a batch after every retry."""


class BulkWriter:
    """Sends bulk actions in the background; loses none, doubles none (see module doc)."""

    def __init__(
        self,
        client: Elasticsearch,
        spool_dir: str | os.PathLike,
        *,
        max_docs: int = 500,
        max_bytes: int = 5_000_000,
        interval_s: float = 1.0,
        queue_bytes: int = 50_000_000,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        probe_interval_s: float = 2.0,
        request_timeout_s: float = 60.0,
        stats: Stats | None = None,
        on_error: Callable[[dict], None] | None = None,
        on_reconnect: Callable[[], None] | None = None,
    ):
        self.client = client
        self.spool_dir = Path(spool_dir)
        self.max_docs = max_docs
        self.max_bytes = max_bytes
        self.interval_s = interval_s
        self.queue_bytes = queue_bytes
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.probe_interval_s = probe_interval_s
        self.request_timeout_s = request_timeout_s
        self.stats = stats or Stats()
        self.on_error = on_error
        self.on_reconnect = on_reconnect
        self._queue: deque[_Action] = deque()
        self._queued_bytes = 0
        self._busy = False
        self._flush_requested = False
        self._closed = False
        self._down_since: float | None = None
        self._last_probe = 0.0
        self._spool_seq = 0
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    # --- producer side --------------------------------------------------------------

    def add(self, action: dict, source: dict | None = None) -> None:
        """Queue one bulk action (and its source); blocks while the queue is full."""
        line = json.dumps(action, separators=(",", ":"))
        if source is not None:
            line += "\n" + json.dumps(source, ensure_ascii=False, separators=(",", ":"))
        meta = next(iter(action.values()))
        item = _Action((line + "\n").encode(), str(meta.get("_id", "")))
        with self._cond:
            if self._closed:
                raise RuntimeError("BulkWriter is closed; open a new backend to write.")
            self._start()
            blocked = time.monotonic()  # the longest wait of the caller (the crawl) for room
            while self._queued_bytes > self.queue_bytes and self._queue:
                self.stats.inc("index/bulk/backpressure_waits")
                self._cond.wait(1.0)
                self.stats.max("index/bulk/backpressure_longest_ms", _ms_since(blocked))
            self._queue.append(item)
            self._queued_bytes += len(item.lines)
            if len(self._queue) >= self.max_docs or self._queued_bytes >= self.max_bytes:
                self._cond.notify_all()

    def flush(self, timeout_s: float | None = None) -> bool:
        """Send everything queued (and the spool, if the cluster answers); True when sent.

        False means the cluster is down and the rest waits in the spool, or ``timeout_s``
        ran out.
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            if self._thread is None and not self._queue and not _spool_files(self.spool_dir):
                return True
            self._start()
            self._flush_requested = True
            self._last_probe = 0.0  # if the cluster was down, look again now
            self._cond.notify_all()
            while self._queue or self._busy or self._flush_requested:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(0.2 if remaining is None else min(0.2, remaining))
            return self._down_since is None

    def close(self, timeout_s: float | None = 60.0) -> None:
        """Flush what can be sent (the rest stays spooled for the next writer) and stop."""
        self.flush(timeout_s)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)

    @property
    def pending(self) -> int:
        """Actions queued in memory (not yet sent nor spooled)."""
        return len(self._queue)

    @property
    def spooled_files(self) -> int:
        """Spool files waiting to be replayed."""
        return len(_spool_files(self.spool_dir))

    @property
    def available(self) -> bool:
        """False while the cluster is unreachable and writes go to the spool."""
        return self._down_since is None

    # --- sender thread --------------------------------------------------------------

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="es-bulk", daemon=True)
            self._thread.start()

    def _take_batch(self) -> list[_Action]:
        batch: list[_Action] = []
        size = 0
        while self._queue and len(batch) < self.max_docs and size < self.max_bytes:
            item = self._queue.popleft()
            batch.append(item)
            size += len(item.lines)
        self._queued_bytes -= size
        return batch

    def _run(self) -> None:
        oldest = time.monotonic()
        while True:
            with self._cond:
                while True:
                    full = len(self._queue) >= self.max_docs or self._queued_bytes >= self.max_bytes
                    aged = self._queue and time.monotonic() - oldest >= self.interval_s
                    if full or aged or self._flush_requested or self._closed:
                        break
                    if self._down_since is not None and self._probe_due():
                        break
                    self._cond.wait(min(self.interval_s, self.probe_interval_s))
                if self._closed and not self._queue:
                    self._flush_requested = False
                    self._cond.notify_all()
                    return
                batch = self._take_batch()
                self._busy = True
                self._cond.notify_all()
            try:
                self._deliver(batch)
            except Exception:  # the sender must survive anything; the batch is spooled
                logger.exception("Elasticsearch bulk sender failed; spooling the batch")
                self._spool(batch)
            finally:
                oldest = time.monotonic()
                with self._cond:
                    self._busy = False
                    if not self._queue:
                        self._flush_requested = False
                    self._cond.notify_all()

    def _probe_due(self) -> bool:
        return time.monotonic() - self._last_probe >= self.probe_interval_s

    def _deliver(self, batch: list[_Action]) -> None:
        if self._down_since is not None:
            if not self._probe_due():
                self._spool(batch)
                return
            self._last_probe = time.monotonic()
            if not self._reachable():
                self._spool(batch)
                return
            if self.on_reconnect is not None:
                try:
                    self.on_reconnect()
                except (TransportConnectionError, ConnectionTimeout, ApiError):
                    logger.warning("Elasticsearch answers but is not ready yet", exc_info=True)
                    self._spool(batch)
                    return
        if not self._replay_spool():
            self._spool(batch)
            return
        if batch:
            try:
                self._send(batch)
            except _Unavailable:
                self._mark_down()
                self._spool(batch)

    def _reachable(self) -> bool:
        try:
            self.client.options(request_timeout=5, max_retries=0).cluster.health(timeout="1s")
        except (TransportConnectionError, ConnectionTimeout, ApiError):
            return False
        return True

    def mark_unavailable(self) -> None:
        """Treat the cluster as down: writes spool until a probe finds it back."""
        with self._cond:
            self._mark_down()

    def _mark_down(self) -> None:
        if self._down_since is None:
            self._down_since = time.monotonic()
            self._last_probe = self._down_since
            self.stats.inc("index/bulk/unavailable")
            logger.warning(
                "Elasticsearch is unreachable; spooling documents to %s until it is back",
                self.spool_dir,
            )

    def _send(self, batch: list[_Action]) -> None:
        """Send ``batch``; items refused for a transient reason are sent again with backoff.

        Raises ``_Unavailable`` with nothing lost when retries run out: the caller spools
        what it gave (resending items that did get in is harmless, see module doc).
        """
        todo = batch
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(min(self.backoff_s * 2 ** (attempt - 1), 30.0))
                self.stats.inc("index/bulk/retries")
            try:
                response = self.client.options(
                    request_timeout=self.request_timeout_s, max_retries=0
                ).bulk(operations=b"".join(a.lines for a in todo))
            except (TransportConnectionError, ConnectionTimeout):
                continue
            except ApiError as exc:
                if exc.meta.status in RETRY_STATUSES:
                    continue
                raise
            self.stats.inc("index/bulk/requests")
            todo = self._failed_items(todo, response.body.get("items", []))
            if not todo:
                return
        raise _Unavailable

    def _failed_items(self, sent: list[_Action], items: list[dict]) -> list[_Action]:
        """The actions to send again; counts the rest as done (or rejected for good)."""
        again = []
        for action, item in zip(sent, items, strict=True):
            op, result = next(iter(item.items()))
            status = result.get("status", 500)
            if status < 300 or status == 409 or (op == "delete" and status == 404):
                # 409: a newer version is already there (a replay, or reordered writes).
                self.stats.inc(f"index/bulk/{op}")
            elif status in RETRY_STATUSES or _blocked(result):
                again.append(action)
            else:
                self.stats.inc("index/bulk/rejected")
                logger.error("Elasticsearch rejected %s of %s: %s", op, action.doc_id, result)
                if self.on_error is not None:
                    self.on_error(result)
        return again

    # --- spool ----------------------------------------------------------------------

    def _spool(self, batch: list[_Action]) -> None:
        if not batch:
            return
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        self._spool_seq += 1
        name = f"{time.time_ns():020d}-{os.getpid()}-{self._spool_seq:06d}"
        tmp = self.spool_dir / f"{name}.tmp"
        with open(tmp, "wb") as f:
            f.writelines(a.lines for a in batch)
            f.flush()
            os.fsync(f.fileno())
        tmp.rename(self.spool_dir / f"{name}.ndjson")
        self.stats.inc("index/bulk/spooled", len(batch))

    def _replay_spool(self) -> bool:
        """Send every spool file, oldest first; False (and the cluster marked down) on failure."""
        for path in _spool_files(self.spool_dir):
            # Claim the file first: writers of several processes may share the spool.
            claimed = path.with_suffix(f".{os.getpid()}.claim")
            try:
                path.rename(claimed)
            except FileNotFoundError:
                continue
            batch = [_Action(lines, "") for lines in _pairs(claimed.read_bytes().splitlines(True))]
            for start in range(0, len(batch), self.max_docs):
                try:
                    self._send(batch[start : start + self.max_docs])
                except _Unavailable:
                    claimed.rename(path)
                    self._mark_down()
                    return False
            claimed.unlink()
            self.stats.inc("index/bulk/replayed", len(batch))
        if self._down_since is not None:
            logger.warning(
                "Elasticsearch is back after %.0f s; the spool is replayed",
                time.monotonic() - self._down_since,
            )
        self._down_since = None
        return True


def _spool_files(spool_dir: Path) -> list[Path]:
    """The spool files waiting to be replayed, oldest first; a file claimed by a process
    that died before sending it is free again."""
    if not spool_dir.is_dir():
        return []
    for claim in spool_dir.glob("*.claim"):
        if not _pid_alive(int(claim.suffixes[-2][1:])):
            claim.rename(claim.with_suffix("").with_suffix(".ndjson"))
    return sorted(spool_dir.glob("*.ndjson"))


def _blocked(result: dict) -> bool:
    """A write refused by an index write block: the index is being replaced (reindex), and
    sent again the write resolves the alias to the new index."""
    return result.get("error", {}).get("type") == "cluster_block_exception" and "write" in str(
        result["error"].get("reason", "")
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _pairs(lines: list[bytes]) -> list[bytes]:
    """Group spooled lines back into actions: a delete is one line, others two."""
    out = []
    i = 0
    while i < len(lines):
        action = json.loads(lines[i])
        if "delete" in action:
            out.append(lines[i])
            i += 1
        else:
            out.append(lines[i] + lines[i + 1])
            i += 2
    return out
