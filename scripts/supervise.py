"""Run the processes of a Procfile, restart any that exits, stop them all on SIGTERM.

    python scripts/supervise.py -f Procfile [-d DIR] [-e ENVFILE] [--grace 60]

Like honcho or foreman (one line of output per process line, prefixed with the time and
``name.1``), except that a process that dies is started again instead of stopping the rest:
a crawl worker killed by a fault (SIGKILL, OOM) comes back while the others keep going.
Restarts back off from 1 s, doubling to 30 s while a process keeps dying within a minute of
its start. SIGTERM or SIGINT sends SIGTERM to every process group and waits up to
``--grace`` seconds for them to exit (a crawl worker closing its spider flushes its WARC
files and index batches) before SIGKILL.

``ENVFILE`` lines are ``NAME=VALUE`` or ``export NAME=VALUE`` (values may be quoted); they
are added to this process's environment for the children.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

MIN_BACKOFF_S = 1.0
MAX_BACKOFF_S = 30.0
#: A process that ran this long before dying is restarted after the minimal back-off.
STABLE_S = 60.0


@dataclass
class Proc:
    """One Procfile entry and its current child process."""

    name: str
    command: str
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    backoff: float = MIN_BACKOFF_S
    restart_at: float = 0.0
    readers: list[threading.Thread] = field(default_factory=list)


def read_procfile(path: Path) -> list[Proc]:
    """The ``name: command`` entries of a Procfile, in order (comments and blanks skipped)."""
    procs = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, command = line.partition(":")
        if not sep or not name.strip() or not command.strip():
            raise SystemExit(f"{path}: not a 'name: command' line: {line!r}")
        procs.append(Proc(name.strip(), command.strip()))
    return procs


def read_envfile(path: Path) -> dict[str, str]:
    """``NAME=VALUE`` pairs of an env file (``export`` prefixes and shell quoting allowed)."""
    env = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        name, sep, value = line.partition("=")
        if sep:
            words = shlex.split(value)
            env[name.strip()] = words[0] if words else ""
    return env


class Supervisor:
    """Keeps every ``Proc`` running until ``stop``; one output stream with prefixed lines."""

    def __init__(self, procs: list[Proc], cwd: Path, env: dict[str, str], grace_s: float,
                 out=sys.stdout):
        self.procs = procs
        self.cwd = cwd
        self.env = env
        self.grace_s = grace_s
        self.out = out
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._width = max(len(p.name) for p in procs) + 2

    def log(self, name: str, message: str) -> None:
        """One output line, ``HH:MM:SS name.1 | message`` (honcho's format)."""
        with self._lock:
            self.out.write(f"{time.strftime('%H:%M:%S')} {name + '.1':<{self._width}} | "
                           f"{message}\n")
            self.out.flush()

    def start(self, proc: Proc) -> None:
        proc.process = subprocess.Popen(
            ["/bin/sh", "-c", proc.command], cwd=self.cwd, env=self.env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: a stop signal reaches its children too
        )
        proc.started_at = time.monotonic()
        self.log(proc.name, f"started (pid={proc.process.pid})")
        reader = threading.Thread(target=self._pump, args=(proc, proc.process), daemon=True)
        reader.start()
        proc.readers = [reader]

    def _pump(self, proc: Proc, process: subprocess.Popen) -> None:
        for raw in process.stdout:
            self.log(proc.name, raw.decode("utf-8", "replace").rstrip("\n"))

    def run(self) -> None:
        """Start everything, restart what exits, until ``stop`` is called; then stop all."""
        for proc in self.procs:
            self.start(proc)
        while not self._stopping.wait(0.2):
            now = time.monotonic()
            for proc in self.procs:
                if proc.process is not None and proc.process.poll() is not None:
                    self._exited(proc, now)
                elif proc.process is None and now >= proc.restart_at:
                    self.start(proc)
        self._stop_all()

    def _exited(self, proc: Proc, now: float) -> None:
        for reader in proc.readers:
            reader.join(1.0)
        rc = proc.process.returncode
        proc.process = None
        if now - proc.started_at >= STABLE_S:
            proc.backoff = MIN_BACKOFF_S
        self.log(proc.name, f"exited with code {rc}; restarting in {proc.backoff:g} s")
        proc.restart_at = now + proc.backoff
        proc.backoff = min(proc.backoff * 2, MAX_BACKOFF_S)

    def stop(self, *_args) -> None:
        """Ask ``run`` to stop every process (signal-handler safe)."""
        self._stopping.set()

    def _stop_all(self) -> None:
        running = [p for p in self.procs if p.process is not None and p.process.poll() is None]
        for proc in running:
            self.log(proc.name, "sending SIGTERM")
            _signal_group(proc.process, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        for proc in running:
            try:
                proc.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.log(proc.name, f"still running after {self.grace_s:g} s: SIGKILL")
                _signal_group(proc.process, signal.SIGKILL)
                proc.process.wait()
            for reader in proc.readers:
                reader.join(1.0)
            self.log(proc.name, f"stopped (code {proc.process.returncode})")


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-f", "--procfile", type=Path, default=Path("Procfile"))
    parser.add_argument("-d", "--directory", type=Path, default=Path.cwd())
    parser.add_argument("-e", "--env", type=Path, help="env file for the processes")
    parser.add_argument("--grace", type=float, default=60.0,
                        help="seconds between SIGTERM and SIGKILL on stop")
    opts = parser.parse_args()
    env = dict(os.environ)
    if opts.env:
        env.update(read_envfile(opts.env))
    supervisor = Supervisor(read_procfile(opts.procfile), opts.directory, env, opts.grace)
    signal.signal(signal.SIGTERM, supervisor.stop)
    signal.signal(signal.SIGINT, supervisor.stop)
    supervisor.run()


if __name__ == "__main__":
    main()
