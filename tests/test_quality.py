"""Pages and hosts worth having: template traps, soft 404s, spam, the quality pipeline, and
the value order, judged on the test web's own pages."""

from __future__ import annotations

import pytest

import testweb
from crawler.extract import extract, page_item
from crawler.frontier.value import ValueOrder
from crawler.hostrules import HostRule, HostRules
from crawler.items import Link
from crawler.options import setting, settings_to_options
from crawler.quality.judges import (
    SpamJudge,
    TemplateTraps,
    hidden_words,
    is_navigation,
    is_soft_404,
    share_confidence,
    text_overlap,
)
from crawler.quality.pipeline import QualityPipeline
from crawler.quality.traps import DeadSubtrees, TrapGuard, url_pattern
from crawler.quality.verdicts import MIRROR, SPAM, TEMPLATE_TRAP, LocalVerdictStore, Verdict
from crawler.urls import doc_id_for, host_of

PORT = 8000


def traps_for() -> TemplateTraps:
    return TemplateTraps(**settings_to_options({}, TemplateTraps.SETTINGS))


def judge_for() -> SpamJudge:
    return SpamJudge(**settings_to_options({}, SpamJudge.SETTINGS))


@pytest.fixture(scope="module")
def web():
    return testweb.TestWeb(hosts=4, port=PORT, pages_per_host=200)


def item_of(web, host: str, path: str, agent: str = "websearch-bot/0.1"):
    response = web.render(host, path, {"User-Agent": agent})
    assert response.status == 200, (host, path)
    url = web.url(host, path)
    page = extract(response.body.decode("utf-8", "replace"), url)
    item = page_item(page, url, 200, 0.0)
    item.doc_id = doc_id_for(item.url)
    item.hidden_words = hidden_words(response.body)
    return item


def paths(host: str, n: int) -> list[str]:
    if host == "events.test":
        return [f"/2026/03/{d:02d}/" for d in range(1, n + 1)]
    if host == "calendar.test":
        return [f"/calendar/{2026 + m // 12}/{m % 12 + 1}" for m in range(n)]
    if host == "deadlinks.test":
        return [f"/doc/{i}" for i in range(n)]
    if host == "sessions.test":
        return [f"/item/{i}" for i in range(n)]
    return [f"/p/{i}" for i in range(n)]


# -- template traps ------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["events.test", "calendar.test"])
def test_calendar_pages_add_nothing_and_their_pattern_is_a_trap(web, host):
    traps = traps_for()
    results = [traps.observe(web.url(host, p), web.page(host, p).main_text)
               for p in paths(host, 14)]
    assert not results[0].stale  # the pattern's first page is its template
    assert all(r.stale for r in results[1:])
    (trapped,) = [r for r in results if r.trapped]
    assert trapped is results[9] and trapped.pattern in traps.trapped
    # short pages count: no minimum text length
    assert len(web.page(host, paths(host, 1)[0]).main_text.split()) < 20


def test_articles_are_no_template_trap(web):
    traps = traps_for()
    results = [traps.observe(web.url("site1.test", p), web.page("site1.test", p).main_text)
               for p in paths("site1.test", 40)]
    assert not any(r.trapped or r.stale for r in results)
    assert traps.observe(web.url("site1.test", "/p/3"), "anything") is None  # counted once


def test_url_patterns_fold_digits_and_keep_query_names():
    assert url_pattern("http://e.test/2026/03/14/?view=week") == "e.test/#/#/#/?view"
    assert url_pattern("http://e.test/2025/1/2/?view=list") == "e.test/#/#/#/?view"
    assert url_pattern("http://e.test/2026/03/14/") == "e.test/#/#/#/"
    guard = TrapGuard.from_settings({})
    guard.block_pattern("e.test/#/#/#/")
    assert guard.check("http://e.test/1999/12/31/") == "template_trap"
    assert guard.check("http://e.test/1999/12/31/?view=week") is None
    assert guard.blocked("http://e.test/1/2/3/") and not guard.blocked("http://e.test/1/2/")


# -- soft 404s and dead subtrees -----------------------------------------------------------

