"""The extraction pool: pooled pages equal inline ones; one page's failure, even one that
kills its worker process, loses no other page; no worker outlives its crawl."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures.process import BrokenProcessPool
from functools import partial

import psutil
import pytest
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

import testweb
from crawler.extract import NotAPage, item_from_response
from crawler.extractpool import SMALL_MESSAGE, ExtractPool
from harness import ROOT
from harness.crawlrun import crawl_env, migrate, run_crawl, start_crawl

PAGE = """<!doctype html><html lang="en"><head><title>Page {n}</title></head><body>
<nav><a href="/">Home</a></nav><main><h1 id="top">Heading {n}</h1>
<p>Paragraph {n} with <a href="/p/{m}.html">a link</a> and words enough to be a page.</p>
<h2 id="more">More</h2><p>Second section of page {n}.</p></main></body></html>"""


def page(n: int, **extra) -> dict:
    return {"url": f"http://a.test/p/{n}.html", "status": 200,
            "body": PAGE.format(n=n, m=n + 1).encode(), "fetched_at": 1.0,
            "content_type": "text/html; charset=utf-8", "depth": 1, **extra}


def dies_on_crash(**kwargs):
    """``item_from_response``, but the worker process dies on a URL naming ``crash``."""
    if "crash" in kwargs["url"]:
        os._exit(1)
    return item_from_response(**kwargs)


@pytest.fixture(scope="module")
def pool():
    pool = ExtractPool(2, function=dies_on_crash, stats=MemoryStatsCollector(get_crawler()))
    yield pool
    pool.close()


def test_pooled_pages_equal_inline_ones(pool):
    inline = ExtractPool(0)
    pages = [page(n) for n in range(12)]
    futures = [pool.run(**p) for p in pages]
    for p, future in zip(pages, futures, strict=True):
        got_page, got_item = future.result(timeout=60)
        want_page, want_item = inline.run(**p).result()
        assert got_item == want_item
        assert got_page == want_page
    assert got_item.sections and got_item.links


def test_an_error_reaches_its_caller_only(pool):
    bad = pool.run(**page(1, body=b"\x00\x01binary"))
    good = [pool.run(**page(n)) for n in range(2, 6)]
    with pytest.raises(NotAPage):
        bad.result(timeout=60)
    assert [f.result(timeout=60)[1].title for f in good] == [f"Page {n}" for n in range(2, 6)]


def test_extract_awaited_on_an_asyncio_loop(pool):
    """``extract`` awaited where an asyncio loop runs (the asyncio reactor's): each page its
    own result, an error raised to its caller, a cancelled wait leaving the pool whole."""
    import asyncio

    inline = ExtractPool(0)

    async def extract_all():
        got = await asyncio.gather(*(pool.extract(**page(n)) for n in range(6)))
        with pytest.raises(NotAPage):
            await pool.extract(**page(0, body=b"\x00\x01binary"))
        waiting = asyncio.ensure_future(pool.extract(**page(7)))
        await asyncio.sleep(0)
        waiting.cancel()
        return got, await pool.extract(**page(8))

    got, after = asyncio.run(extract_all())
    assert got == [inline.run(**page(n)).result() for n in range(6)]
    assert after == inline.run(**page(8)).result()


def test_large_and_small_pages_in_any_order_each_get_their_own_result(pool):
    """A body longer than a pipe's buffer is written to an idle worker only; the small ones
    queue behind pages being extracted: every page gets its own item, errors keep the
    worker's traceback."""
    filler = "<p>" + "filler words here " * 20_000 + "</p>"
    pages = [page(n) for n in range(10)]
    for n in (2, 5, 6):
        pages[n]["body"] = pages[n]["body"].replace(b"</main>", filler.encode() + b"</main>")
    assert len(pages[2]["body"]) > SMALL_MESSAGE * 4
    futures = [pool.run(**p) for p in pages]
    assert [f.result(timeout=60)[1].title for f in futures] == [f"Page {n}" for n in range(10)]
    assert len(futures[5].result()[1].text) > len(futures[4].result()[1].text) * 100
    with pytest.raises(NotAPage) as raised:
        pool.run(**page(1, body=b"\x00\x01binary")).result(timeout=60)
    assert any("Traceback" in note for note in raised.value.__notes__)
    assert pool.call(os.getpid).result(timeout=60) != os.getpid()


def test_the_caller_never_waits_for_a_worker_to_read_a_long_page():
    """A page longer than the pipe's buffer is written by the pool's thread: a caller (the
    reactor thread) returns at once, even while the worker it goes to is not running."""
    pool = ExtractPool(1)
    try:
        worker = pool.call(os.getpid).result(timeout=60)
        os.kill(worker, signal.SIGSTOP)  # as a worker waiting for a core on a busy box
        resume = threading.Timer(3.0, os.kill, (worker, signal.SIGCONT))
        resume.start()  # a caller that waits is let go, and fails the test
        try:
            long_page = page(7)
            long_page["body"] = long_page["body"].replace(
                b"</main>", b"<p>" + b"more words " * 2_000_000 + b"</p></main>")
            started = time.monotonic()
            future = pool.run(**long_page)
            assert time.monotonic() - started < 1.0
            assert not future.done()
        finally:
            resume.cancel()
            os.kill(worker, signal.SIGCONT)
        assert future.result(timeout=60)[1].title == "Page 7"
    finally:
        pool.close()


def test_a_worker_goes_on_after_a_ctrl_c(pool):
    """Ctrl-C reaches the crawl's process group: the workers go on with the pages of the
    crawl's graceful stop."""
    worker = pool.call(os.getpid).result(timeout=60)
    os.kill(worker, signal.SIGINT)
    time.sleep(0.2)
    assert psutil.pid_exists(worker)
    assert pool.run(**page(3)).result(timeout=60)[1].title == "Page 3"
    assert pool.stats.get_value("extract/pool/broken") is None


def test_a_page_that_kills_its_worker_loses_no_other_page():
    pool = ExtractPool(1, function=dies_on_crash, stats=MemoryStatsCollector(get_crawler()))
    before = [pool.run(**page(n)) for n in range(3)]
    crash = pool.run(**page(99, url="http://a.test/crash.html"))
    after = [pool.run(**page(n)) for n in range(3, 9)]
    with pytest.raises(BrokenProcessPool):
        crash.result(timeout=120)
    titles = [f.result(timeout=120)[1].title for f in before + after]
    assert titles == [f"Page {n}" for n in range(9)]
    assert pool.stats.get_value("extract/pool/killed_worker") == 1
    assert pool.stats.get_value("extract/pool/broken") >= 1
    assert pool.run(**page(10)).result(timeout=60)[1].title == "Page 10"
    pool.close()


@pytest.mark.slow
def test_a_crawl_keeps_the_same_pages_inline_and_pooled(tmp_path):
    """The spider and the pipelines after it make the same items of the same pages."""
    kept = {}
    with testweb.run(hosts=2, pages=12, log=tmp_path / "web.log") as web:
        hosts = ["site1.test"]
        seeds = [web.home_url(h) for h in hosts]
        for workers in (0, 2):
            data_dir = tmp_path / f"crawl{workers}"
            migrate(data_dir)
            feed = data_dir / "items.jsonl"
            result = run_crawl(data_dir, seeds, settings={
                "EXTRACT_WORKERS": workers, "FRONTIER_DELAY": 0.01,
                "FEEDS": json.dumps({str(feed): {"format": "jsonlines", "fields": [
                    "url", "title", "text", "links", "sections", "cluster_id"]}}),
            }, args={"allowed_hosts": ",".join(hosts)}, timeout=120)
            assert result.returncode == 0, result.stderr[-3000:]
            items = [json.loads(line) for line in feed.read_text().splitlines()]
            kept[workers] = {item["url"]: item for item in items}
    assert len(kept[0]) >= 10
    assert kept[0] == kept[2]


def _fork_servers_of(process: psutil.Process) -> list[psutil.Process]:
    """The fork server ``process`` started for its extraction workers."""
    found = []
    for child in process.children():
        try:
            if "multiprocessing.forkserver" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            pass
    return found


def _workers_of(process: psutil.Process) -> list[psutil.Process]:
    """The extraction workers ``process`` started: its fork server's children."""
    found = []
    for server in _fork_servers_of(process):
        try:
            found.extend(server.children())
        except psutil.NoSuchProcess:
            pass
    return found


def _survivors(workers: list[psutil.Process], within: float) -> list[psutil.Process]:
    """The ``workers`` still running after ``within`` seconds (each killed then)."""
    deadline = time.monotonic() + within
    while any(w.is_running() for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [w for w in workers if w.is_running()]
    for worker in alive:
        worker.kill()
    return alive


KILLED_OWNER = """
import os, signal, sys
from crawler.extractpool import SMALL_MESSAGE, ExtractPool
pool = ExtractPool(2)
assert pool.call(os.getpid).result(timeout=60)
print(os.getpid(), flush=True)
sys.stdin.readline()  # the test has seen the workers
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_workers_exit_with_a_process_killed_without_closing_its_pool(tmp_path):
    """SIGKILL leaves the pool open: its workers see their parent gone and exit."""
    owner = subprocess.Popen([sys.executable, "-c", KILLED_OWNER], cwd=ROOT,
                             env=crawl_env(tmp_path), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        process = psutil.Process(int(owner.stdout.readline()))
        servers, workers = _fork_servers_of(process), _workers_of(process)
    finally:
        owner.stdin.close()  # its workers hold stdout, not stdin
        owner.stdout.close()
        assert owner.wait(60) == -signal.SIGKILL
    assert len(servers) == 1 and len(workers) == 2
    assert _survivors(workers + servers, within=10) == []


def spin(seconds: float) -> bool:
    """Use ``seconds`` of CPU."""
    started = time.process_time()
    while time.process_time() - started < seconds:
        pass
    return True


CPU_COUNTED = """
import resource
from crawler.extractpool import ExtractPool
from tests.test_extractpool import spin
pool = ExtractPool(2)
for future in [pool.call(spin, seconds=0.5) for _ in range(2)]:
    future.result(timeout=60)
pool.close()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(usage.ru_utime + usage.ru_stime)
"""


def test_a_closed_pool_counts_its_workers_cpu_in_its_process(tmp_path):
    """Closing the last pool stops the fork server and waits for it, so the CPU of its
    workers (which it waited for) counts in the pool's process's children's, as
    ``bench/crawl.py`` counts a crawl's."""
    done = subprocess.run([sys.executable, "-c", CPU_COUNTED], cwd=ROOT,
                          env=crawl_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert float(done.stdout) >= 1.0


@pytest.mark.slow
def test_no_worker_outlives_a_finished_crawl(tmp_path):
    """A crawl that ends closes its pool (``spider_closed``): its workers and their fork
    server exit with it."""
    with testweb.run(hosts=1, pages=12, log=tmp_path / "web.log") as web:
        crawl = start_crawl(tmp_path, [web.home_url("site1.test")], settings={
            "EXTRACT_WORKERS": 2, "CONTROL_STORE": "", "FRONTIER_DELAY": 0.1},
            args={"allowed_hosts": "site1.test"})
        workers: dict[int, psutil.Process] = {}
        servers: dict[int, psutil.Process] = {}
        try:
            process = psutil.Process(crawl.pid)
            while crawl.poll() is None:
                try:
                    servers.update((s.pid, s) for s in _fork_servers_of(process))
                    workers.update((w.pid, w) for w in _workers_of(process))
                except psutil.NoSuchProcess:
                    break
                time.sleep(0.05)
            assert crawl.wait(120) == 0, (tmp_path / "crawl.out").read_text()[-3000:]
        finally:
            if crawl.poll() is None:
                crawl.kill()
                crawl.wait()
    assert len(servers) == 1 and len(workers) == 2
    # the crawl stopped its fork server and waited for it (so its CPU counts in the crawl's)
    assert _survivors([*workers.values(), *servers.values()], within=0) == []


def pid_and_page(**kwargs):
    """``item_from_response``'s page and the process that made it."""
    return os.getpid(), item_from_response(**kwargs)


def test_a_warm_up_extracts_a_page_in_every_worker():
    """``ExtractPool.warm_up`` (awaited by the spider before the crawl's first request)
    has each worker extract one page, so none meets its first-call costs on the crawl's
    first pages."""
    pool = ExtractPool(2, function=pid_and_page)
    try:
        answers = [future.result(timeout=60) for future in pool.warm_up()]
    finally:
        pool.close()
    assert len({pid for pid, _ in answers}) == 2
    for _, (found, item) in answers:
        assert item.title == "Getting started" and found.links
    assert ExtractPool(0).warm_up() == []


def test_a_crawl_worker_imports_neither_scrapy_nor_twisted():
    """The crawl's workers (``ExtractPool.from_settings``, dedup and quality on) run their
    warm-up and a page without importing Scrapy or Twisted: each would cost a worker
    0.2 s of CPU and its memory. ``PAGE_MAX_WORDS`` is read in the crawl process and goes
    to the workers with the pool's function (a worker reading it would import
    ``crawler/settings.py``, which imports Scrapy)."""
    pool = ExtractPool.from_settings({"EXTRACT_WORKERS": 1, "PAGE_MAX_WORDS": 5})
    try:
        pool.warm_up()[0].result(timeout=60)
        _, item = pool.run(**page(1)).result(timeout=60)
        imported = pool.call(partial(eval, "sorted(__import__('sys').modules)")).result(
            timeout=60)
    finally:
        pool.close()
    assert item.text == "Heading 1\nParagraph 1 with"  # the setting's cut, made in the worker
    assert item.text_features is not None
    assert not [name for name in imported if name.split(".")[0] in ("scrapy", "twisted")]
