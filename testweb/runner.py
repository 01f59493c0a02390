"""Run the test web as a subprocess for tests and benchmarks."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from testweb.docsites import available_doc_sites
from testweb.fresh import Clock
from testweb.server import LOG_FLUSH_S
from testweb.web import (
    DEFAULT_FRESH_HOSTS,
    DEFAULT_FRESH_PAGES,
    DEFAULT_PAGES_PER_HOST,
    DEFAULT_SLOW_DELAY,
    TestWeb,
)

#: How long after a request its line is surely in the log file: the server's flush
#: interval with a margin.
LOG_SETTLE_S = LOG_FLUSH_S + 0.3
_READY = re.compile(r"testweb listening on http://([\d.]+):(\d+) \((\d+) hosts\)")
_ROOT = Path(__file__).resolve().parent.parent


class TestWebProcess:
    """A running ``python -m testweb``: its port, URLs, ground truth and request log."""

    __test__ = False

    def __init__(self, proc: subprocess.Popen, port: int, web: TestWeb, log: Path | None):
        self.proc = proc
        self.port = port
        self.web = web
        self.log = log

    def base_url(self, host: str) -> str:
        """``http://host:port`` without a trailing slash."""
        return f"http://{host}:{self.port}"

    def home_url(self, host: str) -> str:
        """The home page URL of a host."""
        return self.web.home_url(host)

    def hosts(self) -> list[str]:
        """The normal hosts (``TestWeb.hosts``)."""
        return self.web.hosts()

    def resolve_map(self) -> dict[str, str]:
        """Host name -> address for a crawler's resolver override."""
        return self.web.addresses()

    def read_log(self) -> list[dict]:
        """The request log lines flushed so far, parsed."""
        import json

        if self.log is None or not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.endswith("}")]

    def settled_log(self, since: int = 0) -> list[dict]:
        """The request log with every request answered so far in it, from line ``since``
        on: the server writes its log every ``LOG_FLUSH_S``, so this waits that out (with
        a margin) before reading it."""
        time.sleep(LOG_SETTLE_S)
        return self.read_log()[since:]

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM the server and wait for it; kill it if it does not stop."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@contextlib.contextmanager
def run(
    hosts: int = 10,
    seed: int = 0,
    log: str | os.PathLike | None = None,
    pages: int = DEFAULT_PAGES_PER_HOST,
    port: int = 0,
    slow_delay: float = DEFAULT_SLOW_DELAY,
    mirror_articles: int = 0,
    fresh_hosts: int = DEFAULT_FRESH_HOSTS,
    fresh_pages: int = DEFAULT_FRESH_PAGES,
    clock_offset: float = 0.0,
    clock_speed: float = 1.0,
    real_docs: bool = False,
    extra_args: list[str] | tuple[str, ...] = (),
    timeout: float = 30.0,
) -> Iterator[TestWebProcess]:
    """Start ``python -m testweb`` on a free port (unless ``port`` is given), yield a handle
    once it is listening, and terminate it on exit.

    The handle's ``web`` is a ground-truth copy built with the same arguments; its clock
    starts with the same offset and speed but does not see ``clock.test`` moves (ask the
    server's ``/now`` for its time). ``real_docs`` also serves the installed documentation
    sites (``testweb.docsites``; the handle's ``web.doc_hosts`` names them). ``extra_args``
    reach the server only."""
    cmd = [sys.executable, "-m", "testweb", "--hosts", str(hosts), "--port", str(port),
           "--seed", str(seed), "--pages", str(pages), "--slow-delay", str(slow_delay),
           "--mirror-articles", str(mirror_articles), "--fresh-hosts", str(fresh_hosts),
           "--fresh-pages", str(fresh_pages), "--clock-offset", repr(clock_offset),
           "--clock-speed", repr(clock_speed), *extra_args]
    if real_docs:
        cmd.append("--real-docs")
    if log is not None:
        cmd += ["--log", str(log)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=_ROOT)
    handle = None
    try:
        line = _ready_line(proc, timeout)
        match = _READY.search(line or "")
        if not match:
            raise RuntimeError(f"testweb did not start (exit code {proc.poll()}, said {line!r}); "
                               f"run {' '.join(cmd)} by hand to see why")
        actual_port = int(match.group(2))
        web = TestWeb(hosts, actual_port, seed=seed, pages_per_host=pages,
                      slow_delay=slow_delay, mirror_articles=mirror_articles,
                      fresh_hosts=fresh_hosts, fresh_pages=fresh_pages,
                      clock=Clock(clock_offset, clock_speed),
                      doc_sites=available_doc_sites() if real_docs else ())
        handle = TestWebProcess(proc, actual_port, web, Path(log) if log is not None else None)
        yield handle
    finally:
        if handle is not None:
            handle.stop()
        elif proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


def _ready_line(proc: subprocess.Popen, timeout: float) -> str | None:
    """The first stdout line of the process, or None after ``timeout`` seconds."""
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return result[0] if result else None
