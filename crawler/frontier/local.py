"""The embedded frontier: one SQLite file in WAL mode plus a memory-mapped Bloom filter.

Memory stays bounded however long the frontier grows: queues live on disk and every
operation is an indexed query. Each call is one ``BEGIN IMMEDIATE`` transaction, so
several processes on one box may share the file and still get one lease per host.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from crawler import sqlitedb
from crawler.frontier.base import (
    HOST_AGE_S,
    HOST_WINDOW,
    ROBOTS_RANK,
    Entry,
    Frontier,
    FrontierOptions,
    HostState,
    Lease,
    Outcome,
    TierSelector,
    tier_of,
)
from crawler.frontier.bloom import LocalBloom

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    host TEXT NOT NULL,
    rank INTEGER NOT NULL,
    url TEXT NOT NULL,
    payload BLOB NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS entries_queue ON entries (host, rank, id);
CREATE TABLE IF NOT EXISTS hosts (
    host TEXT PRIMARY KEY,
    ip TEXT NOT NULL,
    next REAL NOT NULL DEFAULT 0,
    lease TEXT,
    added INTEGER NOT NULL DEFAULT 0,
    cut INTEGER,
    latency REAL NOT NULL DEFAULT 0,
    backoff INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS ready (
    host TEXT PRIMARY KEY,
    tier INTEGER NOT NULL,
    next REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS ready_tier ON ready (tier, next);
CREATE TABLE IF NOT EXISTS leases (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    entry_id INTEGER NOT NULL,
    ip TEXT NOT NULL,
    deadline REAL NOT NULL,
    owner TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS leases_deadline ON leases (deadline);
CREATE TABLE IF NOT EXISTS robots (
    host TEXT PRIMARY KEY,
    status INTEGER NOT NULL,
    body BLOB NOT NULL,
    expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS selector (tier INTEGER PRIMARY KEY, current REAL NOT NULL);
CREATE TABLE IF NOT EXISTS host_values (host TEXT PRIMARY KEY, value REAL NOT NULL);
CREATE TABLE IF NOT EXISTS waiting (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    host TEXT NOT NULL,
    rank REAL NOT NULL,
    url TEXT NOT NULL,
    payload BLOB NOT NULL,
    budget INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS waiting_queue ON waiting (host, rank, id);
"""


#: Host names bound in one ``IN (...)`` (SQLite allows 32,766 parameters since 3.32).
_IN_CHUNK = 500


