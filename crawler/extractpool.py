"""Page extraction off the reactor thread: a pool of worker processes that turn fetched
responses into pages and items (``crawler.extract.item_from_response``).

Extraction (one lxml parse per page: text, links, sections, language, hidden words) is
about half of what the crawl process's reactor thread spends per page (py-spy over a
real-web crawl). Threads do not help CPU-bound Python under the GIL, so the work goes to
``EXTRACT_WORKERS`` processes and comes back as plain data, the page and its ``PageItem``.
The reactor thread only hands the body over and reads the result, and stays free to
schedule fetches meanwhile. The workers are forked by multiprocessing's fork server, not
by the crawl process (which runs threads), and the fork server imports what they run
(``WORKER_MODULES``) once, before it forks them: each spawned worker imported it again,
~0.15 s of CPU a worker.

- Each worker has a pipe of its own: the calling thread writes a page's pickled arguments
  to it, one thread of the pool reads the answers. A worker holds at most 2 pages, the
  one it extracts and the next (written only if both fit in the pipe's buffer); later
  ones wait here, in the order they came. A page too long for the buffer is written by
  the pool's thread, to an idle worker: the reactor thread never waits on a pipe.
- An exception raised by the extraction of a page (``NotAPage``, a bug) is raised to its
  caller, as inline, with the worker's traceback as a note; the other pages go on.
- A worker that dies (a crash in a C library, the OOM killer) fails the page it was
  extracting with ``BrokenProcessPool`` (counted as ``extract/pool/killed_worker``): a new
  worker takes its place, and the page written after it goes to a worker, so no other
  page is lost.
- With the dedup or quality pipeline on, a worker also computes what they read of the
  page's text (``crawler.quality.features.item_with_features``: MinHash signatures,
  shingles, word counts: on real documentation pages as much reactor CPU as the
  extraction itself).
- A worker imports only ``crawler.extract`` and what it runs (no Scrapy, no Twisted).
- A worker exits when the crawl process does, even one killed (SIGKILL, the OOM killer)
  without closing its pool (``crawler.poolworker``); a crawl that ends closes its pool on
  ``spider_closed`` and waits for its workers.
- ``workers = 0``: the extraction runs inline, in the caller's thread, with the same
  results (``tests/test_extractpool.py`` checks both give equal items).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import pickle
import selectors
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred, DeferredList, succeed

from crawler.extract import item_from_response
from crawler.poolworker import serve

logger = logging.getLogger(__name__)

#: Pages handed to a worker at a time: the one it extracts and the next, so that it never
#: waits for this process to hand it one.
QUEUED_PER_WORKER = 2
#: The modules a worker runs, imported by the fork server before it forks the workers.
WORKER_MODULES = ("crawler.poolworker", "crawler.quality.features")
#: A worker's next page is written to its pipe while it extracts another only if its
#: message is at most this long: it then fits in the pipe's buffer (64 KiB on Linux), so
#: the write never waits for the worker; a longer one waits until the worker is idle.
SMALL_MESSAGE = 48 * 1024


#: The page each worker extracts before the crawl's first (``ExtractPool.warm``): a few
#: paragraphs of English, no declared language, links, a heading and a list.
WARM_PAGE = (
    b"<!DOCTYPE html><html><head><title>Getting started</title>"
    b'<meta name="description" content="How to install and configure the tool.">'
    b"</head><body><nav><a href='/'>Home</a> <a href='/docs/'>Docs</a></nav>"
    b"<h1>Getting started</h1><p>This guide explains how to install the package, write a "
    b"configuration file and run the first command. Each section links to the reference "
    b"pages of the options it uses.</p><h2>Installation</h2><ul><li><a href='install.html'>"
    b"Install from source</a></li><li><a href='packages.html'>Binary packages</a></li></ul>"
    b"<p>Run <code>tool --help</code> to see every option and its default value.</p>"
    b"</body></html>"
)


def _worker_context():
    """multiprocessing's fork server context, ``WORKER_MODULES`` preloaded (spawn on a
    platform without a fork server)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(WORKER_MODULES))
    return context


def _stop_fork_server() -> None:
    """Stop the fork server and wait for it to exit, so that its CPU, and that of the
    workers it waited for, counts in this process's children's, as spawned workers' did
    (``bench/crawl.py`` counts a crawl's CPU so). The next pool starts it again."""
    from multiprocessing import forkserver

    stop = getattr(forkserver._forkserver, "_stop", None)  # Python's own, for its tests
    if stop is not None:
        stop()


