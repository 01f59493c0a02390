"""Text analysis shared by every backend, at index time and at query time.

One pipeline turns text into index terms, so the embedded index and Elasticsearch see the
same tokens:

1. word spans: runs of letters and digits; an apostrophe inside a word stays in it
   (``don't``) and combining accents stay with their letter;
2. normalization: NFKC, case folding, accents stripped (``Café`` → ``cafe``,
   ``Straße`` → ``strasse``, full-width ``ＡＰＩ`` → ``api``);
3. English Snowball stemming (PyStemmer), apostrophes dropped afterwards
   (``python's`` → ``python``, ``don't`` → ``dont``).

Punctuation splits words, so ``os.path`` and ``os_path`` both become ``os``, ``path`` at
adjacent positions; the query parser turns such a word into a phrase, so it still matches
exactly.

Block breaks: a text's lines are its blocks (extraction ends a paragraph, list item, table
cell, heading, ``<dt>`` or ``<dd>`` with a newline), and :func:`analyze_blocks` leaves
``BLOCK_GAP`` empty positions between the terms of two of them, as Elasticsearch's
``position_increment_gap`` does between the values of an array, so a phrase or a proximity
match never spans two blocks: the last word of one table cell and the first of the next are
not the phrase of an identifier's parts.

Stopword policy: nothing is dropped at index time, so phrases like "to be or not to be"
keep their positions and match. The query parser drops stopwords from free (non-phrase)
terms only when something else is left to search for (``the who`` still works).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence

import numpy as np
import Stemmer

__all__ = [
    "language_of",
    "MAX_TOKEN_CHARS",
    "OPTIONAL_WORDS",
    "STOPWORDS",
    "WORD_RE",
    "BLOCK_BREAK",
    "BLOCK_GAP",
    "analyze",
    "analyze_blocks",
    "analyze_joined",
    "join_blocks",
    "analyze_query_term",
    "ascii_words",
    "compound_terms",
    "host_suffixes",
    "identifier_form",
    "identifier_terms",
    "is_optional_word",
    "is_stopword",
    "normalize",
    "query_language",
    "tokens_with_offsets",
    "unicode_words",
    "words",
]

# Longer "words" are base64 blobs, hashes or minified code: noise that bloats the index.
MAX_TOKEN_CHARS = 64

# Lucene's English stop set: small on purpose, only words that carry no topic.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)

# Combining marks of the Latin/Greek/Cyrillic diacritic blocks. Marks of other scripts
# (Devanagari virama, Arabic harakat, ...) are part of spelling there, so they are kept.
_ACCENT_RE = re.compile(
    "[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+"
)


def _mark_ranges(limit: int = 0x20000) -> str:
    """A regex class body of every combining mark (Mn, Mc, Me) below ``limit``."""
    ranges: list[list[int]] = []
    for cp in range(limit):
        if unicodedata.category(chr(cp))[0] == "M":
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
    return "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


# Python's \w has no combining marks, yet they belong to the word they follow (é as e + ◌́,
# Devanagari vowel signs); an apostrophe stays inside a word (don't, l'eau). Written as runs
# of letters and digits joined by one mark or apostrophe each, not one character a repeat:
# the same words, found 15-20% faster.
WORD_RE = re.compile(
    rf"[^\W_]+(?:(?:[{_mark_ranges()}]|['\u2019\u02bc](?=[^\W_]))[^\W_]*)*")
# ASCII text is split by a byte table instead (5x faster than a regex): letters and digits
# lower-cased, apostrophes kept, everything else a space.
_ASCII_TABLE = bytes(
    ord(chr(b).lower()) if chr(b).isalnum() else b if b == ord("'") else ord(" ")
    for b in range(128)
) + b" " * 128

# The same split with the case kept: WORD_RE's word spans of ASCII text, apostrophes kept.
_ASCII_WORD_TABLE = bytes(
    b if chr(b).isalnum() or b == ord("'") else ord(" ") for b in range(128)
) + b" " * 128

# Without PyStemmer's own cache (maxCacheSize 0): it is asked only for the words missing
# from _stem_cache below, and kept each of its 10,000 words as a list, objects every full
# garbage collection walks (docs/crawl-speed.md).
_stem_words = Stemmer.Stemmer("english", 0).stemWords
# word -> stem. Looking words up with map() runs at C speed, 5x faster than stemWords even
# with its own cache; Zipf-distributed text makes the hit rate high. Started over at
# _STEM_CACHE_MAX words: a crawl's vocabulary never stops growing, and a crawler worker
# analyses every page it indexes, so a larger bound is memory that grows for hours
# (500,000 grew a worker by ~5,000 objects a minute in the soak); on 40,000 crawled test web
# pages 32,768 costs 87 us per page against 84 with no limit reached.
_STEM_CACHE_MAX = 32_768
_stem_cache: dict[str, str] = {}

_NORMALIZE_CACHE_MAX = 100_000
_normalize_cache: dict[str, tuple[str, ...]] = {}


#: 1 for the ASCII letters and digits, the characters of ``WORD_RE``'s words in ASCII text
#: (besides an apostrophe between two of them), 0 for every other byte.
_ASCII_ALNUM = np.array([chr(b).isalnum() for b in range(128)] + [False] * 128, np.int8)
#: The same as a ``bytes.translate`` table: a letter or digit stays, any other byte is a space.
_ASCII_SPACES = bytes(b if chr(b).isalnum() else 32 for b in range(128)) + b" " * 128


def ascii_words(text: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The words of ASCII ``text`` as ``WORD_RE`` finds them (runs of letters and digits,
    an apostrophe inside one between two of them), with their start and end offsets, in
    NumPy: a quarter of the CPU of splitting the text with a regex."""
    raw = text.encode("ascii")
    data = np.frombuffer(raw, np.uint8)
    inside = np.zeros(len(raw) + 2, np.int8)  # a non-word byte before and after the text
    inside[1:-1] = _ASCII_ALNUM[data]
    apostrophes = "'" in text
    if apostrophes:
        inside[1:-1] |= (data == ord("'")) & (inside[:-2] != 0) & (inside[2:] != 0)
    edges = np.flatnonzero(inside[1:] != inside[:-1])
    if apostrophes:
        raw = np.where(inside[1:-1] != 0, data, ord(" ")).astype(np.uint8).tobytes()
    else:
        raw = raw.translate(_ASCII_SPACES)
    return raw.decode("ascii").split(), edges[0::2], edges[1::2]


