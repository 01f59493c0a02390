"""Text features computed by the extraction workers: the values the dedup and quality
pipelines would compute themselves, so their verdicts do not change."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import testweb
from crawler.extract import item_from_response
from crawler.extractpool import ExtractPool
from crawler.hostrules import HostRules
from crawler.options import setting, settings_to_options
from crawler.quality.dedup.core import Deduplicator
from crawler.quality.dedup.pipeline import DedupPipeline
from crawler.quality.features import DedupFeatures, DedupSpec, item_with_features
from crawler.quality.judges import SpamJudge, TemplateTraps, template_shingles, text_stats
from crawler.quality.pipeline import QualityPipeline

PORT = 8000


@pytest.fixture(scope="module")
def web():
    return testweb.TestWeb(hosts=2, port=PORT, pages_per_host=60)


@pytest.fixture(scope="module")
def pool():
    pool = ExtractPool(2, partial(item_with_features,
                                  features=Deduplicator.from_settings(None).spec()))
    yield pool
    pool.close()


def responses(web) -> list[dict]:
    """Pages of every kind the judges see: a site and its mirror (near-duplicates), an exact
    copy, a calendar
    (a template trap), two spam hosts, a soft 404."""
    wanted = [("site0.test", f"/p/{i}") for i in range(12)]
    wanted += [("mirror.test", f"/p/{i}") for i in range(12)]
    wanted += [("events.test", f"/2026/03/{d:02d}/") for d in range(1, 13)]
    spam_paths = ["/", *(f"/p/{i}" for i in range(24))]  # a spam verdict's sample and more
    wanted += [(host, p) for host in ("stuffing.test", "hidden.test") for p in spam_paths]
    wanted += [("deadlinks.test", "/moved/1")]
    out = []
    for host, path in wanted:
        response = web.render(host, path, {"User-Agent": "websearch-bot/0.1"})
        if response.status == 200:
            out.append({"url": web.url(host, path), "status": 200, "body": response.body,
                        "fetched_at": 1.0, "content_type": "text/html; charset=utf-8"})
    return [*out, {**out[0], "url": out[0]["url"] + "?copy=1"}]  # an exact duplicate


def test_template_shingles_are_the_same_in_every_process():
    text = "Calendar for 2026-03-01: nothing planned. Calendar for March, day 1, 2026."
    pool = ExtractPool(1)
    try:
        theirs = pool.call(template_shingles, text=text).result(timeout=60)
    finally:
        pool.close()
    assert len(theirs) > 3
    assert np.array_equal(theirs, template_shingles(text))


def test_template_shingles_of_split_words_fold_digits_as_of_the_text():
    from crawler.quality.dedup.text import words

    for text in ("Calendar for 2026-03-01: nothing planned. Calendar for March, day 1, 2026.",
                 "Release 2.19.0 of v2beta3 on x86_64, then 2.19.1", "one 2", "3 4 5", ""):
        split = words(text)
        assert np.array_equal(template_shingles(text, words=split), template_shingles(text))
        assert np.array_equal(template_shingles(text, words=split),
                              template_shingles(text, words=split))  # the cached hashes


def test_features_from_the_workers_are_what_the_pipelines_compute(web, pool):
    dedup = Deduplicator.from_settings(None)
    for response in responses(web)[:30]:
        _, item = pool.run(**response).result(timeout=60)
        features = item.text_features
        assert features is not None
        mine = dedup.features(item.text)
        theirs = features.dedup
        assert theirs.spec == dedup.spec()
        assert (theirs.exact_key, theirs.tokens) == (mine.exact_key, mine.tokens)
        if mine.fingerprint is None:
            assert theirs.fingerprint is None
        else:
            assert np.array_equal(theirs.fingerprint, mine.fingerprint)
        assert np.array_equal(features.template_shingles, template_shingles(item.text))
        assert features.stats == text_stats(item.title, item.text)


def judged(items) -> list[tuple]:
    """What the dedup and quality pipelines decide of ``items``, page by page, with what
    they send to the crawl."""
    sent = []
    dedup = DedupPipeline(Deduplicator.from_settings(None), host_min_pages=10,
                          host_copy_ratio=0.5, mirror_min_pages=10, mirror_copy_ratio=0.8,
                          condemn=lambda *args: sent.append(("condemn", args)))
    quality = QualityPipeline(
        TemplateTraps(**settings_to_options({}, TemplateTraps.SETTINGS)),
        SpamJudge(**settings_to_options({}, SpamJudge.SETTINGS)),
        send=lambda name, **kwargs: sent.append((name, kwargs)),
        host_rules=HostRules.static([]), max_hosts=setting({}, "QUALITY_MAX_HOSTS", int),
        max_probes=setting({}, "QUALITY_MAX_PENDING_PROBES", int))
    decided = []
    for item in items:
        item = quality.process_item(dedup.process_item(item))
        decided.append((item.url, item.cluster_id, item.dup_of, item.shown, item.skip_index,
                        item.spam_score))
    return decided, sent


def test_pipelines_decide_the_same_with_features_from_the_workers(web, pool):
    pages = responses(web)
    pooled = [f.result(timeout=60)[1] for f in [pool.run(**p) for p in pages]]
    inline = [item_from_response(**p)[1] for p in pages]
    assert all(item.text_features is not None for item in pooled)
    assert all(item.text_features is None for item in inline)
    (decided, sent), without = judged(pooled), judged(inline)
    assert (decided, sent) == without
    assert {"condemn", "pattern_trapped", "host_condemned", "soft_404_found"} <= {
        name for name, _ in sent}
    assert any(dup_of for _, _, dup_of, *_ in decided)
    assert len({cluster for _, cluster, *_ in decided}) < len(decided) - 1  # near-copies too
    assert any(spam_score for *_, spam_score in decided)


def test_features_under_other_dedup_settings_are_not_used():
    dedup = Deduplicator.from_settings(None)
    texts = ["one text of its own words", "another text, other words"]

    def kinds(spec: DedupSpec) -> list[str]:
        claimed = DedupFeatures(spec, "the same key", 5)
        return [dedup.check(f"d{spec.method}{i}", "a.test", text, claimed).kind
                for i, text in enumerate(texts)]

    assert kinds(dedup.spec()) == ["new", "exact"]  # used: the same key is a duplicate
    assert kinds(DedupSpec("simhash", 3, 5, 1000)) == ["new", "new"]  # ignored


def test_the_pool_computes_features_only_for_the_pipelines_that_run():
    def function(**settings):
        return ExtractPool.from_settings({"EXTRACT_WORKERS": 0, **settings}).function

    assert function().keywords["features"] == Deduplicator.from_settings(None).spec()
    assert function(DEDUP_ENABLED=False).keywords["features"] is None
    plain = function(DEDUP_ENABLED=False, QUALITY_ENABLED=False, PAGE_MAX_WORDS=7)
    # the setting is read here, not in a worker (which would import Scrapy with it)
    assert plain.func is item_from_response and plain.keywords == {"max_words": 7}
