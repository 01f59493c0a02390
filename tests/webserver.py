"""Run the web UI the way production does: gunicorn with webui/gunicorn.conf.py."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.crawlrun import ROOT, crawl_env
from harness.services import free_port


@dataclass
class WebServer:
    """A running gunicorn: its base URL and the file its output goes to."""

    url: str
    log: Path
    process: subprocess.Popen

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def prepare(data_dir: Path, env_extra: Mapping[str, str] | None = None) -> None:
    """``migrate`` and ``collectstatic`` under ``data_dir``, as scripts/stack.sh does."""
    for command in (["migrate", "--noinput"], ["collectstatic", "--noinput"]):
        subprocess.run([sys.executable, "manage.py", *command], cwd=ROOT,
                       env=crawl_env(data_dir, env_extra), check=True, capture_output=True,
                       timeout=120)


def index_pages(data_dir: Path, n: int = 12) -> None:
    """``n`` pages about the okapi in the embedded index under ``data_dir``."""
    from crawler.config import Config
    from crawler.urls import doc_id_for
    from index.base import Document
    from index.engines.embedded.backend import EmbeddedBackend

    backend = EmbeddedBackend.from_config(Config(data_dir=data_dir))
    backend.index(
        Document(id=doc_id_for(f"http://okapi.test/{i}"), url=f"http://okapi.test/{i}",
                 host="okapi.test", title=f"The okapi, part {i}",
                 body=f"The okapi is a giraffid of the Congo rainforest. Part {i}.")
        for i in range(n)
    )
    backend.refresh()
    backend.close()


@contextlib.contextmanager
def gunicorn(data_dir: Path, env_extra: Mapping[str, str] | None = None,
             args: tuple[str, ...] = ()) -> Iterator[WebServer]:
    """gunicorn on a free port, until it answers ``/healthz``; stopped (SIGTERM) after."""
    port = free_port()
    log = data_dir / f"gunicorn-{port}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "webui/gunicorn.conf.py",
             "--bind", f"127.0.0.1:{port}", *args, "webui.wsgi"],
            cwd=ROOT, env=crawl_env(data_dir, env_extra), stdout=out, stderr=subprocess.STDOUT,
        )
    server = WebServer(f"http://127.0.0.1:{port}", log, process)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(server.url + "/healthz", timeout=10):
                    break
            except OSError:  # refused, reset, or no worker answering yet (a loaded box)
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("gunicorn did not start:\n" + server.output()) from None
                time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def get(url: str, headers: Mapping[str, str] | None = None) -> tuple[int, dict, bytes]:
    """Status, headers and body of a GET (HTTP errors included, not raised)."""
    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()
