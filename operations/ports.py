"""Free TCP ports on 127.0.0.1 for private services: the temporary ``redis-server`` a
restore reads its RDB file with, and the services of the tests and benchmarks."""

from __future__ import annotations

import random
import socket
from pathlib import Path

#: Where :func:`free_port` looks: below the kernel's ephemeral range (32768 up on Linux),
#: which outgoing connections take their source ports from, so a busy crawl on the same box
#: cannot take the port between the pick and the service's bind (a port the kernel hands
#: out for ``bind(0)`` is in that range).
_PORT_RANGE = (20000, 32767)


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(span: int = 1) -> int:
    """A TCP port P on 127.0.0.1 that was free a moment ago, with the ``span - 1`` ports
    after it free too, all outside the ephemeral range."""
    low, high = _PORT_RANGE[0], min(_PORT_RANGE[1], _ephemeral_low() - 1) - (span - 1)
    for _ in range(200):
        port = random.randint(low, high)
        try:
            for p in range(port, port + span):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return port
    if span > 1:
        raise RuntimeError(f"no {span} consecutive free ports in {low}-{high + span - 1}")
    with socket.socket() as s:  # the range is full: let the kernel pick
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
