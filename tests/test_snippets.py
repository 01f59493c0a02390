"""Snippets: best window, highlighting by analyzed terms, and escaping of everything else."""

import gc
import re
import sys
import unicodedata

import pytest

from index.analysis import WORD_RE, analyze, analyze_blocks, ascii_words, unicode_words
from index.snippets import (
    FIRST_BLOCK_CHARS,
    SCAN_CHARS,
    SNIPPET_CHARS,
    SnippetSource,
    _fold,
    _fold_char,
    _terms_of,
    _unlike_lower_re,
    build_snippet,
    find_matches,
    highlight,
)


def terms(text):
    return analyze(text)


def strip_marks(html):
    return html.replace("<mark>", "").replace("</mark>", "")


def test_marks_words_matching_by_stem():
    out = build_snippet("Running pythons run fast.", terms("run python"))
    assert out == "<mark>Running</mark> <mark>pythons</mark> <mark>run</mark> fast."


def test_script_and_entities_are_escaped():
    body = 'Hi <script>alert("x")</script> &amp; <b>python</b> &lt;ok&gt;'
    out = build_snippet(body, terms("python script"))
    assert "<script>" not in out and "<b>" not in out
    assert "&lt;<mark>script</mark>&gt;" in out
    assert "&amp;amp;" in out and "&amp;lt;ok&amp;gt;" in out
    assert "<mark>python</mark>" in out
    # Only <mark> tags remain once the escaped text is taken out.
    assert re.findall(r"<[^>]*>", out) == ["<mark>", "</mark>"] * 3


def test_hostile_matched_word_is_escaped_too():
    out = highlight("<python>", terms("python"))
    assert out == "&lt;<mark>python</mark>&gt;"


def test_window_moves_to_the_matches():
    body = "filler " * 200 + "The Python language is great. " + "filler " * 200
    out = build_snippet(body, terms("python"))
    assert "<mark>Python</mark>" in out
    assert out.startswith("\u2026") and out.endswith("\u2026")
    assert len(strip_marks(out)) <= SNIPPET_CHARS + 2


def test_window_prefers_more_distinct_terms():
    body = (
        "python " * 3
        + "filler " * 100
        + "python and django together. "
        + "filler " * 100
    )
    out = build_snippet(body, terms("python django"))
    assert "<mark>django</mark>" in out


def test_window_starts_at_a_sentence_when_close():
    body = "x " * 300 + "Intro. The snake python eats." + " y" * 300
    out = build_snippet(body, terms("python"))
    assert out.startswith("\u2026The snake <mark>python</mark>")


def test_no_match_gives_the_start_of_the_text():
    out = build_snippet("Plain <text> " * 50, terms("absent"))
    assert out.startswith("Plain &lt;text&gt;") and out.endswith("\u2026")
    assert "<mark>" not in out


def test_empty_text_and_no_terms():
    assert build_snippet("", terms("python")) == ""
    assert build_snippet("some text", []) == "some text"


def test_whitespace_is_collapsed():
    assert (
        build_snippet("a\n\n  b\tpython", terms("python")) == "a b <mark>python</mark>"
    )


def test_unicode_matches_through_normalization():
    out = build_snippet("Le Café et le RÉSUMÉ, Straße", terms("cafe resume strasse"))
    assert out == "Le <mark>Café</mark> et le <mark>RÉSUMÉ</mark>, <mark>Straße</mark>"


def test_full_width_and_non_latin():
    assert highlight("ＡＰＩ docs", terms("api")) == "<mark>ＡＰＩ</mark> docs"
    assert highlight("Привет мир", terms("мир")) == "Привет <mark>мир</mark>"


def test_word_inside_a_longer_word_is_not_marked():
    assert find_matches("snakebite snake", terms("snake")) == [(10, 15, "snake")]


def test_api_names_mark_each_part():
    assert (
        highlight("use os.path here", terms("os.path"))
        == "use <mark>os</mark>.<mark>path</mark> here"
    )