#: Code points below this are classed by ``_word_classes``; a text with one at or above it
#: is split by the regex (``WORD_RE``'s combining marks are all below 0x20000).
_CLASSED_BELOW = 0x30000
_ALNUM, _MARK, _APOSTROPHE = 1, 2, 3
_classes: np.ndarray | None = None


def _word_classes() -> np.ndarray:
    """Per code point below ``_CLASSED_BELOW``: ``_ALNUM`` (what ``[^\\W_]`` matches),
    ``_MARK`` (a combining mark of ``WORD_RE``), ``_APOSTROPHE`` (``'`` or ``’``) or 0.
    Built on first use, in about 0.1 s."""
    global _classes
    if _classes is None:
        classes = np.zeros(_CLASSED_BELOW, np.uint8)
        for code in range(_CLASSED_BELOW):
            ch = chr(code)
            if ch.isalnum():
                classes[code] = _ALNUM
            elif code < 0x20000 and unicodedata.category(ch)[0] == "M":
                classes[code] = _MARK
        # WORD_RE's third apostrophe, U+02BC, is a letter (Lm): a word's character anywhere
        classes[[ord("'"), 0x2019]] = _APOSTROPHE
        _classes = classes
    return _classes


def unicode_words(text: str, offsets: bool = True
                  ) -> tuple[list[str], np.ndarray | None, np.ndarray | None] | None:
    """``ascii_words`` of any text: ``WORD_RE``'s words (runs of letters and digits, a
    combining mark after a word's letter or mark, an apostrophe between a word's letter or
    mark and a letter or digit) and their offsets, in NumPy; None for a text with a code
    point from ``_CLASSED_BELOW`` on (rare: the caller uses the regex). Without
    ``offsets``, the words alone (and None, None)."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    if len(codes) and int(codes.max()) >= _CLASSED_BELOW:
        return None
    kind = _word_classes()[codes]
    alnum = kind == _ALNUM
    mark = kind == _MARK
    # a run of marks is inside a word when the character before the run is a letter or digit
    before = np.maximum.accumulate(np.where(mark, -1, np.arange(len(codes))))
    inside = alnum | (mark & (before >= 0) & alnum[np.maximum(before, 0)])
    if len(codes) > 2:
        inside[1:-1] |= (kind[1:-1] == _APOSTROPHE) & inside[:-2] & alnum[2:]
    spaced = np.where(inside, codes, np.uint32(ord(" "))).astype("<u4").tobytes()
    words = spaced.decode("utf-32-le", "surrogatepass").split()
    if not offsets:
        return words, None, None
    padded = np.zeros(len(codes) + 2, np.int8)
    padded[1:-1] = inside
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    return words, edges[0::2], edges[1::2]


def words(text: str) -> list[str]:
    """``WORD_RE.findall(text)``, the word spans of ``text`` in order; ASCII text is split by
    the byte table instead, 10x faster than the regex (whose class of combining marks is
    tried at every word's end)."""
    if not text.isascii():
        return WORD_RE.findall(text)
    spans = text.encode("ascii").translate(_ASCII_WORD_TABLE).decode("ascii").split()
    if "'" not in text:
        return spans
    # an apostrophe stays only inside a word (don't); at a word's edge it splits
    return [w for span in spans for w in (WORD_RE.findall(span) if "'" in span else (span,))]


def normalize(text: str) -> str:
    """NFKC, case-folded, accent-free form of ``text``; ASCII is only lower-cased."""
    if text.isascii():
        return text.lower()
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _ACCENT_RE.sub("", unicodedata.normalize("NFD", text))
    return (
        unicodedata.normalize("NFC", text).replace("\u2019", "'").replace("\u02bc", "'")
    )


def _normalize_word(word: str) -> tuple[str, ...]:
    """The normalized words (usually one) that the non-ASCII span ``word`` stands for."""
    cached = _normalize_cache.get(word)
    if cached is None:
        # NFKC can turn one span into several words ("½" → 1⁄2).
        cached = tuple(WORD_RE.findall(normalize(word)))
        if len(_normalize_cache) >= _NORMALIZE_CACHE_MAX:
            _normalize_cache.clear()
        _normalize_cache[word] = cached
    return cached


def _stem(words: list[str]) -> list[str]:
    """The stem of each word, through the cache."""
    try:
        return list(map(_stem_cache.__getitem__, words))
    except KeyError:
        missing = list({w for w in words if w not in _stem_cache})
        if len(_stem_cache) + len(missing) > _STEM_CACHE_MAX:
            _stem_cache.clear()
        _stem_cache.update(zip(missing, _stem_words(missing), strict=True))
        return [_stem_cache.get(w) or _stem_words([w])[0] for w in words]


def _finish(words: list[str], apostrophes: bool = True) -> list[str]:
    """Stem ``words``; drop apostrophes (if any may occur) and over-long tokens."""
    terms = _stem(words)
    if apostrophes:
        terms = [t.replace("'", "") if "'" in t else t for t in terms]
        terms = [t for t in terms if t]
    if terms and max(map(len, terms)) > MAX_TOKEN_CHARS:
        terms = [t for t in terms if len(t) <= MAX_TOKEN_CHARS]
    return terms


def _words_of(text: str) -> list[str]:
    """``WORD_RE.findall(text)``: in NumPy (``unicode_words``), or for a text with a code
    point it does not class, one whitespace-separated chunk at a time: no word spans a
    space, and a chunk of ASCII letters and digits is one word as it stands."""
    split = unicode_words(text, offsets=False)
    if split is not None:  # the same words, in NumPy
        return split[0]
    words: list[str] = []
    for chunk in text.split():
        if chunk.isascii() and chunk.isalnum():
            words.append(chunk)
        else:
            words += WORD_RE.findall(chunk)
    return words


def analyze(text: str) -> list[str]:
    """Index terms of ``text`` in order: normalized, stemmed, stopwords kept."""
    if not text:
        return []
    if not text.isascii():
        # Normalizing the whole text at once is far faster than word by word; NFKC may turn
        # symbols into letters here (™ → tm), which queries get the same way.
        text = normalize(text)
        if not text.isascii():
            return _finish(_words_of(text))
    words = text.encode("ascii").translate(_ASCII_TABLE).decode("ascii").split()
    return _finish(words, "'" in text)


def analyze_joined(text: str) -> str:
    """``analyze(text)`` joined by single spaces: the form a whitespace tokenizer indexes."""
    return " ".join(analyze(text))


#: The token :func:`analyze_blocks` writes between two blocks' terms, ``BLOCK_GAP`` times in
#: a row: a control character, never a term of any text or query (extraction turns control
#: characters into spaces, and analysis drops them). An engine indexes it as a position
#: left empty (tantivy: a stop word of the tokenizer) or splits the text there (an
#: Elasticsearch array); it is never a term of the index.
BLOCK_BREAK = "\x01"
#: Empty positions between two blocks: more than any slop a query searches a phrase with
#: (the proximity signal's, ``index.query.Query.near_slop``: 2), since a phrase with slop
#: ``s`` matches across ``s`` empty positions.
BLOCK_GAP = 3
_GAP = " ".join([BLOCK_BREAK] * BLOCK_GAP)
# _ASCII_TABLE with the break kept: a word of its own where spaces surround it.
_ASCII_BLOCK_TABLE = _ASCII_TABLE[:1] + BLOCK_BREAK.encode() + _ASCII_TABLE[2:]
_BREAK_WORD = f" {BLOCK_BREAK} "
_NEWLINE_RE = re.compile("\n")
_BREAK_LETTER = "\u00aa"
_BREAKS_RE = re.compile(f"{BLOCK_BREAK}(?: {BLOCK_BREAK})*")


def _line_starts(text: str, starts: np.ndarray) -> np.ndarray:
    """The indexes of the words (starting at ``starts`` in ``text``) that begin a line after
    the first word: where a block break goes."""
    if text.isascii():
        newlines = np.flatnonzero(np.frombuffer(text.encode("ascii"), np.uint8) == 10)
    else:
        newlines = [m.start() for m in _NEWLINE_RE.finditer(text)]
    at = np.unique(np.searchsorted(starts, newlines))
    return at[(at > 0) & (at < len(starts))]


#: What a term that begins a block after the first starts with in :func:`join_blocks`.
_GAP_BEFORE = f"{_GAP} "


def join_blocks(terms: Sequence[str], starts: np.ndarray, text: str) -> str:
    """``terms`` joined as :func:`analyze_blocks` joins them: one term per word of ``text``
    (its words starting at ``starts``), ``BLOCK_GAP`` breaks between two lines' terms: the
    first term of each line after the first carries the breaks before it, and one join
    makes the string."""
    terms = np.array(terms, object)  # a copy: the breaks are written into it
    at = _line_starts(text, starts)
    terms[at] = [_GAP_BEFORE + term for term in terms[at].tolist()]
    return " ".join(terms.tolist())


def analyze_blocks(text: str) -> str:
    """``analyze_joined(text)`` with ``BLOCK_GAP`` ``BLOCK_BREAK`` tokens between the terms
    of two of its lines (its blocks; a line without terms is no block): the form the engines
    index a page's body, anchor texts and headings in."""
    if "\n" not in text:
        return analyze_joined(text)
    if not text.isascii():
        text = normalize(text)
    if text.isascii():
        spaced = text.replace(BLOCK_BREAK, " ").replace("\n", _BREAK_WORD)
        words = spaced.encode("ascii").translate(_ASCII_BLOCK_TABLE).decode("ascii").split()
        terms = _finish(words, "'" in text)
    else:
        # a letter normalize() leaves in no text (NFKC: ª -> a), a word of its own here
        words = _words_of(text.replace("\n", f" {_BREAK_LETTER} "))
        joined = " ".join(_finish(words)).replace(_BREAK_LETTER, BLOCK_BREAK)
        return _BREAKS_RE.sub(_GAP, joined).strip(_BREAK_WORD)
    # one gap between two blocks with terms, none before the first or after the last
    return _BREAKS_RE.sub(_GAP, " ".join(terms)).strip(_BREAK_WORD)


def tokens_with_offsets(text: str) -> Iterator[tuple[str, int, int]]:
    """``(term, start, end)`` for each term of ``analyze(text)``, offsets into ``text``."""
    for match in WORD_RE.finditer(text):
        span = match.group()
        words = (span.lower(),) if span.isascii() else _normalize_word(span)
        for term in _finish(list(words)):
            yield term, match.start(), match.end()


# --- identifiers -------------------------------------------------------------------------
#
# Names in code and configuration are words too: ``os.path.join``, ``std::vector``,
# ``.gitignore``, ``mod_rewrite``, ``__init__``, ``AllowOverride``, operators like ``->>``.
# ``analyze`` splits them into their parts at adjacent positions (``os path join``), which
# phrases and the words of prose match; :func:`identifier_terms` gives the other forms,
# indexed in a field of their own (``idents``, so positions in the text fields stay as they
# are): the whole name of a punctuated identifier, unstemmed, and the words of a CamelCase
# name (``AllowOverride`` -> ``allow overrid``). A query word that is a punctuated name also
# looks its whole form up there (:func:`identifier_form`), so the page that has the exact
# name scores above pages that have the parts as prose.

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_IDENT_RE = re.compile(
    r"(?<![\w.$@/-])(?:"
    rf"\.?{_NAME}(?:(?:\.|::|->){_NAME})+"  # dotted and scoped: os.path.join, std::map
    r"|\.[A-Za-z][\w-]*"  # leading dot: .gitignore, .htaccess
    r"|(?=[A-Za-z0-9]*_)\w*[A-Za-z]\w*"  # snake and dunder: mod_rewrite, __init__
    r"|(?=[A-Za-z0-9]*(?:[a-z0-9][A-Z]|[A-Z][A-Z][a-z]))[A-Za-z][A-Za-z0-9]*"  # CamelCase
    r")(?![\w])",
    re.ASCII,
)
# Operators standing alone (``->>``, ``::``, ``&&``, ``!=``); runs of one repeated character
# of three or more (``>>>`` prompts, ``---`` rules) and ``--`` dashes are typography.
_OPERATOR_RE = re.compile(r"(?<![^\s(\[{\"'`])[-<>=!:|&~^*+/%@?#]{2,3}(?![^\s)\]}\"'`,.;])")
_CAMEL_PART_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SEPARATORS_RE = re.compile(r"[.:>_-]+")


def _is_operator(token: str) -> bool:
    return token != "--" and not (len(token) == 3 and len(set(token)) == 1)


def _camel_parts(segment: str) -> list[str]:
    """The stemmed words of a CamelCase segment (``AllowOverride`` -> allow, overrid);
    ``[]`` when it has no humps."""
    parts = _CAMEL_PART_RE.findall(segment)
    return _finish([p.lower() for p in parts]) if len(parts) > 1 else []


def _forms(name: str) -> list[str]:
    """The whole form of a punctuated name (lower case, unstemmed) and the words of its
    CamelCase segments."""
    forms = [name.lower()] if not name.isalnum() else []
    for segment in _SEPARATORS_RE.split(name):
        if segment and not segment.islower() and not segment.isupper():
            forms.extend(_camel_parts(segment))
    return [f for f in forms if len(f) <= MAX_TOKEN_CHARS]


_OPERATOR_CHARS = frozenset("-<>=!:|&~^*+/%@?#")
_QUOTES = "()[]{}\"'`,;"


# Chunks known to hold no identifier form, and those that do with their forms: prose
# repeats its words, so a page's chunks are mostly ruled out by one set difference at C
# speed instead of tested one by one. Started over when full, like the stem cache.
_IDENT_CACHE_MAX = 65_536
_no_ident: set[str] = set()
_ident_forms: dict[str, tuple[str, ...]] = {}


def _chunk_forms(chunk: str) -> tuple[str, ...]:
    """The identifier forms of one whitespace-separated chunk (usually none)."""
    bare = chunk.strip(_QUOTES)
    if _OPERATOR_CHARS.issuperset(bare):
        return (bare,) if 2 <= len(bare) <= 3 and _is_operator(bare) else ()
    # Prose words, capitalized or not, are most chunks: str methods skip them fast;
    # digits mixed with letters (3rd, x86) and non-ASCII words are not names either.
    word = bare.rstrip(".:")
    if word.isalnum() and (word.islower() or word.istitle() or word.isupper()
                           or not word.isalpha()) or not word.isascii():
        return ()
    return tuple(form for match in _IDENT_RE.finditer(chunk) for form in _forms(match.group()))


def identifier_terms(text: str) -> list[str]:
    """The identifier forms of ``text`` that ``analyze`` does not give, in order: whole
    punctuated names and operators, and the words of CamelCase names."""
    chunks = text.split()
    candidates = set(chunks).difference(_no_ident)
    if not candidates:
        return []
    if len(_no_ident) + len(_ident_forms) + len(candidates) > _IDENT_CACHE_MAX:
        _no_ident.clear()
        _ident_forms.clear()
    unknown = [c for c in candidates if c not in _ident_forms]
    for chunk in unknown:
        forms = _chunk_forms(chunk)
        if forms:
            _ident_forms[chunk] = forms
        else:
            _no_ident.add(chunk)
    hits = {c: _ident_forms[c] for c in candidates if c in _ident_forms}
    if not hits:
        return []
    return [form for c in chunks if c in hits for form in hits[c]]


def identifier_form(word: str) -> str:
    """The whole form of a query word that is a punctuated name or an operator (``.gitignore``,
    ``os.path.join``, ``->>``), as :func:`identifier_terms` indexes it; ``""`` otherwise."""
    if _OPERATOR_RE.fullmatch(word) and _is_operator(word):
        return word
    word = word.rstrip(".,;:!?)")
    if not word.isascii() or word.isalnum() or not _IDENT_RE.fullmatch(word):
        return ""
    return word.lower() if len(word) <= MAX_TOKEN_CHARS else ""


def analyze_query_term(word: str) -> list[str]:
    """Terms of one query word; several mean the word must match as a phrase (``os.path``)."""
    return analyze(word)


_STOP_TERMS = frozenset(_finish(sorted(STOPWORDS)))

#: Words that frame a question or a request rather than name its topic ("how do I ...",
#: "what are ... and when should I use them"): in a plain query they score where they
#: occur but need not match, so the page answering the question is not dropped for lacking
#: "should" or "them". Question words, auxiliaries, pronouns and request fillers only;
#: words that may be the topic of a documentation search (``use`` aside) stay required.
OPTIONAL_WORDS = frozenset(
    """
    how what when where why which who whom whose whats hows
    do does did doing can could should would shall may might must
    i me my mine we us our you your he she him her his them those
    am been being has have having
    use using want wanted need needed way ways possible someone something anything
    please example examples best correct proper properly
    """.split()
)
_OPTIONAL_TERMS = frozenset(_finish(sorted(OPTIONAL_WORDS)))


def is_stopword(term: str) -> bool:
    """Whether an analyzed term is a stopword (compares stemmed forms)."""
    return term in _STOP_TERMS


def is_optional_word(term: str) -> bool:
    """Whether an analyzed term frames a question rather than naming its topic
    (``OPTIONAL_WORDS``, stemmed): a stopword or a question word."""
    return term in _OPTIONAL_TERMS or term in _STOP_TERMS


def host_suffixes(host: str) -> list[str]:
    """``host`` and its parent domains, for ``site:`` matching: a.b.test, b.test, test."""
    host = normalize_host(host)
    parts = host.split(".")
    return [".".join(parts[i:]) for i in range(len(parts)) if parts[i]]


def normalize_host(host: str) -> str:
    """Lower-cased host without scheme, credentials, port, path or trailing dot."""
    host = host.strip().lower()
    if "://" in host:
        host = host.split("://", 1)[1]
    host = host.split("/", 1)[0].rsplit("@", 1)[-1]
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.split(":", 1)[0].strip(".")


def compound_terms(words: Sequence[str], max_words: int = 5) -> list[str]:
    """Index terms of the compounds two query words can form, either way round: names
    written as one word (``ignore files git`` -> ``gitignore``, ``working trees`` ->
    ``worktree``). Each pair is joined as typed and as stems; terms the words already are,
    and queries longer than ``max_words``, give none."""
    words = [w for w in words if w]
    if not 2 <= len(words) <= max_words:
        return []
    stems = [" ".join(analyze(w)) for w in words]
    own = set(stems)
    found: dict[str, None] = {}
    for i, a in enumerate(words):
        for j, b in enumerate(words):
            if i == j:
                continue
            for joined in (normalize(a) + normalize(b), stems[i] + stems[j]):
                terms = analyze(joined)
                if len(terms) == 1 and terms[0] not in own:
                    found.setdefault(terms[0])
    return list(found)


def query_language(text: str, default: str = "en") -> str:
    """The language a query is written in: guessed (py3langid) when it has letters of a
    non-Latin script, else ``default`` (the user interface's language), since a few Latin
    words are too short to tell English from French."""
    letters = [c for c in text if c.isalpha() and not c.isascii()]
    if not any(not unicodedata.name(c, "LATIN").startswith("LATIN") for c in letters):
        return default
    import py3langid

    return py3langid.classify(text)[0]


def language_of(lang: str) -> str:
    """A language tag's primary subtag, lower case (``en-US`` -> ``en``; ``""`` for none)."""
    return lang.strip().lower().replace("_", "-").split("-")[0]
