"""Did-you-mean for the embedded index (index/suggest.py): one-edit corrections by doc frequency."""

from index.analysis import analyze
from index.suggest import EditSuggester, edits1

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
