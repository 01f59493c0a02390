import gc
import random
import re
from itertools import chain

import numpy as np
import pytest
from datasketch import LeanMinHash, MinHash, MinHashLSH
from datasketch.lsh import _optimal_param
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from crawler.items import PageItem
from crawler.quality.dedup.compact import BitSignatures, CompactRedisStore, partition_bits_for
from crawler.quality.dedup.core import Deduplicator
from crawler.quality.dedup.evaluate import evaluate
from crawler.quality.dedup.minhash import (
    SMALL_BUCKET,
    MemoryLSH,
    MinHasher,
    MinHashIndex,
    lsh_params,
)
from crawler.quality.dedup.pipeline import DedupPipeline, signal_budget_cut
from crawler.quality.dedup.simhash import SimHashIndex, hamming, simhash
from crawler.quality.dedup.text import (
    _ascii_words,
    exact_key,
    first_words,
    fold32,
    shingle_hashes,
    word_hashes,
    words,
)
from crawler.urls import doc_id_for
from harness.redisserver import running_redis
from harness.roundtrips import count_round_trips
from tests.frontiers import options
from testweb.nearcopies import calendar_trap, generate


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


def _article(rng: random.Random, n: int = 300) -> str:
    vocab = [f"w{i}" for i in range(3000)]
    return " ".join(rng.choice(vocab) for _ in range(n))


def test_words_and_exact_key_normalize_case_and_spacing():
    assert words("Hello,  World!\nHello") == ["hello", "world", "hello"]
    assert exact_key(words("A  b\tC")) == exact_key(words("a b c"))
    assert exact_key(words("a b c")) != exact_key(words("a b d"))


def test_shingle_hashes_are_stable_and_positional():
    h = word_hashes(["a", "b", "c", "d"])
    # pinned: the hashes are shared between workers and stored in Redis
    assert int(h[0]) == 0xE6C632B61E964E1F
    three = shingle_hashes(h, 3)
    assert int(three[0]) == 0xCF98495AD9A23C92
    assert len(three) == 2
    assert shingle_hashes(word_hashes(["c", "b", "a"]), 3)[0] != three[0]
    assert len(shingle_hashes(h[:2], 3)) == 1
    assert len(shingle_hashes(h[:0], 3)) == 0


def test_minhasher_equals_datasketch_update_batch():
    shingles = shingle_hashes(word_hashes(words(_article(random.Random(1)))), 3)
    ours = MinHasher(num_perm=128, seed=1).signature(shingles)
    reference = MinHash(num_perm=128, seed=1, hashfunc=lambda x: x)
    reference.update_batch([int(x) for x in fold32(shingles)])
    assert np.array_equal(ours.hashvalues, reference.hashvalues)


def test_lsh_params_are_datasketchs():
    """The bands and rows datasketch's MinHashLSH picks (it integrates with SciPy)."""
    for num_perm in (16, 64, 100, 128, 256):
        for threshold in (0.05, 0.2, 0.35, 0.5, 0.6, 0.65, 0.7, 0.8, 0.9, 0.95):
            assert lsh_params(threshold, num_perm) == _optimal_param(threshold, num_perm,
                                                                     0.5, 0.5)


def test_memory_lsh_and_signatures_equal_datasketchs():
    """The in-memory index gives datasketch's MinHashLSH's candidates, and a signature's
    Jaccard estimate is LeanMinHash's."""
    rng = random.Random(5)
    hasher = MinHasher()
    base = words(_article(rng))
    texts = [base]
    for n in range(60):  # copies edited more and more, and unrelated pages
        edited = base[:]
        for _ in range(n * 3):
            edited[rng.randrange(len(edited))] = f"x{rng.randrange(10**6)}"
        texts.append(edited)
        texts.append(words(_article(rng)))
    signatures = [hasher.signature(shingle_hashes(word_hashes(t), 3)) for t in texts]
    ours, theirs = MemoryLSH(0.6, 128), MinHashLSH(threshold=0.6, num_perm=128)
    assert (ours.b, ours.r) == (theirs.b, theirs.r)
    lean = [LeanMinHash(seed=1, hashvalues=s.hashvalues, scheme="affine32") for s in signatures]
    for key, (signature, reference) in enumerate(zip(signatures, lean, strict=True)):
        assert sorted(ours.query(signature)) == sorted(theirs.query(reference))
        assert signature.jaccard(signatures[0]) == reference.jaccard(lean[0])
        ours.insert(f"k{key}", signature)
        theirs.insert(f"k{key}", reference)
    assert sorted(ours.query(signatures[0])) == sorted(theirs.query(lean[0]))
    assert len(ours.query(signatures[0])) >= 5  # some candidates to compare


