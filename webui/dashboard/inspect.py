"""The URL inspector: everything the crawl and the index know about one URL."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings

from crawler.config import get_config
from crawler.frontier import HostState
from crawler.hostrules import HostPolicy, HostRule, HostRules
from crawler.quality.verdicts import MIRROR, Verdict
from crawler.robots import RobotsPolicy, user_agent
from crawler.urls import InvalidURL, canonicalize, doc_id_for, host_of, netloc_of
from index.base import Document
from webui.control.actions import crawl_frontier, crawl_verdicts


@dataclass
class RobotsVerdict:
    """The robots.txt decision from the crawl's shared robots cache."""

    known: bool
    allowed: bool | None = None
    status: int | None = None
    expires_at: float | None = None
    crawl_delay: float | None = None


@dataclass
class Ranking:
    """Where the page ranks for one query, and what each ranking signal gave it there."""

    query: str
    depth: int
    rank: int | None = None
    score: float | None = None
    explain: dict[str, dict] = field(default_factory=dict)
    #: The hit the page's cluster shows instead of it, when another copy leads the cluster.
    shown_instead: str = ""
    error: str = ""
    total: int = 0

    @property
    def signals(self) -> list[tuple[str, dict]]:
        """The signals, the largest contribution first."""
        return sorted(self.explain.items(), key=lambda kv: -abs(kv[1]["contribution"]))


#: How deep the inspector looks for the page in a query's results.
RANK_DEPTH = 100


@dataclass
class Inspection:
    """What is known about ``url``; ``reasons`` say why it is (not) in the index."""

    url: str
    canonical: str | None = None
    error: str | None = None
    host: str = ""
    doc_id: str = ""
    rules: list[HostRule] = field(default_factory=list)
    policy: HostPolicy | None = None
    robots: RobotsVerdict | None = None
    seen: bool | None = None
    host_state: HostState | None = None
    frontier_error: str | None = None
    document: Document | None = None
    cluster_id: str = ""
    cluster_size: int | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    #: With a query: "why this result" for it.
    ranking: Ranking | None = None

    @property
    def indexed(self) -> bool:
        return self.document is not None


def crawler_user_agent() -> str:
    """The user agent the crawler matches robots.txt groups with."""
    return user_agent(settings)


def _host_rules() -> list[HostRule]:
    from webui.control.models import HostRule as HostRuleModel

    return [
        HostRule(r.pattern, r.action, r.crawl_delay, r.page_budget, r.render_js, r.quality,
                 r.never_judge)
        for r in HostRuleModel.objects.all()
    ]


def _dedup_cluster(doc_id: str) -> tuple[str, int] | None:
    """``(cluster, size)`` from the shared dedup store (Redis only; embedded keeps it in the
    crawler's memory)."""
    config = get_config()
    if not config.redis_url:
        return None
    from crawler.quality.dedup.store import RedisDedupStore

    store = RedisDedupStore.from_url(config.redis_url)
    found = store.lookup(doc_id)
    if found is None:
        return None
    return found[0], store.cluster_size(found[0])


def rank_for(backend, query: str, doc: Document) -> Ranking:
    """Why ``doc`` ranks where it does for ``query``: its place in the first
    :data:`RANK_DEPTH` results and each signal's value and contribution (the engine's own
    explain output, the same the API's ``explain=1`` gives)."""
    from index.query import QueryError

    ranking = Ranking(query=query, depth=RANK_DEPTH)
    try:
        results = backend.search(query, size=RANK_DEPTH, explain=True)
    except QueryError as exc:
        ranking.error = f"The query cannot be parsed: {exc}"
        return ranking
    except Exception as exc:  # an index outage must not hide the rest of the page
        ranking.error = f"The search failed: {type(exc).__name__}: {exc}"
        return ranking
    ranking.total = results.total
    for position, hit in enumerate(results.hits, start=1):
        if hit.id == doc.id:
            ranking.rank, ranking.score = position, hit.score
            ranking.explain = hit.explain or {}
            return ranking
        if doc.cluster_id and hit.cluster_id == doc.cluster_id and not ranking.shown_instead:
            ranking.shown_instead = hit.url
    return ranking


