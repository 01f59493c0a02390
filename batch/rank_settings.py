"""The settings of a ranking run (``RANK_*``), read once for the in-process run, the Celery
tasks and the Spark engine."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawler.config import Config, get_config
from crawler.options import Option, convert, settings_to_options


@dataclass(frozen=True)
class RankSettings:
    """Settings of a ranking run; names are the ``RANK_*`` settings without the prefix, and
    their defaults are in crawler/settings.py (``from_settings``)."""

    alpha: float
    tol: float
    max_iter: int
    batch_size: int
    write_pause_s: float
    keep_versions: int
    seeds: tuple[str, ...]
    link_store: str
    index_backend: str
    interval_s: float
    #: ``scipy`` (one process, the default) or ``spark`` (``batch.spark``); the
    #: environment's ``PAGERANK_ENGINE`` applies when the setting is not given.
    engine: str
    #: Spark master URL (environment: ``SPARK_MASTER``); ``local[*]`` = this box's cores.
    spark_master: str
    #: Where a Spark run writes its graph and ranks as Parquet; empty = DATA_DIR/rank/spark.
    #: With a cluster master, storage that the driver and every executor see at that path.
    spark_dir: str
    spark_partitions: int
    spark_driver_memory: str
    #: Extra Spark configuration (``spark.executor.memory``, ...), as a mapping.
    spark_conf: Mapping[str, str] = field(default_factory=dict)

    ENGINES = ("scipy", "spark")

    def __post_init__(self) -> None:
        if self.engine not in self.ENGINES:
            raise ValueError(
                f"RANK_ENGINE (or PAGERANK_ENGINE) is {self.engine!r}; use one of {self.ENGINES}"
            )

    @classmethod
    def from_settings(cls, settings: Any, config: Config | None = None,
                      **overrides: Any) -> RankSettings:
        """Read ``RANK_ALPHA``, ``RANK_TOL``, ... from Django/Celery settings, a mapping or
        None (unset names: their defaults); ``overrides`` (field names) win. ``RANK_ENGINE``
        and ``RANK_SPARK_MASTER``, when the settings do not give them, come from the
        environment's ``PAGERANK_ENGINE`` and ``SPARK_MASTER`` (``config``, default
        ``get_config()``) before their defaults."""
        config = config or get_config()
        for option, value in (("engine", config.pagerank_engine),
                              ("spark_master", config.spark_master)):
            if value is not None and not _given(settings, "RANK_" + option.upper()):
                overrides.setdefault(option, value)
        return cls(**settings_to_options(settings, _SETTINGS, **overrides))

    def spark_workdir(self, config: Config, version: int) -> Path:
        """The directory of a Spark run's Parquet files for ``version``."""
        base = Path(self.spark_dir) if self.spark_dir else config.data_dir / "rank" / "spark"
        return base / f"v{version}"


def _given(settings: Any, name: str) -> bool:
    """Whether ``settings`` itself sets ``name`` (not only its default)."""
    if settings is None:
        return False
    if isinstance(settings, Mapping) or hasattr(settings, "getpriority"):
        return name in settings
    return hasattr(settings, name)


#: ``RANK_<FIELD>`` -> field of ``RankSettings`` and its kind.
_SETTINGS: dict[str, Option] = {
    "RANK_ALPHA": ("alpha", float),
    "RANK_TOL": ("tol", float),
    "RANK_MAX_ITER": ("max_iter", int),
    "RANK_BATCH_SIZE": ("batch_size", int),
    "RANK_WRITE_PAUSE_S": ("write_pause_s", float),
    "RANK_KEEP_VERSIONS": ("keep_versions", int),
    "RANK_SEEDS": ("seeds", lambda value: tuple(convert(value, list))),
    "RANK_LINK_STORE": ("link_store", str),
    "RANK_INDEX_BACKEND": ("index_backend", str),
    "RANK_INTERVAL_S": ("interval_s", float),
    "RANK_ENGINE": ("engine", str),
    "RANK_SPARK_MASTER": ("spark_master", str),
    "RANK_SPARK_DIR": ("spark_dir", str),
    "RANK_SPARK_PARTITIONS": ("spark_partitions", int),
    "RANK_SPARK_DRIVER_MEMORY": ("spark_driver_memory", str),
    "RANK_SPARK_CONF": ("spark_conf", dict),
}
