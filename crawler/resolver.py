"""DNS with overrides, like curl's ``--resolve``: ``*.test`` names reach the local test web.

``RESOLVE_OVERRIDES`` maps host patterns (fnmatch) to IPv4 addresses, as a dict or as a
string ``"*.test=127.0.0.1,dead.test=127.0.0.2"``. Names without an override go to the
normal caching resolver. Every answer, overridden or not, passes the SSRF guard
(``crawler.ssrf``) before anything connects to it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer
from twisted.internet.interfaces import IResolverSimple
from zope.interface import implementer

from crawler.ssrf import AddressPolicy, RefusalLog


def parse_overrides(value: Mapping[str, str] | str | None) -> dict[str, str]:
    """Normalize the setting to ``{pattern: ip}``; exact names sort before globs."""
    if not value:
        return {}
    if isinstance(value, str):
        pairs = (item.split("=", 1) for item in value.split(",") if "=" in item)
        value = {k.strip(): v.strip() for k, v in pairs}
    items = sorted(value.items(), key=lambda kv: ("*" in kv[0] or "?" in kv[0], -len(kv[0])))
    return {k.lower(): v for k, v in items}


def resolve_override(host: str, overrides: Mapping[str, str]) -> str | None:
    """The overriding address for ``host``, or ``None``."""
    host = host.lower()
    for pattern, ip in overrides.items():
        if fnmatch.fnmatchcase(host, pattern):
            return ip
    return None


@implementer(IResolverSimple)
class OverrideResolver(CachingThreadedResolver):
    """Caching threaded resolver that answers overridden names itself and refuses (with
    ``SSRFRefused``) names whose address the SSRF ``policy`` does not allow."""

    def __init__(
        self,
        reactor,
        cache_size: int,
        timeout: float,
        overrides: Mapping[str, str],
        policy: AddressPolicy | None = None,
        refusals: RefusalLog | None = None,
    ):
        super().__init__(reactor, cache_size, timeout)
        self.overrides = dict(overrides)
        self.policy = policy or AddressPolicy(enabled=False)
        self.refusals = refusals or RefusalLog()

    @classmethod
    def from_crawler(cls, crawler, reactor):
        settings = crawler.settings
        cache_size = settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0
        overrides = parse_overrides(settings.get("RESOLVE_OVERRIDES"))
        return cls(reactor, cache_size, settings.getfloat("DNS_TIMEOUT"), overrides,
                   AddressPolicy.from_settings(settings), RefusalLog())

    def getHostByName(self, name: str, timeout=()):
        ip = resolve_override(name, self.overrides)
        d = defer.succeed(ip) if ip is not None else super().getHostByName(name, timeout)
        return d.addCallback(self._check, name)

    def _check(self, ip: str, name: str) -> str:
        reason = self.policy.refusal(ip)
        if reason is not None:
            raise self.refusals.refused(name, ip, reason)
        return ip
