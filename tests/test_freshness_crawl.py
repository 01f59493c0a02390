"""Continuous crawl of changing hosts: changes searchable within one recrawl interval,
304s, deletions and moves reach the index."""

import http.client
import json
import signal
import time

import pytest

import testweb
from crawler.crawlstate import LocalCrawlStateStore, RedisCrawlStateStore
from crawler.recrawl import CrawlState
from harness.crawlrun import run_crawl, start_crawl
from index.engines.embedded.backend import EmbeddedBackend
from testweb.fresh import DAY, EPOCH

pytestmark = pytest.mark.slow

PAGES = 14  # seed 0: /p/0 changes daily, /p/3 dies (404), /p/6 (410), /p/10 and /p/13 move
MAX_INTERVAL = 6.0
#: How long to wait for an event (a page indexed, a 304 logged) before failing: a slow box
#: makes the test slower, not red; the bounds are checked on the crawl state instead.
EVENT_TIMEOUT = 180.0
SETTINGS = {
    "RECRAWL_MIN_INTERVAL": 1.0,
    "RECRAWL_INITIAL_INTERVAL": 3.0,
    "RECRAWL_MAX_INTERVAL": MAX_INTERVAL,
    "RECRAWL_TIER_FACTOR": 1.0,
    "RECRAWL_POLL_INTERVAL": 0.3,
    "RECRAWL_HOLD": 20.0,
    "INDEX_BATCH_SIZE": 1,
    "INDEX_FLUSH_INTERVAL": 0.2,
    "FRONTIER_DELAY": 0.02,
    "SITEMAPS_ENABLED": False,
    "LOG_LEVEL": "INFO",
}


def wait_for(predicate, timeout: float, step: float = 0.25):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def urls_for(data_dir, query: str) -> set[str]:
    backend = EmbeddedBackend(data_dir / "index")
    try:
        return {hit.url for hit in backend.search(query, size=50).hits}
    except ValueError:  # no index yet
        return set()
    finally:
        backend.close()


def clock_call(web, method: str, path: str) -> float:
    conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=5)
    try:
        conn.request(method, path, headers={"Host": "clock.test"})
        return json.loads(conn.getresponse().read())["now"]
    finally:
        conn.close()


def sim_now(web) -> float:
    return clock_call(web, "GET", "/now")


def advance(web, seconds: float) -> None:
    clock_call(web, "POST", f"/advance?seconds={seconds}")


@pytest.fixture(params=["local", "redis"])
def services(request, tmp_path):
    """The crawl's environment and its crawl-state store: embedded, or with Redis."""
    if request.param == "local":
        yield {}, lambda: LocalCrawlStateStore(tmp_path / "crawlstate" / "web.sqlite3")
        return
    from redis import Redis

    from harness.redisserver import running_redis

    with running_redis(tmp_path / "redis") as server:
        yield {"REDIS_URL": server.url}, lambda: RedisCrawlStateStore(
            Redis.from_url(server.url), "web")


def crawl_state(services, url: str) -> CrawlState | None:
    store = services[1]()
    try:
        return store.get(url)
    finally:
        store.close()


def scheduled(services, url: str) -> CrawlState | None:
    """The URL's state once its last fetch scheduled the next one: while a recrawl of it is
    queued or in flight, ``next_fetch_at`` is the claim's hold (``RECRAWL_HOLD``) instead."""
    state = crawl_state(services, url)
    hold = SETTINGS["RECRAWL_HOLD"]
    return state if state is not None and state.next_fetch_at - state.last_fetch < hold else None