def test_memory_lsh_buckets_leave_the_garbage_collector_alone():
    """A small bucket is a tuple, untracked once collected; a bucket of many keys (copies
    of one page) becomes a set and still answers every key, each once."""
    rng = random.Random(7)
    hasher = MinHasher()
    lsh = MemoryLSH(0.6, 128)
    copy = hasher.signature(shingle_hashes(word_hashes(words(_article(rng))), 3))
    for n in range(200):
        lsh.insert(f"other{n}", hasher.signature(
            shingle_hashes(word_hashes(words(_article(rng))), 3)))
    for n in range(SMALL_BUCKET * 3):
        lsh.insert(f"copy{n}", copy)
        lsh.insert(f"copy{n}", copy)  # again: no second entry
    gc.collect()
    buckets = [bucket for table in lsh.hashtables for bucket in table.values()]
    small = [b for b in buckets if len(b) <= SMALL_BUCKET]
    assert len(small) >= 200 * lsh.b * 0.9
    assert not any(gc.is_tracked(b) for b in small)
    assert sorted(lsh.query(copy)) == sorted(f"copy{n}" for n in range(SMALL_BUCKET * 3))


def test_minhash_index_confirms_candidates_by_similarity():
    rng = random.Random(2)
    hasher = MinHasher()
    index = MinHashIndex(threshold=0.7, hasher=hasher)
    base = words(_article(rng))
    index.add("base", hasher.signature(shingle_hashes(word_hashes(base), 3)))
    near = base[:]
    near[100] = "changed"
    found = index.match(hasher.signature(shingle_hashes(word_hashes(near), 3)))
    assert found is not None and found[0] == "base" and found[1] >= 0.9
    half = base[:150] + words(_article(rng, 150))
    assert index.match(hasher.signature(shingle_hashes(word_hashes(half), 3))) is None


def test_simhash_index_finds_exactly_the_fingerprints_within_k():
    rng = random.Random(3)
    index = SimHashIndex(k=3, blocks=6)
    assert len(index.masks) == 20
    stored = [rng.getrandbits(64) for _ in range(300)]
    for i, fp in enumerate(stored):
        index.add(f"d{i}", fp)
    for i, fp in enumerate(stored[:100]):
        for flips in range(6):
            bits = rng.sample(range(64), flips)
            probe = fp
            for b in bits:
                probe ^= 1 << b
            found = index.match(probe)
            if flips <= 3:
                assert found == (f"d{i}", flips)
            else:
                assert found is None or found[0] != f"d{i}"


def test_simhash_is_close_for_small_edits_and_far_for_distinct_texts():
    rng = random.Random(4)
    base = words(_article(rng, 800))
    edited = base[:]
    edited[10] = "x"
    other = words(_article(rng, 800))

    def fp(tokens):
        return simhash(shingle_hashes(word_hashes(tokens), 3))

    assert hamming(fp(base), fp(edited)) <= 3
    assert hamming(fp(base), fp(other)) > 10


@pytest.mark.parametrize("method", ["minhash", "simhash"])
def test_exact_near_and_distinct_documents_get_clusters(method):
    rng = random.Random(5)
    dedup = Deduplicator.from_settings(None, method=method)
    a = _article(rng, 800)
    first = dedup.check("a", "one.test", a)
    assert (first.kind, first.cluster_id) == ("new", "a")
    exact = dedup.check("b", "two.test", a.upper().replace(" ", "  "))
    assert (exact.kind, exact.match, exact.cluster_id, exact.match_host) == (
        "exact",
        "a",
        "a",
        "one.test",
    )
    tokens = a.split()
    tokens[400] = "edited"
    near = dedup.check("c", "two.test", " ".join(tokens))
    assert (near.kind, near.match, near.cluster_id) == ("near", "a", "a")
    distinct = dedup.check("d", "one.test", _article(rng, 800))
    assert (distinct.kind, distinct.cluster_id) == ("new", "d")
    assert dedup.check("c", "two.test", " ".join(tokens)).kind == "known"
    assert dedup.cluster_size("a") == 3
    assert dedup.cluster_size("d") == 1


def test_cluster_id_is_the_first_document_of_a_chain():
    rng = random.Random(6)
    dedup = Deduplicator.from_settings(None, method="minhash")
    tokens = _article(rng, 600).split()
    dedup.check("first", "h.test", " ".join(tokens))
    tokens[50] = "one"
    dedup.check("second", "h.test", " ".join(tokens))
    tokens[300] = "two"
    third = dedup.check("third", "h.test", " ".join(tokens))
    assert third.cluster_id == "first"


def test_empty_and_short_texts_are_not_near_duplicates():
    dedup = Deduplicator.from_settings(None, method="minhash")
    assert dedup.check("a", "h", "").kind == "new"
    assert dedup.check("b", "h", "").kind == "new"
    assert dedup.check("c", "h", "Page not found here").kind == "new"
    assert dedup.check("d", "h", "page not found, here").kind == "exact"
    assert dedup.check("e", "h", "Page not found there").kind == "new"


def test_short_texts_are_exact_duplicates_only_under_the_same_title():
    # Two books' entry pages whose table of contents extraction leaves out read "Next Next":
    # a few words do not make them copies of each other; the same page twice still is one.
    dedup = Deduplicator.from_settings(None)
    manual = dedup.check("manual", "h", "Next\nNext", title="Network UPS Tools User Manual")
    guide = dedup.check("guide", "h", "Next Next", title="Network UPS Tools Developer Guide")
    again = dedup.check("again", "h", "next next", title="Network UPS Tools User  manual")
    assert (manual.kind, guide.kind) == ("new", "new")
    assert (again.kind, again.match) == ("exact", "manual")
    article = _article(random.Random(3), 40)  # at least min_tokens words: the text decides
    assert dedup.check("one", "h", article, title="One").kind == "new"
    assert dedup.check("two", "h", article, title="Two").kind == "exact"


