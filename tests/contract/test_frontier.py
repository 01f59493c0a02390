"""The ``Frontier`` contract, run against every backend: local SQLite, one real Redis, and
two real Redis servers partitioned by host hash (tests of one frontier opened once also on
SQLite in memory, ``any_store``)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from redis import Redis

from crawler.frontier import Entry, Outcome
from crawler.frontier.base import ROBOTS_RANK
from crawler.frontier.local import LocalFrontier
from crawler.frontier.partitioned import partition_of
from crawler.frontier.redis_backend import RedisFrontier, redis_frontier
from harness.clock import FakeClock
from harness.redisserver import running_redis
from tests.frontiers import options as frontier_options
from tests.frontiers import politeness

DONE = Outcome(status=200, latency=0.01)


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture(scope="module")
def redis_server2(tmp_path_factory):
    """A second server: with the first, the two partitions of the partitioned frontier."""
    with running_redis(tmp_path_factory.mktemp("redis2")) as server:
        yield server


class Backend:
    """Builds frontiers of one kind over the same state, and restarts that state."""

    def __init__(self, kind, tmp_path, servers, crawl):
        self.kind, self.tmp_path, self.crawl = kind, tmp_path, crawl
        self.servers = servers
        self.clock = FakeClock(1_000_000.0)  # shared by every frontier of a test
        self.opened = []

    def open(self, host_head=None, **overrides):
        """A frontier; ``host_head`` sets the Redis backends' head size (the local one keeps
        every queue on disk, whole)."""
        options = frontier_options(**{
            "clock": self.clock, "politeness": politeness(default_delay=1.0, latency_factor=0),
            "bloom_capacity": 10_000, **overrides,
        })
        if host_head is not None and self.kind not in ("local", "memory"):
            options["host_head"] = host_head
        if self.kind == "local":
            f = LocalFrontier(self.tmp_path / "frontier.sqlite3", **options)
        elif self.kind == "memory":
            f = LocalFrontier(None, **options)
        elif self.kind == "redis":
            f = RedisFrontier(Redis.from_url(self.servers[0].url), self.crawl, **options)
        else:
            f = redis_frontier([Redis.from_url(s.url) for s in self.servers], self.crawl,
                               **options)
        self.opened.append(f)
        return f

    def durable(self):
        """Redis: fsync the AOF on every write until the next restart. With ``everysec``
        Redis may hold writes back for up to 2 s while a slow fsync runs (a loaded disk),
        and a SIGKILL then loses them (docs/frontier.md)."""
        for server in self.servers:
            Redis.from_url(server.url).config_set("appendfsync", "always")

    def restart(self):
        """Close every frontier; for Redis, SIGKILL and restart the servers (AOF replay)."""
        for f in self.opened:
            f.close()
        self.opened = []
        for server in self.servers:
            server.stop(kill=True)
            server.start()

    def close(self):
        for f in self.opened:
            if self.kind not in ("local", "memory"):
                f.clear()
            f.close()


@pytest.fixture(params=["local", "redis", "redis-partitioned"])
def backend(request, tmp_path, redis_server, redis_server2):
    servers = {"local": [], "redis": [redis_server],
               "redis-partitioned": [redis_server, redis_server2]}[request.param]
    b = Backend(request.param, tmp_path, servers, crawl=request.node.name)
    yield b
    b.close()


@pytest.fixture(params=["memory", "local", "redis", "redis-partitioned"])
def any_store(request, tmp_path, redis_server, redis_server2):
    """Every backend, the local one in memory too (``LocalFrontier(None)``), for the tests
    of one frontier opened once."""
    servers = {"memory": [], "local": [], "redis": [redis_server],
               "redis-partitioned": [redis_server, redis_server2]}[request.param]
    b = Backend(request.param, tmp_path, servers, crawl=request.node.name)
    yield b
    b.close()


def page(url, rank=0, **kw):
    host = url.split("/")[2]
    return Entry(url=url, host=host, payload=url.encode(), rank=rank, **kw)


def test_one_lease_per_host(backend):
    f = backend.open()
    f.add([page("http://a.test/1"), page("http://a.test/2"), page("http://b.test/1")])
    leases = f.next_ready(10)
    assert sorted(lease.host for lease in leases) == ["a.test", "b.test"]
    backend.clock.advance(100)
    assert f.next_ready(10) == []  # both hosts are still leased


def test_one_lease_per_host_across_workers(backend):
    workers = [backend.open() for _ in range(4)]
    workers[0].add([page(f"http://h{h}.test/{i}") for h in range(30) for i in range(3)])
    got: list = []
    lock = threading.Lock()

    def work(f):
        for _ in range(10):
            leases = f.next_ready(5)
            with lock:
                got.extend(leases)

    threads = [threading.Thread(target=work, args=(f,)) for f in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    hosts = [lease.host for lease in got]
    assert len(hosts) == 30
    assert len(set(hosts)) == 30


def test_next_eligible_time_respected(backend):
    f = backend.open(politeness=politeness(default_delay=5.0, latency_factor=0))
    f.add([page("http://a.test/1"), page("http://a.test/2")])
    (lease,) = f.next_ready(5)
    assert f.done(lease, DONE)
    assert f.next_ready(5) == []
    backend.clock.advance(4.9)
    assert f.next_ready(5) == []
    backend.clock.advance(0.2)
    (lease,) = f.next_ready(5)
    assert lease.url == "http://a.test/2"


def test_due_in_names_when_the_next_host_is_eligible(backend):
    f = backend.open(politeness=politeness(default_delay=5.0, latency_factor=0))
    assert f.due_in() is None  # nothing queued
    f.add([page("http://a.test/1"), page("http://a.test/2"), page("http://b.test/1")])
    assert f.due_in() == 0
    leases = f.next_ready(5)
    assert len(leases) == 2 and f.due_in() is None  # both hosts leased
    for lease in leases:
        f.done(lease, DONE)
    assert f.due_in() == pytest.approx(5.0, abs=0.01)  # b.test is done; a.test waits 5 s
    backend.clock.advance(3.0)
    assert f.due_in() == pytest.approx(2.0, abs=0.01)
    backend.clock.advance(3.0)
    assert f.due_in() == 0


def test_done_many_reports_in_order_and_the_delay_runs_from_the_arrival(backend):
    f = backend.open(politeness=politeness(default_delay=5.0, latency_factor=0))
    f.add([page(f"http://{h}.test/{i}") for h in "abc" for i in range(2)])
    a, b, c = sorted(f.next_ready(5), key=lambda lease: lease.host)
    # a's response came 2 s before the report, b's just now; c's lease was done already
    assert f.done(c, DONE)
    assert f.done_many([(a, Outcome(status=200, latency=0.01, age=2.0)), (b, DONE),
                        (c, DONE)]) == [True, True, False]
    assert f.done_many([]) == []
    backend.clock.advance(3.1)
    assert [lease.host for lease in f.next_ready(5)] == ["a.test"]
    backend.clock.advance(2.0)
    assert sorted(lease.host for lease in f.next_ready(5)) == ["b.test", "c.test"]


def test_crawl_delay_admin_override_and_backoff(backend):
    f = backend.open(politeness=politeness(default_delay=1.0, latency_factor=0))
    f.add([page(f"http://a.test/{i}") for i in range(4)])
    (lease,) = f.next_ready(1)
    f.done(lease, Outcome(status=200, crawl_delay=7.0))
    backend.clock.advance(6.9)
    assert f.next_ready(1) == []
    backend.clock.advance(0.2)
    (lease,) = f.next_ready(1)
    f.done(lease, Outcome(status=200, crawl_delay=7.0, admin_delay=0.5))
    backend.clock.advance(0.6)
    (lease,) = f.next_ready(1)
    f.done(lease, Outcome(status=503, retry_after=50.0))
    backend.clock.advance(49)
    assert f.next_ready(1) == []
    backend.clock.advance(2)
    assert len(f.next_ready(1)) == 1


def test_lease_expiry_returns_work(backend):
    f = backend.open(lease_s=30)
    f.add([page("http://a.test/1")])
    (lease,) = f.next_ready(1)
    backend.clock.advance(29)
    assert f.release_expired() == 0
    assert f.next_ready(1) == []
    backend.clock.advance(2)
    assert f.release_expired() == 1
    (again,) = backend.open(lease_s=30).next_ready(1)  # another worker gets it
    assert again.url == lease.url and again.attempts == 1
    assert not f.done(lease, DONE)  # the dead worker's late report is ignored
    assert f.done(again, DONE)
    assert f.pending() == 0
    assert f.stats()["expired"] == 1


def test_poison_entry_dropped_after_max_attempts(backend):
    f = backend.open(lease_s=10, max_attempts=2)
    f.add([page("http://a.test/1"), page("http://a.test/2")])
    for _ in range(2):
        (lease,) = f.next_ready(1)
        assert lease.url == "http://a.test/1"
        backend.clock.advance(11)
        f.release_expired()
    (lease,) = f.next_ready(1)
    assert lease.url == "http://a.test/2"
    assert f.stats()["dropped/lease_expired"] == 1


def test_restart_loses_nothing(backend):
    backend.durable()
    f = backend.open(lease_s=30)
    urls = [f"http://h{h}.test/{i}" for h in range(5) for i in range(4)]
    f.add([page(u) for u in urls])
    crawled = []
    for lease in f.next_ready(3):
        f.done(lease, DONE)
        crawled.append(lease.url)
    f.next_ready(2)  # leased, never reported: the worker dies with them
    backend.restart()
    f = backend.open(lease_s=30)
    assert f.pending() == len(urls) - 3
    assert f.add([page(crawled[0])])["seen"] == 1
    deadline = backend.clock.now + 1000
    while f.pending() and backend.clock.now < deadline:
        backend.clock.advance(1)
        f.release_expired()
        for lease in f.next_ready(10):
            f.done(lease, DONE)
            crawled.append(lease.url)
    assert sorted(crawled) == sorted(urls)


def test_priority_without_starvation(backend):
    f = backend.open(tiers=4)
    f.add([page(f"http://t{t}h{h}.test/", rank=t) for t in range(4) for h in range(40)])
    tiers = Counter()
    for _ in range(15):
        (lease,) = f.next_ready(1)
        tiers[lease.rank] += 1
    assert tiers == {0: 8, 1: 4, 2: 2, 3: 1}
    rest = f.next_ready(200)
    assert len(rest) == 160 - 15  # every host of every tier is eventually served


def test_host_moves_up_when_better_entry_arrives(backend):
    f = backend.open(tiers=2)
    f.add([page(f"http://low{h}.test/", rank=1) for h in range(5)])
    f.add([page("http://low0.test/important", rank=0)])
    (first,) = f.next_ready(1)
    assert first.url == "http://low0.test/important"


def test_fractional_ranks_order_the_queue_and_wait_in_their_floor_tier(backend):
    """The value order's ranks: a host's queue by rank (then arrival), the host in the tier
    of its head entry's integer part."""
    f = backend.open(tiers=4)
    f.add([page("http://v.test/late", rank=2.75), page("http://v.test/mid", rank=2.125),
           page("http://v.test/best", rank=1.5), page("http://w.test/only", rank=0.999)])
    order = []
    for _ in range(4):
        backend.clock.advance(10)
        leases = sorted(f.next_ready(2), key=lambda lease: lease.host)
        for lease in leases:
            order.append((lease.url, int(lease.rank)))
            f.done(lease, DONE)
    assert [u for u, _ in order if "v.test" in u] == [
        "http://v.test/best", "http://v.test/mid", "http://v.test/late"]
    assert dict(order) == {"http://v.test/best": 1, "http://v.test/mid": 2,
                           "http://v.test/late": 2, "http://w.test/only": 0}


