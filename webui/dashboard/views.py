"""Staff pages: crawl dashboard, URL inspector and "recrawl now"."""

from __future__ import annotations

import time

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from crawler.config import get_config
from crawler.statsexport import open_stats_store
from crawler.urls import InvalidURL
from webui.control.actions import (
    RECRAWL_PERMISSION,
    crawl_frontier,
    crawl_verdicts,
    recrawl_now,
)
from webui.dashboard.crawlstats import summarize, top
from webui.dashboard.inspect import inspect_url
from webui.dashboard.svg import line_chart
from webui.search import querylog

PLOTS = (
    ("pages", "Pages per second", "/s", "#1a73e8"),
    ("errors", "Errors per second", "/s", "#c5221f"),
    ("queue_depth", "Queue depth", "", "#188038"),
    ("hosts_cooldown", "Hosts in cooldown", "", "#e37400"),
    ("indexed", "Documents indexed per second", "/s", "#9334e6"),
)
WINDOWS = ((900, "15 min"), (3600, "1 hour"), (6 * 3600, "6 hours"), (86400, "1 day"))


def _frontier_stats() -> tuple[dict, str | None]:
    try:
        with crawl_frontier() as frontier:
            return frontier.stats(), None
    except Exception as exc:
        return {}, f"{type(exc).__name__}: {exc}"


def _verdicts() -> tuple[list, str | None]:
    try:
        with crawl_verdicts() as store:
            return store.all(), None
    except Exception as exc:
        return [], f"{type(exc).__name__}: {exc}"


def _index_stats() -> tuple[dict, str | None]:
    from webui.search.backend import get_search_backend

    try:
        backend = get_search_backend()
        backend.refresh()
        return backend.stats(), None
    except Exception as exc:
        return {}, f"{type(exc).__name__}: {exc}"


@require_GET
@staff_member_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """Pages/s, errors, queue, cooldown, top hosts, drops and index size, with plots."""
    try:
        window = int(request.GET.get("window", settings.DASHBOARD_WINDOW_S))
    except ValueError:
        window = settings.DASHBOARD_WINDOW_S
    window = min(max(window, 60), 7 * 86400)
    now = time.time()
    store_error = None
    try:
        snapshots = open_stats_store(get_config()).read(since=now - window)
    except Exception as exc:
        snapshots, store_error = [], f"{type(exc).__name__}: {exc}"
    summary = summarize(snapshots, now - window, now)
    frontier, frontier_error = _frontier_stats()
    index, index_error = _index_stats()
    verdicts, verdicts_error = _verdicts()
    drops = summary.drops
    for key, value in frontier.items():  # the frontier's own counters cover every worker
        if key.startswith("dropped/"):
            reason = key.split("/", 1)[1].replace("_", " ")
            drops[reason] = max(drops.get(reason, 0), value)
    cards = [
        ("Pages per second", summary.latest("pages")),
        ("Pages fetched", summary.totals.get("response_received_count")),
        ("Errors", sum(summary.errors.values())),
        ("Queue depth", frontier.get("queue_depth", summary.totals.get(
            "frontier/cluster/queue_depth"))),
        ("Hosts in cooldown", frontier.get("hosts_cooldown")),
        ("Hosts leased", frontier.get("leases")),
        ("Hosts known", frontier.get("hosts")),
        ("Documents in index", index.get("docs")),
        ("Index size", index.get("bytes")),
        ("Workers reporting", len(summary.workers)),
    ]
    plots = [
        (title, line_chart(summary.series[name], title, unit, color))
        for name, title, unit, color in PLOTS
    ]
    return render(
        request,
        "dashboard/dashboard.html",
        {
            "cards": cards,
            "plots": plots,
            "errors": top(summary.errors),
            "drops": top(drops, 15),
            "hosts": top(summary.hosts, 15),
            "workers": summary.workers,
            "window": window,
            "windows": WINDOWS,
            "problems": [p for p in (store_error, frontier_error, index_error, verdicts_error)
                         if p],
            "verdicts": verdicts[:50],
            "frontier": sorted(frontier.items()),
            "searches": querylog.summary(window),
            "query_log": settings.SEARCH_QUERY_LOG,
        },
    )


@require_GET
@staff_member_required
def inspect(request: HttpRequest) -> HttpResponse:
    """Enter a URL; see canonical form, robots, crawl state, cluster, index state, PageRank;
    with a query (``q``), why the page ranks where it does for it."""
    url = request.GET.get("url", "").strip()[:2000]
    query = request.GET.get("q", "").strip()[:500]
    context: dict = {"url": url, "q": query, "now": time.time()}
    if url:
        context["r"] = inspect_url(url, query)
    return render(request, "dashboard/inspect.html", context)


@require_POST
@staff_member_required
@permission_required(RECRAWL_PERMISSION, raise_exception=True)
def recrawl(request: HttpRequest) -> HttpResponse:
    """Queue one URL at top priority (staff with the recrawl permission, URLs in the
    crawl's scope only), then go back to its inspection."""
    url = request.POST.get("url", "").strip()[:2000]
    try:
        added = recrawl_now([url])
    except InvalidURL as exc:
        messages.error(request, f"Cannot recrawl: {exc}")
    except Exception as exc:
        messages.error(request, f"The frontier is unreachable ({exc}); try again.")
    else:
        messages.success(request, f"Queued {url} at top priority." if added
                         else f"{url} was not queued (its host's budget is spent).")
    return redirect(reverse("dashboard:inspect") + "?" + urlencode({"url": url}))