def test_pipeline_reads_the_title_of_a_short_page():
    pipeline = DedupPipeline.from_crawler(get_crawler())
    pages = [_item(f"http://a.test/{name}/", "a.test", "Next Next") for name in ("faq", "guide")]
    pages[1].title = "Developer Guide"
    assert [pipeline.process_item(page).dup_of for page in pages] == ["", ""]


def test_default_method_meets_targets_on_labelled_set():
    pages = generate(articles=150, short_pages=60, seed=11)
    score = evaluate(Deduplicator.from_settings(None), pages)
    assert score.positives > 100
    assert score.precision >= 0.99
    assert score.recall >= 0.95


def test_calendar_trap_pages_are_near_copies():
    pages = calendar_trap("cal.test", 10)
    dedup = Deduplicator.from_settings(None)
    kinds = [dedup.check(p.url, p.host, p.text).kind for p in pages]
    assert kinds == ["new"] + ["near"] * 9


@pytest.mark.parametrize("method", ["minhash", "simhash"])
def test_workers_share_state_through_redis(redis_url, method):
    rng = random.Random(7)
    prefix = f"t-{method}"
    # datasketch's layout (any document ids); tests below cover the compact default.
    layout = "datasketch"
    worker1 = Deduplicator.from_settings(None, method=method, redis_url=redis_url, prefix=prefix,
                                         redis_layout=layout)
    worker2 = Deduplicator.from_settings(None, method=method, redis_url=redis_url, prefix=prefix,
                                         redis_layout=layout)
    text = _article(rng, 800)
    assert worker1.check("a", "one.test", text).kind == "new"
    assert worker2.check("b", "two.test", text).match == "a"
    tokens = text.split()
    tokens[123] = "edited"
    near = worker2.check("c", "two.test", " ".join(tokens))
    assert (near.kind, near.match, near.cluster_id, near.match_host) == (
        "near",
        "a",
        "a",
        "one.test",
    )
    assert worker1.check("d", "one.test", _article(rng, 800)).kind == "new"
    assert worker1.cluster_size("a") == 3
    assert worker1.check("c", "two.test", " ".join(tokens)).kind == "known"
    assert len(worker1.index) == 3
    if method == "minhash":  # the buckets are datasketch's own Redis storage layout
        signature = worker1.fingerprint(worker1.features(text))
        assert sorted(worker1.index.lsh.query(signature)) == ["a", "c"]


def test_compact_layout_shares_state_in_at_most_two_round_trips(redis_url):
    rng = random.Random(11)
    a, b, c, d, e = (doc_id_for(f"http://x.test/{i}") for i in range(5))
    worker1 = Deduplicator.from_settings(None, redis_url=redis_url, prefix="t-compact")
    worker2 = Deduplicator.from_settings(None, redis_url=redis_url, prefix="t-compact")
    assert isinstance(worker1.store, CompactRedisStore)
    trips = count_round_trips(worker2.store.redis)
    text = _article(rng, 800)
    first = worker1.check(a, "one.test", text)
    assert (first.kind, first.cluster_id, first.host_totals) == ("new", a, (1, 0))
    trips[0] = 0
    exact = worker2.check(b, "two.test", text)
    assert (exact.kind, exact.match, exact.cluster_id, exact.match_host) == (
        "exact", a, a, "one.test"
    )
    assert trips[0] == 2
    tokens = text.split()
    tokens[123] = "edited"
    trips[0] = 0
    near = worker2.check(c, "two.test", " ".join(tokens))
    assert (near.kind, near.match, near.cluster_id, near.match_host) == (
        "near", a, a, "one.test"
    )
    assert trips[0] == 2
    assert near.host_totals == (2, 0)  # two.test: two pages, neither a copy of its own
    other = _article(rng, 800)
    assert worker2.check(d, "two.test", other).host_totals == (3, 0)
    edited = other.split()
    edited[5] = "edited"
    own = worker1.check(e, "two.test", " ".join(edited))
    assert (own.kind, own.match, own.match_host, own.host_totals) == (
        "near", d, "two.test", (4, 1)
    )
    assert worker1.cluster_size(a) == 3 and worker1.cluster_size(d) == 2
    assert worker1.cluster_size(doc_id_for("http://x.test/none")) == 0
    trips[0] = 0
    again = worker2.check(c, "two.test", " ".join(tokens))
    assert (again.kind, again.cluster_id, again.host_totals) == ("known", a, None)
    assert trips[0] == 1
    assert worker1.store.lookup(c) == (a, "two.test")
    assert worker1.store.lookup(doc_id_for("http://x.test/none")) is None
    assert len(worker1.store) == 5
    short = worker1.check(doc_id_for("http://x.test/short"), "one.test", "a few words")
    assert short.kind == "new"
    with pytest.raises(ValueError, match="16-hex-digit"):
        worker1.check("not-an-id", "one.test", text)


