import sqlite3
import threading
import time

import pytest
from scrapy.utils.test import get_crawler

from crawler.config import Config
from crawler.items import Link, PageItem
from crawler.urls import doc_id_for
from index.engines.embedded.backend import EmbeddedBackend
from pipelines.index import IndexPipeline
from pipelines.linkgraph import (
    LinkGraphPipeline,
    LinkStore,
    SharedFileLinkStore,
    SQLiteLinkStore,
    crawler_link_store,
)

A, B, C = "http://a.test/", "http://b.test/", "http://c.test/x"
a, b, c = doc_id_for(A), doc_id_for(B), doc_id_for(C)


def _fill(store: LinkStore, other: LinkStore | None = None) -> None:
    """a -> b, c (twice), itself and a nofollow d; b -> c, a; c -> its own page. ``other``
    (another worker's store) adds b's links."""
    store.add(
        a,
        "a.test",
        [
            Link(B, "Bee site"),
            Link(C, "see c"),
            Link(A, "home"),
            Link(C, "c again"),
            Link("http://d.test/", "ad", nofollow=True),
        ],
    )
    (other or store).add(b, "b.test", [Link(C, "see c"), Link(A, "")])
    store.add(c, "c.test", [Link("http://c.test/y", "next")])


def _check(store: LinkStore) -> None:
    assert sorted(store.iter_edges()) == sorted(
        [(a, b), (a, c), (b, c), (b, a), (c, doc_id_for("http://c.test/y"))]
    )
    assert sorted(store.iter_host_edges()) == [
        ("a.test", "b.test", 1),
        ("a.test", "c.test", 2),
        ("b.test", "a.test", 1),
        ("b.test", "c.test", 1),
    ]
    assert sorted(store.anchors_for(c)) == ["c again", "see c", "see c"]
    assert store.anchors_for(b) == ["Bee site"]
    assert store.anchors_for(a) == []  # its own link and an empty anchor do not count
    assert store.anchors_for(doc_id_for("http://d.test/")) == []  # nofollow


def test_sqlite_store_answers_edges_hosts_and_anchors(tmp_path):
    store = SQLiteLinkStore(tmp_path / "links.sqlite")
    _fill(store)
    _check(store)
    store.close()


def test_sqlite_store_batches_writes_and_refetch_replaces_edges(tmp_path):
    path = tmp_path / "links.sqlite"
    writer = SQLiteLinkStore(path, batch_size=2)
    reader = SQLiteLinkStore(path)
    writer.add(a, "a.test", [Link(B, "one")])
    assert list(reader.iter_edges()) == []
    writer.add(b, "b.test", [Link(C, "two")])  # the batch is full: written
    assert sorted(reader.iter_edges()) == sorted([(a, b), (b, c)])
    writer.add(a, "a.test", [Link(C, "three")])
    writer.close()
    assert sorted(reader.iter_edges()) == sorted([(a, c), (b, c)])
    assert reader.anchors_for(b) == []
    assert reader.edge_count() == 2
    reader.close()


def test_shared_files_from_two_workers_merge_for_readers(tmp_path):
    shared = tmp_path / "shared"
    w1 = SharedFileLinkStore(shared, worker="w1", batch_size=1)
    w2 = SharedFileLinkStore(shared, worker="w2", batch_size=1)
    _fill(w1, w2)
    assert sorted(p.name for p in shared.iterdir()) == ["links-w1.jsonl", "links-w2.jsonl"]
    reader = SharedFileLinkStore(shared, worker="batch", merged_path=tmp_path / "merged.sqlite")
    _check(reader)
    # a later fetch of b on the other worker replaces its edges; a torn line waits
    w1.add(b, "b.test", [Link("http://e.test/", "e")])
    with open(shared / "links-w2.jsonl", "ab") as fh:
        fh.write(b'{"src": "half')
    assert (b, c) not in set(reader.iter_edges())
    assert (b, doc_id_for("http://e.test/")) in set(reader.iter_edges())
    assert reader.merged().edge_count() == 7
    for store in (w1, w2, reader):
        store.close()
    # merged from scratch, the later fetch still wins over the other worker's older line
    fresh = SharedFileLinkStore(shared, worker="batch2", merged_path=tmp_path / "fresh.sqlite")
    assert {dst for src, dst in fresh.iter_edges() if src == b} == {doc_id_for("http://e.test/")}
    fresh.close()


def test_open_picks_the_store_by_configuration(tmp_path):
    local = LinkStore.open(Config(data_dir=tmp_path))
    assert isinstance(local, SQLiteLinkStore)
    assert local.path == tmp_path / "linkgraph" / "links.sqlite"
    local.close()
    shared = LinkStore.open(
        Config(data_dir=tmp_path, redis_url="redis://127.0.0.1:1/0"), directory=tmp_path / "nfs"
    )
    assert isinstance(shared, SharedFileLinkStore)
    assert shared.directory == tmp_path / "nfs"
    shared.close()


