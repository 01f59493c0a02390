"""Page extraction off the reactor thread: a pool of worker processes that turn fetched
responses into pages and items (``crawler.extract.item_from_response``).

Extraction (one lxml parse per page: text, links, sections, language, hidden words) is
about half of what the crawl process's reactor thread spends per page (py-spy over a
real-web crawl). Threads do not help CPU-bound Python under the GIL, so the work goes to
``EXTRACT_WORKERS`` processes (spawned, not forked: the crawl process runs threads) and
comes back as plain data, the page and its ``PageItem``. The reactor thread only hands the
body over and reads the result, and stays free to schedule fetches meanwhile.

- At most ``2 x workers`` pages are in the workers' queue; later ones wait here, in the
  order they came (a bounded queue: the pipe to the workers holds a few bodies, not every
  response Scrapy keeps in memory).
- An exception raised by the extraction of a page (``NotAPage``, a bug) is raised to its
  caller, as inline; the other pages go on.
- A worker that dies (a crash in a C library, the OOM killer) breaks its pool: the pool is
  replaced and the pages that were in it are submitted again, one at a time, so the page
  that kills its worker is found (it fails with ``BrokenProcessPool``, counted as
  ``extract/pool/killed_worker``) and no other page is lost.
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

import logging
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from crawler.extract import item_from_response
from crawler.poolworker import exit_with_parent

logger = logging.getLogger(__name__)

#: Pages in the workers' queue per worker: enough that a worker never waits for the reactor
#: thread to hand it the next page, few enough that the pipe holds a few bodies only.
QUEUED_PER_WORKER = 2


def _deferred_of(future: Future) -> Deferred:
    """A Deferred fired on the reactor thread when ``future`` is done."""
    from twisted.internet import reactor

    deferred: Deferred = Deferred()
    future.add_done_callback(lambda _: reactor.callFromThread(deferred.callback, None))
    return deferred


class _Job:
    __slots__ = ("alone", "function", "kwargs", "result")

    def __init__(self, function: Callable[..., Any], kwargs: dict[str, Any]):
        self.function = function
        self.kwargs = kwargs
        self.result: Future = Future()
        self.alone = False  # submitted alone in its pool, after a pool broke


class ExtractPool:
    """Runs ``function(**kwargs)`` (``item_from_response``) in ``workers`` processes, at
    most ``2 x workers`` queued there at a time; ``run`` returns a ``Future`` of its
    result. Thread-safe; ``workers = 0`` runs inline."""

    def __init__(self, workers: int, function: Callable[..., Any] = item_from_response,
                 stats=None):
        self.workers = max(0, int(workers))
        self.function = function
        self.stats = stats
        self._limit = QUEUED_PER_WORKER * self.workers
        self._lock = threading.RLock()  # a broken pool's callbacks may run inside _pump
        self._waiting: deque[_Job] = deque()
        self._suspects: deque[_Job] = deque()  # were in a pool that broke
        self._running = 0
        self._closed = False
        self._executor: ProcessPoolExecutor | None = None
        if self.workers:
            self._executor = self._new_executor()

    @classmethod
    def from_settings(cls, settings, stats=None) -> ExtractPool:
        """The pool ``EXTRACT_WORKERS`` asks for (default in ``crawler/settings.py``). With
        the dedup or quality pipeline on, a page's item comes with the ``text_features``
        they read (``crawler.quality.features``), computed by the worker."""
        from crawler.options import enabled, setting

        function: Callable[..., Any] = item_from_response
        dedup, quality = enabled(settings, "DEDUP_ENABLED"), enabled(settings, "QUALITY_ENABLED")
        if dedup or quality:
            from crawler.quality.features import item_with_features

            spec = None
            if dedup:
                from crawler.quality.dedup.core import METHODS, Deduplicator

                if setting(settings, "DEDUP_METHOD") in METHODS:
                    spec = Deduplicator.spec_from_settings(settings)
            function = partial(item_with_features, features=spec)
        return cls(setting(settings, "EXTRACT_WORKERS", int), function, stats=stats)

    def _new_executor(self) -> ProcessPoolExecutor:
        # Every function a worker runs lives in a module that imports neither Scrapy nor
        # Twisted: a worker that unpickled a function of this module imported both, 0.3 s
        # of CPU a worker for nothing. The language model loads on a worker's first page
        # that declares no language (0.6 s of CPU a worker, off the reactor thread): pages
        # that declare theirs, the test web's and most real sites', never need it.
        # A worker exits with the crawl process, even one killed without closing its pool.
        executor = ProcessPoolExecutor(
            max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=exit_with_parent)
        for _ in range(self.workers):  # start them now, not when the first page comes
            executor.submit(os.getpid)
        return executor

    def run(self, **kwargs: Any) -> Future:
        """A future of ``function(**kwargs)``: its result, or the exception it raised."""
        return self.call(self.function, **kwargs)

    def call(self, function: Callable[..., Any], /, **kwargs: Any) -> Future:
        """A future of ``function(**kwargs)`` run like the pool's own function (a
        module-level function the workers can import)."""
        job = _Job(function, kwargs)
        if not self.workers:
            try:
                job.result.set_result(function(**kwargs))
            except Exception as exc:  # noqa: BLE001 - handed to the caller, as pooled
                job.result.set_exception(exc)
            return job.result
        with self._lock:
            if self._closed:
                raise RuntimeError("the extraction pool is closed")
            self._waiting.append(job)
            self._pump()
        return job.result

    def _pump(self) -> None:
        """Submit waiting jobs while the workers' queue has room (lock held). The pages
        that were in a pool when it broke go first, one at a time, each alone in the pool:
        the one that kills its worker then breaks nobody else's page."""
        while not self._closed:
            if self._suspects:
                if self._running:
                    return
                job = self._suspects.popleft()
                job.alone = True
            elif self._waiting and self._running < self._limit:
                job = self._waiting.popleft()
            else:
                return
            executor = self._executor
            self._running += 1
            try:
                future = executor.submit(job.function, **job.kwargs)
            except BrokenProcessPool as exc:
                future = Future()
                future.set_exception(exc)
            future.add_done_callback(
                lambda done, job=job, executor=executor: self._finished(job, executor, done))

    def _finished(self, job: _Job, executor: ProcessPoolExecutor, done: Future) -> None:
        error = None if done.cancelled() else done.exception()
        with self._lock:
            self._running -= 1
            if isinstance(error, BrokenProcessPool) and not self._closed:
                if executor is self._executor:
                    logger.warning("an extraction worker died: starting new workers")
                    self._inc("extract/pool/broken")
                    executor.shutdown(wait=False, cancel_futures=True)
                    self._executor = self._new_executor()
                if not job.alone:
                    self._suspects.append(job)
                    self._pump()
                    return
                self._inc("extract/pool/killed_worker")
                logger.error("the extraction of %s killed its worker: page left out",
                             job.kwargs.get("url", "?"))
            self._pump()
        if done.cancelled():
            job.result.cancel()
        elif error is not None:
            job.result.set_exception(error)
        else:
            job.result.set_result(done.result())

    async def extract(self, **kwargs: Any) -> Any:
        """``function(**kwargs)`` awaited on the reactor thread: the reactor runs on while a
        worker extracts."""
        future = self.run(**kwargs)
        if not future.done():
            await maybe_deferred_to_future(_deferred_of(future))
        return future.result()

    def _inc(self, key: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(key)

    def close(self) -> None:
        """Stop the workers (pages still waiting fail with ``CancelledError``) and wait
        for them to exit."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
            waiting = [*self._suspects, *self._waiting]
            self._waiting, self._suspects = deque(), deque()
        for job in waiting:
            job.result.cancel()
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
