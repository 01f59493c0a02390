import random

import pytest

from crawler.urls import InvalidURL, canonicalize, host_of, netloc_of, split_url


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTP://Example.COM/Path", "http://example.com/Path"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:8080/a", "http://example.com:8080/a"),
        ("http://example.com/a#section", "http://example.com/a"),
        ("http://example.com", "http://example.com/"),
        ("http://example.com./x", "http://example.com/x"),
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/?b=2&a=1", "http://example.com/?a=1&b=2"),
        ("http://example.com/?utm_source=x&utm_medium=y&id=3", "http://example.com/?id=3"),
        ("http://example.com/?fbclid=abc&gclid=def", "http://example.com/"),
        ("http://example.com/p?PHPSESSID=123&q=a", "http://example.com/p?q=a"),
        ("http://example.com/p;jsessionid=ABC123?x=1", "http://example.com/p?x=1"),
        ("http://example.com/p?sid=deadbeef", "http://example.com/p"),
        ("http://example.com/%7euser/", "http://example.com/~user/"),
        ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
        ("http://example.com/caf\u00e9", "http://example.com/caf%C3%A9"),
        ("http://b\u00fccher.example/", "http://xn--bcher-kva.example/"),
        ("  http://example.com/trim  ", "http://example.com/trim"),
    ],
)
def test_canonicalize(raw, expected):
    assert canonicalize(raw) == expected


def test_canonical_form_is_a_fixed_point():
    url = "HTTP://Ex.com:80/a/../b?z=1&a=2&utm_campaign=q#f"
    once = canonicalize(url)
    assert canonicalize(once) == once


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://a.test/x?utm%5Fsource=x", "http://a.test/x"),
        ("http://a.test/x?%73id=1&a=1", "http://a.test/x?a=1"),
        ("http://a.test/x?U%54M%5F%6Dedium=v&page=2", "http://a.test/x?page=2"),
        ("http://a.test/d/;%6Asessionid=1/p", "http://a.test/d//p"),
    ],
)
def test_an_escaped_tracking_name_is_dropped_as_the_plain_one(raw, expected):
    # w3lib decodes the escape; the name is a tracking parameter only then
    assert canonicalize(raw) == expected


def test_canonicalizing_a_canonical_url_changes_nothing_however_it_was_escaped():
    rnd = random.Random(7)
    chars = "aZ09-._~%/;=&?#+!$'()*,:@ é"
    names = ("utm_source", "sid", "jsessionid", "a", "UTM_medium", "fbclid", "pk_x")

    def escaped(text: str) -> str:
        return "".join(f"%{ord(c):02X}" if rnd.random() < 0.3 else c for c in text)

    def piece() -> str:
        roll = rnd.random()
        if roll < 0.4:
            return "".join(rnd.choice(chars) for _ in range(rnd.randrange(1, 6)))
        if roll < 0.7:
            return escaped(rnd.choice(names)) + "=" + escaped("v" + rnd.choice(chars))
        return ";" + escaped(rnd.choice(("jsessionid", "sid", "x"))) + "=1"

    checked = 0
    for _ in range(3000):
        path = "/".join(piece() for _ in range(rnd.randrange(0, 4)))
        query = "&".join(piece() for _ in range(rnd.randrange(0, 4)))
        try:
            once = canonicalize(f"http://a.test/{path}?{query}")
        except InvalidURL:
            continue
        assert canonicalize(once) == once
        checked += 1
    assert checked > 2500


@pytest.mark.parametrize(
    ("href", "base", "expected"),
    [
        ("../x", "http://a.test/b/c/d", "http://a.test/b/x"),
        ("/root?gclid=1", "http://a.test/b/c", "http://a.test/root"),
        ("//other.test/p", "https://a.test/", "https://other.test/p"),
        ("?q=2", "http://a.test/page?q=1", "http://a.test/page?q=2"),
    ],
)
def test_relative_links(href, base, expected):
    assert canonicalize(href, base=base) == expected


@pytest.mark.parametrize(
    "bad",
    ["mailto:a@b.c", "javascript:alert(1)", "ftp://x.test/", "http://", "http://x.test:99999/"],
)
def test_rejects_uncrawlable(bad):
    with pytest.raises(InvalidURL):
        canonicalize(bad)


def test_host_and_netloc():
    assert host_of("http://Site1.TEST:8080/x") == "site1.test"
    assert netloc_of("http://site1.test:8080/x") == "site1.test:8080"
    assert netloc_of("https://site1.test:443/x") == "site1.test"