def _drain(backend, f, limit=1000):
    """Lease and finish everything, one host at a time; the URLs in lease order."""
    served = []
    for _ in range(limit):
        backend.clock.advance(10)
        leases = f.next_ready(10)
        if not leases and not f.pending():
            return served
        for lease in leases:
            served.append(lease.url)
            f.done(lease, DONE)
    raise AssertionError(f"not drained after {limit} rounds: {f.pending()} pending")


def test_long_host_queue_loses_nothing_and_keeps_tier_order(backend):
    """A host's queue far longer than the Redis head: every entry is leased once, tier by
    tier, and the queue depth counts the tail."""
    f = backend.open(host_head=4, tiers=4)
    ranks = [(i * 7) % 4 + (i % 3) / 8 for i in range(30)]
    f.add([page(f"http://long.test/{i}", rank=r) for i, r in enumerate(ranks)])
    assert f.pending() == 30 and f.stats()["queue_depth"] == 30
    assert f.host_state("long.test").queued == 30
    served = _drain(backend, f)
    assert sorted(served) == sorted(f"http://long.test/{i}" for i in range(30))
    tiers = [int(ranks[int(url.rsplit("/", 1)[1])]) for url in served]
    assert tiers == sorted(tiers)
    assert f.pending() == 0 and f.host_state("long.test").queued == 0