def test_soft_404_recognised_and_articles_are_not(web):
    moved = web.page("deadlinks.test", "/moved/3")
    assert is_soft_404(moved.title, moved.main_text)
    for host, path in (("deadlinks.test", "/doc/3"), ("site0.test", "/p/5"),
                       ("site0.test", "/")):
        page = web.page(host, path)
        assert not is_soft_404(page.title, page.main_text), (host, path)
    assert not is_soft_404("A long story", "not found " + "word " * 100)


def test_dead_subtree_deprioritised_then_dropped():
    dead = DeadSubtrees(min_fetches=3, drop_after=8, dead_share=0.9)
    url = "http://d.test/archive/{}"
    for i in range(2):
        dead.record(url.format(i), 404)
    assert not dead.dying(url.format(99))
    dead.record(url.format(2), 410)
    assert dead.dying(url.format(99)) and not dead.dead(url.format(99))
    for i in range(3, 8):
        dead.record(url.format(i), 404)
    assert dead.dead(url.format(99))
    assert not dead.dying("http://d.test/doc/1") and not dead.dead("http://d.test/x")
    live = DeadSubtrees(min_fetches=3, drop_after=8, dead_share=0.9)
    for i in range(8):
        live.record(f"http://d.test/doc/{i}", 200 if i % 2 else 404)
    assert not live.dying("http://d.test/doc/9") and not live.dead("http://d.test/doc/9")
    for i in range(8):  # soft 404s make a live-looking directory dead
        live.soft_404(f"http://d.test/doc/{i}")
    assert live.dead("http://d.test/doc/9")


# -- spam ----------------------------------------------------------------------------------

def judge_hosts(web, hosts, pages=24) -> dict[str, object]:
    judge = judge_for()
    for host in hosts:
        for path in ["/", *paths(host, pages)]:
            item = item_of(web, host, path)
            links = [link.url for link in item.links]
            signals = judge.page_signals(host, item.title, item.text,
                                         [host_of(u) for u in links], item.hidden_words)
            judge.observe(host, signals, [u for u in links if host_of(u) != host])
    return {host: judge.verdict(host) for host in hosts}


def test_spam_hosts_of_each_kind_are_found_with_their_reasons(web):
    spam = web.spam_hosts()
    verdicts = judge_hosts(web, [h for h, kind in spam.items() if kind != "cloaking"])
    expected = {"keyword_stuffing": "keyword_stuffing", "hidden_text": "hidden_text",
                "doorway": "doorway", "link_farm": "link_farm"}
    for host, verdict in verdicts.items():
        assert verdict.spam, host
        assert expected[spam[host]] in verdict.reasons, (host, verdict.reasons)
        assert verdict.explain()
    assert any("link_clique" in v.reasons for h, v in verdicts.items() if "farm" in h)


def test_normal_and_other_hosts_are_not_spam(web):
    hosts = [*web.hosts(), "mirror.test", "deadlinks.test", "events.test", "sessions.test",
             "calendar.test", "cloak.test"]
    verdicts = judge_hosts(web, hosts)
    assert not [h for h, v in verdicts.items() if v is not None and v.spam]


def test_hidden_text_share_and_overlap(web):
    item = item_of(web, "hidden.test", "/p/4")
    assert item.hidden_words >= 200
    assert item_of(web, "site0.test", "/p/4").hidden_words == 0
    crawler_view = item_of(web, "cloak.test", "/p/2").text
    browser_view = item_of(web, "cloak.test", "/p/2", agent="Mozilla/5.0").text
    assert text_overlap(crawler_view, browser_view) < 0.3
    assert text_overlap(crawler_view, crawler_view) == 1.0


# -- the pipeline --------------------------------------------------------------------------

class Stats(dict):
    def inc_value(self, key, n=1):
        self[key] = self.get(key, 0) + n


class Recorder:
    def __init__(self):
        self.sent: list[tuple[str, dict]] = []
        self.probes: list[str] = []

    def send(self, name, **kwargs):
        self.sent.append((name, kwargs))

    def names(self, name):
        return [kw for n, kw in self.sent if n == name]