def test_regex_metacharacters_in_terms_are_safe():
    assert find_matches("a+b (c)", ["+", "(c", "c"]) == [(5, 6, "c")]


def test_one_letter_terms_terminate_and_match():
    assert find_matches("I said i. Then e", ["i", "e"]) == [(0, 1, "i"), (7, 8, "i"), (15, 16, "e")]
    assert find_matches("word.", [""]) == []


def test_phrase_words_are_marked_only_inside_the_phrase():
    body = "The cat sat. Later, the world turned; the end of the world."
    out = build_snippet(body, [], phrases=[("the", "world")])
    assert out == (
        "The cat sat. Later, <mark>the</mark> <mark>world</mark> turned; the end of "
        "<mark>the</mark> <mark>world</mark>."
    )


def test_free_words_and_phrases_together():
    body = "Python here. Monty Python there. Monty alone."
    out = build_snippet(body, terms("python"), phrases=[tuple(terms("monty python"))])
    assert out == (
        "<mark>Python</mark> here. <mark>Monty</mark> <mark>Python</mark> there. Monty alone."
    )


def test_phrase_across_punctuation_but_not_across_words():
    body = "os.path is here; os and then path"
    out = build_snippet(body, [], phrases=[("os", "path")])
    assert out == "<mark>os</mark>.<mark>path</mark> is here; os and then path"


def test_folding_by_lower_case_is_exact_where_it_is_used():
    # _fold lower-cases a text, then puts the runs of _unlike_lower_re() through the
    # per-character table; a text that is NFKD-normalized and whose case folding is its
    # lower case is lower-cased alone. Both are exact for every character.
    unlike = _unlike_lower_re()
    for code in range(0x80, sys.maxunicode + 1):
        ch = chr(code)
        lower = ch.lower()
        if unlike.match(ch) is None:
            assert len(lower) == 1 and _fold_char(ch) == lower, hex(code)
        if len(lower) == 1 and ch.casefold() == lower and unicodedata.is_normalized("NFKD", ch):
            assert _fold_char(ch) == lower, hex(code)


def test_fold_keeps_length_on_either_path():
    for text in ("plain ascii", "Docs ¶ — it’s", "Café RÉSUMÉ", "ΟΔΟΣ ΣΑΣ", "ﬁle İstanbul",
                 "Straße", "ＡＰＩ", "Привет мир", "Ёлка и йод", "a\u00a0b…", "ς Σ"):
        folded = _fold(text)
        assert len(folded) == len(text)
        assert folded == "".join(_fold_char(c) if ord(c) > 127 else c.lower() for c in text)
    assert _fold("Docs ¶ — it’s") == "docs ¶ — it’s"
    assert _fold("ΟΔΟΣ") == "οδοσ"


