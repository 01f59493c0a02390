"""One page under ``DOWNLOAD_MAXSIZE`` costs a bounded amount: a 9 MiB page of short words
(~2.4 million) through the dedup pipeline stays under ~100 MB and ~0.5 s of CPU (it took
1.9 GB and 6 s: the MinHash signature materialised a words x 128 matrix), near-copies of
such pages are still found, and a page that is one 10 MiB line keeps its text (libxml2
dropped a text node over 10 MB and the page was indexed empty)."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np

from crawler.extract import extract
from crawler.items import PageItem
from crawler.options import settings_to_options
from crawler.quality.dedup.core import Deduplicator
from crawler.quality.dedup.pipeline import DedupPipeline

PAGE_BYTES = 9 * 1024 * 1024
VOCABULARY = np.array([a + b for a in "abcdefghijklmnopqrstuvwxyz" for b in "aeiouy"])


def short_words(size: int = PAGE_BYTES, seed: int = 1) -> list[str]:
    """Words of two letters, ``size`` bytes of them with their spaces."""
    rng = np.random.default_rng(seed)
    return VOCABULARY[rng.integers(0, len(VOCABULARY), size // 3)].tolist()


def pipeline() -> DedupPipeline:
    return DedupPipeline(Deduplicator.from_settings(None),
                         **settings_to_options(None, DedupPipeline.SETTINGS))


def page(n: int, text: str) -> PageItem:
    url = f"http://big{n}.test/page"
    return PageItem(url=url, fetched_url=url, host=f"big{n}.test", status=200,
                    fetched_at=0.0, text=text)


def test_a_9_mib_page_costs_the_dedup_pipeline_little():
    text = " ".join(short_words())
    dedup = pipeline()
    dedup.process_item(page(0, "warm up " * 50))
    item = page(1, text)
    started = time.process_time()
    dedup.process_item(item)
    cpu = time.process_time() - started
    assert cpu < 0.5  # 6 s before
    tracemalloc.start()
    pipeline().process_item(page(2, text))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 100 * 1024 * 1024  # 1.9 GB before
    assert item.cluster_id == item.doc_id


def test_near_copies_of_huge_pages_are_still_found():
    words = short_words(3 * 1024 * 1024)
    edited = list(words)
    edited[1000:1000 + 2000] = short_words(6000, seed=2)  # a section rewritten
    tail_edit = words[:-10] + ["changed"] * 10  # past the words shingled: not identical
    other = short_words(3 * 1024 * 1024, seed=3)
    dedup = pipeline()
    items = [page(n, " ".join(w)) for n, w in enumerate((words, edited, tail_edit, other))]
    for item in items:
        dedup.process_item(item)
    original, near, tail, unrelated = items
    assert near.cluster_id == original.doc_id and not near.dup_of
    assert tail.cluster_id == original.doc_id and not tail.dup_of
    assert unrelated.cluster_id == unrelated.doc_id


def test_a_page_that_is_one_10_mib_line_keeps_its_text():
    line = "<html><head><title>One line</title></head><body><p>" + "lorem ipsum dolor " * (
        21 * 1024 * 1024 // 18)
    cut = line[:10 * 1024 * 1024]  # what DOWNLOAD_MAXSIZE keeps of a 20 MB page
    extracted = extract(cut, "http://oneline.test/")
    assert extracted.title == "One line"
    assert len(extracted.text) > 10_000_000  # 0 before: libxml2 dropped the text node
