"""SSRF guard: the crawler connects only to public addresses unless an allowlist names them.

Checked where every connection gets its address: the resolver (``crawler.resolver``) checks
each name after resolution, so redirects and links are covered wherever they come from, and
``GuardedDownloadHandler`` checks URLs that carry a literal IP (Twisted connects to those
without asking the resolver) and the hosts a browser is about to render.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from functools import lru_cache

from scrapy.exceptions import IgnoreRequest

from crawler.options import enabled

logger = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class SSRFRefused(IgnoreRequest):
    """A connection to a non-public address that no allowlist entry names; never retried.

    ``counted``: the refusal is already in the stats (the browser proxy counts its own).
    """

    def __init__(self, host: str, ip: str, reason: str, counted: bool = False):
        super().__init__(
            f"SSRF guard refused {host} ({ip}: {reason}); allow it with "
            f"SSRF_ALLOWED_NETWORKS if it is meant to be crawled"
        )
        self.host = host
        self.ip = ip
        self.reason = reason
        self.counted = counted


def address_class(ip: IPAddress) -> str | None:
    """Why ``ip`` is not a public unicast address (``loopback``, ``private``...), or None."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return address_class(ip.ipv4_mapped)
    for name in ("unspecified", "loopback", "link_local", "multicast", "reserved", "private"):
        if getattr(ip, f"is_{name}"):
            return name
    if not ip.is_global:
        return "non_global"  # shared address space (100.64/10), documentation ranges...
    return None


@lru_cache(maxsize=4096)  # asked for every request; a name fails by a costly ValueError
def is_ip_literal(host: str) -> bool:
    """Whether ``host`` is an IP address (IPv6 with or without brackets), not a name."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


#: Addresses whose verdict an ``AddressPolicy`` keeps.
REFUSALS_CACHED = 4096


class AddressPolicy:
    """Decides whether the crawler may connect to an address.

    Refuses loopback, private, link-local, multicast, reserved, unspecified and other
    non-global addresses, except those inside ``allowed`` networks (CIDR strings).
    """

    def __init__(self, allowed: Iterable[str] = (), enabled: bool = True):
        self.enabled = enabled
        self.allowed = [ipaddress.ip_network(cidr.strip(), strict=False)
                        for cidr in allowed if cidr.strip()]
        # address -> refusal: asked at every request, and a crawl meets few addresses
        self._refusals: dict[str, str | None] = {}

    @classmethod
    def from_settings(cls, settings) -> AddressPolicy:
        """``SSRF_GUARD_ENABLED`` (default True), ``SSRF_ALLOWED_NETWORKS`` (CIDR list)."""
        return cls(settings.getlist("SSRF_ALLOWED_NETWORKS"),
                   enabled=enabled(settings, "SSRF_GUARD_ENABLED"))

    def refusal(self, address: str) -> str | None:
        """The reason to refuse ``address`` (an IP literal), or None if it may be used.

        Strings that are not IP addresses are not this method's business: None.
        """
        if not self.enabled:
            return None
        try:
            return self._refusals[address]
        except KeyError:
            pass
        if len(self._refusals) >= REFUSALS_CACHED:
            self._refusals.clear()
        reason = self._refusals[address] = self._refusal(address)
        return reason

    def _refusal(self, address: str) -> str | None:
        try:
            ip = ipaddress.ip_address(address.strip("[]").split("%", 1)[0])
        except ValueError:
            return None
        reason = address_class(ip)
        if reason is None:
            return None
        if any(ip.version == net.version and ip in net for net in self.allowed):
            return None
        return reason


class RefusalLog:
    """Logs each refused host once (bounded); the refusals are counted where they surface,
    by ``crawler.fetch.FetchLimitsMiddleware`` (the resolver has no crawler stats)."""

    def __init__(self, max_hosts: int = 10_000):
        self.max_hosts = max_hosts
        self._logged: set[str] = set()

    def refused(self, host: str, ip: str, reason: str) -> SSRFRefused:
        """Log the refusal (first one per host); returns the exception to raise."""
        if host not in self._logged:
            if len(self._logged) >= self.max_hosts:
                self._logged.clear()
            self._logged.add(host)
            logger.warning("SSRF guard: refused %s -> %s (%s)", host, ip, reason)
        return SSRFRefused(host, ip, reason)
