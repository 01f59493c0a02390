"""scripts/stack.sh: the whole distributed stack comes up, crawls into Elasticsearch, rides
out a SIGKILLed crawl worker, stops."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from harness import ROOT
from harness.services import free_port, not_installed_reason, services_dir

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
    stack_dir = services_dir() / "test-runs" / ("stack-" + uuid.uuid4().hex[:8])
    env = dict(
        os.environ,
        STACK_DIR=str(stack_dir),
        STACK_WORKERS="2",
        STACK_HOSTS="10",
        REDIS_PORT=str(free_port()),
        PG_PORT=str(free_port()),
        ES2_PORTS=f"{free_port()} {free_port()} {free_port()}",
        ES2_TRANSPORT_PORTS=f"{free_port()} {free_port()} {free_port()}",
        TESTWEB_PORT=str(free_port()),
        WEB_PORT=str(free_port()),
        STACK_METRICS_PORT=str(free_port(span=2)),  # worker N on P + N - 1
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


def test_stack_up_crawls_survives_a_killed_worker_and_down_stops_everything(stack_env):
    up = stack(stack_env, "up")
    assert up.returncode == 0, up.stderr[-3000:]
    exported = dict(
        line.removeprefix("export ").split("=", 1)
        for line in up.stdout.splitlines()
        if line.startswith("export ")
    )
    assert len(exported["ELASTICSEARCH_URL"].split(",")) == 3  # es2-a, es2-b, es2-c
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
        except urllib.error.HTTPError as exc:  # 503 until the first batch creates the index
            result = {"total": 0, "error": exc.code}
            time.sleep(3)
            continue
        hosts = {hit["host"] for hit in result["results"]}
        if result["total"] >= 50:
            break
        time.sleep(3)
    assert result["total"] >= 50, result
    assert all(h.endswith(".test") for h in hosts)
    # two data nodes: the index got a primary on each and a replica (ES_SHARDS/ES_REPLICAS)
    es = exported["ELASTICSEARCH_URL"].split(",")[0]
    (index,) = json.loads(_get(f"{es}/websearch/_settings")[1]).values()
    sizing = index["settings"]["index"]
    assert (sizing["number_of_shards"], sizing["number_of_replicas"]) == ("2", "1")

    log = ROOT / stack_env["STACK_DIR"] / "stack.log"
    for name in ("crawl1", "crawl2", "celery", "beat", "web", "testweb"):
        assert re.search(rf"{name}\.1 +\| started", log.read_text())
    # the web UI under gunicorn, ready, with its metrics; each crawl worker serves its own
    assert re.search(r"web\.1 +\| .*Booting worker", log.read_text())
    assert "development server" not in log.read_text()
    assert _get(f"http://127.0.0.1:{stack_env['WEB_PORT']}/readyz")[0] == 200
    assert b"websearch_search_duration_seconds_count" in _get(
        f"http://127.0.0.1:{stack_env['WEB_PORT']}/metrics")[1]
    pages = _get(f"http://127.0.0.1:{stack_env['STACK_METRICS_PORT']}/metrics")[1]
    assert re.search(rb"^websearch_crawl_pages_total [1-9]", pages, re.M), pages[:2000]

    # A crawl worker SIGKILLed: the supervisor starts it again, the rest of the stack stays
    # up, and the crawl goes on (its leases expire to the workers).
    (worker,) = re.findall(r"crawl1\.1 +\| started \(pid=(\d+)\)", log.read_text())
    requests_before = _lines(ROOT / stack_env["STACK_DIR"] / "testweb.log")
    os.kill(int(worker), signal.SIGKILL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if len(re.findall(r"crawl1\.1 +\| started", log.read_text())) == 2:
            break
        time.sleep(0.5)
    text = log.read_text()
    assert re.search(r"crawl1\.1 +\| exited with code -9; restarting", text)
    assert len(re.findall(r"crawl1\.1 +\| started", text)) == 2
    assert len(re.findall(r"crawl2\.1 +\| started", text)) == 1, "\n".join(  # untouched
        line for line in text.splitlines() if "crawl2.1" in line)[-3000:]
    # the new crawl1 crawls: a progress line of it with pages fetched
    restarted = re.compile(r"crawl1\.1 +\| \[crawl\] +\d+s +pages +[1-9]")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if restarted.search(_since_restart(log.read_text())):
            break
        time.sleep(1)
    assert restarted.search(_since_restart(log.read_text())), log.read_text()[-3000:]
    assert _lines(ROOT / stack_env["STACK_DIR"] / "testweb.log") > requests_before + 20
    assert search(stack_env["WEB_PORT"], "the")["total"] >= result["total"]

    down = stack(stack_env, "down")
    assert down.returncode == 0, down.stderr
    status = stack(stack_env, "status")
    for line in ("redis: stopped", "postgres: stopped", "es2-a: stopped", "es2-b: stopped",
                 "es2-c: stopped",
                 "processes: stopped"):
        assert line in status.stderr
    # The workers were stopped gracefully, before the services: each printed its summary
    # (the restarted crawl1 and crawl2; the killed one printed nothing).
    text = log.read_text()
    assert text.count("crawl finished (shutdown)") == 2, text[-6000:]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def _since_restart(text: str) -> str:
    """The stack log after crawl1's second start."""
    starts = list(re.finditer(r"crawl1\.1 +\| started", text))
    return text[starts[1].end():] if len(starts) >= 2 else ""
