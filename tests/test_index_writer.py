"""The index pipeline's writer thread paces a batch (``INDEX_WRITER_PACE``): it writes
``PACE_CHUNK`` documents at a time and sleeps between chunks for ``pace`` times the thread
CPU each took, unless a later write waits, so the reactor thread keeps the GIL; with
``INDEX_WRITER_PACE_WHEN`` ``"slack"``, only while the crawl has slack (``Slack``)."""

from __future__ import annotations

import threading
import time

import pytest

from crawler.feedback import CrawlFeedback, FrontierFeedback, Slack
from crawler.items import PageItem
from pipelines import index as index_pipeline
from pipelines.index import PACE_CHUNK, IndexPipeline, document_from_item


class Backend:
    """Records each ``index`` call's documents; each document costs ``cost`` s of CPU."""

    def __init__(self, cost: float = 0.002):
        self.calls: list[list[str]] = []
        self.cost = cost

    def index(self, docs) -> int:
        docs = list(docs)
        started = time.thread_time()
        while time.thread_time() - started < self.cost * len(docs):
            pass
        self.calls.append([doc.id for doc in docs])
        return len(docs)


def _docs(n: int):
    return [document_from_item(PageItem(url=f"http://a.test/{i}", fetched_url=f"http://a.test/{i}",
                                        host="a.test", status=200, fetched_at=0.0, text="t"))
            for i in range(n)]


def _pipeline(backend, pace: float, background: bool = True, pace_when: str = "always",
              slack=None) -> IndexPipeline:
    pipeline = IndexPipeline(backend, batch_size=200, flush_interval=3600, pace=pace,
                             pace_when=pace_when, background=background, slack=slack)
    if background:
        pipeline._pool = object()  # as open_spider's thread pool: _timed_index runs on it
        pipeline._writes = [object()]  # the write being made
    return pipeline


@pytest.fixture
def sleeps(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(index_pipeline.time, "sleep", slept.append)
    return slept


def test_a_batch_is_written_in_chunks_with_a_pause_after_each_but_the_last(sleeps):
    backend = Backend(cost=0.002)
    batch = _docs(2 * PACE_CHUNK + 1)
    written, _ = _pipeline(backend, pace=2.0)._timed_index(batch)
    assert written == len(batch)
    assert [len(call) for call in backend.calls] == [PACE_CHUNK, PACE_CHUNK, 1]
    assert [doc_id for call in backend.calls for doc_id in call] == [d.id for d in batch]
    assert len(sleeps) == 2
    for pause in sleeps:  # twice the chunk's CPU (0.008 s), give or take the clock
        assert 2 * 0.002 * PACE_CHUNK <= pause < 2 * 0.002 * PACE_CHUNK + 0.01


def test_no_pause_when_a_later_write_waits_for_the_thread(sleeps):
    backend = Backend()
    pipeline = _pipeline(backend, pace=2.0)
    pipeline._writes.append(object())  # the next batch is queued: keep up
    written, _ = pipeline._timed_index(_docs(3 * PACE_CHUNK))
    assert written == 3 * PACE_CHUNK
    assert sleeps == []


@pytest.mark.parametrize(("pace", "background"), [(0.0, True), (2.0, False)])
def test_unpaced_or_inline_writes_are_one_call(sleeps, pace, background):
    backend = Backend(cost=0.0)
    written, _ = _pipeline(backend, pace=pace, background=background)._timed_index(_docs(10))
    assert written == 10
    assert [len(call) for call in backend.calls] == [10]
    assert sleeps == []


@pytest.mark.parametrize("slack", [None, lambda: False])
def test_slack_mode_writes_at_once_without_slack(sleeps, slack):
    """A throughput-bound crawl (or no scheduler to ask) gets its batch in one call."""
    backend = Backend(cost=0.0)
    pipeline = _pipeline(backend, pace=2.0, pace_when="slack", slack=slack)
    written, _ = pipeline._timed_index(_docs(3 * PACE_CHUNK))
    assert written == 3 * PACE_CHUNK
    assert [len(call) for call in backend.calls] == [3 * PACE_CHUNK]
    assert sleeps == []


def test_slack_mode_paces_while_the_crawl_has_slack_and_writes_the_rest_when_it_ends(sleeps):
    backend = Backend(cost=0.001)
    asked = []

    def slack():  # slack for the first two chunks, then the crawl is throughput-bound
        asked.append(True)
        return len(asked) <= 2

    batch = _docs(5 * PACE_CHUNK)
    written, _ = _pipeline(backend, pace=2.0, pace_when="slack", slack=slack)._timed_index(batch)
    assert written == len(batch)
    assert [len(call) for call in backend.calls] == [PACE_CHUNK, PACE_CHUNK, 3 * PACE_CHUNK]
    assert [doc_id for call in backend.calls for doc_id in call] == [d.id for d in batch]
    assert len(sleeps) == 2


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="INDEX_WRITER_PACE_WHEN"):
        _pipeline(Backend(), pace=2.0, pace_when="sometimes")