def test_long_host_queue_survives_restart_and_adds_while_crawling(backend):
    backend.durable()
    f = backend.open(host_head=3)
    f.add([page(f"http://grow.test/a{i}", rank=i % 2) for i in range(10)])
    first = []
    for _ in range(4):
        backend.clock.advance(10)
        (lease,) = f.next_ready(1)
        first.append(lease.url)
        f.done(lease, DONE)
    f.add([page(f"http://grow.test/b{i}", rank=0) for i in range(6)])
    backend.restart()
    f = backend.open(host_head=3)
    assert f.pending() == 12
    rest = _drain(backend, f)
    everything = [f"http://grow.test/a{i}" for i in range(10)] + [
        f"http://grow.test/b{i}" for i in range(6)]
    assert sorted(first + rest) == sorted(everything)
    # the tier-0 entries added later still come before the tier-1 ones queued earlier
    tiers = [0 if "/b" in u else int(u.rsplit("a", 1)[1]) % 2 for u in rest]
    assert tiers == sorted(tiers)


def test_full_head_keeps_its_leased_entry(backend):
    """A better entry for a full head whose worst entry is leased waits in the tail and
    comes in when the lease is done: nothing leased is moved, nothing is lost."""
    f = backend.open(host_head=2, tiers=4)
    f.add([page("http://busy.test/slow", rank=3)])
    (lease,) = f.next_ready(1)
    f.add([Entry("http://busy.test/robots.txt", "busy.test", rank=ROBOTS_RANK, filter=False)])
    f.add([page("http://busy.test/urgent", rank=0)])
    assert f.host_state("busy.test").queued == 3
    assert f.done(lease, DONE)
    assert _drain(backend, f) == ["http://busy.test/robots.txt", "http://busy.test/urgent"]


