"""Run the project's `scrapy crawl web` as a subprocess, the way a user does."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from harness import ROOT

#: The test web listens on loopback addresses, which the SSRF guard refuses by default.
TESTWEB_NETWORKS = "127.0.0.0/8"

#: One ``'key': value`` pair of Scrapy's stats dump (an integer or a quoted string).
_STAT = re.compile(r"'([\w/.:-]+)': (\d+|'[^']*')")


def final_stats(log_text: str) -> dict[str, int | str]:
    """The stats Scrapy dumped when the crawl of ``log_text`` (a crawl log) closed: the last
    "Dumping Scrapy stats" block, integers and strings only (dates and floats are left out)."""
    dump = log_text[log_text.rindex("Dumping Scrapy stats"):]
    dump = dump[:dump.index("}") + 1]
    return {k: int(v) if v.isdigit() else v.strip("'") for k, v in _STAT.findall(dump)}


#: The repository's packages a crawl imports (the control store's Django app included).
CRAWL_PACKAGES = ("crawler", "spiders", "pipelines", "index", "webui")


def compile_project() -> None:
    """Compile the repository's ``CRAWL_PACKAGES`` to bytecode (``__pycache__``, ignored by
    git) as ``pip install`` compiles an installed package's modules, Scrapy's among them:
    in a checkout without it, under ``PYTHONDONTWRITEBYTECODE`` (or in a read-only one)
    every start of a crawl compiles each project module again, in the crawl process and
    in each extraction worker, a cost a crawler of an installed package never pays."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", *CRAWL_PACKAGES], cwd=ROOT,
                   check=True, capture_output=True, timeout=600)


def crawl_env(data_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a child process with its own DATA_DIR and no service URLs."""
    env = dict(os.environ)
    for name in ("REDIS_URL", "ELASTICSEARCH_URL", "DATABASE_URL", "CELERY_BROKER_URL"):
        env.pop(name, None)
    env["DATA_DIR"] = str(data_dir)
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra or {})
    return env


def migrate(data_dir: Path, env_extra: Mapping[str, str] | None = None) -> None:
    """Create the control database under ``data_dir``."""
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=ROOT,
        env=crawl_env(data_dir, env_extra),
        check=True,
        capture_output=True,
        timeout=120,
    )


def crawl_command(
    seeds: Iterable[str],
    settings: Mapping[str, object] | None = None,
    args: Mapping[str, object] | None = None,
) -> list[str]:
    """The ``scrapy crawl web`` command line over ``seeds`` with ``-s`` and ``-a`` options."""
    cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", "seeds=" + ",".join(seeds)]
    for name, value in (args or {}).items():
        cmd += ["-a", f"{name}={value}"]
    base = {
        "RESOLVE_OVERRIDES": "*.test=127.0.0.1",
        "SSRF_ALLOWED_NETWORKS": TESTWEB_NETWORKS,
        "CRAWL_PROGRESS_INTERVAL": 0,
        # Test crawls are short: a small per-host delay, and the whole test web shares
        # one address, so the per-IP limit is raised to the crawl's concurrency.
        "FRONTIER_DELAY": 0.05,
        "FRONTIER_IP_CONCURRENCY": 32,
    }
    for name, value in {**base, **(settings or {})}.items():
        cmd += ["-s", f"{name}={value}"]
    return cmd


def run_crawl(
    data_dir: Path,
    seeds: Iterable[str],
    settings: Mapping[str, object] | None = None,
    args: Mapping[str, object] | None = None,
    env_extra: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess:
    """``scrapy crawl web`` over ``seeds`` with ``-s`` settings and ``-a`` arguments."""
    return subprocess.run(
        crawl_command(seeds, settings, args),
        cwd=ROOT,
        env=crawl_env(data_dir, env_extra),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_crawl(
    data_dir: Path,
    seeds: Iterable[str],
    settings: Mapping[str, object] | None = None,
    args: Mapping[str, object] | None = None,
    env_extra: Mapping[str, str] | None = None,
) -> subprocess.Popen:
    """``scrapy crawl web`` started in the background (e.g. ``continuous=1``); output goes
    to ``data_dir/crawl.out``. The caller stops it (SIGINT: a graceful close)."""
    out = open(data_dir / "crawl.out", "wb")  # noqa: SIM115 (the child keeps it)
    try:
        return subprocess.Popen(crawl_command(seeds, settings, args), cwd=ROOT,
                                env=crawl_env(data_dir, env_extra), stdout=out,
                                stderr=subprocess.STDOUT)
    finally:
        out.close()