class LocalFrontier(Frontier):
    """``Frontier`` on SQLite (``path``; ``None`` = in memory, for tests).

    Its options are ``FrontierOptions`` (``crawler.frontier.frontier_options(settings)``).
    """

    def __init__(self, path: Path | None, *, clock: Callable[[], float] = time.time,
                 **options: Any):
        """``options``: the fields of ``FrontierOptions``."""
        self._take_options(FrontierOptions(**options))
        self.path = path
        self.clock = clock
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlitedb.connect(path, synchronous="NORMAL", check_same_thread=False)
        self.db.executescript(SCHEMA)
        bloom_path = None if path is None else path.with_suffix(".bloom")
        self.bloom = LocalBloom(bloom_path, self.options.bloom_capacity, self.options.bloom_fpr)
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        # a poll asks every tier in one statement, each part on the (tier, next) index: the
        # reactor thread lets go of the GIL at each statement, and a writer thread holding
        # it then makes each one wait up to the switch interval
        self._eligible_sql = "SELECT " + ", ".join(
            f"EXISTS (SELECT 1 FROM ready WHERE tier = {t} AND next <= ?1)"
            for t in range(self.tiers))
        self._soonest_sql = "SELECT MIN(m) FROM (" + " UNION ALL ".join(
            f"SELECT MIN(next) AS m FROM ready WHERE tier = {t}"
            for t in range(self.tiers)) + ")"
        self.release_dead_owners()

    # -- helpers -----------------------------------------------------------------------

    def _tx(self):
        return _Transaction(self.db)

    def _inc(self, key: str, n: int = 1) -> None:
        if n:
            self.db.execute(
                "INSERT INTO counters VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = value + excluded.value",
                (key, n),
            )

    def _make_ready(self, host: str, next_time: float) -> None:
        """Put an unleased host in the ready set of its head entry's tier (or drop it)."""
        head = self.db.execute(
            "SELECT rank FROM entries WHERE host = ? ORDER BY rank, id LIMIT 1", (host,)
        ).fetchone()
        if head is None:
            self.db.execute("DELETE FROM ready WHERE host = ?", (host,))
            return
        self.db.execute(
            "INSERT OR REPLACE INTO ready VALUES (?, ?, ?)",
            (host, tier_of(head[0], self.tiers), next_time),
        )

    def _make_ready_each(self, hosts: Sequence[str]) -> None:
        """``_make_ready`` at its next-eligible time for each of ``hosts`` (unleased), in
        two statements."""
        for chunk in _chunks(hosts):
            marks = ", ".join("?" * len(chunk))
            self.db.execute(
                "INSERT OR REPLACE INTO ready (host, tier, next) SELECT host, MIN(MAX(CAST("
                "(SELECT MIN(rank) FROM entries AS e WHERE e.host = h.host) AS INTEGER), 0), "
                f"?), next FROM hosts AS h WHERE host IN ({marks}) "
                "AND EXISTS (SELECT 1 FROM entries AS e WHERE e.host = h.host)",
                [self.tiers - 1, *chunk])
            self.db.execute(
                f"DELETE FROM ready WHERE host IN ({marks}) "
                "AND NOT EXISTS (SELECT 1 FROM entries AS e WHERE e.host = ready.host)", chunk)

    def _inc_each(self, counts: dict[str, int]) -> None:
        """``_inc`` for each counter of ``counts`` in one statement."""
        rows = [(key, n) for key, n in counts.items() if n]
        if rows:
            self.db.execute(
                "INSERT INTO counters VALUES " + ", ".join(["(?, ?)"] * len(rows))
                + " ON CONFLICT(key) DO UPDATE SET value = value + excluded.value",
                [field for row in rows for field in row])

    # -- Frontier ----------------------------------------------------------------------

    def add(self, entries: Iterable[Entry]) -> dict[str, int]:
        counts = {"added": 0, "seen": 0, "budget": 0, "waiting": 0, "moved": 0}
        now = self.clock()
        # a batch is mostly links of one page, so mostly one host: each host's row is read
        # once and written back once, and the entries inserted in one statement
        # host -> [lease, next, added, cut, tier or None, pages on its waiting list or None]
        hosts: dict[str, list] = {}
        rows: list[tuple] = []
        entries = list(entries)
        with self._tx():
            # the seen filter's verdicts on the whole batch at once, in order
            new = iter(self.bloom.add_each([e.url for e in entries if e.filter]))
            kept, moves = [], []
            for e in entries:
                if e.filter and not next(new):
                    counts["seen"] += 1
                elif e.was is not None and not e.filter and e.budget is None:
                    moves.append(e)
                else:
                    kept.append(e)
            # the rows of the batch's hosts in one statement, not one each: a batch's
            # links reach dozens of hosts
            known = self._host_rows({e.host for e in kept})
            for e in kept:
                state = hosts.get(e.host)
                if state is None:
                    row = known.get(e.host)
                    if row is None:
                        # eligible from now on: a host's priority grows with the time it waits
                        self.db.execute("INSERT INTO hosts (host, ip, next) VALUES (?, ?, ?)",
                                        (e.host, e.ip or e.host, now))
                        self._inc("hosts")
                        row = (None, now, 0, None)
                        if self.robots_first and e.rank != ROBOTS_RANK:
                            scheme = e.url.split("://", 1)[0]
                            rows.append((e.host, ROBOTS_RANK,
                                         f"{scheme}://{e.host}/robots.txt", b""))
                    state = hosts[e.host] = [*row, None, None]
                if e.rank != ROBOTS_RANK:
                    budget = _min_budget(e.budget, state[3])
                    if budget is not None and state[2] >= budget:
                        self._refused(e, state, counts)
                        continue
                    # a copy of a page queued before (a re-push) takes no more of the budget
                    state[2] += e.filter or e.budget is not None
                rows.append((e.host, e.rank, e.url, e.payload))
                tier = tier_of(e.rank, self.tiers)
                if state[4] is None or tier < state[4]:
                    state[4] = tier
                counts["added"] += 1
            self.db.executemany(
                "INSERT INTO entries (host, rank, url, payload) VALUES (?, ?, ?, ?)", rows)
            self.db.executemany("UPDATE hosts SET added = ? WHERE host = ?",
                                [(state[2], host) for host, state in hosts.items()])
            self.db.executemany(
                "INSERT INTO ready VALUES (?, ?, ?) ON CONFLICT(host) DO UPDATE "
                "SET tier = MIN(tier, excluded.tier)",
                [(host, state[4], state[1]) for host, state in hosts.items()
                 if state[0] is None and state[4] is not None])
            # after the inserts: a page and its move up may come in one batch
            counts["moved"] = self._move(moves)
            self._inc("added", counts["added"])
            self._inc("moved", counts["moved"])
            self._inc("dropped/seen", counts["seen"])
            self._inc("dropped/budget", counts["budget"])
            self._inc("budget_waiting", counts["waiting"])
        return counts

    def _move(self, moves: Sequence[Entry]) -> int:
        """Move each entry's page, queued at rank ``was``, to the entry's rank and payload
        (its host waits in that rank's tier if not leased); count those found. None is
        queued as a copy: each copy was leased once more and dropped as stale, as many
        leases as fetches in the 10-site ``bench/realweb.py`` crawl."""
        moved = []
        for e in moves:
            if self.db.execute(
                    "UPDATE entries SET rank = ?, payload = ? WHERE id = (SELECT id FROM "
                    "entries WHERE host = ? AND rank = ? AND url = ? LIMIT 1)",
                    (e.rank, e.payload, e.host, e.was, e.url)).rowcount:
                moved.append((tier_of(e.rank, self.tiers), e.host))
        self.db.executemany("UPDATE ready SET tier = MIN(tier, ?) WHERE host = ?", moved)
        return len(moved)

    def _host_rows(self, hosts: set[str]) -> dict[str, tuple]:
        """host -> its ``(lease, next, added, cut)`` row, for those of ``hosts`` known."""
        rows: dict[str, tuple] = {}
        names = list(hosts)
        for start in range(0, len(names), _IN_CHUNK):
            chunk = names[start:start + _IN_CHUNK]
            for host, *row in self.db.execute(
                    "SELECT host, lease, next, added, cut FROM hosts WHERE host IN "
                    f"({', '.join('?' * len(chunk))})", chunk):
                rows[host] = tuple(row)
        return rows

    def _refused(self, e: Entry, state: list, counts: dict[str, int]) -> None:
        """A page over its host's budget: set aside on the host's waiting list when its own
        budget refused it (not a cut), pushing out the worst there when full; else dropped.
        ``state`` is the host's row in ``add``: the size of its waiting list is counted
        once per batch (a count per refused link was most of a batch's time once a big
        host's budget was spent)."""
        cut = state[3]
        if not self.budget_waiting or e.budget is None or (cut is not None and cut <= e.budget):
            counts["budget"] += 1
            return
        new = self.db.execute(
            "INSERT INTO waiting (host, rank, url, payload, budget) VALUES (?, ?, ?, ?, ?)",
            (e.host, e.rank, e.url, e.payload, e.budget)).lastrowid
        counts["waiting"] += 1
        if state[5] is None:
            (state[5],) = self.db.execute("SELECT COUNT(*) FROM waiting WHERE host = ?",
                                          (e.host,)).fetchone()
        else:
            state[5] += 1
        if state[5] > self.budget_waiting:
            (worst,) = self.db.execute(
                "SELECT id FROM waiting WHERE host = ? ORDER BY rank DESC, id DESC LIMIT 1",
                (e.host,)).fetchone()
            self.db.execute("DELETE FROM waiting WHERE id = ?", (worst,))
            state[5] -= 1
            counts["budget"] += 1
            counts["waiting"] -= worst == new

    def _promote(self, host: str) -> int:
        """Queue the best waiting pages of ``host`` while its budget has room; count them."""
        added, cut = self.db.execute("SELECT added, cut FROM hosts WHERE host = ?",
                                     (host,)).fetchone()
        moved = 0
        while True:
            row = self.db.execute(
                "SELECT id, rank, url, payload, budget FROM waiting WHERE host = ? "
                "ORDER BY rank, id LIMIT 1", (host,)).fetchone()
            if row is None or added >= _min_budget(row[4], cut):
                break
            self.db.execute("DELETE FROM waiting WHERE id = ?", (row[0],))
            self.db.execute("INSERT INTO entries (host, rank, url, payload) VALUES (?, ?, ?, ?)",
                            (host, *row[1:4]))
            added += 1
            moved += 1
        if moved:
            self.db.execute("UPDATE hosts SET added = ? WHERE host = ?", (added, host))
            self._inc("budget_promoted", moved)
        return moved

    def next_ready(self, n: int, ahead: float = 0.0) -> list[Lease]:
        leases: list[Lease] = []
        now = self.clock()
        by = now + ahead  # a host due by then is eligible now
        # Most polls find no host due (every host waits out its delay): they are answered
        # by a read, without the write transaction (and its commit) a lease takes.
        if not self._eligible_tiers(by):
            return leases
        with self._tx():
            selector = self._load_selector()
            picked = False
            waits = 0
            for _ in range(n * 3):
                if len(leases) >= n:
                    break
                tier = selector.pick(self._eligible_tiers(by))
                if tier is None:
                    break
                picked = True
                host = self._most_valuable(tier, by)
                lease = self._lease_host(host, now)
                if lease is None:
                    waits += 1
                    continue
                leases.append(lease)
            if picked:
                self._save_selector(selector)
            self._inc("leased", len(leases))
            self._inc("politeness_waits/ip", waits)
        return leases

    def _eligible_tiers(self, now: float) -> list[int]:
        """The tiers that hold a host eligible at ``now``, in order."""
        flags = self.db.execute(self._eligible_sql, (now,)).fetchone()
        return [t for t, eligible in enumerate(flags) if eligible]

    def due_in(self) -> float | None:
        (soonest,) = self.db.execute(self._soonest_sql).fetchone()
        return None if soonest is None else max(0.0, soonest - self.clock())

    def _most_valuable(self, tier: int, now: float) -> str:
        """The host of highest ``host_priority`` of the ``HOST_WINDOW`` hosts eligible
        longest in ``tier``."""
        (host,) = self.db.execute(
            "SELECT r.host FROM (SELECT host, next FROM ready WHERE tier = ? AND next <= ? "
            "ORDER BY next LIMIT ?) AS r LEFT JOIN host_values AS v ON v.host = r.host "
            "ORDER BY COALESCE(v.value, 1.0) * (1.0 + MAX(0.0, ? - r.next) / ?) DESC, r.next "
            "LIMIT 1", (tier, now, HOST_WINDOW, now, HOST_AGE_S)
        ).fetchone()
        return host

    def _lease_host(self, host: str, now: float) -> Lease | None:
        ip, latency, backoff = self.db.execute(
            "SELECT ip, latency, backoff FROM hosts WHERE host = ?", (host,)
        ).fetchone()
        if self.ip_limit > 0:
            (inflight,) = self.db.execute(
                "SELECT COUNT(*) FROM leases WHERE ip = ?", (ip,)
            ).fetchone()
            if inflight >= self.ip_limit:
                self.db.execute("UPDATE ready SET next = ? WHERE host = ?",
                                (now + self.ip_wait, host))
                return None
        head = self.db.execute(
            "SELECT id, rank, url, payload, attempts FROM entries WHERE host = ? "
            "ORDER BY rank, id LIMIT 1", (host,)
        ).fetchone()
        (due,) = self.db.execute("DELETE FROM ready WHERE host = ? RETURNING next",
                                 (host,)).fetchone()
        if head is None:
            return None
        entry_id, rank, url, payload, attempts = head
        lease_id = uuid.uuid4().hex
        deadline = now + self.lease_s
        self.db.execute("INSERT INTO leases VALUES (?, ?, ?, ?, ?, ?)",
                        (lease_id, host, entry_id, ip, deadline, self.owner))
        self.db.execute("UPDATE hosts SET lease = ? WHERE host = ?", (lease_id, host))
        return Lease(lease_id, host, str(entry_id), url, bytes(payload), rank, deadline,
                     attempts, latency, backoff, max(0.0, due - now))

    def _load_selector(self) -> TierSelector:
        selector = TierSelector(self.tiers)
        for tier, current in self.db.execute("SELECT tier, current FROM selector"):
            if tier < self.tiers:
                selector.current[tier] = current
        return selector

    def _save_selector(self, selector: TierSelector) -> None:
        self.db.executemany("INSERT OR REPLACE INTO selector VALUES (?, ?)",
                            list(enumerate(selector.current)))

    def done(self, lease: Lease, outcome: Outcome) -> bool:
        with self._tx():
            return self._done(lease, outcome)

    def done_many(self, reports: Sequence[tuple[Lease, Outcome]]) -> list[bool]:
        """Every report in one transaction (its ``BEGIN``/``COMMIT`` was 60% of a lone
        ``done``'s time), each kind of statement once for all of them (``_done_each``)."""
        if not reports:
            return []
        with self._tx():
            if len({lease.host for lease, _ in reports}) < len(reports):
                # a host twice (a stale report beside its new lease's): in order, one by one
                return [self._done(lease, outcome) for lease, outcome in reports]
            return self._done_each(reports)

    def _done_each(self, reports: Sequence[tuple[Lease, Outcome]]) -> list[bool]:
        """``_done`` for reports on distinct hosts in a fixed number of statements: the
        caller's thread lets go of the GIL at each statement, and a thread holding it then
        makes each one wait up to the switch interval (a reactor's report of ~18 leases
        made ~110 statements)."""
        now = self.clock()
        ids = [lease.id for lease, _ in reports]
        live: set[str] = set()
        for chunk in _chunks(ids):
            marks = ", ".join("?" * len(chunk))
            (found,) = self.db.execute(
                f"SELECT group_concat(id, ' ') FROM leases WHERE id IN ({marks})",
                chunk).fetchone()
            if found:
                live.update(found.split(" "))
                self.db.execute(f"DELETE FROM leases WHERE id IN ({marks})", chunk)
        answers = [lease.id in live for lease, _ in reports]
        kept = [report for report in reports if report[0].id in live]
        finished = [int(lease.entry_id) for lease, outcome in kept if not outcome.requeue]
        for chunk in _chunks(finished):
            self.db.execute(
                f"DELETE FROM entries WHERE id IN ({', '.join('?' * len(chunk))})", chunk)
        refunded = [lease.host for lease, outcome in kept
                    if not outcome.requeue and outcome.refund and not outcome.fetched]
        for host in refunded:
            self.db.execute("UPDATE hosts SET added = MAX(added - 1, 0) WHERE host = ?",
                            (host,))
            self._promote(host)
        self._inc_each({"stale_reports": len(reports) - len(kept), "done": len(finished),
                        "budget_refunded": len(refunded)})
        rows = []
        for lease, outcome in kept:
            delay, latency, backoff = self.politeness.next_delay(
                lease.latency, lease.backoff, outcome)
            # the delay runs from the response's arrival if a request went out
            rows.append((lease.host, now - outcome.age + delay if outcome.fetched else 0.0,
                         latency, backoff, outcome.ip or None))
        for chunk in _chunks(rows):
            values = ", ".join(["(?, ?, ?, ?, ?)"] * len(chunk))
            self.db.execute(
                "UPDATE hosts SET lease = NULL, next = MAX(next, v.column2), "
                "latency = v.column3, backoff = v.column4, ip = COALESCE(v.column5, ip) "
                f"FROM (VALUES {values}) AS v WHERE hosts.host = v.column1",
                [field for row in chunk for field in row])
        self._make_ready_each([lease.host for lease, _ in kept])
        return answers

    def _done(self, lease: Lease, outcome: Outcome) -> bool:
        """``done`` inside the caller's transaction."""
        delay, latency, backoff = self.politeness.next_delay(
            lease.latency, lease.backoff, outcome
        )
        if not self.db.execute("DELETE FROM leases WHERE id = ?", (lease.id,)).rowcount:
            self._inc("stale_reports")
            return False
        now = self.clock()
        if not outcome.requeue:
            self.db.execute("DELETE FROM entries WHERE id = ?", (int(lease.entry_id),))
            self._inc("done")
            if outcome.refund and not outcome.fetched:
                self.db.execute("UPDATE hosts SET added = MAX(added - 1, 0) WHERE host = ?",
                                (lease.host,))
                self._inc("budget_refunded")
                self._promote(lease.host)
        # one statement per report: the delay runs from the response's arrival if a
        # request went out
        (next_time,) = self.db.execute(
            "UPDATE hosts SET lease = NULL, next = MAX(next, ?), latency = ?, "
            "backoff = ?, ip = COALESCE(?, ip) WHERE host = ? RETURNING next",
            (now - outcome.age + delay if outcome.fetched else 0.0, latency, backoff,
             outcome.ip or None, lease.host),
        ).fetchone()
        self._make_ready(lease.host, next_time)
        return True

    def release_expired(self) -> int:
        now = self.clock()
        with self._tx():
            rows = self.db.execute(
                "SELECT id, host, entry_id FROM leases WHERE deadline < ?", (now,)
            ).fetchall()
            self._release(rows, now)
        self.bloom.sync_soon()  # called on a timer: bounds what a power cut can forget
        return len(rows)

    def release_dead_owners(self) -> int:
        """Release at once the leases of processes on this box that no longer run.

        A restarted single-box crawl resumes without waiting for the lease timeout; leases of
        live processes and of other boxes are left to expire.
        """
        box = socket.gethostname() + ":"
        with self._tx():
            rows = self.db.execute(
                "SELECT id, host, entry_id, owner FROM leases WHERE owner LIKE ?", (box + "%",)
            ).fetchall()
            dead = [row[:3] for row in rows if not _alive(int(row[3][len(box):] or 0))]
            self._release(dead, self.clock())
        return len(dead)

    def _release(self, rows, now: float) -> None:
        """Return the entries of these leases to their queues (dropping poison entries)."""
        for lease_id, host, entry_id in rows:
            self.db.execute("DELETE FROM leases WHERE id = ?", (lease_id,))
            self.db.execute("UPDATE entries SET attempts = attempts + 1 WHERE id = ?",
                            (entry_id,))
            row = self.db.execute("SELECT attempts FROM entries WHERE id = ?",
                                  (entry_id,)).fetchone()
            if row is not None and row[0] >= self.max_attempts:
                self.db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
                self._inc("dropped/lease_expired")
            (next_time,) = self.db.execute(
                "SELECT next FROM hosts WHERE host = ?", (host,)
            ).fetchone()
            self.db.execute("UPDATE hosts SET lease = NULL WHERE host = ?", (host,))
            self._make_ready(host, max(next_time, now))
        self._inc("expired", len(rows))

    def stats(self) -> dict[str, float]:
        now = self.clock()
        q = self.db.execute
        out: dict[str, float] = {k: v for k, v in q("SELECT key, value FROM counters")}
        out["queue_depth"] = q("SELECT COUNT(*) FROM entries").fetchone()[0]
        out["leases"] = q("SELECT COUNT(*) FROM leases").fetchone()[0]
        out["hosts_active"] = out["leases"]
        out["hosts_ready"] = q("SELECT COUNT(*) FROM ready WHERE next <= ?", (now,)).fetchone()[0]
        out["hosts_cooldown"] = q("SELECT COUNT(*) FROM ready WHERE next > ?",
                                  (now,)).fetchone()[0]
        out["waiting"] = q("SELECT COUNT(*) FROM waiting").fetchone()[0]
        out.setdefault("hosts", 0)
        return out

    def set_host_budget(self, host: str, budget: int) -> None:
        with self._tx():
            self.db.execute("UPDATE hosts SET cut = ? WHERE host = ?", (budget, host))
            row = self.db.execute("SELECT lease, next FROM hosts WHERE host = ?",
                                  (host,)).fetchone()
            if row is not None and self._promote(host) and row[0] is None:
                self._make_ready(host, row[1])

    def drop_queue(self, host: str) -> int:
        with self._tx():
            dropped = self.db.execute(
                "DELETE FROM entries WHERE host = ? AND id NOT IN "
                "(SELECT entry_id FROM leases WHERE host = ?)", (host, host)).rowcount
            self.db.execute("DELETE FROM waiting WHERE host = ?", (host,))
            row = self.db.execute("SELECT lease, next FROM hosts WHERE host = ?",
                                  (host,)).fetchone()
            if row is not None and row[0] is None:
                self._make_ready(host, row[1])
        return dropped

    def set_host_values(self, values: dict[str, float]) -> None:
        if not values:
            return
        with self._tx():
            self.db.executemany("INSERT OR REPLACE INTO host_values VALUES (?, ?)",
                                [(host, float(v)) for host, v in values.items()])

    def seen(self, urls: Sequence[str]) -> list[bool]:
        return [u in self.bloom for u in urls]

    def robots_get(self, host: str) -> tuple[int, bytes, float] | None:
        row = self.db.execute("SELECT status, body, expires FROM robots WHERE host = ?",
                              (host,)).fetchone()
        return None if row is None else (row[0], bytes(row[1]), row[2])

    def robots_set(self, host: str, status: int, body: bytes, expires_at: float) -> None:
        with self._tx():
            self.db.execute("INSERT OR REPLACE INTO robots VALUES (?, ?, ?, ?)",
                            (host, status, body, expires_at))

    def count(self, key: str, n: int = 1) -> None:
        with self._tx():
            self._inc(key, n)

    def host_state(self, host: str) -> HostState | None:
        row = self.db.execute(
            "SELECT next, lease, added, cut, latency, backoff FROM hosts WHERE host = ?", (host,)
        ).fetchone()
        if row is None:
            return None
        (queued,) = self.db.execute("SELECT COUNT(*) FROM entries WHERE host = ?",
                                    (host,)).fetchone()
        (waiting,) = self.db.execute("SELECT COUNT(*) FROM waiting WHERE host = ?",
                                     (host,)).fetchone()
        next_time, lease, added, cut, latency, backoff = row
        return HostState(host, queued, lease is not None, next_time, added, cut, latency,
                         backoff, waiting)

    def pending(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]

    def clear(self) -> None:
        with self._tx():
            for table in ("entries", "hosts", "ready", "leases", "robots", "counters",
                          "selector", "host_values", "waiting"):
                self.db.execute(f"DELETE FROM {table}")
        self.bloom.clear()

    def close(self) -> None:
        self.bloom.close()
        self.db.close()


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _chunks(items: Sequence) -> Iterable[Sequence]:
    """``items`` in slices of at most ``_IN_CHUNK``, for one ``IN (...)`` or ``VALUES``
    list each."""
    for start in range(0, len(items), _IN_CHUNK):
        yield items[start:start + _IN_CHUNK]


def _min_budget(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (rollback on error): one writer at a time."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type, exc, tb):
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")
        return False