def pipeline_for(rules=(), verdicts=None):
    rec = Recorder()
    pipe = QualityPipeline(traps_for(), judge_for(), send=rec.send,
                           host_rules=HostRules.static(list(rules)), probe=rec.probes.append,
                           verdicts=verdicts, max_hosts=setting({}, "QUALITY_MAX_HOSTS", int),
                           max_probes=setting({}, "QUALITY_MAX_PENDING_PROBES", int))
    return pipe, rec


def test_pipeline_skips_soft_404s_and_template_pages_and_drops_trap_patterns(web, tmp_path):
    store = LocalVerdictStore(tmp_path / "v.sqlite3")
    pipe, rec = pipeline_for(verdicts=store)
    moved = pipe.process_item(item_of(web, "deadlinks.test", "/moved/1"))
    assert moved.skip_index == "soft_404"
    assert rec.names("soft_404_found") == [{"url": web.url("deadlinks.test", "/moved/1")}]
    items = [pipe.process_item(item_of(web, "events.test", p)) for p in paths("events.test", 12)]
    (trap,) = rec.names("pattern_trapped")
    assert trap["pattern"] == f"events.test:{PORT}/#/#/#/"
    # indexed until the verdict, which takes them out; no later page goes in
    verdict_at = next(n for n, i in enumerate(items) if i.skip_index == "template")
    assert verdict_at >= pipe.traps.min_pages - 1
    assert all(i.skip_index == "" for i in items[:verdict_at])
    assert all(i.skip_index == "template" for i in items[verdict_at:])
    (removed,) = rec.names("documents_removed")
    assert removed["reason"] == "template_trap"
    assert {i.doc_id for i in items[:verdict_at]} <= set(removed["ids"])
    (verdict,) = store.for_host(f"events.test:{PORT}")
    assert verdict.kind == TEMPLATE_TRAP and verdict.detail["patterns"] == [trap["pattern"]]
    doc = pipe.process_item(item_of(web, "deadlinks.test", "/doc/2"))
    assert doc.skip_index == ""
    store.close()


def test_pipeline_condemns_a_spam_host_once_and_skips_its_pages(web, tmp_path):
    store = LocalVerdictStore(tmp_path / "v.sqlite3")
    pipe, rec = pipeline_for(verdicts=store)
    items = [pipe.process_item(item_of(web, "stuffing.test", p))
             for p in ["/", *paths("stuffing.test", 24)]]
    (condemned,) = rec.names("host_condemned")
    assert condemned == {"host": "stuffing.test", "netloc": f"stuffing.test:{PORT}",
                         "reason": "spam"}
    assert items[-1].skip_index == "spam" and items[-1].spam_score > 0
    assert rec.probes == []  # condemned on its content: no browser probe
    assert rec.names("host_scored")[-1]["quality"] < 0.5
    (verdict,) = store.for_host("stuffing.test")
    assert verdict.kind == SPAM and any("keyword_stuffing" in r for r in verdict.reasons)
    for p in paths("site2.test", 10):
        assert pipe.process_item(item_of(web, "site2.test", p)).skip_index == ""
    assert len(rec.names("host_condemned")) == 1
    store.close()


def test_pipeline_finds_cloaking_through_its_browser_probe(web):
    pipe, rec = pipeline_for()
    sample = pipe.judge.sample_pages  # probed once its spam sample is in
    for path in ["/", *paths("cloak.test", sample + 2)]:
        pipe.process_item(item_of(web, "cloak.test", path))
    (probed,) = rec.probes
    assert rec.names("host_condemned") == []
    browser = item_of(web, "cloak.test", probed.split(str(PORT), 1)[1], agent="Mozilla/5.0")
    pipe.probe_fetched(url=probed, text=browser.text)
    (condemned,) = rec.names("host_condemned")
    assert condemned["host"] == "cloak.test"


def test_admin_overrides_win(web):
    rules = [HostRule("stuffing.test", quality="trusted"), HostRule("site1.test", quality="spam")]
    pipe, rec = pipeline_for(rules)
    for path in ["/", *paths("stuffing.test", 24)]:
        assert pipe.process_item(item_of(web, "stuffing.test", path)).skip_index == ""
    assert pipe.process_item(item_of(web, "site1.test", "/p/1")).skip_index == "spam"
    assert [kw["host"] for kw in rec.names("host_condemned")] == ["site1.test"]


# -- evidence in proportion: real sites, dry run, host rules, re-judging --------------------