def test_compact_layout_meets_the_targets_on_the_labelled_set(redis_url):
    pages = generate(articles=150, short_pages=40, seed=3)
    dedup = Deduplicator.from_settings(
        None,
        redis_url=redis_url,
        prefix="t-compact-set",
        compact_options={"partition_bits": partition_bits_for(len(pages))},
    )
    score = evaluate(dedup, pages)
    assert score.precision >= 0.99 and score.recall >= 0.95


def test_b_bit_signatures_estimate_jaccard():
    signatures = BitSignatures(128, 2)
    rng = np.random.default_rng(2)
    values = rng.integers(0, 2**32, 128, dtype=np.uint32)
    assert len(signatures.pack(values)) == 32
    assert np.array_equal(signatures.unpack(signatures.pack(values)), values & 3)
    other = values.copy()
    other[:64] = rng.integers(0, 2**32, 64, dtype=np.uint32)  # about half the values agree
    same, half = signatures.jaccard(values, [signatures.pack(values), signatures.pack(other)])
    assert same == 1.0 and 0.3 < half < 0.7


def test_pipeline_counts_hosts_through_the_compact_layout(redis_url):
    settings = {"REDIS_URL": redis_url, "DEDUP_REDIS_PREFIX": "t-pipe", "DEDUP_METHOD": "minhash"}
    crawler = get_crawler(settings_dict=settings)
    pipeline = DedupPipeline.from_crawler(crawler)
    assert isinstance(pipeline.dedup.store, CompactRedisStore)
    text = _article(random.Random(9), 600)
    first = pipeline.process_item(_item("http://a.test/1", "a.test", text))
    alias = pipeline.process_item(_item("http://a.test/2", "a.test", text))
    assert alias.dup_of == first.doc_id
    assert crawler.stats.get_value("dedup/exact") == 1


def _item(url: str, host: str, text: str) -> PageItem:
    return PageItem(url=url, fetched_url=url, host=host, status=200, fetched_at=0.0, text=text)


def test_pipeline_marks_aliases_and_clusters_and_counts_stats():
    crawler = get_crawler(settings_dict={"DEDUP_METHOD": "minhash"})
    pipeline = DedupPipeline.from_crawler(crawler)
    text = _article(random.Random(8), 600)
    first = pipeline.process_item(_item("http://a.test/1", "a.test", text))
    alias = pipeline.process_item(_item("http://b.test/1", "b.test", text))
    tokens = text.split()
    tokens[7] = "changed"
    near = pipeline.process_item(_item("http://c.test/1", "c.test", " ".join(tokens)))
    assert first.doc_id == doc_id_for("http://a.test/1")
    assert (first.cluster_id, first.dup_of) == (first.doc_id, "")
    assert (alias.cluster_id, alias.dup_of) == (first.doc_id, first.doc_id)
    assert (near.cluster_id, near.dup_of) == (first.doc_id, "")
    assert crawler.stats.get_value("dedup/exact") == 1
    assert crawler.stats.get_value("dedup/near") == 1
    assert crawler.stats.get_value("dedup/checked") == 3


def test_pipeline_is_switched_off_by_setting():
    with pytest.raises(NotConfigured):
        DedupPipeline.from_crawler(get_crawler(settings_dict={"DEDUP_ENABLED": False}))


@pytest.fixture
def frontier():
    from crawler.frontier.local import LocalFrontier

    frontier = LocalFrontier(None, **options(bloom_capacity=10_000))
    yield frontier
    frontier.close()


def _queue(frontier, urls: list[str]) -> dict:
    from crawler.frontier import Entry

    return frontier.add([Entry(url, url.split("/")[2]) for url in urls])


def test_trap_host_gets_its_budget_cut_once(frontier):
    crawler = get_crawler()
    pipeline = DedupPipeline(
        Deduplicator.from_settings(None), crawler.stats, cutter(frontier), host_min_pages=10,
        host_copy_ratio=0.8,
    )
    rng = random.Random(9)
    good = [(f"http://good.test/{i}", _article(rng, 300)) for i in range(12)]
    trap = calendar_trap("cal.test", 30)
    assert _queue(frontier, [url for url, _ in good] + [p.url for p in trap[:15]])["added"] == 27
    for url, text in good:
        pipeline.process_item(_item(url, "good.test", text))
    for page in trap[:15]:
        pipeline.process_item(_item(page.url, page.host, page.text))
    assert crawler.stats.get_value("dedup/host_budget_cut") == 1
    assert crawler.stats.get_value("dedup/host_trap") == 1
    # the cut is the 10 pages the trap had when it was caught: nothing more is queued
    assert _queue(frontier, [p.url for p in trap[15:]]) == {"added": 0, "seen": 0, "budget": 15,
                                                             "waiting": 0, "moved": 0}
    assert _queue(frontier, [f"http://good.test/{i}" for i in range(12, 20)])["added"] == 8