def test_page_budget_and_cut(backend):
    f = backend.open(budget_waiting=0)
    counts = f.add([page(f"http://a.test/{i}", budget=3) for i in range(5)])
    assert counts == {"added": 3, "seen": 0, "budget": 2, "waiting": 0, "moved": 0}
    f.add([page("http://b.test/1"), page("http://b.test/2")])
    f.set_host_budget("b.test", 2)
    assert f.add([page("http://b.test/3")])["budget"] == 1
    assert f.stats()["dropped/budget"] == 3


def _lease_of(backend, f, url):
    """Lease ``url``'s host and check that ``url`` is its head entry."""
    backend.clock.advance(10)
    (lease,) = f.next_ready(1)
    assert lease.url == url
    return lease


def test_pages_over_the_budget_wait_for_a_page_given_back(any_store):
    """A page the host's budget refuses waits; a page of the budget given back (an entry
    dropped unfetched, ``refund``) goes to the best waiting page (rank, then arrival): the
    budget is used whole, and never more than whole. Without the waiting list the refused
    pages were lost (their URLs stay in the seen filter) and the budget stayed unused."""
    f = any_store.open(host_head=2)
    ranks = {"a": 0, "b": 0.5, "c": 1.5, "d": 1.25, "e": 3, "f": 1.25}
    counts = f.add([page(f"http://w.test/{name}", rank=r, budget=2)
                    for name, r in ranks.items()])
    assert counts == {"added": 2, "seen": 0, "budget": 0, "waiting": 4, "moved": 0}
    state = f.host_state("w.test")
    assert (state.queued, state.pages_added, state.waiting) == (2, 2, 4)
    assert f.pending() == 2  # waiting pages are not pending work
    assert f.stats()["waiting"] == 4
    # the URL of a waiting page is seen: it is not queued twice
    assert f.add([page("http://w.test/d", rank=0, budget=2)])["seen"] == 1
    assert f.done(_lease_of(any_store, f, "http://w.test/a"), Outcome(fetched=False, refund=True))
    state = f.host_state("w.test")
    assert (state.queued, state.pages_added, state.waiting) == (2, 2, 3)
    assert f.done(_lease_of(any_store, f, "http://w.test/b"), DONE)  # a fetch gives nothing back
    assert f.host_state("w.test").waiting == 3
    assert f.done(_lease_of(any_store, f, "http://w.test/d"), Outcome(fetched=False, refund=True))
    assert f.done(_lease_of(any_store, f, "http://w.test/f"), Outcome(fetched=False, refund=True))
    assert _drain(any_store, f) == ["http://w.test/c"]
    state = f.host_state("w.test")  # two pages fetched: the budget, whole; "e" still waits
    assert (state.queued, state.pages_added, state.waiting) == (0, 2, 1)
    stats = f.stats()
    assert (stats["budget_refunded"], stats["budget_promoted"], stats["waiting"]) == (3, 3, 1)
    assert stats.get("dropped/budget", 0) == 0