def test_continuous_crawl_follows_changes_deletions_and_moves(tmp_path, services):
    log = tmp_path / "testweb.log"
    start = EPOCH + 60
    # the clock runs 60x (no page of these changes in the first simulated hours), then jumps
    # 15 days, past every change, deletion and move the test looks at
    with testweb.run(hosts=1, fresh_hosts=1, fresh_pages=PAGES, clock_offset=start - time.time(),
                     clock_speed=60.0, log=log) as web:
        host = web.web.host("fresh0.test")
        url = web.web.url
        changing, dead, moved = "/p/0", ["/p/3", "/p/6"], "/p/10"
        assert host.state(changing, start + 15 * DAY).status == 200
        assert [host.state(p, start + 15 * DAY).status for p in dead] == [404, 410]
        assert host.state(moved, start + 15 * DAY).status == 301
        first = host.page(changing, sim_now(web)).keyword
        dead_words = {p: host.page(p, sim_now(web)).keyword for p in dead}
        moved_word = host.page(moved, sim_now(web)).keyword

        crawl = start_crawl(tmp_path, [web.home_url("fresh0.test")], SETTINGS,
                            {"allowed_hosts": "fresh0.test", "continuous": 1},
                            env_extra=services[0])
        try:
            assert wait_for(lambda: url("fresh0.test", changing) in urls_for(tmp_path, first),
                            EVENT_TIMEOUT), (tmp_path / "crawl.out").read_text()[-3000:]
            assert wait_for(lambda: url("fresh0.test", moved) in urls_for(tmp_path, moved_word),
                            EVENT_TIMEOUT)
            for path, word in dead_words.items():
                assert url("fresh0.test", path) in urls_for(tmp_path, word)
            # unchanged pages come back as 304s once their interval is up
            assert wait_for(lambda: any(line["status"] == 304 for line in web.read_log()),
                            EVENT_TIMEOUT)
            # every fetch schedules the next one at most one recrawl interval later
            before = wait_for(lambda: scheduled(services, url("fresh0.test", changing)),
                              EVENT_TIMEOUT)
            assert before is not None, crawl_state(services, url("fresh0.test", changing))
            assert 0 < before.next_fetch_at - before.last_fetch <= MAX_INTERVAL, before

            advance(web, 15 * DAY)
            now = sim_now(web)
            second = host.page(changing, now).keyword
            assert second != first
            assert wait_for(lambda: url("fresh0.test", changing) in urls_for(tmp_path, second),
                            EVENT_TIMEOUT)
            after = wait_for(lambda: scheduled(services, url("fresh0.test", changing)),
                             EVENT_TIMEOUT)
            assert after is not None, crawl_state(services, url("fresh0.test", changing))
            assert after.changes and after.changes[-1] > before.last_fetch  # found by a recrawl
            assert 0 < after.next_fetch_at - after.last_fetch <= MAX_INTERVAL, after
            assert url("fresh0.test", changing) not in urls_for(tmp_path, first)

            # 404/410 twice: gone from the index, tombstoned
            for path, word in dead_words.items():
                assert wait_for(lambda p=path, w=word: url("fresh0.test", p)
                                not in urls_for(tmp_path, w), EVENT_TIMEOUT), path
                assert crawl_state(services, url("fresh0.test", path)).tombstone
            # a permanent redirect: the document now lives at its target
            target = url("fresh0.test", "/moved/10")
            assert wait_for(lambda: urls_for(tmp_path, moved_word) >= {target}
                            and url("fresh0.test", moved) not in urls_for(tmp_path, moved_word),
                            EVENT_TIMEOUT)
            assert crawl_state(services, url("fresh0.test", moved)).moved_to == target
            assert crawl.poll() is None, "continuous mode: the crawl keeps running"
        finally:
            crawl.send_signal(signal.SIGINT)
            try:
                crawl.wait(30)
            except Exception:
                crawl.kill()
                crawl.wait(10)
    output = (tmp_path / "crawl.out").read_text()
    crawl_log = (tmp_path / "logs" / "crawl.log").read_text()
    assert "'recrawl/not_modified'" in crawl_log, output[-3000:]
    assert "'recrawl/deleted'" in crawl_log and "'index/removed/deleted'" in crawl_log
    assert "'index/removed/moved'" in crawl_log
    lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    recrawled = [x for x in lines if x["path"] == "/p/1"]
    assert len(recrawled) >= 2 and {x["status"] for x in recrawled[1:]} == {304}


def test_a_later_crawl_recrawls_due_urls_with_conditional_get(tmp_path):
    """Crawl state outlives the crawl: the next run sends validators and gets 304s."""
    log = tmp_path / "testweb.log"
    with testweb.run(hosts=1, fresh_hosts=1, fresh_pages=6, log=log,
                     clock_offset=EPOCH + 20 * DAY - time.time()) as web:
        seeds = [web.home_url("fresh0.test")]
        settings = {**SETTINGS, "RECRAWL_INITIAL_INTERVAL": 1.0, "RECRAWL_MIN_INTERVAL": 1.0}
        args = {"allowed_hosts": "fresh0.test"}
        first = run_crawl(tmp_path, seeds, settings, args, timeout=120)
        assert first.returncode == 0, first.stderr[-3000:]
        fetched = len(web.read_log())
        time.sleep(1.5)
        second = run_crawl(tmp_path, seeds, settings, args, timeout=120)
        assert second.returncode == 0, second.stderr[-3000:]
        time.sleep(0.3)
        later = web.read_log()[fetched:]
    statuses = {line["path"]: line["status"] for line in later}
    assert statuses.get("/") == 200  # the front page has no validators: fetched again
    assert any(status == 304 for path, status in statuses.items() if path.startswith("/p/"))
    crawl_log = (tmp_path / "logs" / "crawl.log").read_text()
    assert "'recrawl/queued'" in crawl_log and "'recrawl/not_modified'" in crawl_log
    second_stats = crawl_log.rsplit("Dumping Scrapy stats", 1)[1]
    assert "'frontier/queued': 0" in second_stats  # every due URL fetched before the close