def crawl_order(web, host: str, pages: int) -> list:
    """The first ``pages`` HTML pages of ``host`` in breadth-first link order, as a crawl
    meets them (the root first, then the pages it links to), as items."""
    from collections import deque

    todo, seen, items = deque(["/"]), {"/"}, []
    while todo and len(items) < pages:
        path = todo.popleft()
        response = web.render(host, path)
        if response.status != 200 or "html" not in response.headers.get("Content-Type", ""):
            continue
        url = web.url(host, path)
        page = extract(response.body, url)
        item = page_item(page, url, 200, 0.0)
        item.doc_id = doc_id_for(item.url)
        item.hidden_words = hidden_words(response.body)
        items.append(item)
        for link in [*page.links, *([Link(page.refresh_url)] if page.refresh_url else [])]:
            if host_of(link.url) != host:
                continue
            target = "/" + link.url.split("/", 3)[3].split("#", 1)[0]
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return items


@pytest.fixture(scope="module")
def apache():
    """The Apache HTTP Server manual as Debian installs it (apache2-doc), on httpd.test."""
    from testweb.docsites import DOC_SITES

    site = next(s for s in DOC_SITES if s.host == "httpd.test")
    if not site.root.is_dir():
        pytest.skip("apache2-doc is not installed (scripts/apt-packages.txt)")
    return testweb.TestWeb(1, PORT, doc_sites=[site])


def test_real_apache_manual_is_no_doorway(apache, tmp_path):
    """Its root is a meta refresh, its language indexes (thin, link-heavy) all link to the
    same off-site pages: navigation, no evidence. Judged on a crawl's first 8 pages it was
    "doorway: 8 of 8 pages"; judged on 80 it is not spam at all."""
    items = crawl_order(apache, "httpd.test", 80)
    assert [i.url.split(str(PORT), 1)[1] for i in items[:3]] == ["/", "/da/index.html",
                                                                   "/de/index.html"]
    store = LocalVerdictStore(tmp_path / "v.sqlite3")
    pipe, rec = pipeline_for(verdicts=store)
    pipe.stats = Stats()
    for item in items:
        assert pipe.process_item(item).skip_index in ("", "template"), item.url
    assert rec.names("host_condemned") == [] and store.for_host("httpd.test") == []
    assert pipe.stats["quality/navigation_pages"] >= 12  # the root and the language indexes
    verdict = pipe.judge.verdict("httpd.test")
    assert verdict is not None and not verdict.spam and "doorway" not in verdict.reasons
    assert verdict.pages + verdict.navigation == len(items)


@pytest.fixture(scope="module")
def doc_sites():
    """The test web's real documentation sites (``testweb --real-docs``)."""
    from testweb.docsites import available_doc_sites

    sites = available_doc_sites()
    if "pytest.test" not in {s.host for s in sites}:
        pytest.skip("python-pytest-doc is not installed (scripts/apt-packages.txt)")
    return testweb.TestWeb(1, PORT, doc_sites=sites)


def test_real_release_notes_are_no_template_pages(doc_sites):
    """pytest's bug-fix release announcements differ from each other in a version and a
    few names (novelty 0.03-0.14 to their pattern: stale): 44 real pages were kept out of
    the index as stale. Stale is evidence for a trap verdict; this pattern is no trap."""
    pipe, rec = pipeline_for()
    pipe.stats = Stats()
    items = [pipe.process_item(item) for item in crawl_order(doc_sites, "pytest.test", 244)]
    assert pipe.stats["quality/template_stale"] >= 40  # stale pages were met
    assert [i.url for i in items if i.skip_index] == []
    assert rec.names("pattern_trapped") == [] and rec.names("documents_removed") == []


def test_navigation_pages_are_no_doorways(web):
    assert is_navigation(0, 11, 11)  # a meta refresh with a table of languages
    assert is_navigation(41, 68, 60)  # a language's index: 60 links within its site
    assert not is_navigation(41, 68, 20)  # most links off-site: what a link farm looks like
    door = item_of(web, "doorway.test", "/p/3")
    judge = judge_for()
    signals = judge.page_signals("doorway.test", door.title, door.text,
                                 [host_of(link.url) for link in door.links])
    assert not signals.navigation and signals.rules
    # a language selector linking to the site's other hosts is navigation too
    langs = [f"{lang}.example.org" for lang in ("de", "fr", "ja", "es")]
    assert judge.page_signals("www.example.org", "Choose", "Choose your language",
                              langs).navigation