def test_waiting_list_keeps_the_best_pages_within_its_cap(any_store):
    """At most ``budget_waiting`` pages wait per host: a better page pushes the worst out,
    a worse one is dropped, as a page over the budget was before (``"waiting"`` counts the
    pages set aside, ``"budget"`` those dropped: "z" at once, "x" pushed out by "best")."""
    f = any_store.open(budget_waiting=2)
    assert f.add([page("http://cap.test/0", budget=1)])["added"] == 1
    counts = f.add([page(f"http://cap.test/{name}", rank=r, budget=1)
                    for name, r in (("x", 2), ("y", 1), ("z", 3), ("best", 0.5))])
    assert counts == {"added": 0, "seen": 0, "budget": 2, "waiting": 3, "moved": 0}
    assert f.host_state("cap.test").waiting == 2
    assert f.stats()["dropped/budget"] == 2
    served = []
    for _ in range(3):
        any_store.clock.advance(10)
        (lease,) = f.next_ready(1)
        served.append(lease.url)
        f.done(lease, Outcome(fetched=False, refund=True))
    assert served == ["http://cap.test/0", "http://cap.test/best", "http://cap.test/y"]
    assert f.pending() == 0 and f.host_state("cap.test").waiting == 0


def test_a_cut_refuses_pages_for_good_and_a_raised_cut_lets_waiting_ones_in(any_store):
    """A cut (a trap, a condemned host) stops a host: pages it refuses do not wait. A cut
    raised again (a host acquitted) gives the waiting pages room, up to their own budget."""
    f = any_store.open()
    f.add([page(f"http://cut.test/{i}", budget=2) for i in range(4)])
    assert f.host_state("cut.test").waiting == 2
    f.set_host_budget("cut.test", 1)
    assert f.add([page("http://cut.test/late", budget=2)]) == {
        "added": 0, "seen": 0, "budget": 1, "waiting": 0, "moved": 0}
    (lease,) = f.next_ready(1)
    assert f.done(lease, Outcome(fetched=False, refund=True))
    assert f.host_state("cut.test").waiting == 2  # 1 added, cut 1: no room
    f.set_host_budget("cut.test", 2**31 - 1)
    state = f.host_state("cut.test")
    assert (state.queued, state.pages_added, state.waiting) == (2, 2, 1)
    assert sorted(_drain(any_store, f)) == ["http://cut.test/1", "http://cut.test/2"]
    assert f.host_state("cut.test").waiting == 1


def test_copies_of_queued_pages_take_no_budget(backend):
    """A re-push (the value order moving a URL up: no filter, no budget) queues a page
    again: the budget counts pages; it gave the copies' share of a real site's budget to no
    page. A seed (no filter, a budget) is a page."""
    f = backend.open(budget_waiting=0)
    f.add([page("http://a.test/0", filter=False, budget=3), page("http://a.test/1", budget=3)])
    copies = f.add([page(f"http://a.test/{i}", filter=False) for i in (0, 1, 1)])
    assert copies == {"added": 3, "seen": 0, "budget": 0, "waiting": 0, "moved": 0}
    assert f.add([page("http://a.test/2", budget=3)])["added"] == 1  # the third page
    assert f.add([page("http://a.test/3", budget=3)])["budget"] == 1
    assert f.host_state("a.test").pages_added == 3
    f.set_host_budget("a.test", 0)  # a cut refuses copies too
    assert f.add([page("http://a.test/0", filter=False)])["budget"] == 1


def test_a_copy_moving_a_page_up_is_leased_first_and_the_page_once_where_found(backend):
    """A copy with ``was`` (the value order moving a queued page up) is leased ahead of the
    host's other pages with its own payload on every backend; the local one moves the page
    queued at ``was`` instead of queuing the copy (no stale copy to lease and drop later),
    and queues nothing when that page is gone."""
    f = backend.open()
    f.add([page(f"http://a.test/{i}", rank=2.5) for i in range(3)])
    f.add([page("http://a.test/1", rank=2.5, filter=False)])  # a probe: no move
    move = Entry("http://a.test/2", "a.test", b"moved", rank=1.25, filter=False, was=2.5)
    counts = f.add([move])
    (lease,) = f.next_ready(1)
    assert (lease.url, lease.payload) == ("http://a.test/2", b"moved")
    urls = [lease.url]
    f.done(lease, DONE)
    moves = backend.kind in ("local", "memory")
    assert counts["moved"] == int(moves) and counts["added"] == int(not moves)
    # the page fetched: a later move of it finds nothing
    gone = f.add([move._replace(rank=1.0, was=1.25)])
    assert (gone["moved"], gone["added"]) == ((0, 0) if moves else (0, 1))
    urls += _drain(backend, f)
    expected = ["http://a.test/0", "http://a.test/1", "http://a.test/1", "http://a.test/2"]
    assert sorted(urls) == expected + ([] if moves else ["http://a.test/2"] * 2)


