"""Semantic matching on every engine (``SEARCH_SEMANTIC``, index/semantic.py): a page is
indexed without vectors, the embedding batch (batch/embed.py) embeds its sections and
stores them with it, and a query's first results are then ordered by their engine score
relative to the first's plus their best section's similarity to the query, the same on
both engines; until then, and off, the ranking is the engine's."""

from __future__ import annotations

import pytest

from batch.embed import EmbedSettings, embed_pending
from index.semantic import TRANSFORMER, linear_fusion, section_match
from tests.contract.conftest import BACKENDS, doc, urls


def run_batch(backend, budget: int = 1000, group: int = 64):
    """The embedding batch over ``backend`` with its own options."""
    return embed_pending(backend, backend.semantic.match(), EmbedSettings(budget, group))

FILLER = "Some words about unrelated matters, said at some length here. " * 5
PAGES = [
    doc("http://p.test/ship", "Moving a box",
        "Move the box of my plot of land; the legend on the box says fragile. How do I ship "
        "it? " + FILLER),
    doc("http://p.test/keys", "Plot options",
        "Plot options.\nKey\nTo move the legend box of a plot use the key command: it sets "
        "where the box explaining each curve is drawn, outside, below or left of the graph. "
        + FILLER, sections=((14, "key", "Key"),)),
    doc("http://p.test/myth", "Folk tales: the legend of the box",
        "In the old legend a giant had to move a box across the sea. The plot of this "
        "legend: move the box, lose the box. My legend, my plot, my box. " + FILLER),
]
QUESTION = "how do I move the legend box of my plot"


@pytest.fixture(scope="module", params=BACKENDS)
def engines(request):
    """Two backends of one engine holding ``PAGES``: semantic matching off and on."""
    make = request.getfixturevalue(f"make_{request.param}_backend")
    made = {}
    for semantic in (False, True):
        backend = made[semantic] = make(semantic=semantic, semantic_sections=4,
                                        semantic_depth=30)
        backend.ensure_index()
        backend.index([doc(p.url, p.title, p.body, sections=p.sections) for p in PAGES])
        backend.refresh()
        run_batch(backend)
    yield made
    for backend in made.values():
        backend.close()


def test_sections_are_embedded_only_when_on(engines):
    keys = PAGES[1]
    assert engines[False].get(keys.id).vectors == ""
    stored = engines[True].get(keys.id).vectors
    # the model's version, then the opening and the one section, 384 int8 values each, base64
    version, _, packed = stored.partition(":")
    assert version == TRANSFORMER and len(packed) == 2 * 384 * 4 // 3
    assert engines[True].unembedded(10, TRANSFORMER) == []
    assert sorted(engines[False].unembedded(10, TRANSFORMER)) == sorted(p.id for p in PAGES)


def fused(off, on, query: str = QUESTION, model: str = "transformer",
          rewritten: bool = False) -> list[str]:
    """The order semantic matching gives ``query`` on ``on``: its results in the engine's
    order (``off``'s; by the engine score each hit carries, which an index the batch wrote
    vectors into may hold a little otherwise: Elasticsearch counts the replaced copies in
    its term statistics until it merges them, so for an index ``rewritten`` more than once
    the order of those scores) and the best sections' similarity to it of the pages
    holding this model's vectors."""
    match = section_match(4, 30, model)
    encoded = match.encoder.encode([query])[0]
    scored = {h.url: h.score for h in on.search(query).hits}
    plain = urls(off.search(query))
    if rewritten:
        assert sorted(scored) == sorted(plain)
        plain = sorted(scored, key=lambda url: -scored[url])
    assert sorted(scored, key=lambda url: -scored[url]) == plain
    stored = {p.url: on.get(p.id).vectors for p in PAGES}
    similar = {url: match.best(v, encoded) for url, v in stored.items() if match.holds(v)}
    return linear_fusion([(url, scored[url]) for url in plain], similar)


