"""Search page and JSON API."""

from __future__ import annotations

from dataclasses import asdict

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from webui.search.backend import QueryError, run_search


def _int_param(request: HttpRequest, name: str, default: int) -> int:
    try:
        return int(request.GET.get(name, default))
    except (TypeError, ValueError):
        return -1


def search_page(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()
    page = _int_param(request, "page", 1)
    context: dict = {"query": query}
    if query:
        try:
            results = run_search(query, page=page)
        except QueryError as exc:
            context["error"] = str(exc)
        else:
            last_page = max(1, -(-results.total // results.size))
            context.update(
                results=results,
                first=(results.page - 1) * results.size + 1,
                last=(results.page - 1) * results.size + len(results.hits),
                prev_page=results.page - 1 if results.page > 1 else None,
                next_page=results.page + 1 if results.page < last_page else None,
            )
    return render(request, "search/page.html", context)


def api_search(request: HttpRequest) -> JsonResponse:
    query = request.GET.get("q", "").strip()
    if not query:
        return JsonResponse({"error": "Pass a query as ?q=words"}, status=400)
    try:
        results = run_search(
            query, page=_int_param(request, "page", 1), size=_int_param(request, "size", 10)
        )
    except QueryError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    return JsonResponse(
        {
            "query": results.query,
            "total": results.total,
            "page": results.page,
            "size": results.size,
            "took_ms": round(results.took_ms, 2),
            "partial": results.partial,
            "suggestion": results.suggestion,
            "results": [asdict(hit) for hit in results.hits],
        }
    )
