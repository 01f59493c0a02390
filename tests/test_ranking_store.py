"""Versioned score stores (Redis and SQLite) and the in-process ranking run (manage.py rank)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import redis
from django.core.management.base import CommandError

from batch.edgefiles import EdgeFiles
from batch.pagerank import doc_ids_to_keys
from batch.rank import (
    RankSettings,
    compute,
    load_object,
    publish,
    run_rank,
    stage_and_commit,
)
from batch.store import RedisScoreStore, SQLiteScoreStore
from crawler.urls import doc_id_for
from harness.redisserver import running_redis
from index.base import Document
from index.engines.embedded.backend import EmbeddedBackend


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        url = server.url
        yield url


@pytest.fixture(params=["redis", "sqlite"])
def store(request, tmp_path, redis_url):
    if request.param == "redis":
        redis.Redis.from_url(redis_url).flushdb()
        s = RedisScoreStore.from_url(redis_url)
    else:
        s = SQLiteScoreStore(tmp_path / "scores.sqlite3")
    yield s
    s.close()


def test_versions_are_per_run_and_increasing(store):
    a = store.version_for("run-a")
    b = store.version_for("run-b")
    assert b > a
    assert store.version_for("run-a") == a
    assert store.current() is None


def test_commit_needs_every_batch_and_is_all_or_nothing(store):
    v = store.version_for("r1")
    store.stage_hosts(v, {"a.test": 1.0})
    store.stage_pages(v, 0, {"p1": 0.5, "p2": 1.0})
    assert store.commit(v, batches=2, pages=3, hosts=1) is False  # batch 1 missing
    assert store.current() is None
    store.stage_pages(v, 1, {"p3": 0.25})
    assert store.commit(v, batches=2, pages=4, hosts=1) is False  # wrong count
    assert store.commit(v, batches=2, pages=3, hosts=1) is True
    assert store.current() == v
    assert store.batch_count(v) == 2
    assert store.page_batch(v, 1) == {"p3": 0.25}
    assert store.host_ranks() == {"a.test": 1.0}
    assert store.host_ranks(["a.test", "zz.test"]) == {"a.test": 1.0}


def test_staging_a_new_version_never_shows_to_readers(store):
    v1 = store.version_for("r1")
    store.stage_hosts(v1, {"a.test": 1.0})
    store.stage_pages(v1, 0, {"p": 1.0})
    assert store.commit(v1, 1, 1, 1)
    v2 = store.version_for("r2")
    store.stage_hosts(v2, {"a.test": 0.5, "b.test": 1.0})
    store.stage_pages(v2, 0, {"p": 0.1})
    assert store.host_ranks() == {"a.test": 1.0}
    assert store.current() == v1
    assert store.commit(v2, 1, 1, 2)
    assert store.host_ranks() == {"a.test": 0.5, "b.test": 1.0}
    # an older run finishing late never moves the pointer back
    v0_late = v1
    assert store.commit(v0_late, 1, 1, 1) is False
    assert store.current() == v2


def test_restaging_a_batch_replaces_it(store):
    v = store.version_for("r")
    store.stage_pages(v, 0, {"p1": 1.0, "p2": 2.0})
    store.stage_pages(v, 0, {"p3": 3.0})
    store.stage_hosts(v, {})
    assert store.staged_batches(v) == {0}
    assert store.commit(v, 1, 1, 0)
    assert store.page_batch(v, 0) == {"p3": 3.0}


def test_published_batches_and_prune(store):
    versions = []
    for run in range(4):
        v = store.version_for(f"r{run}")
        store.stage_pages(v, 0, {"p": float(run)})
        store.stage_hosts(v, {})
        assert store.commit(v, 1, 1, 0)
        versions.append(v)
    store.mark_published(versions[-1], 0)
    assert store.published_batches(versions[-1]) == {0}
    store.set_published(versions[-1])
    assert store.published() == versions[-1]
    assert store.prune(keep=2) == versions[:2]
    assert store.versions() == versions[2:]
    with pytest.raises(ValueError, match="current"):
        store.drop(versions[-1])


def test_load_object_names_the_setting():
    assert load_object("batch.edgefiles.EdgeFiles.from_config") == EdgeFiles.from_config
    with pytest.raises(ImportError, match="RANK_"):
        load_object("ranking.nowhere.Thing")


def test_settings_from_mapping_and_object():
    s = RankSettings.from_settings({"RANK_ALPHA": 0.9, "RANK_SEEDS": ["https://a.test/"]})
    assert s.alpha == 0.9 and s.seeds == ("https://a.test/",) and s.batch_size == 5000


def site_edges(hub_links: int) -> list[tuple[str, str, str, str]]:
    """Pages on five hosts; ``hub.test``'s home page gets ``hub_links`` in-links."""
    urls = [f"https://h{h}.test/p{i}" for h in range(5) for i in range(6)]
    rows = []
    for i, u in enumerate(urls):
        v = urls[(i * 7 + 3) % len(urls)]
        rows.append((u, v))
    hub = "https://hub.test/"
    rows += [(urls[i], hub) for i in range(hub_links)]
    rows.append((hub, urls[0]))
    return [(doc_id_for(a), doc_id_for(b), a.split("/")[2], b.split("/")[2]) for a, b in rows]