@pytest.mark.parametrize("name", BACKENDS)
def test_a_page_indexed_without_vectors_is_ranked_as_the_engine_ranks_it(request, name):
    """Indexing embeds nothing (the crawl's path); the question keeps the engine's order
    until the batch runs, then the fused one, and the batch's second run has nothing to
    do."""
    make = request.getfixturevalue(f"make_{name}_backend")
    off, on = (make(semantic=semantic, semantic_sections=4, semantic_depth=30)
               for semantic in (False, True))
    for backend in (off, on):
        backend.ensure_index()
        backend.index([doc(p.url, p.title, p.body, sections=p.sections) for p in PAGES])
        backend.refresh()
    try:
        plain = urls(off.search(QUESTION))
        assert all(on.get(p.id).vectors == "" for p in PAGES)
        assert sorted(on.unembedded(10, TRANSFORMER)) == sorted(p.id for p in PAGES)
        assert urls(on.search(QUESTION)) == plain
        report = run_batch(on)
        assert (report.embedded, report.windows, report.more) == (3, 6, False)
        assert all(on.get(p.id).vectors for p in PAGES)
        assert urls(on.search(QUESTION)) == fused(off, on) != plain
        assert run_batch(on).embedded == 0
        # the page indexed again (a recrawl) has no vectors until the next run
        on.index([doc(PAGES[1].url, PAGES[1].title, PAGES[1].body, sections=PAGES[1].sections)])
        on.refresh()
        assert on.unembedded(10, TRANSFORMER) == [PAGES[1].id]
        assert run_batch(on).embedded == 1 and on.unembedded(10, TRANSFORMER) == []
    finally:
        off.close()
        on.close()


@pytest.mark.parametrize("name", BACKENDS)
def test_a_model_switch_is_embedded_again_and_never_mixed(request, name):
    """Pages embedded by one model (the static vectors), then the setting switched to the
    transformer: the batch lists every page and embeds it again. Until it has, a question
    keeps the engine's order (its vector, the transformer's, is never compared with the
    static ones); half-way, only the pages embedded again are re-ranked."""
    make = request.getfixturevalue(f"make_{name}_backend")
    reopen = request.getfixturevalue(f"reopen_{name}_backend")
    options = {"semantic": True, "semantic_sections": 4, "semantic_depth": 30}
    off, static = make(semantic=False), make(**options, semantic_model="static")
    for backend in (off, static):
        backend.ensure_index()
        backend.index([doc(p.url, p.title, p.body, sections=p.sections) for p in PAGES])
        backend.refresh()
    assert run_batch(static).embedded == 3
    static.close()
    switched = reopen(static, **options)  # SEARCH_SEMANTIC_MODEL = "transformer"
    switched.ensure_index()
    try:
        plain = urls(off.search(QUESTION))
        assert all(switched.get(p.id).vectors.startswith("static-256:") for p in PAGES)
        assert sorted(switched.unembedded(10, TRANSFORMER)) == sorted(p.id for p in PAGES)
        assert switched.unembedded(10, "static-256") == []
        assert urls(switched.search(QUESTION)) == plain
        partial = run_batch(switched, budget=1)
        assert (partial.embedded, partial.more) == (1, True)
        (first,) = [p for p in PAGES if switched.get(p.id).vectors.startswith(TRANSFORMER)]
        assert urls(switched.search(QUESTION)) == fused(off, switched, rewritten=True)
        assert run_batch(switched).embedded == 2
        assert switched.unembedded(10, TRANSFORMER) == []
        assert urls(switched.search(QUESTION)) == fused(off, switched, rewritten=True) != plain
    finally:
        off.close()
        switched.close()


@pytest.mark.parametrize("name", BACKENDS)
def test_the_batch_resumes_after_an_interruption(request, name):
    """A run killed after its first group keeps that group's vectors; the next run embeds
    the rest and only them. A budget stops a run early and says pages are left."""
    backend = request.getfixturevalue(f"make_{name}_backend")(
        semantic=True, semantic_sections=4, semantic_depth=30)
    backend.ensure_index()
    pages = [doc(f"http://r.test/{i}", f"Page {i}", f"Words of page {i} about boxes. " * 20)
             for i in range(7)]
    backend.index(pages)
    backend.refresh()

    class Killed(Exception):
        pass

    def kill(report):
        raise Killed

    try:
        with pytest.raises(Killed):
            embed_pending(backend, backend.semantic.match(), EmbedSettings(1000, 3), kill)
        assert len(backend.unembedded(10, TRANSFORMER)) == 4
        partial = run_batch(backend, budget=2, group=3)
        assert (partial.embedded, partial.more) == (2, True)
        assert len(backend.unembedded(10, TRANSFORMER)) == 2
        assert run_batch(backend, group=3).embedded == 2
        assert backend.unembedded(10, TRANSFORMER) == []
        assert all(backend.get(p.id).vectors for p in pages)
    finally:
        backend.close()


