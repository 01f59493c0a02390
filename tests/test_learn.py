"""The ranking-weight fitter (batch/learn.py): it recovers known weights from synthetic
features in both engines' score forms, and the file it writes is what both engines load."""

from __future__ import annotations

import json

import numpy as np
import pytest

from batch.learn import (
    FeatureSet,
    FoldFitter,
    QueryFeatures,
    TrainingQuery,
    awake,
    beats,
    document_known_items,
    fit,
    item_key,
    mrr,
    write_weights,
)
from crawler.config import Config
from index.engines.elasticsearch.backend import ElasticsearchBackend
from index.engines.embedded.backend import EmbeddedBackend
from index.signals import FITTED_WEIGHTS_NAME, WEIGHTS_FILE, load_weights, weights_file_of

NAMES = ["bm25", "flag", "prior", "boost", "noise"]


def synthetic(engine: str, true: dict[str, float], queries: int = 600, candidates: int = 25,
              seed: int = 0) -> FeatureSet:
    """Queries whose known item is the best candidate under ``true`` weights, scored in
    ``engine``'s form (both engines': the weighted values summed, the text signal's value
    the text score over the best candidate's)."""
    rng = np.random.default_rng(seed)
    stages = ["text", "boost", "add", "boost", "add"]
    features = FeatureSet(engine, NAMES, stages, {n: 0.5 for n in NAMES} | {"bm25": 1.0})
    w = np.array([true[n] for n in NAMES])
    for q in range(queries):
        values = rng.random((candidates, len(NAMES)))
        values[:, 1] = rng.random(candidates) > 0.7
        text = rng.random(candidates) * 10
        values[:, 0] = text / text.max()
        scores = values @ w
        features.queries.append(QueryFeatures(TrainingQuery(f"q{q}", f"s.test/{q}", "s.test"),
                                              values, text, int(np.argmax(scores))))
    return features


@pytest.mark.parametrize("engine, true", [
    ("embedded", {"bm25": 1.0, "flag": 0.6, "prior": 0.3, "boost": 1.5, "noise": 0.0}),
    ("elasticsearch", {"bm25": 1.0, "flag": 0.4, "prior": 2.0, "boost": 0.8, "noise": 0.0}),
])
def test_fit_recovers_known_weights(engine, true):
    train = synthetic(engine, true)
    start = mrr(train, train.weights)
    result = fit(train, passes=6)
    assert result.start_mrr == pytest.approx(start)
    assert result.mrr > start + 0.1
    largest = max(true.values())
    for name, value in true.items():
        assert result.weights[name] == pytest.approx(value, rel=0.15, abs=0.05 * largest), \
            result.weights
    fresh = synthetic(engine, true, seed=1)
    assert mrr(fresh, result.weights) >= 0.97
    assert mrr(fresh, result.weights) > mrr(fresh, train.weights)


def test_fit_keeps_the_text_weight_and_fixed_signals_and_stays_non_negative():
    train = synthetic("embedded", {"bm25": 1.0, "flag": 0.6, "prior": 0.3, "boost": 1.5,
                                   "noise": 0.0})
    result = fit(train, fixed={"prior"})
    assert result.weights["bm25"] == 1.0
    assert result.weights["prior"] == 0.5
    assert min(result.weights.values()) >= 0.0
    assert result.mrr >= result.start_mrr


def test_a_signal_the_training_queries_say_nothing_about_keeps_its_weight():
    true = {"bm25": 1.0, "flag": 0.6, "prior": 0.3, "boost": 1.5, "noise": 0.0}
    train = synthetic("elasticsearch", true)
    for q in train.queries:
        q.values[:, 4] = 1.0  # the same for every candidate of a query
    result = fit(train, start={**train.weights, "noise": 7.0})
    assert result.weights["noise"] == 7.0  # not fitted, nor scaled with the others


def test_queries_whose_page_was_not_retrieved_count_as_misses():
    train = synthetic("embedded", {"bm25": 1.0, "flag": 0.0, "prior": 0.0, "boost": 0.0,
                                   "noise": 0.0}, queries=10)
    perfect = {"bm25": 1.0, "flag": 0.0, "prior": 0.0, "boost": 0.0, "noise": 0.0}
    assert mrr(train, perfect) == 1.0
    train.queries.append(QueryFeatures(TrainingQuery("lost", "s.test/x", "s.test"),
                                       np.zeros((1, len(NAMES))), np.zeros(1), None))
    assert mrr(train, perfect) == pytest.approx(10 / 11)
    assert fit(train).queries == 10
    assert train.only(["other.test"]).queries == []


def test_item_key_compares_pages_without_scheme_port_or_index_file():
    assert item_key("http://git.test:8080/docs/") == "git.test/docs/index.html"
    assert item_key("git.test/docs/index.html") == "git.test/docs/index.html"
    assert item_key("https://git.test/a.html?x=1") == "git.test/a.html"


class Page:
    def __init__(self, url, title, body):
        self.url, self.title, self.body = url, title, body
        self.host = url.split("/")[2]


