"""A name server whose answer changes after the first lookup, as in DNS rebinding.

``RebindingResolver`` is the crawler's resolver (``crawler.resolver.OverrideResolver``)
for names listed in the ``REBIND_FIRST_ANSWERS`` setting (``name=ip,...``): their first
lookup answers that address, every later one the name's real record (its
``RESOLVE_OVERRIDES`` entry), uncached, like a record with a TTL of 0. A crawl test sets
``TWISTED_DNS_RESOLVER=tests.rebinding.RebindingResolver``.
"""

from __future__ import annotations

from twisted.internet import defer

from crawler.resolver import OverrideResolver, parse_overrides


class RebindingResolver(OverrideResolver):
    """First lookup of a listed name: its first answer; afterwards: its override."""

    @classmethod
    def from_crawler(cls, crawler, reactor):
        resolver = super().from_crawler(crawler, reactor)
        resolver.first_answers = parse_overrides(crawler.settings.get("REBIND_FIRST_ANSWERS"))
        resolver.lookups = {}
        return resolver

    def getHostByName(self, name: str, timeout=()):
        name = name.lower()
        if name in self.first_answers:
            self.lookups[name] = self.lookups.get(name, 0) + 1
            if self.lookups[name] == 1:
                return defer.succeed(self.first_answers[name]).addCallback(self._check, name)
        return super().getHostByName(name, timeout)