def test_slack_follows_the_polls():
    """Slack: the last poll short and none full for ``after_full_s``; real time."""
    slack = Slack(after_full_s=0.05)
    assert not slack  # no poll yet: unknown
    slack.polled(full=False)
    assert slack
    slack.polled(full=True)
    assert not slack
    slack.polled(full=False)
    assert not slack  # a full poll 0.05 s ago: still busy
    time.sleep(0.06)
    assert slack
    slack.polled(full=True)
    time.sleep(0.06)
    assert not slack  # the last poll filled every slot


def test_the_pipelines_handle_asks_the_running_scheduler():
    class Engine:
        scheduler = None

    class Crawler:
        engine = None

    crawler = Crawler()
    handle = CrawlFeedback(crawler)
    assert handle.has_slack() is False  # no engine yet
    crawler.engine = Engine()
    assert handle.has_slack() is False  # a scheduler without feedback
    feedback = FrontierFeedback(None, None, None, slack=Slack(after_full_s=0.0))
    crawler.engine.scheduler = type("Scheduler", (), {"feedback": feedback})()
    assert handle.has_slack() is False
    feedback.slack.polled(full=False)
    assert handle.has_slack() is True


def test_a_paced_batch_on_the_writer_thread_lets_another_thread_run(monkeypatch):
    """The pauses are real sleeps of the writer thread: another thread busy meanwhile (the
    reactor's, in a crawl) runs during them."""
    backend = Backend(cost=0.005)
    pipeline = _pipeline(backend, pace=2.0)
    pauses = []
    sleep = time.sleep

    def timed_sleep(seconds):
        started = time.monotonic()
        sleep(seconds)
        pauses.append((started, time.monotonic()))

    monkeypatch.setattr(index_pipeline.time, "sleep", timed_sleep)
    done = threading.Event()
    ran: list[float] = []

    def other():
        while not done.is_set():
            ran.append(time.monotonic())
            sleep(0.001)

    thread = threading.Thread(target=other)
    thread.start()
    try:
        pipeline._timed_index(_docs(4 * PACE_CHUNK))
    finally:
        done.set()
        thread.join()
    assert len(pauses) == 3
    during = [any(start <= t <= end for t in ran) for start, end in pauses]
    assert sum(during) >= 2  # the other thread ran in the pauses (one may be missed on a busy box)


def test_slack_ending_on_another_thread_loses_nothing():
    """The scheduler's polls (another thread here) end the slack while the writer thread
    paces a batch with real sleeps: it writes the rest at once, every document in order."""
    backend = Backend(cost=0.002)
    slack = Slack(after_full_s=10.0)
    slack.polled(full=False)
    pipeline = _pipeline(backend, pace=2.0, pace_when="slack", slack=lambda: bool(slack))
    batch = _docs(50 * PACE_CHUNK)
    result = []
    writer = threading.Thread(target=lambda: result.append(pipeline._timed_index(batch)))
    writer.start()
    while len(backend.calls) < 3:
        time.sleep(0.001)
    slack.polled(full=True)  # requests now wait for slots
    writer.join(timeout=30)
    assert not writer.is_alive()
    (written, _), = result
    assert written == len(batch)
    assert [doc_id for call in backend.calls for doc_id in call] == [d.id for d in batch]
    chunks = [len(call) for call in backend.calls]
    assert chunks[:3] == [PACE_CHUNK] * 3 and chunks[-1] > PACE_CHUNK  # the rest at once
    assert len(chunks) < 10
