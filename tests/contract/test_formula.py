"""The score formula is one (index/formula.py): weights fitted by batch/learn.py are
ranked with, on every engine, by exactly the formula the fitter fitted them under,
demotions included."""

from __future__ import annotations

import numpy as np
import pytest

from batch.learn import TrainingQuery, awake, collect, engine_of, fit, reciprocal_ranks
from index.formula import formula_for
from index.signals import load_weights
from tests.contract.conftest import BACKENDS, doc

TOPICS = ["kayak", "lantern", "marble", "nutmeg", "oyster", "pepper", "quartz", "raisin"]


def _pages() -> list:
    """Per topic: a stuffed spam page that wins on text alone, the page the topic's query is
    about (alike but for spam), and pages that mention the topic in passing."""
    pages = []
    for n, topic in enumerate(TOPICS):
        pages += [
            doc(f"http://spam{n}.test/{topic}", f"{topic} {topic} deals",
                f"{topic} best {topic} cheap {topic} " * 6, spam_score=0.75, lang="en"),
            doc(f"http://good{n}.test/{topic}", f"About the {topic}",
                f"What a {topic} is, and how the {topic} is used.", lang="en"),
            doc(f"http://other{n}.test/a/{topic}", "Miscellany",
                f"a list of things: {topic}, rope, paper, glue", lang="fr"),
            doc(f"http://other{n}.test/b/{topic}/notes", f"Notes on {topic}",
                f"notes that mention the {topic} once", pagerank=0.25),
        ]
    return pages


QUERIES = [TrainingQuery(f"{topic} {topic}" if n % 2 else topic,
                         f"http://good{n}.test/{topic}", f"good{n}.test")
           for n, topic in enumerate(TOPICS)]


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_engines_rank_with_the_formula_the_fitter_fitted(request, backend_name):
    make = request.getfixturevalue(f"make_{backend_name}_backend")
    probe = make()
    engine = engine_of(probe)
    probe.close()
    start = {**load_weights(engine), "spam": 0.0}  # the fit must find the demotion
    collecting, fitted_backend = make(rank_weights=awake(start)), None
    try:
        collecting.ensure_index()
        collecting.index(_pages())
        collecting.refresh()
        features = collect(collecting, QUERIES, depth=10, start=start)
        assert features.found == len(QUERIES)
        result = fit(features, passes=4)
        weights = result.weights
        assert weights["spam"] > 0 and result.mrr == 1.0 > result.start_mrr, result

        fitted_backend = make(rank_weights=weights)
        fitted_backend.ensure_index()
        fitted_backend.index(_pages())
        fitted_backend.refresh()
        formula = formula_for(engine)
        names = features.names
        stages = features.stages
        w = np.array([weights[n] for n in names])
        predicted = reciprocal_ranks(features, weights)
        demoted = 0
        for training, expected in zip(QUERIES, predicted, strict=True):
            hits = fitted_backend.search(training.query, size=10, explain=True).hits
            # each hit's score is the formula's, from its explained values
            values = np.array([[h.explain[n]["value"] for n in names] for h in hits])
            raw = np.array([h.explain["bm25"]["raw"] for h in hits])
            scores = formula.scores(stages, w, values, raw)
            assert [h.score for h in hits] == pytest.approx(scores.tolist(), rel=1e-4), \
                training.query
            demoted += sum(h.explain["spam"]["factor"] < 1 for h in hits)
            # the engine puts the page where the fitter said it would
            rank = next(i for i, h in enumerate(hits) if h.url == training.url) + 1
            assert 1 / rank == pytest.approx(expected), training.query
        assert demoted >= len(QUERIES)
    finally:
        collecting.close()
        if fitted_backend is not None:
            fitted_backend.close()