def test_document_known_items_come_from_titles_and_bodies():
    pages = [Page(f"http://w.test/{i}.html", f"Widget {name} guide", body)
             for i, (name, body) in enumerate([
                 ("frobnicate", "frobnicate the sprocket sprocket with gears gears gears"),
                 ("polish", "polish the sprocket with wax wax and gears"),
                 ("assemble", "assemble the wax gears"),
             ])]
    made = document_known_items(pages, per_site=10)
    assert {q.site for q in made} == {"w.test"}
    by_url = {}
    for q in made:
        by_url.setdefault(q.url, []).append(q.query)
    assert "frobnicate" in by_url["http://w.test/0.html"]  # "widget", "guide": every title
    assert all("w" not in q.split() for q in (q.query for q in made))


def test_the_fitted_file_is_complete_and_both_engines_load_it(tmp_path):
    config = Config.from_env({"DATA_DIR": str(tmp_path)})
    hand = {e: load_weights(e) for e in ("embedded", "elasticsearch")}
    # No fitted file: the hand weights.
    assert weights_file_of("", tmp_path) is None
    assert EmbeddedBackend.from_config(config).ranker.weights == hand["embedded"]

    path = tmp_path / FITTED_WEIGHTS_NAME
    fitted = {**hand["embedded"], "label": 0.42, "lang": 0.0}
    write_weights(path, "embedded", fitted, {"training_queries": 3})
    data = json.loads(path.read_text())
    assert data["embedded"] == fitted
    assert data["elasticsearch"] == hand["elasticsearch"]  # not fitted: the hand weights
    assert data["_fitted"]["embedded"] == {"training_queries": 3}
    assert weights_file_of("", tmp_path) == path
    assert EmbeddedBackend.from_config(config).ranker.weights == fitted

    es_fitted = {**hand["elasticsearch"], "pagerank": 7.5}
    write_weights(path, "elasticsearch", es_fitted, {"training_queries": 4})
    data = json.loads(path.read_text())
    assert data["embedded"] == fitted  # kept from the file
    assert set(data["_fitted"]) == {"embedded", "elasticsearch"}
    es = ElasticsearchBackend("http://127.0.0.1:9", config=config)  # loading needs no cluster
    try:
        assert es.ranker.weights == es_fitted
    finally:
        es.client.close()
    # An explicit SEARCH_WEIGHTS_FILE wins; a backend built without a configuration
    # (tests, benchmarks) keeps the hand weights.
    assert weights_file_of(str(WEIGHTS_FILE), tmp_path) == WEIGHTS_FILE
    assert EmbeddedBackend(tmp_path / "other").ranker.weights == hand["embedded"]
    with pytest.raises(ValueError, match="hand weights"):
        write_weights(WEIGHTS_FILE, "embedded", fitted, {})


class Item:
    """A known item as the evaluation's generator makes it (``host/path`` target)."""

    def __init__(self, query, target):
        self.query, self.target, self.site = query, target, target.split("/", 1)[0]


def test_fold_fitter_fits_per_fold_from_the_engine_and_writes_a_loadable_file(tmp_path):
    from index.base import Document

    backend = EmbeddedBackend(tmp_path / "index")
    backend.ensure_index()
    topics = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    docs = [Document(id=f"{site}{n}", url=f"http://{site}/{t}.html", host=site,
                     title=f"{t} guide", body=f"{t} {t} notes about {t} and more words")
            for site in ("a.test", "b.test") for n, t in enumerate(topics)]
    backend.index(docs)
    backend.refresh()
    items = [Item(f"{t} guide", f"{site}/{t}.html")
             for site in ("a.test", "b.test") for t in topics]
    hand = backend.ranker.weights
    fitter = FoldFitter(EmbeddedBackend(tmp_path / "index", rank_weights=awake(hand)),
                        tmp_path / "folds", start=hand, per_site=4)
    fold = fitter(["a.test"], items)
    assert fold.seen_sites == frozenset()
    assert len(fitter._seen) == 4 and {k[1].split("/")[0] for k in fitter._seen} == {"a.test"}
    data = json.loads(fold.weights_file.read_text())
    assert data["_fitted"]["embedded"]["train_sites"] == ["a.test"]
    loaded = EmbeddedBackend(tmp_path / "index", weights_file=str(fold.weights_file))
    assert loaded.ranker.weights == data["embedded"]
    assert set(data["embedded"]) == set(hand)
    other = fitter(["a.test", "b.test"], items)
    assert len(fitter._seen) == 8  # a.test's queries are not collected again
    assert other.weights_file != fold.weights_file
    backend.close()


def test_beats_needs_a_gain_above_the_noise():
    hand = np.array([1.0, 0.5, 0.0, 1.0] * 50)
    assert beats(np.where(hand == 0.5, 1.0, hand), hand)  # 50 queries gain, none lose
    moved = hand.copy()
    moved[0], moved[1] = 0.5, 1.0  # one gains, one loses more: no gain
    assert not beats(moved, hand)
    few = hand.copy()
    few[2] = 1.0  # one query of 200 moving is noise
    assert not beats(few, hand)
    assert not beats(hand, hand)