def test_confidence_grows_with_the_sample():
    assert share_confidence(20, 20, 0.6) > 0.999
    assert share_confidence(16, 20, 0.6) > 0.95 > share_confidence(14, 20, 0.6)
    assert share_confidence(3, 3, 0.6) < 0.95  # three pages say little
    assert share_confidence(0, 0, 0.6) == 0.0


def test_a_verdict_on_page_shape_alone_needs_a_second_rule():
    """Thin pages all linking to one off-host page trip the doorway rule; with nothing
    else (no stuffing, no link farm) that is a site's footer, not a doorway."""
    judge = judge_for()
    for n in range(40):
        text = f"Release {n} notes: a fix for the parser and the build of module {n}."
        links = ["https://www.project.org/", f"http://docs.test/r/{n + 1}",
                 f"http://docs.test/r/{n - 1}"]
        signals = judge.page_signals("docs.test", f"Release {n}", text,
                                     [host_of(u) for u in links])
        assert not signals.navigation
        judge.observe("docs.test", signals, links[:1])
    verdict = judge.verdict("docs.test")
    assert verdict.reasons.get("doorway") == 40 and verdict.agreeing == ("doorway",)
    assert not verdict.spam and verdict.evidence()["confidence"] == verdict.confidence


def test_dry_run_stores_and_logs_verdicts_without_acting(web, tmp_path, caplog):
    store = LocalVerdictStore(tmp_path / "v.sqlite3")
    pipe, rec = pipeline_for(verdicts=store)
    pipe.dry_run = True
    with caplog.at_level("INFO", logger="crawler.quality.pipeline"):
        spam = [pipe.process_item(item_of(web, "stuffing.test", p))
                for p in ["/", *paths("stuffing.test", 24)]]
        trap = [pipe.process_item(item_of(web, "events.test", p))
                for p in paths("events.test", 12)]
    assert all(i.skip_index == "" for i in spam + trap)
    assert rec.names("host_condemned") == rec.names("pattern_trapped") == []
    assert rec.names("documents_removed") == [] and pipe.condemned == {}
    (verdict,) = store.for_host("stuffing.test")
    assert verdict.kind == SPAM and verdict.action == "dry_run" and not verdict.acted
    assert verdict.confidence >= 0.95 and verdict.detail["pages"] >= 20
    assert verdict.detail["examples"] and verdict.detail["agreeing"] == ["keyword_stuffing"]
    (trapped,) = store.for_host("events.test")
    assert trapped.kind == TEMPLATE_TRAP and trapped.action == "dry_run"
    assert "stuffing.test judged spam, not acted on (dry_run)" in caplog.text


def test_a_never_judge_host_rule_keeps_the_verdict_visible_and_unacted(web, tmp_path):
    store = LocalVerdictStore(tmp_path / "v.sqlite3")
    pipe, rec = pipeline_for([HostRule("*.test", never_judge=True),
                              HostRule("site1.test", quality="spam", never_judge=True)],
                             verdicts=store)
    assert pipe.host_rules.policy("stuffing.test").quality == "trusted"  # mirrors too
    for path in ["/", *paths("stuffing.test", 24)]:
        item = pipe.process_item(item_of(web, "stuffing.test", path))
        assert item.skip_index == "" and item.spam_score == 0.0
    for path in paths("events.test", 12):
        assert pipe.process_item(item_of(web, "events.test", path)).skip_index == ""
    assert rec.names("pattern_trapped") == []
    (verdict,) = store.for_host("stuffing.test")
    assert verdict.action == "overridden" and verdict.reasons
    assert store.for_host("events.test")[0].action == "overridden"
    # the admin's own "spam" is a verdict the crawl acts on
    assert pipe.process_item(item_of(web, "site1.test", "/p/1")).skip_index == "spam"
    assert [kw["host"] for kw in rec.names("host_condemned")] == ["site1.test"]