@pytest.mark.parametrize("url", [
    "http://a.test/", "http://a.test", "https://a.test:8080/x/y?q=1&b=2#frag",
    "http://a.test?x=1", "http://a.test#f", "http://a.test/p#f?x", "http://a.test/a?b#c?d",
    "https://a.test/?", "http://user:pw@a.test/x", "http://[::1]:80/x?y",
    "http://a.test/\u00e9?q=\u00fc", "HTTP://A.test/x", "http://a.test/ x ", "http://a.test/\tx",
    "ftp://a/b", "//a.test/x", "/relative?q",
])
def test_split_url_reads_what_urlsplit_reads(url):
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    assert split_url(url) == (parts.netloc, parts.path, parts.query)


def test_netloc_of_ipv6_keeps_brackets():
    from crawler.urls import netloc_of

    assert netloc_of("http://[::1]:8080/x") == "[::1]:8080"
    assert netloc_of("http://[2001:db8::1]/") == "[2001:db8::1]"


@pytest.mark.parametrize(
    "url",
    [
        "http://a.test:8471/p/12",
        "https://www.example.org/docs/library/os.path.html",
        "http://a-b.c-d.test/~user/x_y-z/",
        "http://example.com",
        "http://a.test:80/x",
        "http://a.test/a/../b",
        "http://a.test//x",
        "http://a.test/.well-known/x",
        "http://a.test:65536/x",
    ],
)
def test_fast_path_agrees_with_w3lib(url, monkeypatch):
    from crawler import urls

    urls._canonicalize_absolute.cache_clear()
    fast = urls._already_canonical(url)
    monkeypatch.setattr(urls, "_already_canonical", lambda u: None)
    try:
        slow = urls._canonicalize_absolute(url)
    except InvalidURL:
        slow = None
    finally:
        urls._canonicalize_absolute.cache_clear()
    assert fast is None or fast == slow


@pytest.mark.parametrize("bad", [
    'http://"><img src=x onerror=alert(1)>.test/',
    "http://a%00b.test/",
    "http://site.test%00/",
    "http://a b.test/",
    "http://a..b.test/",
    "http://a<b.test/",
    "http://a'b.test/",
    "http://" + "ü" * 70 + ".test/",  # an IDNA label past 63 characters
])
def test_rejects_hosts_that_are_not_host_names(bad):
    with pytest.raises(InvalidURL) as refused:
        canonicalize(bad)
    assert refused.value.reason == "invalid_host"
    assert "host" in str(refused.value)


@pytest.mark.parametrize("good, canonical", [
    ("http://bücher.de/x", "http://xn--bcher-kva.de/x"),
    ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
    ("http://my_host.example.com/", "http://my_host.example.com/"),
    ("http://ex%41mple.com/", "http://example.com/"),
    ("http://[::1]:8080/", "http://[::1]:8080/"),
    ("http://10.0.0.1/a?b=1", "http://10.0.0.1/a?b=1"),
])
def test_accepts_real_host_names(good, canonical):
    assert canonicalize(good) == canonical


def test_other_uncrawlable_urls_keep_the_generic_reason():
    with pytest.raises(InvalidURL) as refused:
        canonicalize("ftp://x.test/")
    assert refused.value.reason == "invalid_url"


_BASES = ("http://a.test", "http://a.test/", "http://a.test/b/c.html",
          "http://a.test/b/c.html?x=1/2#f/g", "http://a.test:8080/b/c;p/d;q",
          "https://a.test/b/c/../d", "http://a.test?q/1", "http://a.test/b//c/d",
          "http://[::1]:80/a/b")
_HREFS = ("x", "./x", "../x", "../../../x", ".", "..", "/x", "//b.test/y", "//", "x?y=1",
          "x#f", ";x", "http:x", "HTTP://A.TEST/x", "ftp://x", "x/../y", " x ", "x y",
          "a:b", "\\x", "?q", "#f", "", "///x", "über", "//bad host/x")


@pytest.mark.parametrize("base", _BASES)
def test_links_resolved_per_directory_as_urljoin_resolves_them(base):
    """A link is resolved once per directory of its page: the same answer, or the same
    refusal, as urljoin against the page itself."""
    from urllib.parse import urljoin

    from crawler.urls import _canonicalize_absolute

    def joined(href: str) -> str:
        try:
            return _canonicalize_absolute(urljoin(base, href.strip()))
        except (InvalidURL, ValueError):
            return "refused"

    def resolved(href: str) -> str:
        try:
            return canonicalize(href, base=base)
        except InvalidURL:
            return "refused"

    assert [resolved(h) for h in _HREFS] == [joined(h) for h in _HREFS]
