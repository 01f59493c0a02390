"""free_port: a port outside the kernel's ephemeral range, so a busy crawl's outgoing
connections (which take their source ports from that range) cannot take it before the
service binds it."""

import socket

from operations.ports import _ephemeral_low, free_port


def test_free_port_is_bindable_and_below_the_ephemeral_range():
    low = _ephemeral_low()
    ports = {free_port() for _ in range(50)}
    assert all(port < low for port in ports)
    assert len(ports) > 1  # picked at random, not one fixed port
    for port in list(ports)[:5]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_free_port_skips_a_port_in_use(monkeypatch):
    taken = socket.socket()
    taken.bind(("127.0.0.1", free_port()))
    taken.listen()
    busy = taken.getsockname()[1]
    real = free_port.__globals__["random"].randint
    calls = []

    def pick(low, high):  # the busy port twice, then random picks again
        calls.append(1)
        return busy if len(calls) <= 2 else real(low, high)

    monkeypatch.setattr("operations.ports.random.randint", pick)
    try:
        assert free_port() != busy
        assert len(calls) >= 3
    finally:
        taken.close()


def test_free_port_span_gives_consecutive_free_ports():
    port = free_port(span=2)
    assert port + 1 < _ephemeral_low()
    for p in (port, port + 1):
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))