def test_the_page_whose_section_answers_moves_up(engines):
    plain, semantic = (urls(engines[on].search(QUESTION)) for on in (False, True))
    assert plain[0] == "http://p.test/ship" and len(plain) == 3
    # the key command's section is the closest to the question, the shipping note's the
    # farthest: the first page passes one whose score is within the similarities' gap
    match = section_match(4, 30)
    encoded = match.encoder.encode([QUESTION])[0]
    similar = {p.url: match.best(engines[True].get(p.id).vectors, encoded) for p in PAGES}
    closest = sorted(similar, key=lambda url: -similar[url])
    assert closest[0] == "http://p.test/keys" and closest[-1] == "http://p.test/ship"
    assert semantic == fused(engines[False], engines[True])
    assert semantic[0] == "http://p.test/keys" != plain[0]
    assert "pending" not in engines[True].search(QUESTION).extra


def test_pages_of_the_fused_order_follow_each_other(engines):
    whole = urls(engines[True].search(QUESTION))
    paged = [u for page in (1, 2, 3) for u in urls(engines[True].search(QUESTION, page, 1))]
    assert paged == whole
    assert engines[True].search(QUESTION, 1, 1).total == 3


@pytest.fixture(scope="module", params=BACKENDS)
def static_engines(request):
    """Three backends of one engine holding ``PAGES``: semantic matching off, on with the
    static token vectors, and on with them for question-shaped queries only."""
    make = request.getfixturevalue(f"make_{request.param}_backend")
    made = [make(semantic=False),
            *(make(semantic=True, semantic_sections=4, semantic_depth=30,
                   semantic_model="static", semantic_queries=queries)
              for queries in ("all", "questions"))]
    for backend in made:
        backend.ensure_index()
        backend.index([doc(p.url, p.title, p.body, sections=p.sections) for p in PAGES])
        backend.refresh()
        run_batch(backend)
    yield made
    for backend in made:
        backend.close()


def test_static_vectors_rerank_alike_on_every_engine(static_engines):
    from index.semantic import unpack

    off, on, _ = static_engines
    match = section_match(4, 30, "static")
    stored = {p.url: on.get(p.id).vectors for p in PAGES}
    # tagged, 256 int8 values a window: never read as the transformer's vectors
    assert all(v.startswith("static-256:") for v in stored.values())
    assert unpack(stored[PAGES[1].url], 384).shape == (0, 384)
    query = match.encoder.encode([QUESTION])[0]
    closest = sorted(stored, key=lambda url: -match.best(stored[url], query))
    plain = urls(off.search(QUESTION))
    assert closest[0] != plain[0]  # the fusion has something to do
    assert urls(on.search(QUESTION)) == fused(off, on, model="static")


# framed by "my", but two words of topic are too few for a question (Query.question)
NOT_A_QUESTION = "box of my plot"


def test_questions_only_reranks_question_shaped_queries(static_engines):
    from index.query import parse

    off, on, questions = static_engines
    assert parse(QUESTION).question and not parse(NOT_A_QUESTION).question
    # a question is re-ranked as by semantic matching of every query ...
    assert urls(questions.search(QUESTION)) == urls(on.search(QUESTION)) != urls(
        off.search(QUESTION))
    # ... and any other query keeps the engine's order, where every query's matching moves it
    assert urls(on.search(NOT_A_QUESTION)) != urls(off.search(NOT_A_QUESTION))
    assert urls(questions.search(NOT_A_QUESTION)) == urls(off.search(NOT_A_QUESTION))


# the question's words with a call's parentheses, as a program writes them
PASTED_QUESTION = "how do I move the legend box of my plot()"


def test_a_question_pasted_from_a_program_keeps_the_engine_order(static_engines):
    from index.query import looks_pasted, parse

    off, on, questions = static_engines
    assert parse(PASTED_QUESTION).question and looks_pasted(parse(PASTED_QUESTION))
    assert urls(on.search(PASTED_QUESTION)) != urls(off.search(PASTED_QUESTION))
    assert urls(questions.search(PASTED_QUESTION)) == urls(off.search(PASTED_QUESTION))


# the question's words after a program's name and an error code and a colon, as a message
# is printed
PRINTED_QUESTION = "Error 12: how do I move the legend box of my plot"


def test_a_message_as_a_program_prints_it_keeps_the_engine_order(static_engines):
    from index.query import looks_pasted, parse

    off, on, questions = static_engines
    assert parse(PRINTED_QUESTION).question and not looks_pasted(parse(PRINTED_QUESTION))
    assert urls(on.search(PRINTED_QUESTION)) != urls(off.search(PRINTED_QUESTION))
    assert urls(questions.search(PRINTED_QUESTION)) == urls(off.search(PRINTED_QUESTION))


