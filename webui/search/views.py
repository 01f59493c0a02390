"""Search page, JSON API, its OpenAPI schema and the OpenSearch description."""

from __future__ import annotations

from dataclasses import asdict

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from index.base import SearchUnavailable
from webui.search.backend import QueryError, run_search
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
    context: dict = {"query": query, "max_query_length": settings.SEARCH_MAX_QUERY_LENGTH}
    status = 200
    if query:
        try:
            results = run_search(query, page=page)
        except QueryError as exc:
            context["error"] = str(exc)
            status = 400
        except SearchUnavailable as exc:
            context["unavailable"] = True
            response = render(request, "search/page.html", context, status=503)
            response["Retry-After"] = str(exc.retry_after)
            return response
        else:
            last_page = min(max(1, -(-results.total // results.size)), settings.SEARCH_MAX_PAGE)
            context.update(
                results=results,
                first=(results.page - 1) * results.size + 1,
                last=(results.page - 1) * results.size + len(results.hits),
                prev_page=results.page - 1 if results.page > 1 else None,
                next_page=results.page + 1 if results.page < last_page else None,
                pages=_page_numbers(results.page, last_page) if results.total else [],
                alternatives=[] if results.hits else results.parsed.relaxations(),
            )
    else:
        context["docs"] = _indexed_docs()
    return render(request, "search/page.html", context, status=status)


def _indexed_docs() -> int | None:
    """How many pages the home page says it searches (None when the index is unreachable)."""
    from webui.search.backend import get_search_backend

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
    try:
        results = run_search(
            query,
            page=_int_param(request, "page", 1),
            size=_int_param(request, "size", settings.SEARCH_PAGE_SIZE),
            explain=request.GET.get("explain") == "1",
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
        }
    )


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
        {"html_url": base, "api_url": api, "max_length": settings.SEARCH_MAX_QUERY_LENGTH},
        content_type="application/opensearchdescription+xml; charset=utf-8",
    )