def test_a_host_whose_later_pages_contradict_its_verdict_is_rejudged(web, tmp_path):
    store = LocalVerdictStore(tmp_path / "v.sqlite3")
    pipe, rec = pipeline_for(verdicts=store)
    stuffed = [item_of(web, "stuffing.test", p) for p in paths("stuffing.test", 22)]
    for item in stuffed:
        pipe.process_item(item)
    (condemned,) = rec.names("host_condemned")
    assert store.for_host("stuffing.test")[0].action == "budget_cut"
    # its later pages (in flight, recrawled, fetched by other workers) are articles
    clean = []
    for n in range(40):
        item = item_of(web, "site2.test", f"/p/{n}")
        item.url = item.fetched_url = item.url.replace("site2.test", "stuffing.test")
        item.host = "stuffing.test"
        clean.append(pipe.process_item(item))
    (acquitted,) = rec.names("host_acquitted")
    assert acquitted == condemned
    (verdict,) = store.for_host("stuffing.test")
    assert verdict.action == "lifted" and verdict.confidence < 0.5
    assert "stuffing.test" not in pipe.condemned and clean[-1].skip_index == ""
    assert rec.names("host_scored")[-1]["quality"] == 1.0


def test_verdict_labels_and_round_trip(tmp_path):
    store = LocalVerdictStore(tmp_path / "v.sqlite3")
    store.put(Verdict("mirror.test:8000", MIRROR, 0.97, of="site0.test", reasons=("a",),
                      detail={"backlinks": 30}))
    (got,) = store.for_host("mirror.test")
    assert got.label == "mirror of site0.test" and got.detail == {"backlinks": 30}
    assert got.updated > 0 and store.all() == [got]
    assert store.for_host("other.test") == []
    store.close()


# -- the value order -----------------------------------------------------------------------

def test_value_order_ranks_by_depth_level_then_value_and_host_standing():
    order = ValueOrder(tiers=4, base=16.0)
    home = "http://a.test/"
    assert 0.6 < order.rank(home, "a.test", 0) < 1  # a seed: nobody links to it yet
    for source in ("http://b.test/", "http://c.test/"):
        order.distribute(source, [home], 0, outlinks=10)
    assert order.authority("a.test") == 1.0 and order.authority("b.test") < 1.0
    order.distribute(home, [f"http://a.test/p/{i}" for i in range(10)], 1, outlinks=100)
    child = order.rank("http://a.test/p/1", "a.test", 1)
    assert order.rank(home, "a.test") < 1 < child < 2
    # a chain of pages with one link each does not pass its whole cash down
    order.distribute("http://a.test/p/1", ["http://a.test/chain"], 1, outlinks=1)
    chain = order.rank("http://a.test/chain", "a.test", 1)
    assert child < chain < 2  # same level, less value
    order.set_host_quality("a.test", 0.3)
    assert 2 < order.rank("http://a.test/p/2", "a.test", 1) < 3  # one level lower
    order.set_host_quality("a.test", 0.0)
    assert 3 <= order.rank("http://a.test/p/2", "a.test", 1) < 4
    assert 3 <= order.rank("http://z.test/never", "z.test", 9) < 4


def test_value_order_hands_changed_host_standings_to_the_frontier():
    order = ValueOrder(tiers=4, base=16.0)
    for host in ("a.test", "b.test", "lonely.test"):
        order.rank(f"http://{host}/", host, 0)
    first = order.changed_standings()
    assert first == {"a.test": 0.25, "b.test": 0.25, "lonely.test": 0.25}
    order.distribute("http://b.test/", ["http://a.test/x"], 1, outlinks=10)
    order.distribute("http://c.test/", ["http://a.test/y"], 1, outlinks=10)
    assert order.changed_standings() == {"a.test": 1.0}
    assert order.changed_standings() == {}  # nothing moved since
    order.set_host_quality("a.test", 0.4)
    assert order.changed_standings() == {"a.test": 0.4}
    order.not_sent(["a.test"])
    assert order.changed_standings() == {"a.test": 0.4}


