"""What the admin and the staff pages do to the crawl: recrawl URLs, drop a host's pages."""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from django.conf import settings
from scrapy import Request

from crawler.config import get_config
from crawler.frontier import Entry, Frontier, frontier_options, open_frontier
from crawler.hostrules import HostRule, HostRules
from crawler.quality.verdicts import VerdictStore, open_verdicts
from crawler.urls import InvalidURL, canonicalize, host_of, netloc_of

#: The permission that "recrawl now" needs, in the admin and on the staff pages.
RECRAWL_PERMISSION = "control.recrawl_seed"


class OutOfScope(InvalidURL):
    """A URL whose host the crawl's host rules keep out (blocked, or not allowed)."""

if TYPE_CHECKING:
    from webui.control.models import HostRule as HostRuleModel


@contextlib.contextmanager
def crawl_frontier() -> Iterator[Frontier]:
    """The crawl's frontier (local file or Redis, like the crawler's), closed on exit.

    Opened with the crawl's ``FRONTIER_*`` settings; robots.txt-first stays off: the web UI
    only queues recrawls and drops hosts, the scheduler fetches robots.txt when it leases.
    """
    options = frontier_options(settings, robots_first=False)
    frontier = open_frontier(get_config(), settings.FRONTIER_CRAWL, **options)
    try:
        yield frontier
    finally:
        frontier.close()


@contextlib.contextmanager
def crawl_verdicts() -> Iterator[VerdictStore]:
    """The crawl's host verdicts (mirrors, spam, template traps), closed on exit."""
    store = open_verdicts(get_config(), settings.FRONTIER_CRAWL)
    try:
        yield store
    finally:
        store.close()


def set_host_quality(host: str, quality: str) -> HostRuleModel:
    """Override the crawl's verdicts for ``host`` with a host rule (``trusted``, ``spam``
    or ``""``); keeps the rule's other fields. Crawlers pick it up within HOST_RULES_TTL."""
    from webui.control.models import HostRule as Model

    pattern = host.split(":", 1)[0].strip().lower()
    rule, _ = Model.objects.get_or_create(pattern=pattern)
    rule.quality = quality
    if quality and not rule.note:
        rule.note = f"quality override: {quality}"
    rule.save()
    return rule


def set_host_never_judge(host: str, never_judge: bool = True) -> HostRuleModel:
    """Never judge ``host`` (or judge it again): a host rule whose ``never_judge`` makes the
    crawl show its verdicts without acting on them; keeps the rule's other fields."""
    from webui.control.models import HostRule as Model

    pattern = host.split(":", 1)[0].strip().lower()
    rule, _ = Model.objects.get_or_create(pattern=pattern)
    rule.never_judge = never_judge
    if never_judge and not rule.note:
        rule.note = "never judge this host"
    rule.save()
    return rule


def recrawl_entry(url: str) -> Entry:
    """A frontier entry that fetches ``url`` again: top tier, past the seen filter and budget.

    Raises ``InvalidURL`` for URLs the crawler cannot fetch.
    """
    url = canonicalize(url)
    request = Request(url, meta={"depth": 0, "frontier_tier": 0, "recrawl": True},
                      dont_filter=True)
    return Entry(
        url=url,
        host=netloc_of(url),
        payload=pickle.dumps(request.to_dict(), protocol=pickle.HIGHEST_PROTOCOL),
        rank=0,
        filter=False,
        ip=host_of(url),
    )


def current_host_rules() -> HostRules:
    """The admin's host rules as the crawler sees them (``crawler.hostrules``)."""
    from webui.control.models import HostRule as HostRuleModel

    return HostRules.static(
        HostRule(r.pattern, r.action, r.crawl_delay, r.page_budget, r.render_js)
        for r in HostRuleModel.objects.all()
    )


def check_scope(url: str, rules: HostRules) -> None:
    """Raise ``OutOfScope`` unless the spider would crawl ``url``'s host (``in_scope``:
    not blocked, and allowed when allow rules exist)."""
    host = host_of(url)
    policy = rules.policy(host)
    if policy.blocked:
        raise OutOfScope(f"{host} is blocked by a host rule")
    if rules.has_allow_rules and not policy.allowed:
        raise OutOfScope(f"{host} is not allowed by any allow rule")


def recrawl_now(urls: Iterable[str]) -> int:
    """Queue ``urls`` in the crawl's frontier at top priority; returns how many were queued.

    Every URL is canonicalized and checked against the host rules first (``InvalidURL``,
    ``OutOfScope``), so nothing the crawl would not fetch jumps the queue. The caller checks
    ``RECRAWL_PERMISSION``.
    """
    rules = current_host_rules()
    entries = [recrawl_entry(u) for u in urls]
    for entry in entries:
        check_scope(entry.url, rules)
    with crawl_frontier() as frontier:
        return frontier.add(entries)["added"]


def remove_host_from_index(pattern: str) -> int:
    """Delete the indexed pages of hosts matching ``pattern``; returns how many went.

    Writes through a backend of its own (closed at once, so a crawl can write again later)
    and refreshes the page's shared reader. Raises ``RuntimeError`` when another process
    (a running embedded crawl) holds the index's writer lock.
    """
    from index import get_backend
    from webui.search.backend import get_search_backend

    writer = get_backend(get_config())
    try:
        writer.ensure_index()
        removed = writer.delete_by_host(pattern)
    finally:
        writer.close()
    get_search_backend().refresh()
    return removed
