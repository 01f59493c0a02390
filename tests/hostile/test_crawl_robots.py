"""A 10 MB robots.txt (437,000 ``Disallow`` lines) costs a bounded amount: its first 500 KiB
are parsed once, by the worker that fetched it; what the frontier stores is compact and
loads without parsing; a check takes microseconds; and the compiled rules decide as
Protego does."""

from __future__ import annotations

import random
import time
import tracemalloc

import pytest
from protego import Protego

import testweb
from crawler.frontier.local import LocalFrontier
from crawler.robots import ROBOTS_MAX_BYTES, CompiledRules, RobotsFetchMiddleware, RobotsPolicy
from harness.crawlrun import final_stats, migrate, run_crawl
from tests.frontiers import options
from tests.test_hostile_crawl import settings_for
from testweb.adversarial import BigRobotsHost

UA = "websearch-bot"
WORDS = ("alpha", "beta", "gamma", "delta", "docs", "api", "search", "private")


def huge_robots(size: int = 10 * 1024 * 1024) -> bytes:
    """``size`` bytes of ``Disallow`` lines, and past 500 KiB one that disallows /late/."""
    rng = random.Random(7)
    lines = [b"User-agent: *", b"Crawl-delay: 2"]
    total = 0
    i = 0
    while total < size:
        line = f"Disallow: /{rng.choice(WORDS)}{i}/".encode()
        lines.append(line)
        total += len(line) + 1
        i += 1
        if i == 30_000:
            lines.append(b"Disallow: /late/")
    return b"\n".join(lines) + b"\n"


def policy(store) -> RobotsPolicy:
    return RobotsPolicy(store, UA, ttl=100, error_ttl=10)


def test_a_10_mb_robots_txt_is_parsed_once_in_bounded_time_and_memory():
    body = huge_robots()
    tracemalloc.start()
    policy(LocalFrontier(None, **options(bloom_capacity=1000))).record_response(
        "big.test", 200, body)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 60 * 1024 * 1024  # Protego over the whole file: ~250 MB
    store = LocalFrontier(None, **options(bloom_capacity=1000))
    fetcher = policy(store)
    started = time.process_time()
    fetcher.record_response("big.test", 200, body)
    assert time.process_time() - started < 0.5  # and ~3.4 s
    status, stored, _ = store.robots_get("big.test")
    assert status == 200 and len(stored) <= ROBOTS_MAX_BYTES
    assert fetcher.crawl_delay("big.test") == 2.0
    # what lies past 500 KiB is not read (RFC 9309 2.5 lets a crawler stop there)
    assert fetcher.allowed("http://big.test/late/x", "big.test") is True
    assert fetcher.allowed("http://big.test/alpha0/x", "big.test") in (True, False)

    other = policy(store)  # another worker, or the URL inspector: loads, never parses
    started = time.process_time()
    rules = other.rules("big.test")
    assert time.process_time() - started < 0.2
    urls = [f"http://big.test/{w}{i}/page?x={i}" for i in range(500) for w in WORDS[:4]]
    started = time.process_time()
    decisions = [rules.allowed(url) for url in urls]
    per_check = (time.process_time() - started) / len(urls)
    assert per_check < 50e-6  # Protego: 0.2-0.9 ms on 500 KiB, 16-43 ms on 10 MB
    assert False in decisions and True in decisions


def test_the_fetch_reads_at_most_500_kib_uncompressed():
    from scrapy import Request

    robots = Request("http://big.test/robots.txt", meta={"frontier_robots": "big.test"})
    page = Request("http://big.test/page")
    mw = RobotsFetchMiddleware()
    mw.process_request(robots)
    mw.process_request(page)
    assert robots.meta["download_maxsize"] == ROBOTS_MAX_BYTES
    assert robots.headers[b"Accept-Encoding"] == b"identity"
    assert "download_maxsize" not in page.meta


