"""SSRF guard: address policy, the resolver's check and the download handler's check."""

import asyncio
import time

import pytest
from twisted.internet import defer

from crawler.handlers import NOT_BEFORE, GuardedDownloadHandler
from crawler.resolver import OverrideResolver
from crawler.ssrf import AddressPolicy, RefusalLog, SSRFRefused


@pytest.mark.parametrize(
    "address, reason",
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.9", "private"),
        ("192.168.1.1", "private"),
        ("fc00::1", "private"),
        ("169.254.169.254", "link_local"),
        ("fe80::1", "link_local"),
        ("224.0.0.251", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "non_global"),
        ("8.8.8.8", None),
        ("2001:4860:4860::8888", None),
        ("not-an-ip", None),
    ],
)
def test_policy_classifies_addresses(address, reason):
    assert AddressPolicy().refusal(address) == reason


def test_allowlist_and_switch():
    policy = AddressPolicy(["127.0.0.0/8", "10.0.0.0/24"])
    assert policy.refusal("127.0.0.3") is None
    assert policy.refusal("10.0.0.7") is None
    assert policy.refusal("10.0.1.7") == "private"
    assert policy.refusal("::1") == "loopback"  # an IPv4 network does not allow IPv6
    assert AddressPolicy(enabled=False).refusal("127.0.0.1") is None


def _resolver(allowed=(), overrides=None):
    from twisted.internet import reactor

    return OverrideResolver(reactor, 0, 1.0, overrides or {"*.test": "127.0.0.1"},
                            AddressPolicy(allowed), RefusalLog())


def _result(d: defer.Deferred):
    out = []
    d.addBoth(out.append)
    assert out, "override answers are synchronous"
    return out[0]


def test_resolver_refuses_after_resolution():
    failure = _result(_resolver().getHostByName("site0.test"))
    assert failure.check(SSRFRefused)
    assert failure.value.reason == "loopback" and failure.value.host == "site0.test"
    assert _result(_resolver(["127.0.0.0/8"]).getHostByName("site0.test")) == "127.0.0.1"


class RecordingHandler:
    """The inner handler: records what reached it; ``moves`` maps a URL to where its
    response says it ended (a browser's redirects)."""

    def __init__(self, moves=None):
        self.seen = []
        self.moves = moves or {}

    async def download_request(self, request):
        from scrapy.http import HtmlResponse

        self.seen.append(request.url)
        return HtmlResponse(self.moves.get(request.url, request.url), request=request, body=b"")

    async def close(self):
        pass


def _download(handler, url):
    from scrapy import Request

    return asyncio.run(handler.download_request(Request(url))).url


def test_handler_checks_literal_ips_and_names():
    inner = RecordingHandler()
    resolver = _resolver(["10.0.0.0/8"])
    handler = GuardedDownloadHandler(inner, resolver.policy, RefusalLog(),
                                     resolve=resolver.getHostByName)
    for url in ("http://127.0.0.1:8000/", "http://[::1]/", "http://169.254.169.254/latest",
                "http://site0.test/"):
        with pytest.raises(SSRFRefused):
            _download(handler, url)
    assert inner.seen == []
    assert _download(handler, "http://10.2.3.4/") == "http://10.2.3.4/"
    assert _download(handler, "http://93.184.216.34/") == "http://93.184.216.34/"


def test_a_host_resolved_already_is_checked_without_an_asyncio_future(monkeypatch):
    """The resolver's answer from its cache (a Deferred that has fired) is read at once,
    its refusal raised; one still to come is awaited and checked the same."""
    import crawler.handlers

    inner = RecordingHandler()
    resolver = _resolver(["10.0.0.0/8"], overrides={"*.test": "127.0.0.1",
                                                     "*.example": "10.1.1.1"})
    pending: list[defer.Deferred] = []

    def resolve(host):
        if host.startswith("later."):
            pending.append(defer.Deferred())
            return pending[-1].addCallback(lambda _: resolver.getHostByName(host))
        return resolver.getHostByName(host)

    handler = GuardedDownloadHandler(inner, resolver.policy, RefusalLog(), resolve=resolve)
    real = crawler.handlers.maybe_deferred_to_future
    awaited = []

    def counted(d):
        awaited.append(d)
        return real(d)

    monkeypatch.setattr(crawler.handlers, "maybe_deferred_to_future", counted)
    with pytest.raises(SSRFRefused) as refused:
        _download(handler, "http://site0.test/")
    assert refused.value.reason == "loopback"
    assert _download(handler, "http://docs.example/") == "http://docs.example/"
    assert awaited == [] and inner.seen == ["http://docs.example/"]

    async def later(url):
        from scrapy import Request

        task = asyncio.ensure_future(handler.download_request(Request(url)))
        await asyncio.sleep(0)
        pending[-1].callback(None)
        return await task

    assert asyncio.run(later("http://later.example/")).url == "http://later.example/"
    with pytest.raises(SSRFRefused):
        asyncio.run(later("http://later.test/"))
    assert len(awaited) == 2 and inner.seen[-1] == "http://later.example/"