def test_value_order_pages_linking_mostly_off_site_vouch_for_nobody():
    order = ValueOrder(tiers=4, base=16.0)
    # a farm's pages: nearly every link to the other hosts of the clique
    for n, source in enumerate(("http://farm1.test/p/1", "http://farm2.test/p/1")):
        links = [f"http://farm0.test/p/{n}{i}" for i in range(8)] + [f"{source}/self"]
        order.distribute(source, links, 1, outlinks=10)
    assert order.authority("farm0.test") == order.authority("nobody.test") < 1.0
    # editorial links: a page of mostly its own site links to one other host
    for source in ("http://b.test/p/1", "http://c.test/p/1"):
        links = ["http://a.test/"] + [f"{source}/{i}" for i in range(9)]
        order.distribute(source, links, 1, outlinks=10)
    assert order.authority("a.test") == 1.0


def test_value_order_puts_urls_no_page_linked_to_after_linked_ones_of_their_level():
    order = ValueOrder(tiers=4, base=16.0)
    home = "http://a.test/"
    # a home page of 110 links: each gets 1/110 of a seed's cash
    order.distribute(home, [f"http://a.test/p/{i}" for i in range(110)], 1, outlinks=110)
    linked = order.rank("http://a.test/p/5", "a.test", 1)
    from_sitemap = order.rank("http://a.test/p/500", "a.test", 1)
    assert 1 < linked < from_sitemap < 2


# -- bounded memory: a worker's RSS stays flat however long it crawls ---------------------

def test_template_traps_hold_bounded_state_and_still_find_a_trap(web):
    traps = TemplateTraps(**settings_to_options(
        {}, TemplateTraps.SETTINGS, max_patterns=50, max_shingles=40, shingle_budget=400,
        max_urls=100))
    size = traps._urls.nbytes
    for n in range(300):  # 300 patterns of articles, each page new content
        traps.observe(f"http://h{n}.test/p/1", " ".join(f"w{n}x{i}" for i in range(60)))
        assert len(traps._patterns) <= 50
        assert all(len(p.shingles) <= 40 for p in traps._patterns.values())
        assert traps._shingles_held == sum(len(p.shingles) for p in traps._patterns.values())
        assert traps._shingles_held <= 400
        assert traps._urls.nbytes == size
    # a calendar crawled among them is still a trap: its pattern is the hot one
    results = [traps.observe(web.url("calendar.test", p), web.page("calendar.test", p).main_text)
               for p in paths("calendar.test", 14)]
    assert [r for r in results if r.trapped]
    # a recrawl counts once while it is remembered; forgotten after max_urls others
    assert traps.observe(web.url("calendar.test", paths("calendar.test", 1)[0]), "x") is None


def test_spam_judge_link_tallies_are_bounded_and_keep_the_doorway_target():
    judge = SpamJudge(**settings_to_options({}, SpamJudge.SETTINGS, max_link_tally=64))
    for i in range(200):  # thin pages: each links to the one target and to 30 one-offs
        links = [f"http://other{i}-{j}.test/" for j in range(30)]
        targets = ["http://money.test/buy", *links]
        signals = judge.page_signals("door.test", "buy now", "buy now " * 10,
                                     [host_of(u) for u in targets])
        judge.observe("door.test", signals, targets)
        tally = judge._hosts["door.test"]
        assert len(tally.targets) <= 64 and len(tally.out_hosts) <= 64
    verdict = judge.verdict("door.test")
    assert verdict.spam and verdict.reasons["doorway"] == 200


