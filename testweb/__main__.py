"""``python -m testweb``: serve the deterministic test web on 127.0.0.1."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
import sys
from typing import IO

from testweb.adversarial import BLACKHOLE_ADDRESS
from testweb.docsites import DOC_SITES, available_doc_sites
from testweb.fresh import Clock
from testweb.server import BlackHoleProtocol, RequestLog, TestWebServer
from testweb.web import (
    DEFAULT_CACHE_PAGES,
    DEFAULT_FRESH_HOSTS,
    DEFAULT_FRESH_PAGES,
    DEFAULT_PAGES_PER_HOST,
    DEFAULT_SLOW_DELAY,
    TestWeb,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; every option is documented in ``--help``."""
    special = ", ".join(sorted(TestWeb(hosts=1, port=0).special_hosts()))
    parser = argparse.ArgumentParser(
        prog="python -m testweb",
        description="Serve a deterministic multi-host test web (hosts site0.test .. "
        f"site{{N-1}}.test, the special hosts {special} (docs/testweb.md), the changing "
        "hosts fresh0.test .., clock.test, with --mirror-articles the near-copy hosts "
        "news{i}.test and mirror{m}.news{i}.test, and with --real-docs the documentation "
        "sites; chosen by the Host header). All hosts "
        "resolve to 127.0.0.1 except dead.test (127.0.0.2, nothing listens) and "
        "blackhole.test (127.0.0.3, same port, accepts and never answers); both need the "
        "default --bind 127.0.0.1. Prints 'testweb listening on http://BIND:PORT (N hosts)' "
        "when ready; SIGTERM or SIGINT stop it and flush the log.",
    )
    parser.add_argument("--hosts", type=int, required=True, help="number of normal hosts N")
    parser.add_argument("--port", type=int, required=True,
                        help="port to listen on; 0 picks a free one (printed in the ready line)")
    parser.add_argument("--log", help="file for the JSON-lines request log (one line per "
                        "request, flushed every 0.2 s and at exit); omit for no log")
    parser.add_argument("--seed", type=int, default=0, help="content seed (default 0)")
    parser.add_argument("--bind", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES_PER_HOST,
                        help=f"pages per host, /p/0 .. /p/N-1 (default {DEFAULT_PAGES_PER_HOST})")
    parser.add_argument("--cache", type=int, default=DEFAULT_CACHE_PAGES,
                        help="generated pages kept in the LRU cache "
                        f"(default {DEFAULT_CACHE_PAGES})")
    parser.add_argument("--slow-delay", type=float, default=DEFAULT_SLOW_DELAY,
                        help=f"seconds slow.test takes per response (default {DEFAULT_SLOW_DELAY})")
    parser.add_argument("--fresh-hosts", type=int, default=DEFAULT_FRESH_HOSTS,
                        help="hosts fresh0.test .. whose pages change, move and die over time "
                        f"(default {DEFAULT_FRESH_HOSTS})")
    parser.add_argument("--fresh-pages", type=int, default=DEFAULT_FRESH_PAGES,
                        help=f"pages per fresh host (default {DEFAULT_FRESH_PAGES})")
    parser.add_argument("--clock-offset", type=float, default=0.0,
                        help="seconds the simulated clock runs ahead of real time (default 0); "
                        "POST http://clock.test:PORT/advance?seconds=S moves it while running")
    parser.add_argument("--clock-speed", type=float, default=1.0,
                        help="simulated seconds per real second (default 1)")
    parser.add_argument("--mirror-articles", type=int, default=0,
                        help="serve the labelled near-copy set of this many articles on "
                        "news{i}.test and mirror{m}.news{i}.test (default 0: off)")
    parser.add_argument("--real-docs", action="store_true",
                        help="also serve the installed Debian documentation sites, each as "
                        "its own host (" + ", ".join(f"{s.host} from {s.package}"
                                                      for s in DOC_SITES)
                        + "); see testweb/docsites.py")
    return parser.parse_args(argv)


def bind(address: str, port: int) -> socket.socket:
    """A listening-ready TCP socket bound to (address, port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError as exc:
        sock.close()
        raise SystemExit(
            f"testweb: cannot listen on {address}:{port}: {exc.strerror}; is another testweb "
            "running there? Stop it or pass another --port (0 picks a free one)."
        ) from None
    sock.setblocking(False)
    return sock


async def serve(args: argparse.Namespace, log_file: IO[str] | None) -> None:
    """Run the server until SIGTERM or SIGINT."""
    if args.real_docs and not available_doc_sites():
        raise SystemExit("testweb --real-docs: no documentation site is installed; run "
                         "scripts/install-services.sh or apt-get install -y "
                         + " ".join(s.package for s in DOC_SITES))
    sock = bind(args.bind, args.port)
    port = sock.getsockname()[1]
    web = TestWeb(args.hosts, port, seed=args.seed, pages_per_host=args.pages,
                  cache_pages=args.cache, slow_delay=args.slow_delay,
                  fresh_hosts=args.fresh_hosts, fresh_pages=args.fresh_pages,
                  clock=Clock(args.clock_offset, args.clock_speed),
                  mirror_articles=args.mirror_articles,
                  doc_sites=available_doc_sites() if args.real_docs else ())
    server = TestWebServer(web, RequestLog(log_file))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await server.start(sock)
        if args.bind == "127.0.0.1":
            await loop.create_server(BlackHoleProtocol, BLACKHOLE_ADDRESS, port)
        else:
            print("testweb: blackhole.test needs --bind 127.0.0.1; it is not served",
                  file=sys.stderr)
        print(f"testweb listening on http://{args.bind}:{port} ({args.hosts} hosts)", flush=True)
        await stop.wait()
    finally:
        await server.close()


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    args = parse_args(argv)
    log_file = open(args.log, "w", encoding="utf-8") if args.log else None  # noqa: SIM115
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(args, log_file))
    finally:
        if log_file is not None:
            log_file.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