def test_handler_checks_where_the_response_ended():
    inner = RecordingHandler(moves={
        "http://10.2.3.4/a": "http://127.0.0.1:8000/",  # a render redirected to loopback
        "http://10.2.3.4/b": "http://site0.test/",  # ... to a name that resolves there
        "http://10.2.3.4/c": "chrome-error://chromewebdata/",
        "http://10.2.3.4/d": "http://10.2.3.4/d#moved",  # same host: fine
    })
    resolver = _resolver(["10.0.0.0/8"])
    handler = GuardedDownloadHandler(inner, resolver.policy, RefusalLog(),
                                     resolve=resolver.getHostByName)
    for path, reason in (("a", "loopback"), ("b", "loopback"), ("c", "not_http")):
        with pytest.raises(SSRFRefused) as refused:
            _download(handler, f"http://10.2.3.4/{path}")
        assert refused.value.reason == reason
    assert _download(handler, "http://10.2.3.4/d") == "http://10.2.3.4/d#moved"


def test_the_renderer_is_built_on_the_first_request_to_render_only():
    from scrapy import Request

    plain, renderers = RecordingHandler(), []

    def build():
        renderers.append(RecordingHandler())
        return renderers[-1]

    handler = GuardedDownloadHandler(plain, AddressPolicy(["10.0.0.0/8"]), RefusalLog(),
                                     renderer=build)
    asyncio.run(handler.download_request(Request("http://10.2.3.4/a")))
    assert renderers == [] and plain.seen == ["http://10.2.3.4/a"]
    for path in ("b", "c"):
        asyncio.run(handler.download_request(
            Request(f"http://10.2.3.4/{path}", meta={"playwright": True})))
    assert len(renderers) == 1 and renderers[0].seen == ["http://10.2.3.4/b", "http://10.2.3.4/c"]
    assert plain.seen == ["http://10.2.3.4/a"]



class LoopClock:
    """The running asyncio loop as the handler's clock (``callLater``)."""

    def callLater(self, delay, f, *args, **kwargs):  # noqa: N802 (Twisted's name)
        return asyncio.get_running_loop().call_later(delay, lambda: f(*args, **kwargs))


def test_a_request_leased_ahead_waits_in_the_handler_until_its_time():
    """A request carrying ``NOT_BEFORE`` (its host leased ahead of its due time) reaches
    the inner handler no sooner, and leaves the key behind (a retry or a redirect made
    of it starts at once); one whose time has passed goes at once."""
    from scrapy import Request

    inner = RecordingHandler()
    handler = GuardedDownloadHandler(inner, AddressPolicy(["10.0.0.0/8"]), RefusalLog(),
                                     clock=LoopClock())
    reached = {}

    async def download(request):
        await handler.download_request(request)
        reached[request.url] = time.monotonic()

    async def both():
        now = time.monotonic()
        later = Request("http://10.2.3.4/later", meta={NOT_BEFORE: now + 0.05})
        past = Request("http://10.2.3.4/past", meta={NOT_BEFORE: now - 1.0})
        await asyncio.gather(download(later), download(past))
        return now, later, past

    now, later, past = asyncio.run(both())
    assert reached["http://10.2.3.4/later"] >= now + 0.05
    assert inner.seen == ["http://10.2.3.4/past", "http://10.2.3.4/later"]
    assert NOT_BEFORE not in later.meta and NOT_BEFORE not in past.meta