def test_a_page_dropped_unfetched_gives_its_budget_back(backend):
    """A URL that took a page of its host's budget and is dropped when leased (robots.txt,
    a trap, scope) gives it back (``Outcome.refund``): the budget counts pages fetched or
    still to fetch. A fetch, a requeue or a drop without ``refund`` keeps it."""
    f = backend.open(budget_waiting=0)
    assert f.add([page(f"http://a.test/{i}", budget=2) for i in range(3)])["budget"] == 1
    (lease,) = f.next_ready(1)
    assert f.done(lease, Outcome(fetched=False, refund=True))
    assert f.host_state("a.test").pages_added == 1
    assert f.add([page("http://a.test/3", budget=2)])["added"] == 1
    assert f.add([page("http://a.test/4", budget=2)])["budget"] == 1
    (lease,) = f.next_ready(1)
    assert f.done(lease, Outcome(requeue=True, fetched=False, refund=True))
    (lease,) = f.next_ready(1)
    assert f.done(lease, Outcome(fetched=False))
    (lease,) = f.next_ready(1)
    assert f.done(lease, Outcome(status=200, refund=True))
    assert f.host_state("a.test").pages_added == 2
    assert f.stats()["budget_refunded"] == 1


def test_seen_filter(backend):
    f = backend.open()
    assert f.add([page("http://a.test/1")])["added"] == 1
    assert f.add([page("http://a.test/1")]) == {"added": 0, "seen": 1, "budget": 0,
                                                "waiting": 0, "moved": 0}
    assert f.add([page("http://a.test/1", filter=False)])["added"] == 1
    assert f.seen(["http://a.test/1", "http://a.test/never"]) == [True, False]


def test_per_ip_limit(backend):
    f = backend.open(ip_limit=2)
    f.add([page(f"http://h{h}.test/", ip="10.0.0.1") for h in range(5)])
    f.add([page("http://other.test/", ip="10.0.0.2")])
    leases = f.next_ready(10)
    assert Counter(lease.host == "other.test" for lease in leases) == {False: 2, True: 1}
    f.done(leases[0], Outcome(fetched=False))
    assert len(f.next_ready(10)) == 0  # the IP waits ip_wait before trying again
    backend.clock.advance(1)
    assert len(f.next_ready(10)) == 1


def test_robots_entry_first_and_requeue(backend):
    f = backend.open()
    f.add([page("http://a.test/1")])
    (lease,) = f.next_ready(1)
    f.add([Entry("http://a.test/robots.txt", "a.test", rank=ROBOTS_RANK, filter=False)])
    assert f.done(lease, Outcome(requeue=True))
    (robots,) = f.next_ready(1)  # requeue keeps the host eligible: no fetch happened
    assert robots.is_robots and robots.url == "http://a.test/robots.txt"
    f.done(robots, Outcome(status=200))
    backend.clock.advance(1.1)
    (again,) = f.next_ready(1)
    assert again.url == "http://a.test/1"


def test_robots_store_is_shared(backend):
    a, b = backend.open(), backend.open()
    a.robots_set("a.test", 200, b"User-agent: *\nDisallow: /x\n", 123.0)
    assert b.robots_get("a.test") == (200, b"User-agent: *\nDisallow: /x\n", 123.0)
    assert b.robots_get("b.test") is None


def test_stats(backend):
    f = backend.open()
    f.add([page("http://a.test/1"), page("http://a.test/2"), page("http://b.test/1")])
    (lease, _) = f.next_ready(2)
    f.done(lease, DONE)
    f.count("dropped/depth", 2)
    s = f.stats()
    assert s["queue_depth"] == 2
    assert s["leases"] == s["hosts_active"] == 1
    assert s["hosts"] == 2
    assert s["added"] == 3 and s["leased"] == 2 and s["done"] == 1
    assert s["dropped/depth"] == 2
    assert s["hosts_cooldown"] + s["hosts_ready"] == (1 if lease.host == "a.test" else 0)


def test_host_state(backend):
    f = backend.open(politeness=politeness(default_delay=5.0, latency_factor=0))
    assert f.host_state("a.test") is None
    f.add([page("http://a.test/1", budget=10), page("http://a.test/2", budget=10)])
    state = f.host_state("a.test")
    assert (state.queued, state.leased, state.pages_added, state.budget_cut) == (2, False, 2, None)
    (lease,) = f.next_ready(1)
    assert f.host_state("a.test").leased
    f.done(lease, Outcome(status=503, latency=0.5))
    f.set_host_budget("a.test", 1)
    state = f.host_state("a.test")
    assert (state.queued, state.leased, state.budget_cut, state.backoff) == (1, False, 1, 1)
    assert state.next_eligible >= backend.clock.now + 5.0
    assert state.latency == pytest.approx(0.5)


