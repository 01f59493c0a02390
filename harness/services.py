"""Private services for tests and benchmarks: Elasticsearch nodes started by
scripts/services.sh in a run directory of their own, on free local ports."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness import ROOT
from operations.ports import free_port

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




@contextmanager
def configured_or_private_elasticsearch(flag: str = "--elasticsearch") -> Iterator[str]:
    """The URL of ``ELASTICSEARCH_URL``, else of a private one-node Elasticsearch started
    for the block and stopped after it; a clear exit naming ``flag`` when neither can be."""
    from crawler.config import get_config
    from harness import log

    url = get_config().elasticsearch_url
    if url:
        yield url
        return
    reason = not_installed_reason()
    if reason:
        raise SystemExit(f"{flag}: {reason}, or set ELASTICSEARCH_URL")
    processes = EsProcesses("es", ["es"])
    log("starting a private Elasticsearch")
    try:
        processes.start()
        yield processes.url
    finally:
        processes.cleanup()


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

    def pause(self, node: str) -> None:
        """Stall ``node`` with SIGSTOP: it keeps its sockets and its place in the cluster,
        and answers nothing until :meth:`resume`."""
        pid = self.pid(node)
        if pid is None:
            raise RuntimeError(f"{node} is not running")
        os.kill(pid, signal.SIGSTOP)

    def resume(self, node: str) -> None:
        """Let a node stalled by :meth:`pause` go on (SIGCONT)."""
        pid = self.pid(node)
        if pid is not None:
            os.kill(pid, signal.SIGCONT)

    def health(self, node_index: int = 0, **params: str) -> dict:
        """``_cluster/health`` as seen by one node."""
        query = "&".join(f"{k}={v}" for k, v in params.items())
        url = f"{self.urls[node_index]}/_cluster/health?{query}"
        # the server's own wait (``timeout``) plus room for the answer to come back
        wait_s = float(str(params.get("timeout", "30s")).rstrip("s")) + 10
        with urllib.request.urlopen(url, timeout=wait_s) as response:
            return json.load(response)

    def cleanup(self) -> None:
        """Stop the nodes (a stalled one is let go first) and delete their data."""
        for node in self.nodes:
            self.resume(node)
        try:
            self.stop()
        finally:
            for node in self.nodes:
                self.kill(node)
            shutil.rmtree(self.run_dir, ignore_errors=True)


def postgres_installed() -> bool:
    """Whether Debian's PostgreSQL server is installed (``scripts/install-services.sh``)."""
    return bool(list(Path("/usr/lib/postgresql").glob("*/bin/postgres")))


class PostgresProcess:
    """A PostgreSQL server started by scripts/services.sh in a private run directory on a
    free port, with the project's role and database (``url``)."""

    def __init__(self) -> None:
        self.run_dir = services_dir() / "test-runs" / uuid.uuid4().hex[:12]
        self.env = dict(os.environ, SERVICES_RUN_DIR=str(self.run_dir),
                        PG_PORT=str(free_port()))
        self.url: str | None = None

    def _run(self, action: str) -> subprocess.CompletedProcess:
        proc = subprocess.run(["bash", str(SERVICES_SH), action, "postgres"], env=self.env,
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise RuntimeError(f"services.sh {action} postgres failed:\n{proc.stderr}")
        return proc

    def start(self) -> str:
        """Start the server (if it is not running) and return its database URL."""
        self.url = self._run("start").stdout.strip().split("=", 1)[1]
        return self.url

    def stop(self) -> None:
        """Stop the server (fast shutdown); its data stays for a restart."""
        self._run("stop")

    def cleanup(self) -> None:
        """Stop the server and delete its data."""
        try:
            self.stop()
        finally:
            shutil.rmtree(self.run_dir, ignore_errors=True)