def test_spam_judge_link_tallies_stay_within_the_budget_with_the_same_verdicts():
    """Hundreds of hosts past the budget, a doorway and a link clique among them, pages
    interleaved: the budgeted tallies stay within it and give every host the verdict the
    unbudgeted ones give."""
    import random

    def judge_with(budget):
        return SpamJudge(**settings_to_options({}, SpamJudge.SETTINGS, max_link_tally=64,
                                               link_tally_budget=budget))

    rng = random.Random(11)
    clique = [f"farm{n}.test" for n in range(4)]
    hosts = [f"h{n}.test" for n in range(300)] + ["door.test", *clique]
    pages = []
    for round_ in range(30):
        for host in hosts:
            if host == "door.test":
                title, text = "buy now", "buy now " * 10
                targets = ["http://money.test/buy",
                           *(f"http://o{rng.randrange(10**6)}.test/" for _ in range(20))]
            elif host in clique:
                title, text = "cheap", "cheap deals " * 12
                targets = [f"http://{h}/p{rng.randrange(50)}" for h in clique if h != host]
            else:
                title = f"page {round_}"
                text = " ".join(f"w{rng.randrange(5000)}" for _ in range(200))
                targets = [f"http://h{rng.randrange(300)}.test/p{rng.randrange(100)}"
                           for _ in range(4)]
            pages.append((host, title, text, targets))
    full, budgeted = judge_with(0), judge_with(8_000)
    most = 0
    for host, title, text, targets in pages:
        for judge in (full, budgeted):
            signals = judge.page_signals(host, title, text, [host_of(u) for u in targets])
            judge.observe(host, signals, [u for u in targets if host_of(u) != host])
        most = max(most, sum(t.entries for t in budgeted._hosts.values()))
    assert sum(t.entries for t in full._hosts.values()) > 10_000  # the budget is 8,000
    assert most <= 8_000 + 2 * 64 and budgeted._entries == sum(
        t.entries for t in budgeted._hosts.values())

    def verdicts(judge):
        return {h: (v.spam, sorted(v.reasons)) for h in hosts if (v := judge.verdict(h))}

    assert verdicts(budgeted) == verdicts(full)
    found = verdicts(full)
    assert found["door.test"][0] and "doorway" in found["door.test"][1] and all(
        found[h][0] and "link_clique" in found[h][1] for h in clique)
    assert not any(found[h][0] for h in hosts[:300])


def test_quality_pipeline_forgets_unanswered_probes_and_old_hosts(web):
    rec = Recorder()
    pipe = QualityPipeline(traps_for(), judge_for(), send=rec.send, probe=rec.probes.append,
                           max_hosts=3, max_probes=2)
    hosts = web.hosts()  # 4 hosts
    for host in hosts:
        for path in paths(host, pipe.probe_page):
            pipe.process_item(item_of(web, host, path))
        pipe.host_condemned(host, "spam")
    assert len(rec.probes) == 4  # every host probed; nobody answered
    assert list(pipe._probes) == rec.probes[-2:]
    assert list(pipe.condemned) == hosts[-3:]
    assert len(pipe._spam_scores) <= 3 and len(pipe._quality) <= 3
    pipe.probe_fetched(rec.probes[-1], "another text")  # a remembered probe is still compared
    assert rec.probes[-1] not in pipe._probes


def test_value_order_keeps_bounded_cash_and_host_state():
    order = ValueOrder(tiers=4, base=16.0, max_urls=100, max_hosts=10)
    for n in range(50):
        source = f"http://s{n}.test/"
        # a page of 41 links, 20 of them (followed) to another host: it vouches for it
        order.distribute(source, [f"http://t{n}.test/{i}" for i in range(20)], 1,
                         outlinks=41)
        order.set_host_quality(f"s{n}.test", 0.5)
        order.changed_standings()
        assert len(order._cash) <= 100
        assert len(order._linked_from) <= 10 and len(order._quality) <= 10
        assert len(order._standing) <= 10
    # the latest links keep their share of their source's cash (a seed's: 16 ** -2); a
    # forgotten URL falls back to the default of its depth
    assert order.cash("http://t49.test/3", 1) == 16.0 ** -2 / 41
    assert order.cash("http://t0.test/3", 1) == 16.0 ** -4
    assert order.authority("t49.test") > order.authority("t0.test")


def test_a_verdict_not_acted_on_is_acted_on_once_the_host_rule_goes(web):
    rules = [HostRule("stuffing.test", never_judge=True)]
    pipe, rec = pipeline_for(rules)
    for path in ["/", *paths("stuffing.test", 22)]:
        pipe.process_item(item_of(web, "stuffing.test", path))
    assert rec.names("host_condemned") == [] and pipe.judged["stuffing.test"] == "overridden"
    pipe.host_rules = HostRules.static([])  # the admin removed the rule
    item = pipe.process_item(item_of(web, "stuffing.test", "/p/30"))
    assert [kw["host"] for kw in rec.names("host_condemned")] == ["stuffing.test"]
    assert item.skip_index == "spam" and pipe.judged["stuffing.test"] == "budget_cut"
