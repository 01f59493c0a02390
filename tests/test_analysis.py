"""The shared text analysis: normalization, tokenization, stemming, offsets."""

import pytest

from index.analysis import (
    BLOCK_BREAK,
    BLOCK_GAP,
    MAX_TOKEN_CHARS,
    STOPWORDS,
    analyze,
    analyze_blocks,
    analyze_joined,
    analyze_query_term,
    host_suffixes,
    is_stopword,
    normalize,
    normalize_host,
    tokens_with_offsets,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Café", "cafe"),
        ("STRASSE Straße", "strasse strasse"),
        ("ＡＰＩ", "api"),
        ("ﬁle", "file"),
        ("e\u0301cole", "ecole"),
        ("ÀÉÎÕÜ", "aeiou"),
    ],
)
def test_normalize_folds_case_width_and_accents(text, expected):
    assert normalize(text) == expected


def test_analyze_stems_and_lowercases():
    assert analyze("Running Indexes quickly") == ["run", "index", "quick"]


def test_analyze_keeps_stopwords_for_phrases():
    assert analyze("To be or not to be") == ["to", "be", "or", "not", "to", "be"]


def test_punctuation_splits_api_names_into_adjacent_terms():
    assert analyze("os.path.join get_config") == ["os", "path", "join", "get", "config"]
    assert analyze_query_term("os.path") == ["os", "path"]


def test_apostrophes_stay_inside_words_then_drop():
    assert analyze("don't python's l\u2019eau") == ["dont", "python", "leau"]
    assert analyze("'quoted'") == ["quot"]


def test_digits_are_tokens():
    assert analyze("Python 3.11 and HTTP/2") == [
        "python",
        "3",
        "11",
        "and",
        "http",
        "2",
    ]


def test_accented_and_decomposed_forms_give_the_same_terms():
    assert analyze("résumé") == analyze("re\u0301sume\u0301") == analyze("RESUME")


def test_non_latin_scripts_keep_their_marks():
    assert analyze("हिन्दी") == ["हिन्दी"]
    assert analyze("Привет мир") == ["привет", "мир"]


def test_compatibility_forms_split_into_words():
    assert analyze("½") == ["1", "2"]


def test_overlong_tokens_are_dropped():
    assert analyze("a" * (MAX_TOKEN_CHARS + 1) + " ok") == ["ok"]


def test_markup_is_just_words():
    assert analyze("<script>alert(1)</script>") == ["script", "alert", "1", "script"]


def test_empty_and_symbol_only_text():
    assert analyze("") == []
    assert analyze("!!! --- ...") == []


@pytest.mark.parametrize(
    "text",
    [
        "Plain ASCII text, with punctuation: os.path & don't.",
        "Mixed Café résumé ＡＰＩ ½ Straße हिन्दी 東京",
        "e\u0301cole <b>bold</b> x²",
    ],
)
def test_offsets_agree_with_analyze(text):
    with_offsets = list(tokens_with_offsets(text))
    assert [t for t, _, _ in with_offsets] == analyze(text)
    for term, start, end in with_offsets:
        assert analyze(text[start:end])[0] == term or term in analyze(text[start:end])


@pytest.mark.parametrize("text", [
    "one block only", "a cell\nthe next cell", "\n\nfirst\n\n\nsecond\n",
    "Café au\nlait ½ x\n东京 e\u0301cole", "don't\nit's", "x" * 70 + "\ny\n-- \nz",
    "past the classed code points\n\U000e0100 a\nb", "a\x01b\nc",
])
def test_blocks_are_the_terms_with_a_gap_between_two_lines(text):
    blocks = analyze_blocks(text)
    assert [t for t in blocks.split() if t != BLOCK_BREAK] == analyze(text)
    gap = " ".join([BLOCK_BREAK] * BLOCK_GAP)
    lines = [analyze_joined(line) for line in text.split("\n")]
    assert blocks == f" {gap} ".join(line for line in lines if line)


def test_the_gap_is_wider_than_any_phrase_slop():
    from index.query import NEAR_WINDOW, parse

    long = parse("how do I lookup a value in the table of members quickly")
    assert len(long.near_terms) > NEAR_WINDOW
    assert long.near_slop < BLOCK_GAP


def test_offsets_point_at_original_text():
    text = "Le Café, naïve"
    spans = [text[s:e] for _, s, e in tokens_with_offsets(text)]
    assert spans == ["Le", "Café", "naïve"]


def test_stopwords_compare_stemmed_terms():
    assert all(is_stopword(analyze(w)[0]) for w in STOPWORDS)
    assert not is_stopword("python")


def test_host_suffixes_for_site_matching():
    assert host_suffixes("WWW.Example.Test.") == [
        "www.example.test",
        "example.test",
        "test",
    ]
    assert (
        normalize_host("https://user@Docs.Example.test:8080/path")
        == "docs.example.test"
    )
    assert normalize_host("[::1]:80") == "[::1]"


def test_compound_terms_join_two_query_words_either_way():
    from index.analysis import compound_terms

    assert "gitignor" in compound_terms(["ignore", "files", "git"])  # gitignore
    assert "worktre" in compound_terms(["working", "trees"])  # worktree, from the stems
    assert compound_terms(["git"]) == []
    assert compound_terms(["a", "b", "c", "d", "e", "f"]) == []


def test_query_language_is_guessed_only_from_non_latin_letters():
    from index.analysis import query_language

    assert query_language("nfs export") == "en"
    assert query_language("nfs export", default="de") == "de"
    assert query_language("café crème") == "en"  # too little Latin text to tell
    assert query_language("сетевой сервер") == "ru"
    assert query_language("ファイルサーバー") == "ja"


def test_stem_cache_memory_is_bounded():
    import sys

    from index import analysis

    analysis._stem_cache.clear()
    words = [f"walking{n:07d}" for n in range(200_000)]
    for start in range(0, len(words), 1000):
        analysis.analyze(" ".join(words[start:start + 1000]))
    assert len(analysis._stem_cache) <= analysis._STEM_CACHE_MAX
    size = sys.getsizeof(analysis._stem_cache) + sum(
        sys.getsizeof(k) + sys.getsizeof(v) for k, v in analysis._stem_cache.items()
    )
    assert size < 8 * 2**20
    assert analysis.analyze("walking dogs") == ["walk", "dog"]


def test_identifier_terms_are_whole_names_operators_and_camelcase_words():
    from index.analysis import identifier_terms

    text = ("Use os.path.join() and std::vector; edit .gitignore, load mod_rewrite, "
            "define __init__, set AllowOverride, query data ->> 'key'. Prose, e.g. this: "
            ">>> x -- y --- z 3.11 x86.")
    assert identifier_terms(text) == [
        "os.path.join", "std::vector", ".gitignore", "mod_rewrite", "__init__", "allow",
        "overrid", "->>", "e.g",
    ]
    assert identifier_terms("self.assertEqual HTTPServer") == [
        "self.assertequal", "assert", "equal", "http", "server"]
    assert identifier_terms("plain prose, The End.") == []


def test_identifier_form_of_a_query_word():
    from index.analysis import identifier_form

    assert identifier_form("os.path.join") == "os.path.join"
    assert identifier_form(".gitignore") == ".gitignore"
    assert identifier_form("->>") == "->>"
    assert identifier_form("AllowOverride") == ""  # its analyzed term is already whole
    assert identifier_form("python") == identifier_form("3.11") == identifier_form("--") == ""
