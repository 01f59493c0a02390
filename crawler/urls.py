"""URL canonicalization: one spelling per page, so the seen filter and doc ids agree.

w3lib does the heavy lifting (case, dot segments, percent-encoding, IDN, query order,
fragments); on top of it we drop default ports, tracking parameters and session ids, and
refuse hosts that are not host names: a host is an IP literal, or dot-separated labels that
IDNA encodes to letters, digits, ``-`` and ``_`` (RFC 3986 leaves more room in a reg-name,
``%``-escapes and sub-delims, but no resolver takes them, and ``"><img ...>.test`` or
``%00`` in a host is an attack, not a web site).
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from functools import lru_cache
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

DEFAULT_PORTS = {"http": 80, "https": 443}

# Exact names, compared case-insensitively.
TRACKING_PARAMS = frozenset(
    {
        "fbclid",
        "gclid",
        "dclid",
        "gbraid",
        "wbraid",
        "msclkid",
        "yclid",
        "twclid",
        "mc_cid",
        "mc_eid",
        "_ga",
        "_gl",
        "igshid",
        "ref_src",
        "spm",
        # session ids
        "jsessionid",
        "phpsessid",
        "aspsessionid",
        "sid",
        "sessionid",
        "session_id",
        "cfid",
        "cftoken",
        "zenid",
        "osCsid",
    }
)
TRACKING_PREFIXES = ("utm_", "pk_", "mtm_", "hsa_")
SESSION_PATH_PARAM = re.compile(r";(?:jsessionid|phpsessid|sid|sessionid)=[^/?#;]*", re.I)
_TRACKING_LOWER = frozenset(p.lower() for p in TRACKING_PARAMS)


class InvalidURL(ValueError):
    """The URL cannot be crawled (not http(s), no host, a host that is not a host name, or
    unparseable). ``reason`` is the short drop reason counted in stats: ``invalid_url``, or
    ``invalid_host`` for a bad host."""

    def __init__(self, message: str, reason: str = "invalid_url"):
        super().__init__(message)
        self.reason = reason


_LABEL = re.compile(r"[a-z0-9_-]+")


def check_host(host: str, url: str = "") -> str:
    """``host`` (from ``urlsplit``, lower-case, no brackets) as an ASCII host name or IP
    literal; raises ``InvalidURL`` (reason ``invalid_host``) for anything else."""
    if ":" in host:
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise InvalidURL(f"bad IPv6 host in {url!r}", "invalid_host") from None
        return host
    decoded = unquote(host).lower()
    try:
        ascii_host = decoded.encode("idna").decode("ascii") if not decoded.isascii() \
            else decoded
    except UnicodeError as exc:
        raise InvalidURL(f"host of {url!r} is not a valid IDNA name: {exc}",
                         "invalid_host") from None
    bad = next((label for label in ascii_host.split(".") if not _LABEL.fullmatch(label)), None)
    if bad is not None:
        what = f"characters no host name has ({bad!r})" if bad else "an empty label"
        raise InvalidURL(f"host of {url!r} has {what}: a host name is dot-separated labels "
                         "of letters, digits, '-' and '_'", "invalid_host")
    return ascii_host


def _is_tracking(name: str) -> bool:
    lowered = name.lower()
    return lowered in _TRACKING_LOWER or lowered.startswith(TRACKING_PREFIXES)


def _strip_query(query: str) -> str:
    if not query:
        return ""
    kept = [part for part in query.split("&") if part and not _is_tracking(part.split("=", 1)[0])]
    return "&".join(kept)


def canonicalize(url: str, base: str | None = None) -> str:
    """The canonical absolute form of ``url`` (resolved against ``base`` if given).

    Raises ``InvalidURL`` for anything that is not an http(s) URL with a host.
    """
    url = url.strip()
    if base is not None and not url.startswith(("http://", "https://")):
        relative_path = url[:1] not in ("", "?", "#") and not url.startswith("//")
        directory = _directory_of(base) if relative_path else None
        if directory is not None:
            return _resolve_in(directory, url)
        url = _join(base, url)
    return _canonicalize_absolute(url)


def _join(base: str, url: str) -> str:
    try:
        return urljoin(base, url)
    except ValueError as exc:
        raise InvalidURL(f"unparseable URL {url!r}: {exc}") from None


def _directory_of(base: str) -> str | None:
    """``base`` up to the last ``/`` of its path, without query and fragment: all that a
    reference with a path and no authority resolves against (RFC 3986 5.2.2-5.2.3: the
    base's last segment, query and fragment are replaced), so pages of one directory share
    their links' resolutions; None for a base without an authority."""
    end = len(base)
    for mark in ("?", "#"):
        at = base.find(mark, 0, end)
        if at >= 0:
            end = at
    authority = base.find("//", 0, end)
    if authority < 0:
        return None
    slash = base.rfind("/", authority + 2, end)
    return base[:end] + "/" if slash < 0 else base[:slash + 1]


@lru_cache(maxsize=131072)
def _resolve_in(directory: str, url: str) -> str:
    # The same navigation links appear on every page of a directory: a link is resolved
    # and canonicalized once per directory (urljoin was a fifth of a page's extraction).
    return _canonicalize_absolute(_join(directory, url))


# Already canonical: lower-case host without trailing dot, an explicit port other than the
# default, a path of unreserved characters without dot segments or empty segments, and no
# query or fragment. Such URLs skip w3lib (the crawl's hot path, see bench/crawl.py).
_SIMPLE = re.compile(
    r"(?P<scheme>https?)://[a-z0-9-]+(?:\.[a-z0-9-]+)*(?::(?P<port>[1-9][0-9]{0,4}))?"
    r"(?P<path>/[A-Za-z0-9_~./-]*)?"
)


def _already_canonical(url: str) -> str | None:
    simple = _SIMPLE.fullmatch(url)
    if simple is None:
        return None
    port, path = simple["port"], simple["path"] or ""
    if port is not None and (int(port) > 65535 or int(port) == DEFAULT_PORTS[simple["scheme"]]):
        return None
    if "/." in path or "//" in path:
        return None
    return url if path else url + "/"


@lru_cache(maxsize=131072)
def _canonicalize_absolute(url: str) -> str:
    # Pages repeat their navigation links, so most calls are cache hits.
    fast = _already_canonical(url)
    if fast is not None:
        return fast
    canonical = _canonical_pass(url)
    # w3lib decodes escaped unreserved characters, so a name may spell a tracking parameter
    # or session id only once decoded ('utm%5Fsource', ';%73id='): passes until nothing
    # changes, so the canonical form of a canonical URL is itself (the seen filter's keys)
    for _ in range(_MAX_PASSES):
        if "%" not in url or canonical == url:
            break
        url, canonical = canonical, _canonical_pass(canonical)
    return canonical


_MAX_PASSES = 8


def _canonical_pass(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise InvalidURL(f"unparseable URL {url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise InvalidURL(f"not an http(s) URL: {url!r}")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise InvalidURL(f"URL has no host: {url!r}")
    host = check_host(host, url)
    try:
        port = parts.port
    except ValueError:
        raise InvalidURL(f"bad port in URL {url!r}") from None
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = SESSION_PATH_PARAM.sub("", parts.path)
    query = _strip_query(parts.query)
    rebuilt = urlunsplit((scheme, netloc, path or "/", query, ""))
    try:
        return canonicalize_url(rebuilt)
    except (ValueError, UnicodeError) as exc:
        raise InvalidURL(f"cannot canonicalize {url!r}: {exc}") from None


@lru_cache(maxsize=65536)
def host_of(url: str) -> str:
    """Lower-case host of ``url`` without port (``""`` when it has none)."""
    return _host_of_origin(_origin_part(url))


@lru_cache(maxsize=65536)
def netloc_of(url: str) -> str:
    """Host plus non-default port: the politeness key of ``url`` (an IPv6 host keeps its
    brackets, so the key is also a valid URL authority)."""
    return _netloc_of_origin(_origin_part(url))


def split_url(url: str) -> tuple[str, str, str]:
    """``(netloc, path, query)`` of ``url`` as ``urllib.parse.urlsplit`` reads them. An
    http(s) URL of printable characters (every canonical URL) is split by string search:
    ``urlsplit`` caches 128 URLs, a crawl's links are mostly new, and a miss cost ~3 us,
    the largest part of the trap guards' check of a link."""
    if url.startswith(("http://", "https://")) and url.isprintable() and url[-1] != " ":
        start = url.find("//") + 2
        end = len(url)
        for sep in "/?#":
            at = url.find(sep, start, end)
            if at >= 0:
                end = at
        rest = url[end:]
        if "#" in rest:
            rest = rest.split("#", 1)[0]
        path, _, query = rest.partition("?")
        return url[start:end], path, query
    parts = urlsplit(url)
    return parts.netloc, parts.path, parts.query


def _origin_part(url: str) -> str:
    """``url`` up to the end of its authority: ``urlsplit`` reads the same scheme and
    netloc from it as from ``url`` (the scheme holds no ``/``, so the first ``//`` is where
    an authority can start, and the part kept reaches past its end). The host and netloc
    functions are cached on it: a crawl's URLs are many, their hosts few."""
    start = url.find("//")
    if start < 0:
        return url
    end = len(url)
    for sep in "/?#":
        at = url.find(sep, start + 2, end)
        if at >= 0:
            end = at
    return url[:end]


@lru_cache(maxsize=65536)
def _host_of_origin(origin: str) -> str:
    try:
        return (urlsplit(origin).hostname or "").rstrip(".")
    except ValueError:
        return ""


@lru_cache(maxsize=65536)
def _netloc_of_origin(origin: str) -> str:
    parts = urlsplit(origin)
    host = (parts.hostname or "").rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is None or port == DEFAULT_PORTS.get(parts.scheme):
        return host
    return f"{host}:{port}"


def doc_id_for(canonical_url: str) -> str:
    """Document id: the first 16 hex digits of SHA-1 of the canonical URL."""
    return hashlib.sha1(canonical_url.encode("utf-8")).hexdigest()[:16]
