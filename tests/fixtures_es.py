"""Pytest fixtures that run a private Elasticsearch for the tests, through scripts/services.sh.

Use them from a test module or a conftest with::

    pytest_plugins = ["tests.fixtures_es"]

or import the fixtures by name (``from tests.fixtures_es import es_url``).

- ``es_url``: a single-node server on free ports, started once per session and stopped at the
  end. With ``TEST_ELASTICSEARCH_URL`` set, that server is used instead (tests/conftest.py
  clears ``ELASTICSEARCH_URL`` so that nothing else reaches a real cluster by accident).
- ``es_cluster2``: the three-node cluster of ``services.sh es2`` (es2-a, es2-b with data,
  es2-c master-eligible only) that a test may kill nodes of; started per module.

Both skip, with the reason, only when Elasticsearch is not installed
(``scripts/install-services.sh``); a server that is installed but fails to start is an error.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVICES_SH = ROOT / "scripts" / "services.sh"


def services_dir() -> Path:
    """Where the services are installed and tests keep their runs (``SERVICES_DIR``)."""
    return Path(os.environ.get("SERVICES_DIR") or ROOT / ".services")


def not_installed_reason() -> str | None:
    """Why Elasticsearch cannot be started here, or ``None`` when it can."""
    es_home = Path(os.environ.get("ES_HOME") or services_dir() / "elasticsearch")
    java_home = Path(os.environ.get("ES_JAVA_HOME") or "/usr/lib/jvm/temurin-25-jdk-amd64")
    if not (es_home / "bin" / "elasticsearch").exists():
        return f"Elasticsearch is not installed at {es_home}: run scripts/install-services.sh"
    if not (java_home / "bin" / "java").exists():
        return f"no Java at {java_home} for Elasticsearch: set ES_JAVA_HOME"
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EsProcesses:
    """Elasticsearch nodes started by scripts/services.sh in a private run directory."""

    def __init__(self, service: str, nodes: list[str]):
        self.service = service
        self.nodes = nodes
        self.run_dir = services_dir() / "test-runs" / uuid.uuid4().hex[:12]
        self.http_ports = {name: free_port() for name in nodes}
        transport = [free_port() for _ in nodes]
        self.env = dict(os.environ, SERVICES_RUN_DIR=str(self.run_dir))
        if service == "es":
            self.env.update(ES_PORT=str(self.http_ports["es"]), ES_TRANSPORT_PORT=str(transport[0]))
        else:
            self.env.update(
                ES2_PORTS=" ".join(str(self.http_ports[n]) for n in nodes),
                ES2_TRANSPORT_PORTS=" ".join(map(str, transport)),
            )

    @property
    def urls(self) -> list[str]:
        """One HTTP URL per node, in node order."""
        return [f"http://127.0.0.1:{self.http_ports[n]}" for n in self.nodes]

    @property
    def url(self) -> str:
        """The nodes' URLs joined by commas, as ``ELASTICSEARCH_URL`` takes them."""
        return ",".join(self.urls)

    def _run(self, action: str) -> None:
        proc = subprocess.run(
            ["bash", str(SERVICES_SH), action, self.service],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"services.sh {action} {self.service} failed:\n{proc.stderr}")

    def start(self) -> None:
        """Start the nodes that are not running and wait until the cluster is healthy."""
        self._run("start")

    def stop(self) -> None:
        """Stop every node gracefully."""
        self._run("stop")

    def pid(self, node: str) -> int | None:
        """The process id of ``node``, or ``None`` when it is not running."""
        try:
            pid = int((self.run_dir / node / "es.pid").read_text())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return None
        return pid

    def kill(self, node: str, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to ``node`` (SIGKILL by default) and wait for it to exit."""
        pid = self.pid(node)
        if pid is None:
            return
        os.kill(pid, sig)
        deadline = time.monotonic() + 60
        while self.pid(node) is not None and time.monotonic() < deadline:
            time.sleep(0.1)

    def health(self, node_index: int = 0, **params: str) -> dict:
        """``_cluster/health`` as seen by one node."""
        query = "&".join(f"{k}={v}" for k, v in params.items())
        url = f"{self.urls[node_index]}/_cluster/health?{query}"
        with urllib.request.urlopen(url, timeout=70) as response:
            return json.load(response)

    def cleanup(self) -> None:
        """Stop the nodes and delete their data."""
        try:
            self.stop()
        finally:
            for node in self.nodes:
                self.kill(node)
            shutil.rmtree(self.run_dir, ignore_errors=True)


def _started(service: str, nodes: list[str]) -> Iterator[EsProcesses]:
    reason = not_installed_reason()
    if reason:
        pytest.skip(reason)
    processes = EsProcesses(service, nodes)
    try:
        processes.start()
        yield processes
    finally:
        processes.cleanup()


# One private server per test session, however many modules register ``es_url`` (a conftest
# importing it and test modules naming this plugin are separate registrations to pytest).
_session_server: dict = {"processes": None, "users": 0}


@pytest.fixture(scope="session")
def es_url() -> Iterator[str]:
    """The URL of a single-node Elasticsearch for this test session."""
    external = os.environ.get("TEST_ELASTICSEARCH_URL", "").strip()
    if external:
        yield external
        return
    reason = not_installed_reason()
    if reason:
        pytest.skip(reason)
    if _session_server["processes"] is None:
        processes = EsProcesses("es", ["es"])
        try:
            processes.start()
        except BaseException:
            processes.cleanup()
            raise
        _session_server["processes"] = processes
    _session_server["users"] += 1
    try:
        yield _session_server["processes"].url
    finally:
        _session_server["users"] -= 1
        if _session_server["users"] == 0:
            _session_server["processes"].cleanup()
            _session_server["processes"] = None


@pytest.fixture(scope="module")
def es_cluster2() -> Iterator[EsProcesses]:
    """A private three-node cluster (es2-a, es2-b: master-eligible with data; es2-c:
    master-eligible only) whose nodes a test may kill; any one may go."""
    yield from _started("es2", ["es2-a", "es2-b", "es2-c"])