def test_mirror_of_another_host_is_not_a_trap(frontier):
    crawler = get_crawler()
    pipeline = DedupPipeline(Deduplicator.from_settings(None), crawler.stats, cutter(frontier),
                             host_min_pages=5, host_copy_ratio=0.8)
    rng = random.Random(10)
    for i in range(8):
        text = _article(rng, 300)
        pipeline.process_item(_item(f"http://orig.test/{i}", "orig.test", text))
        pipeline.process_item(_item(f"http://mirror.test/{i}", "mirror.test", text))
    assert crawler.stats.get_value("dedup/host_budget_cut") is None


def test_trap_is_counted_when_there_is_no_frontier():
    crawler = get_crawler()
    pipeline = DedupPipeline(Deduplicator.from_settings(None), crawler.stats, host_min_pages=10,
                             host_copy_ratio=0.8)
    for page in calendar_trap("cal.test", 12):
        pipeline.process_item(_item(page.url, page.host, page.text))
    assert crawler.stats.get_value("dedup/host_trap") == 1
    assert crawler.stats.get_value("dedup/host_budget_cut") is None


def cutter(frontier):
    def cut(host, budget):
        frontier.set_host_budget(host, budget)
        return True

    return cut


def test_budget_cut_without_a_frontier_scheduler_is_not_taken():
    crawler = get_crawler()  # no engine, so no FrontierScheduler (tests/test_hostile_crawl.py
    assert signal_budget_cut(crawler)("a.test:8080", 5) is False  # has the crawl's side)


