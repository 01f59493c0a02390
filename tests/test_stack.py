"""scripts/stack.sh: the whole distributed stack comes up, crawls into Elasticsearch, stops."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.fixtures_es import ROOT, free_port, not_installed_reason

pytestmark = [pytest.mark.services, pytest.mark.slow]

STACK_SH = ROOT / "scripts" / "stack.sh"


def _missing() -> str | None:
    if shutil.which("redis-server") is None or not list(Path("/usr/lib/postgresql").glob("*")):
        return "Redis or PostgreSQL is not installed: run scripts/install-services.sh"
    return not_installed_reason()


@pytest.fixture
def stack_env():
    reason = _missing()
    if reason:
        pytest.skip(reason)
    stack_dir = ROOT / ".services" / "test-runs" / ("stack-" + uuid.uuid4().hex[:8])
    env = dict(
        os.environ,
        STACK_DIR=str(stack_dir),
        STACK_WORKERS="2",
        STACK_HOSTS="10",
        REDIS_PORT=str(free_port()),
        PG_PORT=str(free_port()),
        ES2_PORTS=f"{free_port()} {free_port()}",
        ES2_TRANSPORT_PORTS=f"{free_port()} {free_port()}",
        TESTWEB_PORT=str(free_port()),
        WEB_PORT=str(free_port()),
        ES_HEAP="384m",
        PYTHON=sys.executable,
    )
    for name in ("REDIS_URL", "ELASTICSEARCH_URL", "DATABASE_URL", "CELERY_BROKER_URL",
                 "DATA_DIR"):
        env.pop(name, None)
    yield env
    subprocess.run(["bash", str(STACK_SH), "down"], env=env, capture_output=True, timeout=180)
    shutil.rmtree(stack_dir, ignore_errors=True)


def stack(env, action: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(STACK_SH), action], env=env, capture_output=True, text=True, timeout=300
    )


def search(port: str, query: str) -> dict:
    url = f"http://127.0.0.1:{port}/api/search?q={query}&size=10"
    with urllib.request.urlopen(url, timeout=60) as resp:
        return json.load(resp)


def test_stack_up_crawls_into_elasticsearch_and_down_stops_everything(stack_env):
    up = stack(stack_env, "up")
    assert up.returncode == 0, up.stderr[-3000:]
    exported = dict(
        line.removeprefix("export ").split("=", 1)
        for line in up.stdout.splitlines()
        if line.startswith("export ")
    )
    assert len(exported["ELASTICSEARCH_URL"].split(",")) == 2
    assert exported["DATABASE_URL"].startswith("postgresql://")

    procfile = (ROOT / stack_env["STACK_DIR"] / "Procfile").read_text()
    names = [line.split(":", 1)[0] for line in procfile.splitlines()]
    assert names == ["testweb", "crawl1", "crawl2", "celery", "beat", "web"]

    # Pages from both workers' crawl reach Elasticsearch and the web UI finds them.
    deadline = time.monotonic() + 90
    hosts: set[str] = set()
    result: dict = {"total": 0}
    while time.monotonic() < deadline:
        try:
            result = search(stack_env["WEB_PORT"], "the")
        except urllib.error.HTTPError as exc:  # 500 until the first batch creates the index
            result = {"total": 0, "error": exc.code}
            time.sleep(3)
            continue
        hosts = {hit["host"] for hit in result["results"]}
        if result["total"] >= 50:
            break
        time.sleep(3)
    assert result["total"] >= 50, result
    assert all(h.endswith(".test") for h in hosts)

    honcho_log = (ROOT / stack_env["STACK_DIR"] / "honcho.log").read_text()
    for name in ("crawl1.1", "crawl2.1", "celery.1", "beat.1", "web.1", "testweb.1"):
        assert f"{name} started" in honcho_log

    down = stack(stack_env, "down")
    assert down.returncode == 0, down.stderr
    status = stack(stack_env, "status")
    for line in ("redis: stopped", "postgres: stopped", "es2-a: stopped", "es2-b: stopped",
                 "processes: stopped"):
        assert line in status.stderr
    # The workers were stopped gracefully, before the services: each printed its summary.
    honcho_log = (ROOT / stack_env["STACK_DIR"] / "honcho.log").read_text()
    assert honcho_log.count("crawl finished (shutdown)") == 2