ROBOTS = """\
User-agent: other
Disallow: /

User-agent: websearch-bot
User-agent: friends
Disallow: /private/
Allow: /private/open
Disallow: /*.php$
Allow: /*.php?ok=1
Disallow: /search*results
Disallow: /exact$
Allow: /tie
Disallow: /tie
Disallow: /caf%C3%A9/
Disallow: /with space/
Disallow: *sessionid=
Allow: /docs/index.html
Disallow: /docs/
Disallow: /a%2Fb
Crawl-delay: 1.5

User-agent: *
Disallow: /everything
"""

PATHS = (
    "/", "/private/", "/private/x", "/private/open", "/private/opener", "/index.php",
    "/a/b.php", "/a/b.php?ok=1", "/a/b.php?no=1", "/b.phpx", "/search/results", "/searchX",
    "/search/a/b/results/c", "/exact", "/exact/", "/exactly", "/tie", "/tie/more",
    "/café/x", "/caf%C3%A9/x", "/caf%c3%a9/x", "/with%20space/x", "/with space/x",
    "/p?sessionid=1", "/x/y?a=1&sessionid=2", "/docs/", "/docs/index.html", "/docs/x",
    "/a%2Fb", "/a/b", "/robots.txt", "/everything", "/%7Euser", "/~user",
)


def test_compiled_rules_decide_as_protego():
    protego = Protego.parse(ROBOTS)
    compiled = CompiledRules.parse(ROBOTS, UA)
    stored = CompiledRules.from_bytes(compiled.to_bytes(UA), UA)
    assert CompiledRules.from_bytes(compiled.to_bytes(UA), "another-bot") is None
    for path in PATHS:
        url = "http://a.test" + path
        expected = protego.can_fetch(url, UA)
        assert compiled.allowed(url) == expected, path
        assert stored.allowed(url) == expected, path
    assert compiled.crawl_delay == stored.crawl_delay == protego.crawl_delay(UA) == 1.5
    assert CompiledRules.parse(ROBOTS, "nobody").allowed("http://a.test/everything") is False
    assert CompiledRules.parse("", UA).allowed("http://a.test/x") is True


def test_compiled_rules_decide_as_protego_on_random_rules():
    rng = random.Random(3)
    parts = ["/a", "/b", "/ab", "/a/b", "*", "$", ".php", "?q=", "/c", "x"]
    for _ in range(30):
        lines = ["User-agent: *"]
        for _ in range(rng.randint(1, 12)):
            pattern = "".join(rng.choice(parts) for _ in range(rng.randint(1, 4)))
            lines.append(f"{rng.choice(['Allow', 'Disallow'])}: {pattern}")
        text = "\n".join(lines)
        protego, compiled = Protego.parse(text), CompiledRules.parse(text, UA)
        for _ in range(40):
            path = "".join(rng.choice(parts).replace("*", "z").replace("$", "")
                           for _ in range(rng.randint(1, 5)))
            url = "http://a.test" + (path if path.startswith("/") else "/" + path)
            assert compiled.allowed(url) == protego.can_fetch(url, UA), (text, url)


@pytest.mark.slow
def test_a_crawl_reads_500_kib_of_a_10_mib_robots_txt(tmp_path):
    """bigrobots.test's robots.txt is cut at 500 KiB: ``/early/`` (at its head) stays
    disallowed, ``/late/`` (past 600 KiB) is fetched, and the crawl takes its time."""
    log = tmp_path / "testweb.log"
    with testweb.run(hosts=1, log=log) as web:
        migrate(tmp_path)
        result = run_crawl(tmp_path, [web.home_url("bigrobots.test")],
                           settings=settings_for(tmp_path), timeout=120)
        assert result.returncode == 0, result.stderr[-3000:]
        time.sleep(0.3)
        requests = [line for line in web.read_log() if line["host"] == "bigrobots.test"]
    fetched = {line["path"] for line in requests}
    assert {"/", "/robots.txt", "/late/page"} <= fetched
    assert "/early/page" not in fetched
    robots = next(line for line in requests if line["path"] == "/robots.txt")
    assert robots["bytes"] < BigRobotsHost.ROBOTS_BYTES  # the transfer stopped early
    stats = final_stats((tmp_path / "crawl.log").read_text(errors="replace"))
    assert stats["robots/disallowed"] == 1 and stats["fetch/truncated"] == 1