def inspect_url(url: str, query: str = "") -> Inspection:
    """Canonical form, host rules, robots decision, frontier state, index entry and why;
    with ``query``, also why the page ranks where it does for it."""
    from webui.search.backend import get_search_backend

    result = Inspection(url=url.strip())
    try:
        canonical = canonicalize(result.url)
    except InvalidURL as exc:
        result.error = str(exc)
        result.reasons.append("The crawler cannot fetch this URL: only http(s) URLs with a host.")
        return result
    result.canonical = canonical
    result.host = host_of(canonical)
    result.doc_id = doc_id_for(canonical)
    all_rules = _host_rules()
    result.rules = [r for r in all_rules if r.matches(result.host)]
    rules = HostRules.static(all_rules)
    result.policy = rules.policy(result.host)
    try:
        with crawl_frontier() as frontier:
            result.seen = frontier.seen([canonical])[0]
            netloc = netloc_of(canonical)
            result.host_state = frontier.host_state(netloc)
            robots = RobotsPolicy.from_settings(settings, frontier)
            stored = frontier.robots_get(netloc)
            rules_now = robots.rules(netloc)
            if rules_now is None:
                result.robots = RobotsVerdict(known=False,
                                              status=stored[0] if stored else None)
            else:
                result.robots = RobotsVerdict(
                    known=True,
                    allowed=rules_now.allowed(canonical, robots.user_agent),
                    status=stored[0] if stored else None,
                    expires_at=rules_now.expires_at,
                    crawl_delay=rules_now.crawl_delay(robots.user_agent),
                )
    except Exception as exc:  # a frontier outage must not hide what the index knows
        result.frontier_error = f"{type(exc).__name__}: {exc}"
    try:
        with crawl_verdicts() as store:
            result.verdicts = store.for_host(netloc_of(canonical))
    except Exception as exc:
        result.frontier_error = result.frontier_error or f"{type(exc).__name__}: {exc}"
    backend = get_search_backend()
    backend.refresh()
    result.document = backend.get(result.doc_id)
    if result.document is not None:
        result.cluster_id = result.document.cluster_id
        result.cluster_size = result.document.dup_count or None
        if query:
            result.ranking = rank_for(backend, query, result.document)
    cluster = _dedup_cluster(result.doc_id)
    if cluster is not None:
        result.cluster_id, result.cluster_size = cluster
    result.reasons = _reasons(result, rules.has_allow_rules)
    return result


def _verdict_reason(v: Verdict, overridden: bool) -> str:
    sure = f" (confidence {v.confidence:.2f})" if v.kind != "template_trap" else ""
    why = "; ".join(v.reasons)
    if overridden or v.action == "overridden":
        return (f"Its host was judged {v.label}{sure}, but a host rule overrides the verdict "
                f"(never judge, or trusted): the crawl does not act on it ({why}).")
    if v.action == "dry_run":
        return (f"Its host was judged {v.label}{sure} in a dry run (QUALITY_DRY_RUN): "
                f"logged, not acted on ({why}).")
    if v.action == "lifted":
        return (f"Its host was judged {v.label} once; its later pages contradicted the "
                f"verdict, which is lifted: it is crawled and indexed again ({why}).")
    if v.kind == MIRROR:
        return (f"Its host is a mirror of {v.of}: its crawl stopped and its pages are kept "
                f"out of the index ({why}).")
    if v.kind == "spam":
        return (f"Its host was judged spam{sure}: its crawl stopped and its pages are kept "
                f"out of the index ({why}). Never judge this host, or trust it, in the "
                "admin's host quality page if this is wrong.")
    return (f"Its host has template-trap URL patterns, no longer crawled: "
            f"{', '.join(v.detail.get('patterns', []))}.")


def _reasons(r: Inspection, has_allow_rules: bool) -> list[str]:
    reasons: list[str] = []
    trusted = bool(r.policy and r.policy.quality == "trusted")
    reasons += [_verdict_reason(v, trusted and v.kind != "template_trap") for v in r.verdicts]
    if r.indexed:
        reasons.append("Indexed: it was fetched, is HTML, allowed indexing and is the kept page "
                       "of its duplicate cluster.")
        if r.policy and r.policy.blocked:
            reasons.append("Its host is now blocked: block it again from the host rules to "
                           "remove its pages from the index.")
        return reasons
    if r.policy and r.policy.blocked:
        reasons.append("Not indexed: a host rule blocks its host.")
    elif has_allow_rules and r.policy and not r.policy.allowed:
        reasons.append("Not indexed: allow rules exist and none matches its host, so it is out "
                       "of the crawl's scope.")
    if r.robots and r.robots.known and r.robots.allowed is False:
        reasons.append("Not indexed: robots.txt disallows it for our user agent.")
    elif r.robots and not r.robots.known and r.seen:
        reasons.append("robots.txt of its host is not known yet (or expired): the crawler "
                       "fetches it before the host's pages.")
    if r.seen is False:
        reasons.append("Not indexed: the crawler has not discovered this URL (no followed link "
                       "points to it). Recrawl it now to queue it.")
    elif r.seen:
        if r.cluster_id and r.cluster_id != r.doc_id:
            reasons.append(f"Not indexed: a near-copy of another page (cluster {r.cluster_id}); "
                           "only one page per cluster is kept.")
        else:
            reasons.append("Not indexed yet: the URL was discovered; it is still queued, or its "
                           "fetch failed, or it was not HTML, had noindex, or was a duplicate.")
    if not reasons:
        reasons.append("Not indexed.")
    return reasons
