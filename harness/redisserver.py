"""Start a private ``redis-server`` (AOF on) on a free port, for tests and benchmarks."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from operations.ports import free_port


class RedisServer:
    """A ``redis-server`` process in ``directory`` with ``appendonly yes``."""

    def __init__(self, directory: Path, port: int | None = None, appendfsync: str = "everysec"):
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server not found: apt-get install -y redis-server")
        self.directory = directory
        self.port = port or free_port()
        self.appendfsync = appendfsync
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", str(self.directory), "--appendonly", "yes",
             "--appendfsync", self.appendfsync, "--save", "", "--daemonize", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", self.port), timeout=0.2
            ) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self, kill: bool = False) -> None:
        """Stop the server; ``kill`` sends SIGKILL (a crash) instead of SIGTERM."""
        if self.process is None:
            return
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        self.process.wait(10)
        self.process = None


@contextlib.contextmanager
def running_redis(directory: Path, appendfsync: str = "everysec") -> Iterator[RedisServer]:
    """A started ``RedisServer`` that is stopped on exit."""
    server = RedisServer(directory, appendfsync=appendfsync)
    server.start()
    try:
        yield server
    finally:
        server.stop()
