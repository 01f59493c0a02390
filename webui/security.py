"""Content-Security-Policy, client addresses behind trusted proxies, per-client rate limits
(sliding windows) and login throttling for the web UI."""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import math
import secrets
import time
from collections.abc import Callable, Iterable

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


def _networks(cidrs: Iterable[str]) -> list:
    return [ipaddress.ip_network(c.strip(), strict=False) for c in cidrs if c.strip()]


def _is_trusted(address: str, networks: list) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip().strip("[]"))
    except ValueError:
        return False
    return any(ip.version == net.version and ip in net for net in networks)


def client_address(request: HttpRequest) -> str:
    """The client's address: ``REMOTE_ADDR``, unless that is one of ``TRUSTED_PROXIES``
    (CIDRs); then the right-most ``X-Forwarded-For`` entry that is not a trusted proxy
    (entries to its left are whatever the client sent, so they are never believed)."""
    remote = request.META.get("REMOTE_ADDR") or "unknown"
    networks = _networks(getattr(settings, "TRUSTED_PROXIES", ()))
    if not networks or not _is_trusted(remote, networks):
        return remote
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    hops = [h.strip() for h in forwarded.split(",") if h.strip()]
    for hop in reversed(hops):
        if not _is_trusted(hop, networks):
            try:
                return str(ipaddress.ip_address(hop.strip("[]")))
            except ValueError:
                return remote  # a proxy we trust wrote garbage: count it as the proxy
    return hops[0] if hops else remote


def check_rate(key: str, limit: int, window_s: int, now: float | None = None,
               hit: bool = True) -> int:
    """Count one request for ``key``; 0 when allowed, else the seconds until it would be.
    With ``hit`` False nothing is counted: the answer is for one more request.

    A sliding window: the count of the current fixed window plus the previous window's,
    weighted by how much of it still lies inside the last ``window_s`` seconds, so no
    window of ``window_s`` seconds sees about twice the limit, as fixed windows allow at a
    boundary. Counted in Django's cache (atomic increments), so every process sharing the
    cache (Redis) shares the limit; refused requests count too.
    """
    if limit <= 0:
        return 0
    now = time.time() if now is None else now
    window = int(now // window_s)
    elapsed = now - window * window_s
    slot = f"ratelimit:{key}:{window}"
    if hit:
        cache.add(slot, 0, timeout=2 * window_s + 1)
        try:
            current = cache.incr(slot)
        except ValueError:  # expired between add and incr
            cache.set(slot, 1, timeout=2 * window_s + 1)
            current = 1
    else:  # would one more be allowed?
        current = cache.get(slot, 0) + 1
    previous = cache.get(f"ratelimit:{key}:{window - 1}", 0)
    if previous * (1 - elapsed / window_s) + current <= limit:
        return 0
    if current > limit:  # only the next window can bring the count down
        wait = (window_s - elapsed) + window_s * (1 - limit / current)
    else:  # the previous window's weight must fall
        wait = window_s * (1 - (limit - current) / previous) - elapsed
    return max(1, math.ceil(wait - 1e-9))


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


def _login_key(request: HttpRequest) -> str:
    return f"login:{client_address(request)}"


def uncount_login(sender, request: HttpRequest | None = None, **kwargs) -> None:
    """``user_logged_in`` receiver: the attempt ``LoginThrottleMiddleware`` counted for this
    request succeeded, so it is taken back (only failures stay counted)."""
    counted_at = getattr(request, "login_counted_at", None)
    if counted_at is None:
        return
    window = int(counted_at // settings.LOGIN_FAILURE_WINDOW_S)
    with contextlib.suppress(ValueError):  # expired meanwhile: nothing left to take back
        cache.decr(f"ratelimit:{_login_key(request)}:{window}")
    request.login_counted_at = None


class LoginThrottleMiddleware:
    """Refuses login attempts (POST to ``LOGIN_URL``) with 429 once a client address has
    failed ``LOGIN_FAILURE_LIMIT`` times within ``LOGIN_FAILURE_WINDOW_S`` seconds: while it
    lasts, even the right password does not log in.

    Every attempt is counted (one atomic increment in the shared cache) before the password
    is checked, so attempts in flight at once, in any worker, each see a distinct count and
    at most ``LOGIN_FAILURE_LIMIT`` of them reach the password check; a successful one is
    taken back by ``uncount_login`` (connected in ``webui.control.apps``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and request.path == settings.LOGIN_URL:
            now = time.time()
            retry_after = check_rate(_login_key(request), settings.LOGIN_FAILURE_LIMIT,
                                     settings.LOGIN_FAILURE_WINDOW_S, now=now)
            if retry_after:
                response = HttpResponse(
                    f"Too many failed logins from your address. Try again in {retry_after} s.",
                    status=429, content_type="text/plain")
                response["Retry-After"] = str(retry_after)
                return response
            request.login_counted_at = now
        return self.get_response(request)
