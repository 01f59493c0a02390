"""No UDP leaves the renderer: a page rendered with the crawl's own chromium switches
(``crawler.render.browser_args``, behind ``crawler.browserproxy.BrowserProxy``) that tries
WebRTC with STUN and TURN servers, WebTransport (QUIC) and names to resolve sends not one
datagram to a UDP listener on the addresses it names (loopback, another loopback address,
this machine's own address), nor an mDNS announcement."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import struct

import pytest

from crawler import settings as crawl_settings
from crawler.browserproxy import BrowserProxy
from crawler.render import browser_args
from crawler.ssrf import AddressPolicy

pytestmark = pytest.mark.browser

MDNS_GROUP, MDNS_PORT = "224.0.0.251", 5353
#: chromium's mDNS names for WebRTC host candidates: <uuid>.local
CHROMIUM_MDNS_NAME = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

PAGE = """<!doctype html><title>udp</title><script>
const targets = %s, port = %d;
const servers = [];
for (const t of [...targets, "turn.test"]) {
  servers.push({urls: [`stun:${t}:${port}`]});
  servers.push({urls: [`turn:${t}:${port}?transport=udp`], username: "u", credential: "c"});
}
window.ran = true;
window.gathered = new Promise(done => {
  const pc = new RTCPeerConnection({iceServers: servers});
  pc.createDataChannel("x");
  pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && done(true);
  pc.createOffer().then(offer => pc.setLocalDescription(offer));
  setTimeout(() => done(false), 4000);
});
for (const t of targets) {
  try { new WebTransport(`https://${t}:${port}/`).ready.catch(() => {}); } catch (e) {}
  fetch(`https://${t}:${port}/`).catch(() => {});
}
</script>"""


def _own_address() -> str | None:
    """This machine's address on its default route (no packet is sent), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


def _mdns_listener() -> socket.socket | None:
    """A socket in the mDNS group, or None where the port cannot be shared."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("", MDNS_PORT))
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                        struct.pack("4s4s", socket.inet_aton(MDNS_GROUP),
                                    socket.inet_aton("0.0.0.0")))
    except OSError:
        sock.close()
        return None
    return sock


def _drain(sock: socket.socket) -> list[bytes]:
    sock.setblocking(False)
    datagrams = []
    with contextlib.suppress(BlockingIOError):
        while True:
            datagrams.append(sock.recv(65536))
    return datagrams


async def _serve_page(html: str) -> asyncio.Server:
    body = html.encode()

    async def serve(reader, writer):
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


async def _render(html: str) -> bool:
    """Render ``html`` as the crawl would (its launch options and switches, behind its
    proxy); whether the page's script ran."""
    from playwright.async_api import async_playwright

    async def resolve(host: str) -> str:
        raise OSError(f"{host}: no such name here")

    proxy = BrowserProxy(resolve, AddressPolicy(["127.0.0.1/32"]))
    await proxy.start()
    options = dict(crawl_settings.PLAYWRIGHT_LAUNCH_OPTIONS)
    options["args"] = browser_args(list(options.get("args", [])), proxy)
    server = await _serve_page(html)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(**options)
            page = await browser.new_page()
            await page.goto(url, timeout=20_000)
            await page.evaluate("window.gathered")  # ICE gathering done, or 4 s passed
            ran = await page.evaluate("window.ran === true")
            await asyncio.sleep(1.0)  # retransmissions and late TURN allocations
            await browser.close()
    finally:
        server.close()
        await proxy.close()
    return ran


def test_a_rendered_page_sends_no_datagram_anywhere():
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("0.0.0.0", 0))  # every local address: 127.0.0.0/8 and the machine's own
    port = listener.getsockname()[1]
    targets = ["127.0.0.1", "127.0.0.5", *filter(None, [_own_address()])]
    mdns = _mdns_listener()
    try:
        html = PAGE % (json.dumps(targets), port)
        assert asyncio.run(_render(html)), "the page's script did not run"
        datagrams = _drain(listener)
        assert datagrams == [], f"{len(datagrams)} datagrams reached {targets} port {port}"
        if mdns is not None:
            announced = [d for d in _drain(mdns) if CHROMIUM_MDNS_NAME.search(d)]
            assert announced == [], announced
    finally:
        listener.close()
        if mdns is not None:
            mdns.close()
