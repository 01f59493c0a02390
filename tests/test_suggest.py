"""Did-you-mean for the embedded index (index/engines/embedded/suggest.py): one-edit corrections by
doc frequency."""

from index.analysis import analyze
from index.engines.embedded.suggest import EditSuggester, edits1

VOCABULARY = {"zebra": 9, "zebu": 2, "striped": 4, "running": 3, "africa": 5}
DF = {analyze(word)[0]: n for word, n in VOCABULARY.items()}


def doc_freq(term: str) -> int:
    return DF.get(term, 0)


def test_edits1_covers_the_four_edits():
    variants = set(edits1("zebar"))
    assert {"zebr", "zebra", "zebara", "zebax"} <= variants  # delete, transpose, insert, replace
    assert "zzebra" not in variants


def test_unknown_words_are_corrected_in_place():
    suggester = EditSuggester(doc_freq)
    assert suggester.suggest("zebar") == "zebra"
    fixed = suggester.suggest("Stripped ZEBAR site:a.test -lion")
    assert fixed == "striped zebra site:a.test -lion"
    assert suggester.suggest("zebra africa") is None  # every word is known
    assert suggester.suggest("qqqqqq") is None  # nothing one edit away
    assert suggester.suggest('"zebar crossing"') is None  # phrases are left as typed


def test_the_most_frequent_variant_wins():
    assert EditSuggester(doc_freq).correct("zebx") in {"zebu", "zebra"}
    DF[analyze("zebu")[0]] = 50
    try:
        assert EditSuggester(doc_freq).correct("zebx") == "zebu"
    finally:
        DF[analyze("zebu")[0]] = 2


def test_the_work_per_query_is_bounded():
    calls = []

    def counting(term: str) -> int:
        calls.append(term)
        return doc_freq(term)

    unknown = " ".join(f"qx{chr(97 + i // 26)}{chr(97 + i % 26)}vw" for i in range(64))
    suggester = EditSuggester(counting, max_words=4, max_edits=5000)
    assert suggester.suggest(unknown) is None
    assert suggester.words_examined == 4 and suggester.edits_examined <= 5000
    assert len(calls) <= 4 + suggester.edits_examined  # the words' own lookups + candidates
    one_word = EditSuggester(counting, max_words=4, max_edits=5000)
    calls.clear()
    one_word.suggest("qxaavw")
    # 64 unknown words cost at most four times one (before: 64 times)
    assert suggester.edits_examined <= 4 * one_word.edits_examined
    tight = EditSuggester(counting, max_edits=50)
    tight.suggest("zebar " + " ".join(unknown.split()[:63]))
    assert tight.edits_examined == 50 and tight.words_examined <= 2
    assert EditSuggester(doc_freq, max_edits=50).suggest("zebar") in ("zebra", None)
    # the budget leaves ordinary corrections alone
    fixed = EditSuggester(doc_freq).suggest("stripped zebar runing afrika")
    assert fixed == "striped zebra running africa"