def test_run_rank_in_process_writes_committed_scores_to_the_embedded_index(tmp_path):
    edges = site_edges(hub_links=20)
    EdgeFiles.write(tmp_path / "edges" / "0.tsv", edges)
    urls = {
        doc_id_for(u): u
        for u in [f"https://h{h}.test/p{i}" for h in range(5) for i in range(6)]
        + ["https://hub.test/"]
    }
    backend = EmbeddedBackend(tmp_path / "index")
    backend.ensure_index()
    backend.index(Document(id=i, url=u, host=u.split("/")[2], title="t") for i, u in urls.items())
    backend.refresh()
    store = SQLiteScoreStore(tmp_path / "scores.sqlite3")
    settings = RankSettings.from_settings(None, batch_size=7)
    report = run_rank(
        settings, "run-1", link_store=EdgeFiles(tmp_path / "edges"), store=store, backend=backend
    )
    assert report.committed and report.pages == len(urls) and report.batches == 5
    assert report.published == len(urls)
    assert store.published() == report.version
    ranks = {i: backend.get(i).pagerank for i in urls}
    assert all(0 < r <= 1 for r in ranks.values()) and max(ranks.values()) == 1.0
    hub = ranks[doc_id_for("https://hub.test/")]
    assert hub > sorted(ranks.values())[-3]  # among the two best: 20 in-links
    hosts = store.host_ranks()
    assert max(hosts.values()) == 1.0 and hosts["hub.test"] > hosts["h4.test"]
    # a retry of the same run after its commit changes nothing and publishes nothing new
    again = stage_and_commit(EdgeFiles(tmp_path / "edges"), store, "run-1", settings)
    assert again.committed and again.version == report.version
    assert publish(store, backend, report.version, settings) == 0
    backend.close()
    store.close()


def test_manage_py_rank_runs_in_process(data_dir):
    from django.core.management import call_command

    from index import get_backend

    EdgeFiles.write(data_dir / "edges" / "0.tsv", site_edges(hub_links=10))
    backend = get_backend()
    backend.ensure_index()
    hub = "https://hub.test/"
    backend.index([Document(id=doc_id_for(hub), url=hub, host="hub.test", title="hub")])
    backend.close()
    out = io.StringIO()
    call_command(
        "rank",
        "--link-store",
        "batch.edgefiles.EdgeFiles.from_config",
        "--json",
        "--seed",
        "https://h1.test/p1",
        stdout=out,
    )
    report = json.loads(out.getvalue())
    assert report["committed"] and report["pages"] == 31 and report["published"] == 1
    reader = get_backend()
    reader.refresh()
    assert 0 < reader.get(doc_id_for(hub)).pagerank <= 1
    out = io.StringIO()
    call_command("rank", "--publish-only", stdout=out)  # already published: nothing to do
    assert (
        out.getvalue().strip() == f"version {report['version']}: 0 documents updated in the index"
    )
    with pytest.raises(CommandError, match="RANK_"):
        call_command("rank", "--link-store", "nowhere.Store")


