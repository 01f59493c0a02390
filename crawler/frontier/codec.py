"""The compact encoding of a queued request (``Entry.payload``) and of its URL in Redis.

A queued request is most of the frontier's memory, so it is stored as little as possible:

- the payload is the request's ``to_dict`` fields that differ from a plain ``Request`` of
  its URL (the scheduler drops the defaults), without the URL itself (the entry has it),
  with a same-origin ``Referer`` kept as its path, pickled and deflated against a preset
  dictionary of the fields every link shares (``callback``, ``errback``, ``meta``,
  ``depth``, ``headers``, ``Referer``): 23 bytes for a typical link instead of 176
  (measured on the test web: ``bench/frontier.py``'s ``frontier_bytes_per_url``);
- in Redis, the URL is stored without ``http://<host>`` / ``https://<host>`` when it starts
  with them (the host is the queue's), one byte instead.

Payloads written before (a pickle with the URL inside, first byte ``0x80``) and by other
writers (``webui/control/actions.py``) still decode: the first byte tells the format.
Deflate runs with a 512-byte window and the smallest memory level: 8 µs per request, where
the default settings spend 230 µs setting up their buffers.
"""

from __future__ import annotations

import pickle
import zlib
from typing import Any

from scrapy import Request

#: First byte of a payload in this encoding (a pickle starts with 0x80).
COMPACT = b"\x01"
_WBITS = -9
#: Never change it: stored payloads are deflated against it (a new one needs a new marker).
_ZDICT = pickle.dumps(
    {"callback": "parse", "errback": "fetch_failed",
     "meta": {"depth": 2, "frontier_tier": 1}, "headers": {b"Referer": [b"/"]}},
    protocol=5,
)
_REFERER = b"Referer"
#: Redis URL prefixes: the byte stands for ``<scheme>://<host>``.
_SCHEMES = {"http": b"\x01", "https": b"\x02"}
_PREFIXES = {v[0]: k for k, v in _SCHEMES.items()}


def encode_request(fields: dict[str, Any], queued_url: str) -> bytes:
    """The payload of a request whose ``to_dict`` fields are ``fields``, queued as
    ``queued_url`` (its canonical form): the URL is left out when it is that one."""
    url = fields["url"]
    if url == queued_url:
        fields = {k: v for k, v in fields.items() if k != "url"}
    headers = fields.get("headers")
    if headers and _REFERER in headers:
        origin = _origin(url)
        referer = headers[_REFERER]
        if (len(referer) == 1 and referer[0].startswith(origin)
                and referer[0][len(origin):len(origin) + 1] == b"/"):
            fields["headers"] = {**headers, _REFERER: [referer[0][len(origin):]]}
    deflate = zlib.compressobj(6, zlib.DEFLATED, _WBITS, 1, zlib.Z_DEFAULT_STRATEGY, _ZDICT)
    raw = pickle.dumps(fields, protocol=5)
    return COMPACT + deflate.compress(raw) + deflate.flush()


def decode_request(queued_url: str, payload: bytes) -> dict[str, Any]:
    """The ``to_dict`` fields of the request queued as ``queued_url`` with ``payload``
    (either encoding), ready for ``request_from_dict``."""
    if payload[:1] != COMPACT:
        return pickle.loads(payload)
    inflate = zlib.decompressobj(_WBITS, _ZDICT)
    fields = pickle.loads(inflate.decompress(payload[1:]) + inflate.flush())
    fields.setdefault("url", queued_url)
    headers = fields.get("headers")
    if headers and _REFERER in headers and headers[_REFERER][0][:1] == b"/":
        fields["headers"] = {**headers,
                             _REFERER: [_origin(fields["url"]) + headers[_REFERER][0]]}
    return fields


def _origin(url: str) -> bytes:
    scheme, sep, rest = url.partition("://")
    return (scheme + sep + rest.split("/", 1)[0]).encode()


def pack_url(url: str, host: str) -> bytes:
    """``url`` as stored in the queue of ``host``: ``<scheme>://<host>`` as one byte."""
    scheme, sep, rest = url.partition("://")
    mark = _SCHEMES.get(scheme)
    if mark and sep and rest.startswith(host) and rest[len(host):len(host) + 1] in ("/", ""):
        return mark + rest[len(host):].encode()
    return url.encode()


def unpack_url(stored: bytes, host: str) -> str:
    """The URL ``pack_url`` stored for ``host``."""
    scheme = _PREFIXES.get(stored[0]) if stored else None
    if scheme is None:
        return stored.decode()
    return f"{scheme}://{host}{stored[1:].decode()}"


_BLANK = Request("http://blank.invalid/")
#: attribute values of a plain Request made from a URL alone
_DEFAULTS = {attr: getattr(_BLANK, attr) for attr in Request.attributes if attr != "url"}
_DEFAULTS["headers"] = {}


def request_fields(request: Request, spider: Any) -> dict[str, Any]:
    """``request.to_dict(spider=spider)`` without its per-call scan of the spider's members,
    and without what ``request_from_dict`` fills in by itself (a plain Request's defaults).
    ValueError if its callback or errback is not a method of ``spider``."""
    d = {
        "url": request.url,
        "callback": _method_name(request.callback, spider),
        "errback": _method_name(request.errback, spider),
        "headers": dict(request.headers),
    }
    for attr in request.attributes:
        d.setdefault(attr, getattr(request, attr))
    if type(request) is not Request:
        d["_class"] = f"{type(request).__module__}.{type(request).__name__}"
        return d
    return {k: v for k, v in d.items() if k == "url" or _DEFAULTS.get(k, d) != v}


def _method_name(func: Any, spider: Any) -> str | None:
    """The name of the spider method ``func`` (ValueError if it is not one)."""
    if func is None or isinstance(func, str):
        return func
    name = getattr(func, "__name__", None)
    bound = getattr(spider, name, None) if name else None
    if bound is not None and getattr(bound, "__func__", None) is getattr(
        func, "__func__", func
    ):
        return name
    raise ValueError(f"{func!r} is not a method of the spider {spider!r}")