@pytest.mark.slow
def test_crawl_of_the_mirror_hosts_clusters_near_copies(tmp_path):
    """Process level: crawl the test web's near-copy hosts with the content pipelines."""
    import json
    from itertools import combinations

    import testweb
    from crawler.urls import canonicalize
    from harness.crawlrun import run_crawl
    from index.engines.embedded.backend import EmbeddedBackend

    pipelines = {
        "crawler.quality.dedup.pipeline.DedupPipeline": 100,
        "pipelines.warc.WarcPipeline": 200,
        "pipelines.linkgraph.LinkGraphPipeline": 300,
        "pipelines.index.IndexPipeline": 900,
    }
    with testweb.run(hosts=1, pages=5, mirror_articles=30, seed=6) as web:
        labels = web.web.mirror_labels()
        result = run_crawl(
            tmp_path,
            [web.home_url(h) for h in web.web.mirror_hosts],
            settings={
                "ITEM_PIPELINES": json.dumps(pipelines),
                "DOWNLOAD_DELAY": 0.0,
                "CONTROL_STORE": "",
            },
            args={"allowed_hosts": "*news*.test"},
            timeout=150,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    backend = EmbeddedBackend(tmp_path / "index")
    backend.ensure_index()
    cluster = {}
    for url in labels:
        doc = backend.get(doc_id_for(canonicalize(url)))
        assert doc is not None, url  # no exact copies in the set: every page is indexed
        cluster[url] = doc.cluster_id
    backend.close()
    pairs = list(combinations(labels, 2))
    same = [(a, b) for a, b in pairs if labels[a] == labels[b]]
    assert len(same) >= 15
    assert sum(cluster[a] == cluster[b] for a, b in same) >= 0.95 * len(same)
    assert not [(a, b) for a, b in pairs if labels[a] != labels[b] and cluster[a] == cluster[b]]
    log = (tmp_path / "logs" / "crawl.log").read_text()
    near = len(labels) - len(set(labels.values()))
    assert f"'dedup/near': {near}," in log


def test_token_hash_cache_memory_is_bounded():
    import sys

    import xxhash

    from crawler.quality.dedup.text import _hash_cache, word_hashes

    tokens = [f"w{n:07d}" for n in range(300_000)]
    for start in range(0, len(tokens), 1000):
        word_hashes(tokens[start:start + 1000])
    size = sys.getsizeof(_hash_cache) + sum(
        sys.getsizeof(k) + sys.getsizeof(v) for k, v in _hash_cache.items()
    )
    assert size < 16 * 2**20
    assert int(word_hashes(["w0000001"])[0]) == xxhash.xxh3_64_intdigest(b"w0000001")


# -- cross-host mirrors -------------------------------------------------------------------

def _web_items(host: str, paths: list[str]) -> list[PageItem]:
    import testweb
    from crawler.extract import extract, page_item

    web = testweb.TestWeb(hosts=3, port=8000, pages_per_host=200)
    items = []
    for path in paths:
        url = web.url(host, path)
        page = extract(web.render(host, path).body.decode(), url)
        items.append(page_item(page, url, 200, 0.0))
    return items


class _Condemned(list):
    def __call__(self, host, netloc, reason):
        self.append((host, netloc, reason))


@pytest.mark.parametrize("mirror_first", [False, True])
def test_cross_host_mirror_cut_whichever_arrives_first(mirror_first, tmp_path):
    from crawler.quality.verdicts import LocalVerdictStore

    paths = ["/", *(f"/p/{i}" for i in range(40))]
    original, mirror = _web_items("site0.test", paths), _web_items("mirror.test", paths)
    condemned = _Condemned()
    verdicts = LocalVerdictStore(tmp_path / "v.sqlite3")
    pipe = DedupPipeline(Deduplicator.from_settings(None), condemn=condemned, verdicts=verdicts,
                         host_min_pages=20, host_copy_ratio=0.8, mirror_min_pages=30,
                         mirror_copy_ratio=0.8)
    first, second = (mirror, original) if mirror_first else (original, mirror)
    for a, b in zip(first, second, strict=True):  # two hosts crawled side by side
        pipe.process_item(a)
        pipe.process_item(b)
    assert condemned == [("mirror.test", "mirror.test:8000", "mirror")]
    assert pipe.mirrors == {"mirror.test": "site0.test"}
    (verdict,) = verdicts.for_host("mirror.test")
    assert verdict.label == "mirror of site0.test"
    assert verdict.detail["backlinks"] >= 25 and verdict.detail["original_backlinks"] == 0
    assert verdicts.for_host("site0.test") == []
    verdicts.close()


def _copy_of(items: list[PageItem], host: str) -> list[PageItem]:
    """The same pages served by ``host`` (a mirror without links back to the original)."""
    from dataclasses import replace

    from crawler.items import Link

    return [replace(item, url=item.url.replace(item.host, host),
                    fetched_url=item.fetched_url.replace(item.host, host), host=host, doc_id="",
                    links=[Link(link.url.replace(item.host, host), link.text)
                           for link in item.links])
            for item in items]


def test_copies_crawled_side_by_side_are_no_mirror_on_arrival_order_alone(tmp_path):
    """A real site and a copy of it without links back, seeded together: which copy of a
    page arrives first is a coin flip, no evidence to cut either host. Crawled after the
    original, the copy is the mirror; in a dry run its verdict is stored, not acted on."""
    from crawler.quality.verdicts import LocalVerdictStore

    original = _web_items("site1.test", [f"/p/{i}" for i in range(40)])
    copy = _copy_of(original, "copy.test")

    def pipeline(**options):
        condemned = _Condemned()
        verdicts = LocalVerdictStore(tmp_path / f"v{len(list(tmp_path.iterdir()))}.sqlite3")
        return DedupPipeline(Deduplicator.from_settings(None), condemn=condemned,
                             verdicts=verdicts, host_min_pages=20, host_copy_ratio=0.8,
                             mirror_min_pages=30, mirror_copy_ratio=0.8, **options)

    side_by_side = pipeline()
    for n, (a, b) in enumerate(zip(original, copy, strict=True)):
        for item in ((a, b) if n % 3 else (b, a)):
            side_by_side.process_item(item)
    assert side_by_side._condemn == [] and side_by_side.mirrors == {}
    # in lockstep, one host some steps behind the other: every copy of the laggard arrives
    # later, but the leader held few pages when the laggard's first copy came; a real site
    # was cut as its own mirror's mirror so (a lag of 8 pages was enough)
    for steps in (1, 10, 25):
        for lead, lag in ((original, copy), (copy, original)):
            lockstep = pipeline()
            for item in [*lead[:steps], *chain.from_iterable(
                    (*lead[n + steps:n + steps + 1], lag[n]) for n in range(len(lag)))]:
                lockstep.process_item(item)
            assert lockstep._condemn == [] and lockstep.mirrors == {}, steps
    for dry_run in (False, True):
        after = pipeline(dry_run=dry_run)
        for item in [*original, *_copy_of(original, "copy.test")]:
            after.process_item(item)
        assert after.mirrors == {"copy.test": "site1.test"}
        (verdict,) = after.verdicts.for_host("copy.test")
        assert verdict.action == ("dry_run" if dry_run else "budget_cut")
        assert after._condemn == ([] if dry_run else [("copy.test", "copy.test:8000",
                                                       "mirror")])


def test_distinct_hosts_are_no_mirrors():
    items = [*_web_items("site1.test", [f"/p/{i}" for i in range(40)]),
             *_web_items("site2.test", [f"/p/{i}" for i in range(40)])]
    condemned = _Condemned()
    pipe = DedupPipeline(Deduplicator.from_settings(None), condemn=condemned,
                         host_min_pages=20, host_copy_ratio=0.8, mirror_min_pages=30,
                         mirror_copy_ratio=0.8)
    for item in items:
        pipe.process_item(item)
    assert condemned == [] and pipe.mirrors == {}


def test_pair_counts_in_redis_match_memory(redis_url):
    from crawler.quality.dedup.store import MemoryDedupStore, RedisDedupStore

    memory, shared = MemoryDedupStore(), RedisDedupStore.from_url(redis_url, "pairs-test")
    for store in (memory, shared):
        store.count_host("m.test", False)
        store.count_shared("m.test", "o.test", True)
        store.count_shared("o.test", "m.test", False)
        counts = store.count_shared("m.test", "o.test", True)
        assert tuple(counts) == (3, 3, 2, 0, 2, 1)
        assert tuple(store.count_shared("x.test", "y.test", False, True)) == (1, 1, 0, 1, 1, 0)
        assert tuple(counts.flipped()) == (3, 3, 0, 2, 1, 2)
        assert store.host_pages("m.test") == 1


def test_pair_counts_in_the_compact_layout_match_memory(redis_url):
    """The mirror evidence (pages shared between two hosts, links back, arrival order) and
    the host page counts are kept by the compact Redis layout too (the default with Redis)."""
    dedup = Deduplicator.from_settings(None, redis_url=redis_url, prefix="pairs-compact")
    store = dedup.store
    assert isinstance(store, CompactRedisStore)
    dedup.check(doc_id_for("http://m.test/1"), "m.test", "a page of m.test " * 10)
    store.count_shared("m.test", "o.test", True)
    store.count_shared("o.test", "m.test", False)
    counts = store.count_shared("m.test", "o.test", True)
    assert tuple(counts) == (3, 3, 2, 0, 2, 1)
    assert tuple(store.count_shared("x.test", "y.test", False, True)) == (1, 1, 0, 1, 1, 0)
    assert store.host_pages("m.test") == 1 and store.host_pages("never.test") == 0


# -- the page shown for a cluster ---------------------------------------------------------

def test_election_takes_the_evidence_in_order_whatever_the_arrival_order():
    from crawler.quality.dedup.election import Member, elect

    original = Member("o", "http://site.test/guide", "site.test")
    copy = Member("m", "http://mirror.test/guide", "mirror.test")
    named = Member("c", "http://third.test/g", "third.test", canonical="o")
    links = {("m", "o")}
    for members in ([original, copy], [copy, original], [named, copy, original]):
        # linked to (and named) as the original
        assert elect(members, links=lambda a, b: (a, b) in links) == "o"
    lone = Member("x", "http://x.test/a-longer-path", "x.test")
    short = Member("y", "http://y.test/a", "y.test")
    assert elect([lone, short]) == "y"  # nothing else to go by: the shorter URL
    assert elect([lone, short], host_pages={"x.test": 40, "y.test": 3}.get) == "x"
    assert elect([lone, short], inlinks={"x": 0, "y": 5}.get,
                 host_pages={"x.test": 40, "y.test": 3}.get) == "y"


def test_a_later_member_with_better_evidence_takes_the_cluster():
    from crawler.quality.dedup.election import ClusterElection, Member

    election = ClusterElection(links=lambda a, b: (a, b) == ("m", "o"))
    first = election.add("k", Member("m", "http://mirror.test/guide", "mirror.test"))
    assert (first.shown, first.hidden) == ("m", ())
    second = election.add("k", Member("o", "http://site.test/guide", "site.test"))
    assert (second.shown, second.hidden) == ("o", ("m",))
    assert election.shown("k") == "o"


@pytest.mark.parametrize("mirror_first", [False, True])
def test_the_original_is_shown_whichever_host_arrives_first(mirror_first):
    paths = ["/", *(f"/p/{i}" for i in range(10))]
    original, mirror = _web_items("site0.test", paths), _web_items("mirror.test", paths)
    changes = []
    pipe = DedupPipeline(Deduplicator.from_settings(None), host_min_pages=20,
                         host_copy_ratio=0.8, elected=lambda cid, e: changes.append(e))
    first, second = (mirror, original) if mirror_first else (original, mirror)
    for a, b in zip(first, second, strict=True):
        pipe.process_item(a)
        pipe.process_item(b)
    for o, m in zip(original, mirror, strict=True):
        assert o.cluster_id == m.cluster_id and pipe.election.shown(o.cluster_id) == o.doc_id
        assert o.shown  # when it arrived
    # a mirror page shown until its original arrived gave way to it
    assert [e.hidden for e in changes] == ([(m.doc_id,) for m in mirror] if mirror_first
                                           else [])


def test_a_removed_page_leaves_its_clusters_election():
    from crawler.quality.dedup.election import ClusterElection, Election, Member

    election = ClusterElection()
    election.add("c", Member("old", "http://m.test/p/10", "m.test", ""))
    moved = election.add("c", Member("new", "http://m.test/moved/10", "m.test", ""))
    assert moved.shown == "old"  # the shorter URL, while both are held
    assert election.remove(["old"]) == [("c", Election("new"))]
    assert election.shown("c") == "new"
    assert election.remove(["new"]) == [] and election.shown("c") is None


def test_removal_finds_its_clusters_without_scanning_and_forgets_evicted_ones():
    from crawler.quality.dedup.election import ClusterElection, Election, Member

    election = ClusterElection(max_clusters=2)
    for cluster_id, doc_id in (("a", "p"), ("b", "q"), ("b", "r")):
        election.add(cluster_id, Member(doc_id, f"http://h.test/{doc_id}", "h.test"))
    election.add("c", Member("s", "http://h.test/s", "h.test"))  # "a" is forgotten
    assert election.shown("a") is None and "p" not in election._clusters_of
    assert election.remove(["p"]) == []
    assert election.remove(["q", "s"]) == [("b", Election("r"))]
    assert election._clusters_of == {"r": "b"}


def test_a_page_in_one_cluster_costs_no_set_of_its_own():
    """Nearly every page is the lone member of its cluster: the election keeps its cluster
    id as a string, not a 216-byte set of each."""
    from crawler.quality.dedup.election import ClusterElection, Member

    election = ClusterElection()
    for n in range(3):
        election.add(f"c{n}", Member(f"d{n}", f"http://h.test/{n}", "h.test"))
    assert election._clusters_of == {"d0": "c0", "d1": "c1", "d2": "c2"}
    election.add("c0", Member("d1", "http://h.test/1", "h.test"))  # d1 joins a second cluster
    assert election._clusters_of["d1"] == {"c0", "c1"}
    assert [c for c, _ in election.remove(["d0"])] == ["c0"]
    election.remove(["d1"])
    assert "d1" not in election._clusters_of and election.shown("c0") is None


def test_a_page_alone_in_the_cluster_named_after_it_is_kept_as_its_member_alone():
    """The usual case (a page no other is a copy of) costs one ``Member`` and the ordered
    dict's entry: no dict of members, no shown page, no member-to-clusters entry; a
    second member turns it into a cluster of several that elects as before."""
    from crawler.quality.dedup.election import ClusterElection, Election, Member

    election = ClusterElection(max_clusters=2)
    lone = Member("d0", "http://h.test/a-long-path", "h.test")
    assert election.add("d0", lone) == Election("d0")
    assert election._members["d0"] is lone and not election._shown
    assert not election._clusters_of and election.shown("d0") == "d0"
    again = Member("d0", "http://h.test/a-long-path", "h.test", canonical="d9")
    assert election.add("d0", again) == Election("d0")  # fetched again: replaced
    assert election._members["d0"] is again
    copy = election.add("d0", Member("d1", "http://h.test/b", "h.test"))
    assert copy == Election("d1", ("d0",))  # the shorter URL
    assert election._members["d0"].keys() == {"d0", "d1"}
    assert election._clusters_of == {"d1": "d0"} and election.shown("d0") == "d1"
    assert election.remove(["d1"]) == [("d0", Election("d0"))]
    election.add("d2", Member("d2", "http://h.test/2", "h.test"))
    election.add("d3", Member("d3", "http://h.test/3", "h.test"))  # "d0" is forgotten
    assert list(election._members) == ["d2", "d3"] and not election._shown
    assert election.shown("d0") is None
    assert election.remove(["d2"]) == [] and list(election._members) == ["d3"]


def test_the_pipeline_remembers_off_host_links_in_fixed_memory():
    """The mirror check's and the election's memory of which page links to which off-host
    page: fixed in size however many pages pass (``RecentKeys``), and still finding the
    links of the latest ones."""
    from crawler.items import Link
    from crawler.quality.dedup.election import doc_key

    pipe = DedupPipeline(Deduplicator.from_settings(None), host_min_pages=20,
                         host_copy_ratio=0.8)
    size = pipe._offhost.nbytes
    items = []
    for n in range(300):
        item = PageItem(url=f"http://a{n}.test/p", fetched_url=f"http://a{n}.test/p",
                        host=f"a{n}.test", status=200, fetched_at=0.0, title=f"page {n}",
                        text=f"words of page number {n} " * 20,
                        links=[Link(f"http://b{n}.test/q"), Link(f"http://a{n}.test/x")])
        items.append(pipe.process_item(item))
    assert pipe._offhost.nbytes == size
    first, last = items[0], items[-1]
    assert pipe.links(last.doc_id, doc_id_for("http://b299.test/q"))
    assert pipe.links(first.doc_id, doc_id_for("http://b0.test/q"))
    assert not pipe.links(last.doc_id, doc_id_for("http://a299.test/x"))  # same host
    assert pipe._inlinks.get(doc_key(doc_id_for("http://b7.test/q"))) == 1


def test_the_evaluation_reads_a_pages_title_as_a_crawl_does():
    """Two entry pages whose few words are the same ("Next Next") under other titles are
    not copies in the crawl (the exact key of a short text covers its title): the
    evaluation counts no false match there either."""
    from types import SimpleNamespace

    pages = [SimpleNamespace(url=f"http://nut.test/{name}.html", host="nut.test", label=name,
                             text="Next Next", title=title)
             for name, title in (("user", "NUT User Manual"), ("faq", "NUT FAQ"))]
    score = evaluate(Deduplicator.from_settings(None), pages)
    assert (score.true_pos, score.false_pos) == (0, 0)


def _regex_first_words(text: str, limit: int) -> tuple[list[str], str]:
    """``first_words`` by its definition: the regex's words of the lower-cased text."""
    tokens = re.findall(r"\w+", text.lower())
    if len(tokens) <= limit:
        return tokens, ""
    return tokens[:limit], " ".join(tokens[limit:]) + " "


def test_ascii_text_splits_into_the_words_the_regex_finds_in_it_lower_cased():
    every_byte = "".join(chr(b) for b in range(128))
    assert _ascii_words(every_byte) == re.findall(r"\w+", every_byte.lower())
    rnd = random.Random(7)
    alphabets = [every_byte, "aZ_9 \t\n\x0b\x1c\x1f'-.#"]
    for i in range(3000):
        text = "".join(rnd.choice(alphabets[i % 2]) for _ in range(rnd.randint(0, 120)))
        assert _ascii_words(text) == re.findall(r"\w+", text.lower()) == words(text)
        for limit in (15, 1000):  # 8 * 15 = 120: the whole text is read, 15 words or more
            assert first_words(text, limit) == _regex_first_words(text, limit)
