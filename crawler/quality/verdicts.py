"""What the crawl concluded about whole hosts: mirrors, spam, template traps.

The crawler writes one verdict per (host, kind); the dashboard, the URL inspector and the
admin read them (and an admin overrides a verdict with a host rule, ``HostRule.quality``).
Local: one SQLite file ``DATA_DIR/quality/<crawl>.sqlite3`` (several processes may share
it); distributed (``REDIS_URL``): the hash ``quality:<crawl>:verdicts``.

A mirror verdict also keeps the evidence a later election of each duplicate cluster's shown
page needs (``detail``: the original host, pages held, pages shared with the original, and
how many of the mirror's pages link to their twin on the original and the reverse).
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

from crawler import sqlitedb
from crawler.config import Config

#: Verdict kinds
MIRROR = "mirror"
SPAM = "spam"
TEMPLATE_TRAP = "template_trap"
KINDS = (MIRROR, SPAM, TEMPLATE_TRAP)

#: What the crawl did with a verdict -> how people read it
ACTIONS = {
    "budget_cut": "acted on: the host's crawl stopped, its pages out of the index",
    "pattern_dropped": "acted on: the patterns' URLs are no longer crawled",
    "overridden": "not acted on: a host rule says never judge this host (or trusted)",
    "dry_run": "not acted on: QUALITY_DRY_RUN is on",
    "lifted": "lifted: the host's later pages contradict it; crawled and indexed again",
}


@dataclass(frozen=True)
class Verdict:
    """One conclusion about ``host`` (a netloc, as the frontier keys hosts).

    ``kind`` is ``mirror`` (``of`` names the original host), ``spam`` or ``template_trap``
    (``detail["patterns"]`` lists the trapped URL patterns); ``score`` 0..1; ``confidence``
    0..1 how sure the judge is (``crawler.quality.share_confidence`` for spam); ``reasons``
    are lines for people, ``detail`` the evidence; ``action`` what the crawl did: one of
    ``ACTIONS``.
    """

    host: str
    kind: str
    score: float = 1.0
    of: str = ""
    reasons: tuple[str, ...] = ()
    action: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    updated: float = 0.0
    confidence: float = 1.0

    def to_json(self) -> str:
        data = asdict(self)
        data["reasons"] = list(self.reasons)
        return json.dumps(data, separators=(",", ":"), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str | bytes) -> Verdict:
        data = json.loads(raw)
        data["reasons"] = tuple(data.get("reasons", ()))
        return cls(**data)

    @property
    def acted(self) -> bool:
        """The crawl acts on it (a cut host, dropped patterns)."""
        return self.action in ("budget_cut", "pattern_dropped", "")

    @property
    def action_text(self) -> str:
        """What the crawl did with it, for people."""
        return ACTIONS.get(self.action, self.action)

    @property
    def label(self) -> str:
        """How the dashboard names it: ``mirror of site0.test``, ``spam``, ``template trap``."""
        if self.kind == MIRROR:
            return f"mirror of {self.of}"
        return self.kind.replace("_", " ")


class VerdictStore(ABC):
    """Host verdicts of one crawl, shared by its workers and read by the web UI."""

    @abstractmethod
    def put(self, verdict: Verdict) -> None:
        """Store (replace) the verdict of its (host, kind)."""

    @abstractmethod
    def for_host(self, host: str) -> list[Verdict]:
        """Every verdict about ``host`` (a netloc, or a host name matching any port)."""

    @abstractmethod
    def all(self) -> list[Verdict]:
        """Every verdict, newest first."""

    @abstractmethod
    def clear(self) -> None:
        """Forget every verdict."""

    def close(self) -> None:
        """Release resources; the verdicts stay."""

    @staticmethod
    def stamped(verdict: Verdict) -> Verdict:
        if verdict.updated:
            return verdict
        return Verdict(**{**asdict(verdict), "reasons": verdict.reasons,
                          "updated": time.time()})


def _matches(stored: str, host: str) -> bool:
    return stored == host or stored.split(":", 1)[0] == host


class LocalVerdictStore(VerdictStore):
    """Verdicts in a SQLite file (``None``: in memory)."""

    def __init__(self, path):
        self.db = sqlitedb.connect(path, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS verdicts (host TEXT NOT NULL, kind TEXT "
                        "NOT NULL, data TEXT NOT NULL, updated REAL NOT NULL, "
                        "PRIMARY KEY (host, kind))")

    def put(self, verdict: Verdict) -> None:
        verdict = self.stamped(verdict)
        self.db.execute("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?)",
                        (verdict.host, verdict.kind, verdict.to_json(), verdict.updated))

    def for_host(self, host: str) -> list[Verdict]:
        name = host.split(":", 1)[0]
        rows = self.db.execute("SELECT host, data FROM verdicts WHERE host = ? OR host LIKE ?",
                               (host, name + ":%")).fetchall()
        return [Verdict.from_json(data) for stored, data in rows if _matches(stored, host)]

    def all(self) -> list[Verdict]:
        return [Verdict.from_json(d) for (d,) in
                self.db.execute("SELECT data FROM verdicts ORDER BY updated DESC")]

    def clear(self) -> None:
        self.db.execute("DELETE FROM verdicts")

    def close(self) -> None:
        self.db.close()


class RedisVerdictStore(VerdictStore):
    """Verdicts in the Redis hash ``quality:<crawl>:verdicts`` (field ``host kind``)."""

    def __init__(self, client, crawl: str):
        self.redis = client
        self.key = f"quality:{crawl}:verdicts"

    def put(self, verdict: Verdict) -> None:
        verdict = self.stamped(verdict)
        self.redis.hset(self.key, f"{verdict.host} {verdict.kind}", verdict.to_json())

    def all(self) -> list[Verdict]:
        verdicts = [Verdict.from_json(v) for v in self.redis.hvals(self.key)]
        return sorted(verdicts, key=lambda v: -v.updated)

    def for_host(self, host: str) -> list[Verdict]:
        return [v for v in self.all() if _matches(v.host, host)]

    def clear(self) -> None:
        self.redis.delete(self.key)

    def close(self) -> None:
        self.redis.close()


def open_verdicts(config: Config, crawl: str) -> VerdictStore:
    """The crawl's verdict store: Redis when ``config.redis_url`` is set, else local."""
    if config.redis_url:
        import redis

        return RedisVerdictStore(redis.Redis.from_url(config.redis_url), crawl)
    return LocalVerdictStore(config.path("quality", f"{crawl}.sqlite3"))