def test_pipeline_records_every_item_including_aliases(tmp_path):
    crawler = get_crawler(settings_dict={"DATA_DIR": str(tmp_path)})
    pipeline = LinkGraphPipeline.from_crawler(crawler)
    assert crawler_link_store(crawler) is pipeline.store
    alias = PageItem(
        url=B,
        fetched_url=B,
        host="b.test",
        status=200,
        fetched_at=0.0,
        dup_of=a,
        links=[Link(C, "from the alias")],
    )
    pipeline.process_item(alias)
    assert alias.doc_id == b
    assert pipeline.store.anchors_for(c) == ["from the alias"]
    assert crawler.stats.get_value("linkgraph/links") == 1
    pipeline.close_spider()
    reopened = SQLiteLinkStore(tmp_path / "linkgraph" / "links.sqlite")
    assert list(reopened.iter_edges()) == [(b, c)]
    reopened.close()


def _page(n: int) -> PageItem:
    url = f"http://a.test/{n}"
    return PageItem(url=url, fetched_url=url, host="a.test", status=200, fetched_at=0.0,
                    links=[Link(f"http://b.test/{n}", f"to b {n}")])


def test_pipeline_writes_batches_off_its_thread_and_close_waits_for_them(tmp_path, monkeypatch):
    crawler = get_crawler(settings_dict={"DATA_DIR": str(tmp_path), "LINKGRAPH_BATCH_SIZE": 10})
    pipeline = LinkGraphPipeline.from_crawler(crawler)
    store = pipeline.store
    writes, release = [], threading.Event()
    write = store._write

    def slow_write(batch):
        writes.append((threading.get_ident(), len(batch)))
        release.wait(10)  # a write as slow as the test wants
        write(batch)

    monkeypatch.setattr(store, "_write", slow_write)
    started = time.monotonic()
    for n in range(25):
        pipeline.process_item(_page(n))
    # two batches were full: the first is being written, the rest waits; no add waited
    assert time.monotonic() - started < 5
    assert writes and writes[0] == (writes[0][0], 10)
    assert all(ident != threading.get_ident() for ident, _ in writes)
    threading.Timer(0.3, release.set).start()
    pipeline.close_spider()  # waits for the writer thread, then writes the last pages
    assert sum(size for _, size in writes) == 25
    reopened = SQLiteLinkStore(tmp_path / "linkgraph" / "links.sqlite")
    assert reopened.edge_count() == 25
    reopened.close()


def test_a_failed_background_write_is_logged_counted_and_retried(tmp_path, monkeypatch, caplog):
    crawler = get_crawler(settings_dict={"DATA_DIR": str(tmp_path), "LINKGRAPH_BATCH_SIZE": 5})
    pipeline = LinkGraphPipeline.from_crawler(crawler)
    store = pipeline.store
    write, failed = store._write, threading.Event()

    def failing_once(batch):
        if not failed.is_set():
            failed.set()
            raise sqlite3.OperationalError("database is locked")
        write(batch)

    monkeypatch.setattr(store, "_write", failing_once)
    for n in range(5):
        pipeline.process_item(_page(n))
    assert failed.wait(10)
    store._stop_writer()  # the failed write has run: its batch is staged again
    assert "link graph write failed" in caplog.text
    assert crawler.stats.get_value("linkgraph/write_failed") == 1
    for n in range(5, 7):
        pipeline.process_item(_page(n))
    pipeline.close_spider()
    reopened = SQLiteLinkStore(tmp_path / "linkgraph" / "links.sqlite")
    assert reopened.edge_count() == 7  # nothing lost
    reopened.close()


def test_close_raises_when_the_last_write_fails(tmp_path, monkeypatch):
    store = SQLiteLinkStore(tmp_path / "links.sqlite", background=True)
    store.add(a, "a.test", [Link(B, "one")])
    monkeypatch.setattr(store, "_write", lambda batch: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        store.close()


def test_shared_store_is_closed_by_its_last_user(tmp_path):
    crawler = get_crawler(settings_dict={"DATA_DIR": str(tmp_path)})
    links = LinkGraphPipeline.from_crawler(crawler)
    reader = crawler_link_store(crawler).retain()  # as the index pipeline does
    links.process_item(_page(1))
    links.close_spider()
    assert reader.anchors_for(doc_id_for("http://b.test/1")) == ["to b 1"]  # still open
    reader.release()
    with pytest.raises(sqlite3.ProgrammingError):
        reader.anchors_for(b)


def test_anchors_are_read_on_the_index_writer_thread_not_at_the_flush(tmp_path):
    store = SQLiteLinkStore(tmp_path / "links.sqlite")
    store.add(a, "a.test", [Link(B, "Bee site")])
    readers = []
    anchor_texts = store.anchor_texts

    def recorded(doc_ids):
        readers.append(threading.get_ident())
        return anchor_texts(doc_ids)

    store.anchor_texts = recorded
    backend = EmbeddedBackend(tmp_path / "index")
    pipeline = IndexPipeline(backend, link_store=store, batch_size=100, flush_interval=3600,
                             pace=0.0, pace_when="slack")
    pipeline.open_spider()
    writes = []
    pipeline._write = lambda fn, *args, done=None: writes.append((fn, args))
    pipeline.process_item(PageItem(url=B, fetched_url=B, host="b.test", status=200,
                                   fetched_at=0.0, text="the b page"))
    pipeline.flush()
    assert readers == []  # the flush itself reads no anchors
    (fn, args), = writes
    thread = threading.Thread(target=fn, args=args)
    thread.start()
    thread.join()
    assert readers == [thread.ident]
    assert args[0][0].anchors == "Bee site"
    backend.close()
    store.close()
