"""Admin actions, crawl dashboard, URL inspector and recrawl, through Django's test client."""

import io
import pickle
import time

import pytest
from django.test import Client
from scrapy.utils.request import request_from_dict

from crawler.statsexport import FileStatsStore
from crawler.urls import doc_id_for
from index.base import Document
from webui.control.actions import crawl_frontier, recrawl_entry
from webui.control.models import HostRule, Seed
from webui.dashboard.crawlstats import summarize
from webui.dashboard.svg import line_chart
from webui.search.backend import get_search_backend

pytestmark = pytest.mark.django_db

PAGES = {
    "http://keep.test/a": "Keeper zebu page",
    "http://gone.test/a": "Gone zebu page",
    "http://gone.test/b": "Gone zebu second",
    "http://sub.gone.test/c": "Sub gone zebu",
    "http://block2.test/a": "Blocked by action zebu",
}


@pytest.fixture(scope="module", autouse=True)
def pages():
    backend = get_search_backend()
    backend.index(
        Document(id=doc_id_for(u), url=u, host=u.split("/")[2], title=t, body="zebu text",
                 pagerank=0.75, cluster_id=doc_id_for(u), dup_count=2)
        for u, t in PAGES.items()
    )
    backend.refresh()
    backend.close()


def _urls(client, query="zebu"):
    return {h["url"] for h in client.get("/api/search", {"q": query, "size": 50}).json()["results"]}


def test_staff_pages_need_login(client):
    for url in ("/dashboard/", "/dashboard/inspect?url=http://keep.test/a", "/admin/"):
        response = client.get(url)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert client.post("/dashboard/recrawl", {"url": "http://keep.test/a"}).status_code == 302


