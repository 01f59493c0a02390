"""Content-Security-Policy and per-client rate limiting for the web UI."""

from __future__ import annotations

import functools
import math
import secrets
import time
from collections.abc import Callable

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse


class ContentSecurityPolicyMiddleware:
    """Sends ``settings.CONTENT_SECURITY_POLICY`` with a fresh nonce per request.

    Templates put ``nonce="{{ request.csp_nonce }}"`` on the few inline scripts they need;
    any other inline script (e.g. one smuggled in by a crawled page) is refused by the browser.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.csp_nonce = secrets.token_urlsafe(16)
        response = self.get_response(request)
        policy = getattr(settings, "CONTENT_SECURITY_POLICY", "")
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy.replace("{nonce}", request.csp_nonce)
        return response


def client_address(request: HttpRequest) -> str:
    """The client's address as the server saw it (no trust in X-Forwarded-For)."""
    return request.META.get("REMOTE_ADDR") or "unknown"


def check_rate(key: str, limit: int, window_s: int, now: float | None = None) -> int:
    """Count one request for ``key``; 0 when allowed, else seconds until the window resets.

    Fixed windows counted in Django's cache, so every process sharing the cache (Redis)
    shares the limit.
    """
    if limit <= 0:
        return 0
    now = time.time() if now is None else now
    window = int(now // window_s)
    slot = f"ratelimit:{key}:{window}"
    cache.add(slot, 0, timeout=window_s + 1)
    try:
        count = cache.incr(slot)
    except ValueError:  # expired between add and incr
        cache.set(slot, 1, timeout=window_s + 1)
        count = 1
    if count <= limit:
        return 0
    return max(1, math.ceil((window + 1) * window_s - now))


def rate_limited(scope: str, json: bool = False):
    """View decorator: 429 with Retry-After once a client exceeds ``SEARCH_RATE_LIMIT``."""

    def decorate(view):
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs):
            retry_after = check_rate(
                f"{scope}:{client_address(request)}",
                settings.SEARCH_RATE_LIMIT,
                settings.SEARCH_RATE_WINDOW_S,
            )
            if not retry_after:
                return view(request, *args, **kwargs)
            message = (
                f"Too many requests: at most {settings.SEARCH_RATE_LIMIT} every "
                f"{settings.SEARCH_RATE_WINDOW_S} s. Retry in {retry_after} s."
            )
            if json:
                response = JsonResponse({"error": message}, status=429)
            else:
                response = HttpResponse(message, status=429, content_type="text/plain")
            response["Retry-After"] = str(retry_after)
            return response

        return wrapper

    return decorate
