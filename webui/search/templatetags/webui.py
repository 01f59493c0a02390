"""Template filters for showing crawled content safely."""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from django import template

register = template.Library()
#: Characters a URL fragment keeps as they are (RFC 3986: pchar, "/" and "?").
FRAGMENT_SAFE = "!$&'()*+,;=:@/?-._~"


@register.filter
def http_url(value: str) -> str:
    """``value`` if it is an absolute http(s) URL, else "" (so it is never made a link)."""
    value = (value or "").strip()
    try:
        parts = urlsplit(value)
    except ValueError:
        return ""
    if parts.scheme.lower() in ("http", "https") and parts.netloc:
        return value
    return ""


@register.filter
def at_anchor(url: str, anchor: str) -> str:
    """``url`` pointing at the element with id ``anchor`` (``url`` itself for ``""``)."""
    return f"{url}#{quote(anchor, safe=FRAGMENT_SAFE)}" if url and anchor else url


@register.filter
def display_url(value: str) -> str:
    """A URL shortened for display: no scheme, at most 90 characters."""
    value = (value or "").split("://", 1)[-1]
    return value if len(value) <= 90 else value[:87] + "…"


@register.filter
def filesize(value: float) -> str:
    """Bytes in binary units: 1.5 MiB."""
    value = float(value or 0)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


@register.filter
def epoch(value: float) -> str:
    """Epoch seconds as ``2026-01-31 12:00 UTC`` ("unknown" for 0)."""
    import time

    if not value:
        return "unknown"
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(float(value)))


@register.filter
def epoch_seconds(value: float) -> str:
    """Epoch seconds as ``12:00:05 UTC``."""
    import time

    return time.strftime("%H:%M:%S UTC", time.gmtime(float(value)))