def test_csrf_is_enforced(admin_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(admin_user)
    assert client.post("/dashboard/recrawl", {"url": "http://keep.test/a"}).status_code == 403
    response = client.post("/admin/control/hostrule/add/", {"pattern": "x.test",
                                                            "action": "block"})
    assert response.status_code == 403
    assert not HostRule.objects.filter(pattern="x.test").exists()


def test_adding_a_block_rule_removes_the_hosts_pages(admin_client, client):
    assert {"http://gone.test/a", "http://sub.gone.test/c"} <= _urls(client)
    response = admin_client.post(
        "/admin/control/hostrule/add/",
        {"pattern": "gone.test", "action": "block", "crawl_delay": "", "page_budget": "",
         "note": "spam"},
        follow=True,
    )
    assert response.status_code == 200
    assert "2 page(s) removed from the index" in response.content.decode()
    left = _urls(client)
    assert "http://gone.test/a" not in left and "http://gone.test/b" not in left
    assert {"http://keep.test/a", "http://sub.gone.test/c"} <= left
    admin_client.post("/admin/control/hostrule/add/", {"pattern": "*.gone.test",
                                                       "action": "block"})
    assert "http://sub.gone.test/c" not in _urls(client)


def test_removehost_command(client):
    from django.core.management import call_command

    backend = get_search_backend()
    backend.index([Document(id=doc_id_for("http://cmd.test/"), url="http://cmd.test/",
                            host="cmd.test", title="zebu command")])
    backend.refresh()
    backend.close()
    assert "http://cmd.test/" in _urls(client)
    out = io.StringIO()
    call_command("removehost", "CMD.test", stdout=out)
    assert "cmd.test: 1 page(s) removed" in out.getvalue().lower()
    assert "http://cmd.test/" not in _urls(client)


def test_block_while_another_writer_holds_the_index(admin_client, client):
    backend = get_search_backend()
    backend.index([Document(id=doc_id_for("http://held.test/"), url="http://held.test/",
                            host="held.test", title="zebu held")])
    backend.refresh()  # the shared backend now holds the writer lock, like a running crawl
    try:
        response = admin_client.post("/admin/control/hostrule/add/",
                                     {"pattern": "held.test", "action": "block"}, follow=True)
        text = response.content.decode()
        assert "could not be removed" in text and "manage.py removehost" in text
        assert HostRule.objects.get(pattern="held.test").action == "block"
    finally:
        backend.close()
    assert "http://held.test/" in _urls(client)


def test_block_action_and_rule_fields(admin_client, client):
    rule = HostRule.objects.create(pattern="block2.test", action="allow", crawl_delay=2.5,
                                   page_budget=100, render_js=True)
    listing = admin_client.get("/admin/control/hostrule/", {"q": "block2"}).content.decode()
    assert "block2.test" in listing and "2.5" in listing
    filtered = admin_client.get("/admin/control/hostrule/", {"action__exact": "allow"})
    assert "block2.test" in filtered.content.decode()
    admin_client.post("/admin/control/hostrule/", {"action": "block_hosts",
                                                   "_selected_action": [rule.pk]})
    rule.refresh_from_db()
    assert rule.action == "block"
    assert "http://block2.test/a" not in _urls(client)
    assert "http://keep.test/a" in _urls(client)


def test_bulk_add_seeds_and_recrawl(admin_client):
    page = admin_client.get("/admin/control/seed/").content.decode()
    assert "/admin/control/seed/bulk-add/" in page
    bad = admin_client.post("/admin/control/seed/bulk-add/",
                            {"urls": "http://s1.test/\njavascript:alert(1)\n"})
    assert "not http(s) URLs" in bad.content.decode() and not Seed.objects.exists()
    Seed.objects.create(url="http://s1.test/", active=False)
    response = admin_client.post(
        "/admin/control/seed/bulk-add/",
        {"urls": "# my seeds\nhttp://s1.test/\nhttp://S2.test/x?utm_source=a\n\nhttp://s3.test/",
         "recrawl": "on"},
        follow=True,
    )
    text = response.content.decode()
    assert "Added 2 seed(s); 1 existed." in text and "Queued 3 URL(s)" in text
    assert set(Seed.objects.filter(active=True).values_list("url", flat=True)) == {
        "http://s1.test/", "http://s2.test/x", "http://s3.test/"}
    assert Seed.objects.filter(url__icontains="s2").exists()
    with crawl_frontier() as frontier:
        leases = frontier.next_ready(10)
    assert {"http://s1.test/", "http://s2.test/x", "http://s3.test/"} <= {
        lease.url for lease in leases}


def test_recrawl_entry_is_top_priority_and_bypasses_the_seen_filter():
    entry = recrawl_entry("HTTP://Keep.test:80/a#frag")
    assert entry.url == "http://keep.test/a" and entry.rank == 0 and not entry.filter
    request = request_from_dict(pickle.loads(entry.payload))
    assert request.url == "http://keep.test/a" and request.meta["frontier_tier"] == 0
    assert request.dont_filter


def test_recrawl_from_the_inspector(admin_client):
    response = admin_client.post("/dashboard/recrawl", {"url": "http://rc.test/page"},
                                 follow=True)
    assert "Queued http://rc.test/page at top priority" in response.content.decode()
    with crawl_frontier() as frontier:
        assert "http://rc.test/page" in {lease.url for lease in frontier.next_ready(50)}
    response = admin_client.post("/dashboard/recrawl", {"url": "javascript:alert(1)"},
                                 follow=True)
    assert "Cannot recrawl" in response.content.decode()


def test_inspector_indexed_page(admin_client):
    html = admin_client.get("/dashboard/inspect", {"url": "HTTP://KEEP.test/a?utm_source=x"})
    text = html.content.decode()
    assert "http://keep.test/a" in text and doc_id_for("http://keep.test/a") in text
    assert '<p class="ok">Indexed</p>' in text
    assert "0.7500" in text  # PageRank
    assert "2 pages" in text and "(this page leads it)" in text
    assert "Recrawl now" in text


def test_inspector_explains_why_not_indexed(admin_client):
    HostRule.objects.create(pattern="nope.test", action="block")
    text = admin_client.get("/dashboard/inspect", {"url": "http://nope.test/x"}).content.decode()
    assert "Not indexed" in text and "a host rule blocks its host" in text
    text = admin_client.get("/dashboard/inspect", {"url": "http://new.test/x"}).content.decode()
    assert "has not discovered this URL" in text
    text = admin_client.get("/dashboard/inspect", {"url": "javascript:alert(1)"}).content.decode()
    assert "cannot fetch this URL" in text and 'href="javascript' not in text


def test_inspector_robots_and_seen(admin_client):
    from crawler.frontier import Entry

    with crawl_frontier() as frontier:
        frontier.robots_set("robo.test", 200, b"User-agent: *\nDisallow: /private\n",
                            time.time() + 3600)
        frontier.add([Entry("http://robo.test/private/1", "robo.test", budget=1),
                      Entry("http://robo.test/2", "robo.test", budget=1)])
    text = admin_client.get("/dashboard/inspect",
                            {"url": "http://robo.test/private/1"}).content.decode()
    assert '<span class="bad">disallowed</span>' in text
    assert "robots.txt disallows it" in text
    assert "discovered (in the frontier" in text
    assert "1 queued" in text and "1 page added" in text
    assert "1 more page waiting for a page of the budget" in text
    text = admin_client.get("/dashboard/inspect", {"url": "http://robo.test/open"}).content.decode()
    assert '<span class="ok">allowed</span>' in text


def _snapshots(now):
    snaps = []
    for worker in ("w1", "w2"):
        for n in range(7):
            ts = now - 300 + n * 40
            snaps.append({
                "ts": ts, "worker": worker,
                "stats": {
                    "response_received_count": n * 400,
                    "downloader/exception_type_count/twisted.internet.error.TimeoutError": n,
                    "downloader/response_status_count/503": 2 * n,
                    "downloader/response_status_count/200": n * 390,
                    "frontier/cluster/queue_depth": 1000 - n * 10,
                    "frontier/cluster/hosts_cooldown": 5,
                    "scope/out_of_scope": 3 * n,
                    "index/indexed": n * 300,
                },
                "hosts": {"big.test": 50 * n, "<script>x</script>.test": 1},
            })
    return snaps


def test_summarize_merges_workers():
    now = time.time()
    summary = summarize(_snapshots(now), now - 600, now, buckets=60)
    assert summary.workers == ["w1", "w2"]
    assert summary.latest("pages") == pytest.approx(20.0)  # 10 pages/s per worker
    assert summary.latest("queue_depth") == 940  # a shared gauge is not summed
    assert summary.totals["response_received_count"] == 4800
    assert summary.errors == {"TimeoutError": 12, "HTTP 503": 24}
    assert summary.drops["out of scope"] == 36
    assert summary.hosts["big.test"] == 600
    restarted = _snapshots(now) + [{"ts": now - 10, "worker": "w1", "hosts": {},
                                    "stats": {"response_received_count": 5}}]
    values = [v for _, v in summarize(restarted, now - 600, now).series["pages"] if v is not None]
    assert min(values) >= 0 and max(values) == pytest.approx(20.0)  # no negative spike


def test_line_chart_escapes_and_breaks_on_gaps():
    svg = str(line_chart([(0, 1.0), (1, 2.0), (2, None), (3, 4.0), (4, 3.0)], "<b>x</b>"))
    assert svg.count("<polyline") == 2 and "<b>" not in svg and "&lt;b&gt;" in svg
    assert "no data yet" in str(line_chart([(0, None)], "empty"))


def test_dashboard_shows_merged_stats(admin_client, data_dir):
    FileStatsStore(data_dir / "stats").read()
    store = FileStatsStore(data_dir / "stats")
    for snap in _snapshots(time.time()):
        store.append(snap)
    response = admin_client.get("/dashboard/", {"window": 900})
    text = response.content.decode()
    assert response.status_code == 200
    assert text.count("<svg") == 5 and "<polyline" in text
    assert "Pages per second" in text and "20.0" in text
    assert "TimeoutError" in text and "HTTP 503" in text and "out of scope" in text
    assert "big.test" in text and "<script>x</script>" not in text
    assert "&lt;script&gt;x&lt;/script&gt;.test" in text
    assert "Documents in index" in text and "w1, w2" in text
    nonce_free = [t for t in text.split("<script")[1:] if "src=" not in t.split(">")[0]]
    assert not nonce_free


def test_dashboard_and_recrawl_on_redis(admin_client, tmp_path, monkeypatch):
    """Distributed mode: stats snapshots and the frontier live in Redis."""
    from redis import Redis

    from crawler.statsexport import RedisStatsStore
    from harness.redisserver import running_redis

    with running_redis(tmp_path) as server:
        monkeypatch.setenv("REDIS_URL", server.url)
        store = RedisStatsStore(Redis.from_url(server.url))
        for snap in _snapshots(time.time()):
            snap["worker"] = "redis-" + snap["worker"]
            store.append(snap)
        response = admin_client.post("/dashboard/recrawl", {"url": "http://red.test/"})
        assert response.status_code == 302
        text = admin_client.get("/dashboard/", {"window": 900}).content.decode()
        assert "redis-w1, redis-w2" in text and "big.test" in text
        assert '<div class="label">Queue depth</div><div class="value">1</div>' in text
        with crawl_frontier() as frontier:
            assert [lease.url for lease in frontier.next_ready(5)] == ["http://red.test/"]
        text = admin_client.get("/dashboard/inspect", {"url": "http://red.test/"}).content.decode()
        # a recrawl bypasses the seen filter, so the URL still counts as not discovered
        assert "Crawl state</th><td>not discovered" in text


def test_host_verdicts_in_dashboard_inspector_and_admin(admin_client):
    from crawler.quality.verdicts import MIRROR, SPAM, Verdict
    from webui.control.actions import crawl_verdicts

    with crawl_verdicts() as store:
        store.clear()
        store.put(Verdict("mirror.test:8000", MIRROR, 0.97, of="site0.test",
                          reasons=("31 of its 32 pages are near-copies of pages of site0.test",),
                          action="budget_cut"))
        store.put(Verdict("spam.test", SPAM, 0.9,
                          reasons=("a few words make up most of the text (keyword_stuffing: "
                                   "9 of 10 pages)",), action="budget_cut"))
    text = admin_client.get("/dashboard/").content.decode()
    assert "mirror of site0.test" in text and "spam.test" in text
    text = admin_client.get("/dashboard/inspect",
                            {"url": "http://mirror.test:8000/p/3"}).content.decode()
    assert "Its host is a mirror of site0.test" in text
    page = admin_client.get("/admin/control/hostrule/quality/").content.decode()
    assert "keyword_stuffing" in page and "mirror of site0.test" in page
    response = admin_client.post("/admin/control/hostrule/quality/",
                                 {"host": "spam.test", "quality": "trusted"})
    assert response.status_code == 302
    assert HostRule.objects.get(pattern="spam.test").quality == "trusted"
    text = admin_client.get("/dashboard/inspect", {"url": "http://spam.test/x"}).content.decode()
    assert "a host rule overrides the verdict" in text
    admin_client.post("/admin/control/hostrule/quality/", {"host": "spam.test", "quality": ""})
    assert HostRule.objects.get(pattern="spam.test").quality == ""
    with crawl_verdicts() as store:
        store.clear()


def test_a_verdict_shows_its_evidence_and_a_never_judge_rule_overrides_it(admin_client):
    from crawler.quality.verdicts import SPAM, Verdict
    from webui.control.actions import crawl_verdicts

    with crawl_verdicts() as store:
        store.clear()
        store.put(Verdict("door.test:8000", SPAM, 0.95, confidence=0.9871, reasons=(
            "thin pages repeating their title's words (title_stuffing: 23 of 24 pages)",),
            action="budget_cut", detail={"pages": 24, "navigation_pages": 3,
                                         "agreeing": ["doorway", "title_stuffing"]}))
        store.put(Verdict("dry.test:8000", SPAM, 0.9, confidence=0.97, action="dry_run"))
    page = admin_client.get("/admin/control/hostrule/quality/").content.decode()
    assert "0.99" in page and "navigation_pages" in page and "Never judge this host" in page
    text = admin_client.get("/dashboard/inspect",
                            {"url": "http://door.test:8000/p/1"}).content.decode()
    assert "judged spam (confidence 0.99)" in text and "navigation_pages" in text
    text = admin_client.get("/dashboard/inspect",
                            {"url": "http://dry.test:8000/p/1"}).content.decode()
    assert "in a dry run (QUALITY_DRY_RUN)" in text
    response = admin_client.post("/admin/control/hostrule/quality/",
                                 {"host": "door.test:8000", "never_judge": "1"})
    assert response.status_code == 302
    assert HostRule.objects.get(pattern="door.test").never_judge
    text = admin_client.get("/dashboard/inspect",
                            {"url": "http://door.test:8000/p/1"}).content.decode()
    assert "a host rule overrides the verdict" in text and "never judged" in text
    admin_client.post("/admin/control/hostrule/quality/",
                      {"host": "door.test", "never_judge": "0"})
    assert not HostRule.objects.get(pattern="door.test").never_judge
    with crawl_verdicts() as store:
        store.clear()


def test_recrawl_needs_the_recrawl_permission(django_user_model):
    from django.contrib.auth.models import Permission

    staff = django_user_model.objects.create_user("op", password="pw", is_staff=True)
    client = Client()
    client.force_login(staff)
    assert client.post("/dashboard/recrawl", {"url": "http://perm.test/a"}).status_code == 403
    assert "Recrawl now" not in client.get(
        "/dashboard/inspect", {"url": "http://perm.test/a"}).content.decode()
    seed = Seed.objects.create(url="http://perm.test/s")
    staff.user_permissions.add(Permission.objects.get(codename="view_seed"))
    page = client.get("/admin/control/seed/").content.decode()
    assert "Recrawl selected seeds now" not in page  # the action needs the permission too
    response = client.post("/admin/control/seed/", {"action": "recrawl",
                                                    "_selected_action": [seed.pk]}, follow=True)
    assert "Queued" not in response.content.decode()
    staff.user_permissions.add(Permission.objects.get(codename="recrawl_seed"))
    staff = django_user_model.objects.get(pk=staff.pk)  # drop the permission cache
    client.force_login(staff)
    assert "Recrawl selected seeds now" in client.get("/admin/control/seed/").content.decode()
    response = client.post("/dashboard/recrawl", {"url": "http://perm.test/a"}, follow=True)
    assert "Queued http://perm.test/a at top priority" in response.content.decode()
    with crawl_frontier() as frontier:
        urls = {lease.url for lease in frontier.next_ready(50)}
    assert "http://perm.test/a" in urls and "http://perm.test/s" not in urls


def test_recrawl_stays_in_the_crawls_scope(admin_client):
    HostRule.objects.create(pattern="*.shut.test", action="block")
    response = admin_client.post("/dashboard/recrawl", {"url": "http://a.shut.test/x"},
                                 follow=True)
    assert "Cannot recrawl: a.shut.test is blocked by a host rule" in response.content.decode()
    HostRule.objects.create(pattern="only.test", action="allow")
    response = admin_client.post("/dashboard/recrawl", {"url": "http://other.test/x"},
                                 follow=True)
    assert "other.test is not allowed by any allow rule" in response.content.decode()
    with crawl_frontier() as frontier:
        urls = {lease.url for lease in frontier.next_ready(50)}
    assert not {"http://a.shut.test/x", "http://other.test/x"} & urls


def test_inspector_explains_the_rank_for_a_query(admin_client):
    text = admin_client.get("/dashboard/inspect",
                            {"url": "http://keep.test/a", "q": "keeper zebu"}).content.decode()
    assert "Why this result for “keeper zebu”" in text
    assert "Rank <strong>1</strong>" in text  # the only page with "keeper" in its title
    assert "<td>pagerank</td>" in text and "<td>bm25</td>" in text
    text = admin_client.get("/dashboard/inspect",
                            {"url": "http://keep.test/a", "q": "gone"}).content.decode()
    assert "Not among the first 100 of" in text
    text = admin_client.get("/dashboard/inspect",
                            {"url": "http://keep.test/a", "q": '"unclosed'}).content.decode()
    assert "Why this result" in text
    text = admin_client.get("/dashboard/inspect", {"url": "http://keep.test/a"}).content.decode()
    assert "Why this result" not in text
