"""scripts/services.sh: Redis (AOF) and PostgreSQL start on the asked ports, answer, stop."""

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest
import redis

from harness.services import SERVICES_SH, free_port, services_dir

pytestmark = pytest.mark.services


@pytest.fixture
def services_env():
    run_dir = services_dir() / "test-runs" / uuid.uuid4().hex[:12]
    env = dict(
        os.environ,
        SERVICES_RUN_DIR=str(run_dir),
        REDIS_PORT=str(free_port()),
        PG_PORT=str(free_port()),
    )
    yield env
    subprocess.run(["bash", str(SERVICES_SH), "stop", "redis", "postgres"], env=env)
    shutil.rmtree(run_dir, ignore_errors=True)


def services(env, *args):
    return subprocess.run(
        ["bash", str(SERVICES_SH), *args], env=env, capture_output=True, text=True, timeout=120
    )


def exported(stdout: str) -> dict[str, str]:
    pairs = (line.removeprefix("export ").split("=", 1) for line in stdout.splitlines())
    return dict(pairs)


def test_redis_and_postgres_start_answer_and_stop(services_env):
    if shutil.which("redis-server") is None or not list(Path("/usr/lib/postgresql").glob("*")):
        pytest.skip("Redis or PostgreSQL is not installed: run scripts/install-services.sh")
    started = services(services_env, "start", "redis", "postgres")
    assert started.returncode == 0, started.stderr
    urls = exported(started.stdout)

    client = redis.Redis.from_url(urls["REDIS_URL"])
    client.set("k", "v")
    assert client.config_get("appendonly") == {"appendonly": "yes"}
    with psycopg.connect(urls["DATABASE_URL"]) as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("search",)

    again = services(services_env, "start", "redis", "postgres")
    assert again.returncode == 0 and "already running" in again.stderr
    assert exported(again.stdout) == urls

    stopped = services(services_env, "stop", "redis", "postgres")
    assert stopped.returncode == 0, stopped.stderr
    status = services(services_env, "status", "redis", "postgres")
    assert "redis: stopped" in status.stderr and "postgres: stopped" in status.stderr
