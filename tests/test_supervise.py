"""scripts/supervise.py: restarts a process that dies, stops every process group on SIGTERM."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

SUPERVISE = Path(__file__).resolve().parents[1] / "scripts" / "supervise.py"


def _wait_for(predicate, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out")


def _pids(log: Path, name: str) -> list[int]:
    return [int(p) for p in re.findall(rf"{name}\.1 +\| started \(pid=(\d+)\)", log.read_text())]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_killed_process_is_restarted_and_the_others_keep_running(tmp_path):
    (tmp_path / "Procfile").write_text(
        "worker: exec sleep 60\n"
        "other: echo \"ready $GREETING\"; exec sleep 60\n"
        "stubborn: trap '' TERM; while true; do sleep 0.1; done\n"
    )
    (tmp_path / "env").write_text("export GREETING='from env'\n")
    log = tmp_path / "out.log"
    sup = subprocess.Popen(
        [sys.executable, str(SUPERVISE), "-f", str(tmp_path / "Procfile"), "-d", str(tmp_path),
         "-e", str(tmp_path / "env"), "--grace", "2"],
        stdout=open(log, "w"), stderr=subprocess.STDOUT,
    )
    try:
        _wait_for(lambda: "ready from env" in log.read_text())
        (worker,) = _wait_for(lambda: _pids(log, "worker"))
        (other,) = _pids(log, "other")
        os.kill(worker, signal.SIGKILL)
        pids = _wait_for(lambda: len(_pids(log, "worker")) == 2 and _pids(log, "worker"))
        assert re.search(r"worker\.1 +\| exited with code -9; restarting in 1 s", log.read_text())
        assert _alive(pids[1]) and _alive(other)  # restarted; the other untouched
        assert sup.poll() is None
        (stubborn,) = _pids(log, "stubborn")
        sup.send_signal(signal.SIGTERM)
        assert sup.wait(15) == 0
    finally:
        if sup.poll() is None:
            sup.kill()
    text = log.read_text()
    assert re.search(r"stubborn\.1 +\| still running after 2 s: SIGKILL", text)
    for pid in (pids[1], other, stubborn):
        assert not _alive(pid)


def test_a_process_dying_at_once_backs_off(tmp_path):
    (tmp_path / "Procfile").write_text("crash: echo boom; exit 3\n")
    log = tmp_path / "out.log"
    sup = subprocess.Popen(
        [sys.executable, str(SUPERVISE), "-f", str(tmp_path / "Procfile"), "--grace", "1"],
        stdout=open(log, "w"), stderr=subprocess.STDOUT,
    )
    try:
        _wait_for(lambda: len(_pids(log, "crash")) >= 3, timeout=15)
        sup.send_signal(signal.SIGTERM)
        assert sup.wait(10) == 0
    finally:
        if sup.poll() is None:
            sup.kill()
    delays = re.findall(r"crash\.1 +\| exited with code 3; restarting in (\d+) s", log.read_text())
    assert delays[:2] == ["1", "2"]
