"""The one place that reads the process environment.

Every other module gets service locations from here (Scrapy settings, Django settings,
the Celery app, scripts). Unset means embedded: local frontier, embedded index, SQLite,
in-process ranking (SciPy; ``PAGERANK_ENGINE=spark`` and ``SPARK_MASTER`` move it to Spark).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Config:
    """Service locations; ``None`` means use the embedded implementation."""

    data_dir: Path
    redis_url: str | None = None
    elasticsearch_url: str | None = None
    database_url: str | None = None
    celery_broker_url: str | None = None
    #: The frontier's Redis primaries, partitioned by host hash; empty = ``redis_url`` alone.
    frontier_redis_urls: tuple[str, ...] = ()
    #: The web UI is served over HTTPS (``WEB_HTTPS``): redirects, HSTS, secure cookies.
    web_https: bool = False
    #: Reverse proxies (CIDRs) whose ``X-Forwarded-For`` the web UI believes.
    web_trusted_proxies: tuple[str, ...] = ()
    #: Log lines as JSON objects (``LOG_FORMAT=json``) instead of text.
    log_json: bool = False
    #: ``PAGERANK_ENGINE``: ``scipy`` or ``spark``; ``None`` = ``RankSettings``' default.
    pagerank_engine: str | None = None
    #: ``SPARK_MASTER``: the Spark master URL of the ranking batch; ``None`` = its default.
    spark_master: str | None = None
    #: What any run on this machine may reuse (a model decompressed once):
    #: ``$XDG_CACHE_HOME/websearch``, else ``~/.cache/websearch``; ``None`` = nothing kept.
    cache_dir: Path | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Config:
        """Build from ``environ`` (default ``os.environ``); empty values count as unset."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        redis_url = get("REDIS_URL")
        return cls(
            data_dir=Path(get("DATA_DIR") or "data").resolve(),
            redis_url=redis_url,
            elasticsearch_url=get("ELASTICSEARCH_URL"),
            database_url=get("DATABASE_URL"),
            celery_broker_url=get("CELERY_BROKER_URL") or redis_url,
            frontier_redis_urls=_url_list(get("FRONTIER_REDIS_URLS")),
            web_https=(get("WEB_HTTPS") or "").lower() in ("1", "true", "yes", "on"),
            web_trusted_proxies=_url_list(get("WEB_TRUSTED_PROXIES")),
            log_json=(get("LOG_FORMAT") or "text").lower() == "json",
            pagerank_engine=get("PAGERANK_ENGINE"),
            spark_master=get("SPARK_MASTER"),
            cache_dir=_cache_dir(get("XDG_CACHE_HOME"), get("HOME")),
        )

    @property
    def distributed(self) -> bool:
        """True when the frontier is shared through Redis."""
        return self.redis_url is not None or bool(self.frontier_redis_urls)

    @property
    def frontier_urls(self) -> tuple[str, ...]:
        """The Redis URLs of the frontier's partitions (none: the local frontier)."""
        if self.frontier_redis_urls:
            return self.frontier_redis_urls
        return (self.redis_url,) if self.redis_url else ()

    def path(self, *parts: str) -> Path:
        """A path under ``data_dir``, its parent directory created."""
        p = self.data_dir.joinpath(*parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p


def _cache_dir(xdg_cache_home: str | None, home: str | None) -> Path | None:
    base = xdg_cache_home or (str(Path(home) / ".cache") if home else None)
    return Path(base) / "websearch" if base else None


def _url_list(value: str | None) -> tuple[str, ...]:
    return tuple(u for u in (value or "").replace(",", " ").split() if u)


def get_config() -> Config:
    """The configuration of this process, read from the environment when called."""
    return Config.from_env()


def config_from_settings(settings) -> Config:
    """The configuration a Scrapy crawler runs with: ``-s DATA_DIR=...`` etc. win over the
    environment, so one process can run several isolated crawls (tests do)."""
    base = get_config()
    data_dir = settings.get("DATA_DIR")
    return Config(
        data_dir=Path(data_dir).resolve() if data_dir else base.data_dir,
        redis_url=settings.get("REDIS_URL") or base.redis_url,
        elasticsearch_url=settings.get("ELASTICSEARCH_URL") or base.elasticsearch_url,
        database_url=base.database_url,
        celery_broker_url=base.celery_broker_url,
        frontier_redis_urls=(
            tuple(settings.getlist("FRONTIER_REDIS_URLS")) or base.frontier_redis_urls
        ),
        pagerank_engine=base.pagerank_engine,
        spark_master=base.spark_master,
        cache_dir=base.cache_dir,
    )