def _set_done(waiter: asyncio.Future) -> None:
    if not waiter.done():  # not cancelled meanwhile
        waiter.set_result(None)


def _deferred_of(future: Future) -> Deferred:
    """A Deferred fired on the reactor thread when ``future`` is done."""
    from twisted.internet import reactor

    deferred: Deferred = Deferred()
    future.add_done_callback(lambda _: reactor.callFromThread(deferred.callback, None))
    return deferred


class _Job:
    __slots__ = ("kwargs", "message", "result")

    def __init__(self, message: bytes, kwargs: dict[str, Any]):
        self.message = message
        self.kwargs = kwargs
        self.result: Future = Future()


class _Worker:
    """A worker process, the pool's end of its pipe and the jobs written to it, in order."""

    __slots__ = ("conn", "gone", "jobs", "process")

    def __init__(self, process, conn):
        self.process = process
        self.conn = conn
        self.jobs: deque[_Job] = deque()
        self.gone = False  # its pipe refused a write: it is dying


class ExtractPool:
    """Runs ``function(**kwargs)`` (``item_from_response``) in ``workers`` processes, at
    most ``2 x workers`` handed to them at a time; ``run`` returns a ``Future`` of its
    result. Thread-safe; ``workers = 0`` runs inline.

    Each worker has a pipe of its own: the calling thread writes a page's pickled
    arguments to an idle worker (``crawler.poolworker.serve``) and one thread of the pool
    reads the answers: no manager or feeder thread, shared call queue or result queue as
    ``ProcessPoolExecutor`` has (docs/crawl-speed.md: their CPU a page).
    """

    #: Pools of this process with workers, not closed: the last one closed stops the fork
    #: server (``_stop_fork_server``).
    _open = 0
    _open_lock = threading.Lock()

    def __init__(self, workers: int, function: Callable[..., Any] = item_from_response,
                 stats=None, initializer: Callable[[], Any] | None = None, nice: int = 0):
        self.workers = max(0, int(workers))
        self.nice = nice
        self.function = function
        self.initializer = initializer
        self.stats = stats
        self._lock = threading.RLock()
        self._waiting: deque[_Job] = deque()
        self._pool: list[_Worker] = []
        self._closed = False
        self._reader: threading.Thread | None = None
        if self.workers:
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_w, False)
            self._selector = selectors.DefaultSelector()  # the reader thread's, kept
            self._selector.register(self._wake_r, selectors.EVENT_READ)
            # Every function a worker runs lives in a module that imports neither Scrapy
            # nor Twisted: a worker that unpickled a function of this module imported both,
            # 0.3 s of CPU a worker for nothing. A worker runs ``initializer`` (the
            # language model's load, from its decompressed copy) before its first page. A
            # worker exits with the crawl process, even one killed without closing its pool.
            with ExtractPool._open_lock:
                ExtractPool._open += 1
            self._pool = [self._start_worker() for _ in range(self.workers)]
            self._reader = threading.Thread(target=self._read, name="extract-pool",
                                            daemon=True)
            self._reader.start()

    @classmethod
    def from_settings(cls, settings, stats=None) -> ExtractPool:
        """The pool ``EXTRACT_WORKERS`` asks for (default in ``crawler/settings.py``), each
        worker loading the language model as it starts (``LANGUAGE_MODEL_CACHE``), before
        the crawl's first pages reach it. With the dedup or quality pipeline on, a page's
        item comes with the ``text_features`` they read (``crawler.quality.features``),
        computed by the worker. A page's text is cut at ``PAGE_MAX_WORDS``, read here: a
        worker that read the setting itself would import ``crawler/settings.py`` and with
        it Scrapy and Twisted (0.2 s of CPU a worker, at its warm-up page)."""
        from crawler.extract import load_language_model
        from crawler.options import enabled, setting

        function: Callable[..., Any] = partial(
            item_from_response, max_words=setting(settings, "PAGE_MAX_WORDS", int))
        dedup, quality = enabled(settings, "DEDUP_ENABLED"), enabled(settings, "QUALITY_ENABLED")
        if dedup or quality:
            from crawler.quality.features import item_with_features

            spec = None
            if dedup:
                from crawler.quality.dedup.core import METHODS, Deduplicator

                if setting(settings, "DEDUP_METHOD") in METHODS:
                    spec = Deduplicator.spec_from_settings(settings)
            function = partial(item_with_features, features=spec, **function.keywords)
        return cls(setting(settings, "EXTRACT_WORKERS", int), function, stats=stats,
                   initializer=partial(load_language_model,
                                       setting(settings, "LANGUAGE_MODEL_CACHE") or None),
                   nice=setting(settings, "EXTRACT_WORKER_NICE", int))

    def _start_worker(self) -> _Worker:
        context = _worker_context()
        ours, theirs = context.Pipe()
        process = context.Process(target=serve,
                                  args=(theirs, self.function, self.initializer, self.nice),
                                  name="extract-worker", daemon=True)
        process.start()
        theirs.close()
        worker = _Worker(process, ours)
        self._selector.register(ours, selectors.EVENT_READ, (worker, False))
        self._selector.register(process.sentinel, selectors.EVENT_READ, (worker, True))
        return worker

    def run(self, **kwargs: Any) -> Future:
        """A future of ``function(**kwargs)``: its result, or the exception it raised."""
        return self._submit(None, self.function, kwargs)

    def call(self, function: Callable[..., Any], /, **kwargs: Any) -> Future:
        """A future of ``function(**kwargs)`` run like the pool's own function (a
        module-level function the workers can import)."""
        return self._submit(function, function, kwargs)

    def _submit(self, sent: Callable[..., Any] | None, function: Callable[..., Any],
                kwargs: dict[str, Any]) -> Future:
        if not self.workers:
            result: Future = Future()
            try:
                result.set_result(function(**kwargs))
            except Exception as exc:  # noqa: BLE001 - handed to the caller, as pooled
                result.set_exception(exc)
            return result
        job = _Job(pickle.dumps((sent, kwargs), protocol=5), kwargs)
        with self._lock:
            if self._closed:
                raise RuntimeError("the extraction pool is closed")
            self._waiting.append(job)
            self._pump()
        return job.result

    def _pump(self, large: bool = False) -> list[tuple[_Worker, _Job]]:
        """Write waiting jobs to the workers (lock held): to an idle one, or as its next to
        one extracting a page when both messages fit in the pipe's buffer. A message longer
        than that is written by the reader thread, out of the lock (``large``: the writes
        returned for it to make): the write may wait for the worker to read it, on a busy
        box as long as the worker waits for a core, and the reactor thread must not."""
        sends = []
        while self._waiting and not self._closed:
            if len(self._pool) < self.workers:  # one died: replaced once there is work
                self._pool.append(self._start_worker())
            job = self._waiting[0]
            small = len(job.message) <= SMALL_MESSAGE
            worker = min((w for w in self._pool if not w.gone and (not w.jobs or small and (
                len(w.jobs) < QUEUED_PER_WORKER and len(w.jobs[0].message) <= SMALL_MESSAGE))),
                key=lambda w: len(w.jobs), default=None)
            if worker is None:
                break
            if not small:
                if not large:
                    try:
                        os.write(self._wake_w, b"x")  # the reader thread writes it
                    except BlockingIOError:  # it has been woken already
                        pass
                    break
                self._waiting.popleft()
                worker.jobs.append(job)  # nothing else is written to it meanwhile
                sends.append((worker, job))
                continue
            try:
                worker.conn.send_bytes(job.message)
            except OSError:  # it died: the reader thread sees it go and replaces it
                worker.gone = True
                continue
            self._waiting.popleft()
            worker.jobs.append(job)
        return sends

    def _send(self, sends: list[tuple[_Worker, _Job]]) -> None:
        """Write the long messages ``_pump`` handed to the reader thread (lock not held)."""
        for worker, job in sends:
            try:
                worker.conn.send_bytes(job.message)
            except OSError:
                with self._lock:
                    worker.gone = True
                    worker.jobs.remove(job)
                    self._waiting.appendleft(job)

    def _read(self) -> None:
        """The reader thread: each worker's answers, in order, and its death."""
        while True:
            with self._lock:
                if self._closed and not self._pool:
                    return
            for key, _ in self._selector.select():
                if key.data is None:
                    os.read(self._wake_r, 4096)
                    with self._lock:
                        sends = self._pump(large=True)
                    self._send(sends)
                else:
                    self._answer(*key.data)

    def _answer(self, worker: _Worker, dead: bool) -> None:
        """Read an answer of ``worker`` (its pipe is readable: one answer, the selector
        reports the next; a poll before and after each read cost 2.7-3 us each); once it
        is gone (``dead``: its process has ended, or its pipe is closed), every answer it
        sent before, then its death."""
        with self._lock:
            if worker not in self._pool:
                return
        readable = not dead
        while True:
            try:
                if not readable and not worker.conn.poll():
                    break
                data = worker.conn.recv_bytes()
            except (EOFError, OSError):
                dead = True
                break
            try:
                ok, value = pickle.loads(data)
            except Exception as exc:  # noqa: BLE001 - an answer that does not unpickle
                ok, value = False, exc
            with self._lock:
                job = worker.jobs.popleft()
                sends = self._pump(large=True)
            if ok:
                job.result.set_result(value)
            else:
                job.result.set_exception(value)
            self._send(sends)
            if readable:
                break
        if dead:
            self._lost(worker)

    def _lost(self, worker: _Worker) -> None:
        """``worker`` died: the page it was extracting fails with ``BrokenProcessPool``
        (the page that kills its worker), the one written after it is handed to another,
        and a new worker takes its place."""
        worker.process.join()
        with self._lock:
            self._selector.unregister(worker.conn)
            self._selector.unregister(worker.process.sentinel)
            worker.conn.close()
            self._pool.remove(worker)
            jobs = list(worker.jobs)
            cancelled, sends = [], []
            if self._closed:
                cancelled, jobs = jobs, []
            else:
                logger.warning("an extraction worker died: a new one starts with the next page")
                self._inc("extract/pool/broken")
                if jobs:
                    self._inc("extract/pool/killed_worker")
                    logger.error("the extraction of %s killed its worker: page left out",
                                 jobs[0].kwargs.get("url", "?"))
                    self._waiting.extendleft(reversed(jobs[1:]))
                sends = self._pump(large=True)
        self._send(sends)
        for job in cancelled:
            job.result.cancel()
        if jobs:
            jobs[0].result.set_exception(BrokenProcessPool(
                f"an extraction worker died (exit code {worker.process.exitcode})"))

    def warm(self) -> Deferred:
        """A Deferred fired once every worker has extracted a small page (``WARM_PAGE``):
        started, its language model loaded and its extraction's first-call costs paid, so
        that the crawl's first pages, whose links a crawl's hosts wait for, do not pay them
        (the spider returns it from ``spider_opened``, which Scrapy awaits before the first
        request; ``extract/pool/warm_ms`` says how long it took). A worker's failure is
        logged, not raised: the crawl goes on without the warm-up."""
        started, futures = time.monotonic(), self.warm_up()
        if not futures:
            return succeed(None)
        return DeferredList([_deferred_of(f) for f in futures]).addCallback(
            lambda _: self._warmed(futures, time.monotonic() - started))

    def warm_up(self) -> list[Future]:
        """``WARM_PAGE`` written to each worker, one page each (none inline): the futures
        of their answers."""
        if not self.workers:
            return []
        kwargs = {"url": "http://warm.invalid/", "status": 200, "body": WARM_PAGE,
                  "fetched_at": 0.0, "content_type": "text/html"}
        with self._lock:  # written together, to the idle workers, the fewest jobs first
            return [self.run(**kwargs) for _ in range(self.workers)]

    def _warmed(self, futures: list[Future], took: float) -> None:
        for future in futures:
            if future.exception() is not None:
                logger.warning("an extraction worker's warm-up failed: %r", future.exception())
        if self.stats is not None:
            self.stats.set_value("extract/pool/warm_ms", round(took * 1000))

    async def extract(self, **kwargs: Any) -> Any:
        """``function(**kwargs)`` awaited on the reactor thread: the reactor runs on while a
        worker extracts. Under the asyncio reactor the answer wakes the loop itself
        (``call_soon_threadsafe``), not through a Deferred and Twisted's
        ``callFromThread``: 18-19 against 36-45 us of CPU a page, both threads."""
        future = self.run(**kwargs)
        if not future.done():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # another reactor than asyncio's
                await maybe_deferred_to_future(_deferred_of(future))
            else:
                answered = loop.create_future()
                future.add_done_callback(
                    lambda _: loop.call_soon_threadsafe(_set_done, answered))
                await answered
        return future.result()

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)

    def close(self) -> None:
        """Stop the workers once they have answered the pages written to them (pages still
        waiting fail with ``CancelledError``) and wait for them to exit."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            waiting, self._waiting = list(self._waiting), deque()
            pool = list(self._pool)
        for job in waiting:
            job.result.cancel()
        if not self.workers:
            return
        for worker in pool:
            try:
                worker.conn.send_bytes(b"")
            except OSError:
                pass
        for worker in pool:
            worker.process.join()
        with ExtractPool._open_lock:
            ExtractPool._open -= 1
            if not ExtractPool._open:
                _stop_fork_server()
        os.write(self._wake_w, b"x")
        self._reader.join()
        self._selector.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
