"""Search page, JSON API, its OpenAPI schema and the OpenSearch description."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from crawler.config import get_config
from index.base import SearchUnavailable
from index.query import MAX_QUERY_CHARS, Query, relaxations
from webui.search import querylog
from webui.search.backend import QueryError, get_search_backend, run_search
from webui.search.cache import CachedCopy, NoCachedCopy, cached_copy, is_doc_id, stored_copy
from webui.search.complete import completions
from webui.search.openapi import openapi_schema
from webui.security import rate_limited


def _int_param(request: HttpRequest, name: str, default: int) -> int:
    try:
        return int(request.GET.get(name, default))
    except (TypeError, ValueError):
        return -1


def _page_numbers(page: int, last_page: int, width: int = 9) -> list[int]:
    first = max(1, min(page - width // 2, last_page - width + 1))
    return list(range(first, min(last_page, first + width - 1) + 1))


@require_GET
@rate_limited("page")
def search_page(request: HttpRequest) -> HttpResponse:
    """The search page: results, pagination, did-you-mean and help; works without JS."""
    query = request.GET.get("q", "").strip()
    page = _int_param(request, "page", 1)
    context: dict = {"query": query, "max_query_length": MAX_QUERY_CHARS}
    status = 200
    if query:
        try:
            results = run_search(query, page=page, facets=True)
        except QueryError as exc:
            context["error"] = str(exc)
            status = 400
        except SearchUnavailable as exc:
            context["unavailable"] = True
            response = render(request, "search/page.html", context, status=503)
            response["Retry-After"] = str(exc.retry_after)
            return response
        else:
            last_page = min(max(1, -(-results.total // results.size)), settings.SEARCH_MAX_PAGE,
                            settings.SEARCH_MAX_RESULTS // results.size)
            context.update(
                results=results,
                click_ref=_click_ref(querylog.record(results, "page")),
                first=(results.page - 1) * results.size + 1,
                last=(results.page - 1) * results.size + len(results.hits),
                prev_page=results.page - 1 if results.page > 1 else None,
                next_page=results.page + 1 if results.page < last_page else None,
                pages=_page_numbers(results.page, last_page) if results.total else [],
                alternatives=[] if results.hits else relaxations(results.parsed),
                facets=_facet_links(results.parsed, results.facets),
            )
    else:
        context["docs"] = _indexed_docs()
    return render(request, "search/page.html", context, status=status)


def _click_ref(entry_id: int | None) -> str | None:
    return querylog.click_ref(entry_id) if entry_id is not None else None


#: Facet name -> (heading, query operator).
_FACETS = {"site": ("Sites", "site"), "lang": ("Languages", "lang")}


def _facet_links(parsed: Query, facets: dict) -> list[dict]:
    """Each facet with more than one value as ``{"title", "values": [(value, count,
    narrower query or None when the query already asks for it)]}``."""
    asked = {str(leaf) for leaf in parsed.leaves(positive_only=True)}
    out = []
    for name, values in facets.items():
        title, operator = _FACETS[name]
        links = [(value, count, None if f"{operator}:{value}" in asked
                  else f"{parsed.raw} {operator}:{value}") for value, count in values]
        if len(links) > 1 or any(q is None for _, _, q in links):
            out.append({"title": title, "values": links})
    return out


def _indexed_docs() -> int | None:
    """How many pages the home page says it searches (None when the index is unreachable)."""
    try:
        return get_search_backend().stats()["docs"]
    except Exception:
        return None


def hit_json(hit) -> dict:
    """One hit as the API returns it (``explain`` only when asked for)."""
    data = asdict(hit)
    if data.get("explain") is None:
        data.pop("explain", None)
    return data


@require_GET
@rate_limited("api", json=True)
def api_search(request: HttpRequest) -> JsonResponse:
    """``GET /api/search?q=&page=&size=``: one page of results as JSON (see the schema)."""
    query = request.GET.get("q", "").strip()
    if not query:
        return JsonResponse({"error": "Pass a query as ?q=words"}, status=400)
    explain = request.GET.get("explain") == "1"
    if explain and not request.user.is_staff:
        return JsonResponse({"error": "explain=1 is for staff: log in at "
                                      f"{settings.LOGIN_URL} first."}, status=403)
    try:
        results = run_search(
            query,
            page=_int_param(request, "page", 1),
            size=_int_param(request, "size", settings.SEARCH_PAGE_SIZE),
            explain=explain,
            facets=request.GET.get("facets") == "1",
        )
    except QueryError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    except SearchUnavailable as exc:
        response = JsonResponse(
            {"error": f"Search is briefly unavailable; try again in {exc.retry_after} s."},
            status=503,
        )
        response["Retry-After"] = str(exc.retry_after)
        return response
    querylog.record(results, "api")
    extra = {}
    if results.facets:
        extra["facets"] = {name: [{"value": v, "count": n} for v, n in values]
                           for name, values in results.facets.items()}
    return JsonResponse(
        {
            "query": results.query,
            "total": results.total,
            "page": results.page,
            "size": results.size,
            "took_ms": round(results.took_ms, 2),
            "partial": results.partial,
            "suggestion": results.suggestion,
            "results": [hit_json(hit) for hit in results.hits],
            **extra,
        }
    )


@csrf_exempt  # a ping carries no token; the signed reference stands for one
@require_POST
@rate_limited("api", json=True)
def click(request: HttpRequest) -> HttpResponse:
    """``POST /click?l=<click ref>&r=<rank>``: the ping a result link sends when followed;
    it marks the logged search as clicked (the query log's no-click rate). 204 either way;
    400 for a reference the results page did not issue (``querylog.click_ref``)."""
    entry, rank = querylog.entry_of(request.GET.get("l", "")), _int_param(request, "r", -1)
    if entry is None or rank <= 0:
        return JsonResponse({"error": "Pass l=<the ping's reference>&r=<rank>"}, status=400)
    querylog.clicked(entry, rank)
    return HttpResponse(status=204)


@require_GET
@rate_limited("complete", json=True)
def api_complete(request: HttpRequest) -> JsonResponse:
    """``GET /api/complete?q=``: logged queries and page titles completing what was typed
    (at most ``SEARCH_COMPLETIONS``; two prefix-index lookups per request)."""
    text = request.GET.get("q", "")
    if len(text) > settings.SEARCH_COMPLETE_MAX_CHARS:
        return JsonResponse(
            {"error": f"Completion takes at most {settings.SEARCH_COMPLETE_MAX_CHARS} "
                      "characters; search instead."}, status=400)
    found = completions(text, settings.SEARCH_COMPLETIONS)
    return JsonResponse({"query": text, "completions": found})


def _copy_of(request: HttpRequest, whole: bool) -> CachedCopy:
    """The stored copy for ``?id=`` (cleaned when ``whole``, else its URL and fetch time
    only), or a 404 saying why there is none."""
    doc_id = request.GET.get("id", "")
    if not is_doc_id(doc_id):
        raise Http404("Pass the id of a search result as ?id= (16 hex digits).")
    doc = get_search_backend().get(doc_id)
    if doc is None:
        raise Http404("No indexed page has this id.")
    warc_dir = settings.WARC_DIR or get_config().data_dir / "warc"
    try:
        if whole:
            return cached_copy(doc, warc_dir, settings.CACHED_COPY_MAX_BYTES)
        return stored_copy(doc, warc_dir)
    except NoCachedCopy as exc:
        raise Http404(str(exc)) from None


@require_GET
@rate_limited("page")
def cache_page(request: HttpRequest) -> HttpResponse:
    """``/cache?id=``: the stored copy of a result in a sandboxed frame, under a banner with
    the original URL and the fetch time."""
    try:
        copy = _copy_of(request, whole=False)
    except Http404 as exc:
        return render(request, "search/cache.html", {"error": str(exc)}, status=404)
    fetched = datetime.fromtimestamp(copy.fetched_at, UTC) if copy.fetched_at else None
    return render(request, "search/cache.html",
                  {"copy": copy, "fetched": fetched, "doc_id": request.GET["id"]})


@require_GET
@rate_limited("page")
@xframe_options_sameorigin
def cache_frame(request: HttpRequest) -> HttpResponse:
    """``/cache/frame?id=``: the cleaned copy itself, under ``CACHE_CONTENT_SECURITY_POLICY``."""
    try:
        copy = _copy_of(request, whole=True)
    except Http404 as exc:
        response = HttpResponse(str(exc), status=404, content_type="text/plain; charset=utf-8")
    else:
        response = HttpResponse(copy.html, content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = settings.CACHE_CONTENT_SECURITY_POLICY
    response["Referrer-Policy"] = "no-referrer"
    return response


@require_GET
def api_schema(request: HttpRequest) -> JsonResponse:
    """The OpenAPI 3.1 description of the JSON API."""
    server = request.build_absolute_uri("/").rstrip("/")
    return JsonResponse(openapi_schema(server), json_dumps_params={"indent": 2})


@require_GET
def about(request: HttpRequest) -> HttpResponse:
    """What the crawler is and how site owners control it (its user agent links here)."""
    from webui.dashboard.inspect import crawler_user_agent

    return render(request, "search/about.html", {"user_agent": crawler_user_agent()})


@require_GET
def opensearch(request: HttpRequest) -> HttpResponse:
    """OpenSearch description, so browsers can add this engine."""
    base = request.build_absolute_uri(reverse("search:page"))
    api = request.build_absolute_uri(reverse("search:api"))
    return render(
        request,
        "search/opensearch.xml",
        {"html_url": base, "api_url": api, "max_length": MAX_QUERY_CHARS},
        content_type="application/opensearchdescription+xml; charset=utf-8",
    )