def test_compute_takes_key_arrays_when_the_link_store_offers_them(tmp_path):
    rows = site_edges(hub_links=5)
    EdgeFiles.write(tmp_path / "e" / "0.tsv", rows)
    files = EdgeFiles(tmp_path / "e")

    class ArrayLinks:
        def edge_arrays(self):
            src, dst = zip(*files.iter_edges(), strict=True)
            return doc_ids_to_keys(list(src)), doc_ids_to_keys(list(dst))

        def iter_host_edges(self):
            return files.iter_host_edges()

    settings = RankSettings.from_settings(None)
    by_pairs = compute(files, settings)
    by_arrays = compute(ArrayLinks(), settings)
    assert by_arrays.pages.node_ids() == by_pairs.pages.node_ids()
    assert np.allclose(by_arrays.page_ranks, by_pairs.page_ranks, rtol=0, atol=1e-15)


def test_search_puts_well_linked_page_first_and_rerank_the_named_home_page(tmp_path):
    pages = {
        "https://lonely.test/widgets": "widgets for every need",
        "https://popular.test/widgets": "widgets for every need",
        "https://widgets.test/": "the widgets company",
        "https://widgets.test/catalogue/widgets": "widgets widgets widgets catalogue",
    }
    fans = [f"https://fan{i}.test/" for i in range(8)]
    rows = [(f, "https://popular.test/widgets") for f in fans]
    rows += [(fans[0], "https://lonely.test/widgets"), (fans[1], "https://widgets.test/")]
    rows += [("https://widgets.test/", "https://widgets.test/catalogue/widgets")]
    EdgeFiles.write(
        tmp_path / "e" / "0.tsv",
        [(doc_id_for(a), doc_id_for(b), a.split("/")[2], b.split("/")[2]) for a, b in rows],
    )
    backend = EmbeddedBackend(tmp_path / "index")
    backend.ensure_index()
    backend.index(
        Document(id=doc_id_for(u), url=u, host=u.split("/")[2], title="widgets", body=text)
        for u, text in pages.items()
    )
    backend.refresh()
    store = SQLiteScoreStore(tmp_path / "scores.sqlite3")
    run_rank(
        RankSettings.from_settings(None), "r", link_store=EdgeFiles(tmp_path / "e"), store=store,
        backend=backend,
    )
    hits = backend.search('"for every need"').hits
    assert [h.url for h in hits] == [
        "https://popular.test/widgets",
        "https://lonely.test/widgets",
    ]
    # A query naming a site: its home page first (index.signals.SiteHome).
    assert backend.search("widgets", size=10).hits[0].url == "https://widgets.test/"
    backend.close()
    store.close()


def test_celery_tasks_run_in_process_without_a_broker(data_dir):
    from batch.celery_app import make_app
    from batch.rank import open_store

    app = make_app()
    app.conf.update(RANK_LINK_STORE="batch.edgefiles.EdgeFiles.from_config")
    app.loader.import_default_modules()
    assert app.conf.task_always_eager and app.conf.broker_url == "memory://"
    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
    assert app.conf.beat_schedule["rank-pages-and-hosts"]["task"] == "ranking.rank"
    EdgeFiles.write(data_dir / "edges" / "0.tsv", site_edges(hub_links=10))
    report = app.tasks["ranking.rank"].delay().get()
    assert report["committed"] and report["pages"] == 31
    store = open_store()
    assert store.current() == report["version"] == store.published()
    store.close()


def test_manage_py_rank_while_the_index_is_busy_then_publish_only(data_dir):
    from django.core.management import call_command

    from index import get_backend

    EdgeFiles.write(data_dir / "edges" / "0.tsv", site_edges(hub_links=3))
    crawler_writer = get_backend()
    hub = "https://hub.test/"
    crawler_writer.index([Document(id=doc_id_for(hub), url=hub, host="hub.test", title="hub")])
    with pytest.raises(CommandError, match="--publish-only"):
        call_command("rank", "--link-store", "batch.edgefiles.EdgeFiles.from_config")
    crawler_writer.close()  # the crawl ends and releases the index
    out = io.StringIO()
    call_command("rank", "--publish-only", stdout=out)
    assert out.getvalue().strip().endswith(": 1 documents updated in the index")