def test_robots_first_for_new_hosts(backend):
    f = backend.open(robots_first=True)
    f.add([page("http://a.test/1"), page("http://a.test/2")])
    (robots,) = f.next_ready(5)
    assert robots.is_robots and robots.url == "http://a.test/robots.txt"
    f.done(robots, Outcome(status=200))
    backend.clock.advance(1.1)
    f.add([page("http://a.test/3")])  # a known host gets no second robots.txt fetch
    urls = []
    for _ in range(3):
        (lease,) = f.next_ready(5)
        urls.append(lease.url)
        f.done(lease, DONE)
        backend.clock.advance(1.1)
    assert urls == ["http://a.test/1", "http://a.test/2", "http://a.test/3"]
    assert f.stats()["added"] == 3


def test_ip_learned_after_fetch_joins_the_ip_group(backend):
    # a.test and c.test share a partition of the partitioned frontier (the limit holds
    # per partition there: test_partitions_share_the_ip_limit)
    f = backend.open(ip_limit=1)
    f.add([page("http://a.test/1"), page("http://a.test/2"),
           page("http://c.test/1", ip="10.0.0.9"), page("http://c.test/2", ip="10.0.0.9")])
    leases = f.next_ready(5)
    assert len(leases) == 2  # a.test is its own group until its address is known
    for lease in leases:
        f.done(lease, Outcome(status=200, ip="10.0.0.9" if lease.host == "a.test" else None))
    backend.clock.advance(2)
    assert len(f.next_ready(5)) == 1  # now a.test and c.test share 10.0.0.9's one slot


def test_partitions_share_the_ip_limit(backend):
    if backend.kind != "redis-partitioned":
        pytest.skip("one store: the limit is global (test_per_ip_limit)")
    f = backend.open(ip_limit=4)  # two partitions: 2 requests per address each
    hosts = [f"h{h}.test" for h in range(12)]
    assert {partition_of(h, 2) for h in hosts} == {0, 1}
    f.add([page(f"http://{h}/", ip="10.0.0.1") for h in hosts])
    leases = f.next_ready(20)
    assert len(leases) == 4
    assert Counter(partition_of(lease.host, 2) for lease in leases) == {0: 2, 1: 2}


def test_partitions_hold_each_host_whole(backend):
    if backend.kind != "redis-partitioned":
        pytest.skip("one store")
    f = backend.open()
    f.add([page(f"http://h{h}.test/{i}") for h in range(8) for i in range(3)])
    for index, part in enumerate(f.partitions):
        for h in range(8):
            state = part.host_state(f"h{h}.test")
            mine = partition_of(f"h{h}.test", 2) == index
            assert (state is not None and state.queued == 3) if mine else state is None
    assert f.pending() == 24 == sum(p.pending() for p in f.partitions)
    leases = f.next_ready(8)
    assert sorted(lease.host for lease in leases) == sorted(f"h{h}.test" for h in range(8))


def test_partitions_share_each_lease_request(backend):
    if backend.kind != "redis-partitioned":
        pytest.skip("one store")
    f = backend.open()
    hosts = [f"h{h}.test" for h in range(40)]
    f.add([page(f"http://{h}/") for h in hosts])
    leases = f.next_ready(10)
    assert Counter(partition_of(lease.host, 2) for lease in leases) == {0: 5, 1: 5}
    # a partition with fewer ready hosts than its share leaves the rest to the other
    few = [h for h in (f"x{n}.test" for n in range(100)) if partition_of(h, 2) == 0][:2]
    many = [h for h in (f"y{n}.test" for n in range(100)) if partition_of(h, 2) == 1][:20]
    f.next_ready(100)  # lease what is left of the first hosts
    f.add([page(f"http://{h}/") for h in few + many])
    leases = f.next_ready(10)
    assert Counter(partition_of(lease.host, 2) for lease in leases) == {0: 2, 1: 8}


