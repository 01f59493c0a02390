"""A crawl worker opens no port but the ones it is configured to: Scrapy's RemoteControl
extension (``/execute`` runs Python sent to it) and its telnet console stay off."""

from __future__ import annotations

import signal
import time

import psutil
import pytest

from harness.crawlrun import start_crawl

pytestmark = pytest.mark.slow


def _listening(pid: int) -> list:
    return [c.laddr for c in psutil.Process(pid).net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN]


def test_a_crawl_worker_listens_on_no_port(tmp_path):
    jobs = tmp_path / "remote-control-jobs"
    log = tmp_path / "crawl.log"
    # a continuous crawl stays open; its one seed is refused at once
    crawl = start_crawl(tmp_path, ["http://quiet.test:9/"],
                        settings={"REMOTE_CONTROL_JOBS_DIR": str(jobs), "LOG_LEVEL": "INFO",
                                  "LOG_FILE": str(log)},
                        args={"continuous": 1})
    try:
        deadline = time.monotonic() + 90
        while not log.exists() or "Spider opened" not in log.read_text(errors="replace"):
            assert crawl.poll() is None, (tmp_path / "crawl.out").read_text()[-3000:]
            assert time.monotonic() < deadline, "the crawl did not start"
            time.sleep(0.2)
        time.sleep(1.0)  # extensions start with the engine; give a listener time to bind
        listening = _listening(crawl.pid)
    finally:
        crawl.send_signal(signal.SIGINT)
        crawl.wait(60)
    text = log.read_text(errors="replace")
    assert listening == [], listening
    assert "RemoteControl" not in text and "TelnetConsole" not in text
    assert not jobs.exists() or not any(jobs.iterdir())
