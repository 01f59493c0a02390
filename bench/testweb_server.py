"""How many pages per second the test web serves, so it is never a crawl benchmark's bottleneck.

Drives ``python -m testweb`` with ``wrk`` (Debian package ``wrk``) over keep-alive connections:
once over a small set of pages (served from the LRU cache) and once over random pages of many
hosts (generated on the fly). The baseline, in the same run, is Python's own
``http.server`` serving one static page of the same size. Prints one JSON object last:
``cached_pages_per_s``, ``uncached_pages_per_s``, ``baseline_pages_per_s``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import testweb

CACHED = """
counter = 0
request = function()
  counter = counter + 1
  local n = counter % 1000
  return wrk.format("GET", "/p/" .. n, {Host = "site" .. (n % 20) .. ".test"})
end
"""
UNCACHED = """
request = function()
  return wrk.format("GET", "/p/" .. math.random(0, 9999),
                    {Host = "site" .. math.random(0, %d) .. ".test"})
end
"""


def wrk(url: str, script: str | None, seconds: int, connections: int) -> float:
    """Requests per second that wrk measured."""
    cmd = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", url]
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        if script:
            lua.write(script)
            lua.flush()
            cmd[4:4] = ["-s", lua.name]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def baseline(seconds: int, connections: int, size: int) -> float:
    """Pages/s of ``python -m http.server`` serving one static page of ``size`` bytes."""
    with tempfile.TemporaryDirectory() as root:
        Path(root, "page.html").write_bytes(b"x" * size)
        proc = subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind",
                                 "127.0.0.1", "--directory", root],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = proc.stdout.readline()
            port = int(re.search(r"port (\d+)", line).group(1))
            time.sleep(0.2)
            return wrk(f"http://127.0.0.1:{port}/page.html", None, seconds, connections)
        finally:
            proc.terminate()
            proc.wait()


def main() -> None:
    """Run the measurements and print the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2-second runs")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--hosts", type=int, default=200)
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: apt-get install -y wrk")
    seconds = 2 if args.quick else args.seconds
    with tempfile.TemporaryDirectory() as tmp, \
            testweb.run(hosts=args.hosts, log=Path(tmp, "log.jsonl")) as web:
        url = f"http://127.0.0.1:{web.port}/"
        print("testweb, cached pages ...", file=sys.stderr)
        cached = wrk(url, CACHED, seconds, args.connections)
        print("testweb, generated pages ...", file=sys.stderr)
        uncached = wrk(url, UNCACHED % (args.hosts - 1), seconds, args.connections)
        size = len(web.web.render("site1.test", "/p/1").body)
    print("baseline http.server ...", file=sys.stderr)
    base = baseline(seconds, args.connections, size)
    print(json.dumps({"cached_pages_per_s": round(cached), "uncached_pages_per_s": round(uncached),
                      "baseline_pages_per_s": round(base), "page_bytes": size}))


if __name__ == "__main__":
    main()