def test_the_most_valuable_eligible_host_of_a_tier_goes_first(backend):
    f = backend.open(tiers=2)
    values = {"a.test": 0.1, "b.test": 0.5, "c.test": 0.9, "d.test": 0.3, "e.test": 0.7}
    f.add([page(f"http://{h}/", rank=1) for h in [*values, "unset.test"]])
    f.set_host_values(values)
    order = [f.next_ready(1)[0].host for _ in range(6)]
    best_first = ["unset.test", "c.test", "e.test", "b.test", "d.test", "a.test"]
    # partitions take turns: each holds its own hosts in that order
    parts = max(1, len(backend.servers))
    for part in range(parts):
        mine = [h for h in best_first if partition_of(h, parts) == part]
        assert [h for h in order if h in mine] == mine


def test_a_host_of_low_value_is_served_after_waiting(backend):
    """Its priority grows while it waits (HOST_AGE_S), so hosts of value 1 that keep
    coming back do not hold it back for ever."""
    from crawler.frontier.base import HOST_AGE_S

    f = backend.open(tiers=1)
    parts = max(1, len(backend.servers))  # every host in low.test's partition
    good = [h for h in (f"good{i}.test" for i in range(20))
            if partition_of(h, parts) == partition_of("low.test", parts)][:3]
    f.add([page("http://low.test/", rank=0)])
    f.add([page(f"http://{h}/{n}", rank=0) for h in good for n in range(50)])
    f.set_host_values({"low.test": 0.5})
    served_at = None
    for step in range(100):
        for lease in f.next_ready(1):
            if lease.host == "low.test":
                served_at = step
            f.done(lease, DONE)  # the host may come back after 1 s (default_delay)
        if served_at is not None:
            break
        backend.clock.advance(HOST_AGE_S / 30)
    # value 0.5 equals a fresh host of value 1 after HOST_AGE_S: 30 steps
    assert served_at is not None and 25 <= served_at <= 35


def test_a_hosts_queue_is_dropped_in_one_call_but_its_lease(any_store):
    """``drop_queue`` (a condemned host): every entry queued for the host goes, its head
    and its tail past ``HOST_HEAD`` on Redis, and its waiting list, but the leased one,
    whose report still ends the lease; the host is not leased again until new work comes,
    and other hosts keep their queues."""
    f = any_store.open(budget_waiting=5)
    f.add([page(f"http://gone.test/{i}", budget=100) for i in range(103)])
    f.add([page(f"http://kept.test/{i}") for i in range(3)])
    assert f.host_state("gone.test").waiting == 3
    leases = {lease.host: lease for lease in f.next_ready(2)}
    assert f.drop_queue("gone.test") == 99
    state = f.host_state("gone.test")
    assert (state.queued, state.leased, state.waiting) == (1, True, 0)
    assert f.pending() == 1 + 3
    assert f.stats()["waiting"] == 0
    assert f.done(leases["gone.test"], DONE) and f.done(leases["kept.test"], DONE)
    assert sorted(_drain(any_store, f)) == ["http://kept.test/1", "http://kept.test/2"]
    assert f.stats()["queue_depth"] == 0
    assert f.drop_queue("gone.test") == 0
    assert f.add([page("http://gone.test/new", filter=False)])["added"] == 1
    assert _drain(any_store, f) == ["http://gone.test/new"]


def test_an_unleased_hosts_dropped_queue_leaves_it_unready(any_store):
    """A host dropped while not leased is eligible no more: no lease, no due time."""
    f = any_store.open()
    f.add([page(f"http://gone.test/{i}") for i in range(3)])
    assert f.drop_queue("gone.test") == 3
    assert f.next_ready(5) == [] and f.due_in() is None and f.pending() == 0


def test_a_host_due_within_ahead_is_leased_with_its_wait(any_store):
    """``next_ready(n, ahead)`` leases a host whose next-eligible time is at most ``ahead``
    away, the lease saying how long its request waits (``Lease.wait``); one further away
    is not leased, and a due host's lease waits for nothing."""
    f, clock = any_store.open(), any_store.clock
    f.add([page(f"http://a.test/{i}") for i in range(3)])
    (lease,) = f.next_ready(1)
    assert lease.wait == 0.0
    f.done(lease, DONE)
    due = f.host_state("a.test").next_eligible
    clock.advance(due - clock() - 0.3)
    assert f.next_ready(1, ahead=0.2) == []  # due in 0.3 s
    clock.advance(0.15)
    (lease,) = f.next_ready(1, ahead=0.2)
    assert lease.url == "http://a.test/1" and lease.wait == pytest.approx(0.15, abs=1e-3)
    assert f.next_ready(1, ahead=60.0) == []  # one lease per host
    f.done(lease, DONE)
    clock.advance(f.host_state("a.test").next_eligible - clock() + 0.5)
    (lease,) = f.next_ready(1, ahead=0.2)
    assert lease.wait == 0.0