# the question's topic written as a sentence, with no word framing it as a question
# (query.is_sentence), and the same words typed as keywords
SENTENCE = "the box explaining each curve is drawn over the plot"
KEYWORDS = "box explaining each curve drawn over plot"


def test_a_sentence_is_reranked_as_a_question(static_engines):
    from index.query import is_sentence, parse

    off, on, questions = static_engines
    assert is_sentence(parse(SENTENCE)) and parse(SENTENCE).question
    assert not parse(KEYWORDS).question
    assert urls(questions.search(SENTENCE)) == urls(on.search(SENTENCE)) != urls(
        off.search(SENTENCE))
    assert urls(questions.search(KEYWORDS)) == urls(off.search(KEYWORDS))


# Forty pages holding a question's words, each a little more often than the one after it
# (the engine ranks them about in that order), and a page answering it in other words.
DEEP_PAGES = [
    doc(f"http://deep.test/tale{i}", f"Tale {i}: the legend of the box",
        f"Tale {i}. " + "The legend tells how a giant had to move a box; the plot turns on "
        "the box. " * (40 - i) + FILLER)
    for i in range(40)
] + [doc("http://deep.test/key", "Graph options",
         "Graph options. The key command sets where the box explaining each curve is drawn: "
         "use it to move that legend outside, below or left of the plot. " + FILLER)]


@pytest.mark.parametrize("name", BACKENDS)
def test_the_first_search_semantic_depth_results_are_reranked(request, name):
    """A question's first ``SEARCH_SEMANTIC_DEPTH`` (60) results are re-ranked, on both
    engines: its first four pages of 10 are ordered by :func:`linear_fusion` over all 41
    results, where a depth of 30 re-ranks the first 30 and leaves the 31st to 40th in the
    engine's order."""
    from crawler.settings import SEARCH_SEMANTIC_DEPTH

    make = request.getfixturevalue(f"make_{name}_backend")
    shallow, deep = make(semantic=True, semantic_depth=30), make(semantic=True)
    try:
        for backend in (shallow, deep):
            backend.ensure_index()
            backend.index([doc(p.url, p.title, p.body) for p in DEEP_PAGES])
            backend.refresh()
            run_batch(backend)
        assert SEARCH_SEMANTIC_DEPTH == deep.semantic.depth == 60
        match = section_match(4, 30, "transformer")
        encoded = match.encoder.encode([QUESTION])[0]
        for backend, depth in ((shallow, 30), (deep, 60)):
            pages = [backend.search(QUESTION, page=page, size=10) for page in (1, 2, 3, 4, 5)]
            hits = [h for results in pages for h in results.hits]
            assert len(hits) == len(DEEP_PAGES)
            engine = sorted(hits, key=lambda h: -h.score)
            similar = {h.url: match.best(backend.get(h.id).vectors, encoded) for h in hits}
            expected = linear_fusion([(h.url, h.score) for h in engine[:depth]], similar)
            expected += [h.url for h in engine[depth:]]
            assert [h.url for h in hits[:40]] == expected[:40]
            if depth == 30:
                shallow_order = expected
        assert expected != shallow_order and expected[30:] != shallow_order[30:]
    finally:
        for backend in (shallow, deep):
            backend.close()


# an index of names (Sphinx's genindex): each entry a name and its page's first words,
# close to every question about those pages, the answer to none
NAME_INDEX = doc("http://p.test/genindex.html", "Index — Plot 1.0 documentation",
                 "key (command): move the legend box of a plot. legend: the box of the "
                 "plot's curves. move: see key. plot: draw a graph. box: see key.")


@pytest.mark.parametrize("name", BACKENDS)
def test_an_index_of_names_is_not_embedded(request, name):
    import numpy as np

    from index.semantic import unpack

    backend = request.getfixturevalue(f"make_{name}_backend")(
        semantic=True, semantic_sections=4, semantic_depth=30)
    try:
        backend.ensure_index()
        backend.index([doc(p.url, p.title, p.body, sections=p.sections)
                       for p in (*PAGES, NAME_INDEX)])
        backend.refresh()
        run_batch(backend)
        # one zero vector marks it embedded: its similarity to any question is 0
        stored = unpack(backend.get(NAME_INDEX.id).vectors, 384)
        assert stored.shape == (1, 384) and not np.any(stored)
        found = urls(backend.search(QUESTION))
        assert found.index("http://p.test/keys") < found.index(NAME_INDEX.url)
    finally:
        backend.close()