def test_matches_far_into_a_long_page_are_found():
    filler = "filler text. " * ((SCAN_CHARS - 100) // len("filler text. "))
    body = filler + "The Python language is great."
    assert len(body) > 4 * FIRST_BLOCK_CHARS
    out = build_snippet(body, terms("python"))
    assert "<mark>Python</mark>" in out
    # past SCAN_CHARS a page is not read: its start is shown
    out = build_snippet(filler * 2 + "The Python language is great.", terms("python"))
    assert out.startswith("filler text.") and "<mark>" not in out


def test_reading_stops_at_the_first_block_with_every_term():
    # A later window has more matches but no more terms: the page is not read that far.
    body = ("Python and Django. " + "filler " * 2_000 + "python django python django. "
            + "filler " * 100)
    out = build_snippet(body, terms("python django"))
    assert out.startswith("<mark>Python</mark> and <mark>Django</mark>.")
    # Terms far apart in the first blocks: reading goes on to the window holding both.
    body = "Python. " + "filler " * 1_200 + "Django too. " + "filler " * 1_200 + "python django."
    assert len(body) < SCAN_CHARS
    out = build_snippet(body, terms("python django"))
    assert "<mark>python</mark> <mark>django</mark>." in out


def test_words_across_block_ends_match_as_anywhere():
    for shift in range(-8, 8):
        body = "x " * ((FIRST_BLOCK_CHARS + shift) // 2) + "Monty Python flies. Monty"
        start = body.index("Monty")
        assert find_matches(body, terms("monty python")) == [
            (start, start + 5, "monti"), (start + 6, start + 12, "python"),
            (len(body) - 5, len(body), "monti"),
        ]
        out = build_snippet(body, [], phrases=[tuple(terms("monty python"))])
        assert "<mark>Monty</mark> <mark>Python</mark> flies." in out
        assert out.count("<mark>") == 2


# --- a snippet source prepared at index time ------------------------------------------

SAME_AS_SCANNED = [
    ("Running pythons run fast.", "run python", ()),
    ('Hi <script>alert("x")</script> &amp; <b>python</b> &lt;ok&gt;', "python script", ()),
    ("filler " * 200 + "The Python language is great. " + "filler " * 200, "python", ()),
    ("python " * 3 + "filler " * 100 + "python and django together. " + "filler " * 100,
     "python django", ()),
    ("x " * 300 + "Intro. The snake python eats." + " y" * 300, "python", ()),
    ("Plain <text> " * 50, "absent", ()),
    ("a\n\n  b\tpython", "python", ()),
    ("Le Café et le RÉSUMÉ, Straße", "cafe resume strasse", ()),
    ("ＡＰＩ docs, Привет мир", "api мир", ()),
    ("snakebite snake", "snake", ()),
    ("use os.path here", "", (("os", "path"),)),
    ("The cat sat. Later, the world turned; the end of the world.", "", (("the", "world"),)),
    ("Python and Django. " + "filler " * 2_000 + "python django python django. "
     + "filler " * 100, "python django", ()),
    ("Python. " + "filler " * 1_200 + "Django too. " + "filler " * 1_200 + "python django.",
     "python django", ()),
    ("filler text. " * 2_000 + "The Python language is great.", "python", ()),
    ("x " * ((FIRST_BLOCK_CHARS - 3) // 2) + "Monty Python flies. Monty", "monty python", ()),
    ("I said i. Then e", "i e", ()),
]


@pytest.mark.parametrize(("text", "query", "phrases"), SAME_AS_SCANNED)
def test_a_prepared_source_gives_the_snippet_the_text_gives(text, query, phrases):
    source = SnippetSource.of(text)
    assert source.text == text[:SCAN_CHARS]
    for width in (40, SNIPPET_CHARS):
        assert build_snippet(source, terms(query), width, phrases) == build_snippet(
            text, terms(query), width, phrases)
    wanted = terms(query) + [t for p in phrases for t in p]
    assert source.matches(wanted) == find_matches(text[:SCAN_CHARS], wanted)


def test_a_prepared_source_matches_whole_words_only():
    # Scanning looks for a word start after any non-letter, so it finds the "t" of
    # "don't"; the source knows the words, and "don't" is one.
    text = "Don't panic. A t here."
    assert find_matches(text, ["t"]) == [(4, 5, "t"), (15, 16, "t")]
    assert SnippetSource.of(text).matches(["t"]) == [(15, 16, "t")]


def test_a_word_of_several_terms_matches_by_the_first_wanted():
    text = "the ﬁle and ½ sign"  # NFKC: "file"; "1", "2"
    source = SnippetSource.of(text)
    assert analyze("½") == ["1", "2"]
    assert source.matches(["2", "1"]) == [(12, 13, "1")]
    assert source.matches(["2"]) == [(12, 13, "2")]
    # The ligature folds to no one letter, so a scan's prefix search misses it; the
    # source analyzed the word.
    assert find_matches(text, ["file"]) == []
    assert source.matches(["file"]) == [(4, 7, "file")]


def test_a_prepared_source_stops_reading_when_every_present_term_is_in_a_window():
    # "zebra" is not a word of the page (only inside "zebras3x" it is not): the scan
    # reads on for it, the source knows it is absent and stops at the first block.
    body = "Python zebrafoo. " + "filler " * 2_000 + "python python python. " + "filler " * 10
    source = SnippetSource.of(body)
    assert build_snippet(source, terms("python zebra")).startswith("<mark>Python</mark>")


def test_a_prepared_source_survives_storage():
    text = "Ünïcode straße 𝔘 and ascii words, words again. " * 40
    source = SnippetSource.of(text)
    stored = SnippetSource.decode(source.encode())
    assert stored == source
    assert stored.matches(terms("words strasse")) == find_matches(text, terms("words strasse"))


ASCII_WORDS = ["", "'", "''", "a", "a'", "'a", "a'b", "a''b", "a'b'c", "'a'b'", "don't'",
               "os.path_join(x, y)-z", "Rock'n'roll, it's 3'4\" x'", "  two\n\twords  ",
               "x" * 70 + " tail", "CamelCase v1.2.3 __init__ a-b a--b"]


@pytest.mark.parametrize("text", ASCII_WORDS)
def test_ascii_text_is_split_into_the_words_word_re_finds(text):
    found = list(WORD_RE.finditer(text))
    for words, starts, ends in (ascii_words(text), unicode_words(text)):
        assert words == [m.group() for m in found]
        assert starts.tolist() == [m.start() for m in found]
        assert ends.tolist() == [m.end() for m in found]


UNICODE_WORDS = ["Le Café et le RÉSUMÉ, Straße", "e\u0301t\u0301e\u0301 \u0301x", "a'\u0301b",
                 "a\u0301'b c\u2019d e\u2019 \u02bcf", "नमस्ते दुनिया", "日本語のテキスト",
                 "x_y ½ ﬁle", "\U00020000\u0300a", "lone \ud800 surrogate", "٣٤ ١٢"]


@pytest.mark.parametrize("text", UNICODE_WORDS)
def test_any_text_is_split_into_the_words_word_re_finds(text):
    words, starts, ends = unicode_words(text)
    found = list(WORD_RE.finditer(text))
    assert words == [m.group() for m in found]
    assert starts.tolist() == [m.start() for m in found]
    assert ends.tolist() == [m.end() for m in found]
    assert unicode_words(text, offsets=False) == (words, None, None)
    assert unicode_words("past the classed code points \U000e0100") is None


@pytest.mark.parametrize("text", [
    *ASCII_WORDS, *UNICODE_WORDS, "Running pythons run fast.", "the ﬁle and ½ sign",
    "filler text. " * 2_000 + "The end.", "a table cell\nthe next cell\n\n\nthird\n",
    "\nfirst item\nsecond item", "", "\n\n", "one line\n", "x\ny\nz"])
def test_a_source_gives_the_text_terms_only_where_they_are_the_analyzers(text):
    source, joined = SnippetSource.with_terms(text)
    assert source == SnippetSource.of(text) == SnippetSource._of_words(text[:SCAN_CHARS])
    if joined is not None:
        assert joined == analyze_blocks(text)
    # ASCII without an apostrophe, within SCAN_CHARS, each word one term
    plain = text.isascii() and "'" not in text and len(text) <= SCAN_CHARS
    assert (joined is not None) == (plain and all(
        len(analyze(w)) == 1 for w in WORD_RE.findall(text)))


def test_the_word_caches_hold_nothing_the_garbage_collector_walks():
    """A crawl's vocabulary fills the stem and word-terms caches; what they hold is not
    tracked by the garbage collector, whose full collections stop the crawl's reactor
    (docs/crawl-speed.md): a list per word there was most of what they walked."""
    words = [f"zq{n}unseenwording" for n in range(5_000)]
    gc.collect()
    before = len(gc.get_objects())
    assert analyze(" ".join(words))[:2] == ["zq0unseenword", "zq1unseenword"]
    assert [_terms_of(w) for w in words[:2]] == [("zq0unseenword",), ("zq1unseenword",)]
    for word in words:
        _terms_of(word)
    gc.collect()
    assert len(gc.get_objects()) - before < 500
