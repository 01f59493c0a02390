"""The compact encoding of queued requests and of their URLs (crawler/frontier/codec.py)."""

import pickle

from scrapy import Request
from scrapy.utils.request import request_from_dict

from crawler.frontier.codec import decode_request, encode_request, pack_url, unpack_url


def _fields(url, referer=None, **extra):
    fields = {"url": url, "callback": "parse", "errback": "fetch_failed",
              "meta": {"depth": 3}, **extra}
    if referer:
        fields["headers"] = {b"Referer": [referer.encode()]}
    return fields


def test_a_link_round_trips_in_a_fraction_of_its_pickle():
    fields = _fields("http://a.test:8080/p/65", "http://a.test:8080/p/1?x=2")
    payload = encode_request(fields, "http://a.test:8080/p/65")
    assert decode_request("http://a.test:8080/p/65", payload) == fields
    assert len(payload) * 4 < len(pickle.dumps(fields, protocol=5))


def test_cross_origin_referer_and_non_canonical_url_are_kept_whole():
    fields = _fields("http://A.test/x#frag", "https://other.test/page", priority=5)
    payload = encode_request(fields, "http://a.test/x")
    assert decode_request("http://a.test/x", payload) == fields


def test_origin_prefix_is_not_a_referer_of_another_host():
    fields = _fields("http://a.test/x", "http://a.test.evil/y")
    assert decode_request("http://a.test/x", encode_request(fields, "http://a.test/x")) == fields


def test_pickled_payloads_of_other_writers_still_decode():
    request = Request("http://a.test/old", meta={"frontier_tier": 0}, dont_filter=True)
    payload = pickle.dumps(request.to_dict(), protocol=pickle.HIGHEST_PROTOCOL)
    again = request_from_dict(decode_request("http://a.test/old", payload))
    assert again.url == "http://a.test/old" and again.dont_filter


def test_urls_are_stored_without_their_scheme_and_host():
    for url, host in (("http://a.test/p?q=1", "a.test"), ("https://a.test:8443/", "a.test:8443"),
                      ("http://a.test", "a.test")):
        packed = pack_url(url, host)
        assert len(packed) == len(url) - len(host) - url.index(":") - 2
        assert unpack_url(packed, host) == url
    for url, host in (("ftp://a.test/f", "a.test"), ("http://a.test.evil/", "a.test")):
        assert pack_url(url, host) == url.encode() and unpack_url(url.encode(), host) == url
