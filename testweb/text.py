"""Deterministic English-like text: a Zipf distribution over a list of common English words.

``vocabulary.txt`` holds about 4,000 common English words ranked by frequency (made once
from the ``wordfreq`` package's English list: lower-case alphabetic words, with a few web
tokens such as "http" and some profanity removed; nothing is downloaded at run time). The
word of rank r is drawn with probability proportional to 1/r, as in real text.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from importlib import resources

VOCABULARY: tuple[str, ...] = tuple(
    resources.files(__package__).joinpath("vocabulary.txt").read_text("ascii").split()
)
_CUM_WEIGHTS = tuple(itertools.accumulate(1.0 / rank for rank in range(1, len(VOCABULARY) + 1)))
# Drawing words one by one costs most of a page's generation time, so pages take windows of
# one long Zipf-distributed stream drawn once; the marginal distribution is the same and two
# pages share a window only by rare chance.
_STREAM_LEN = 1 << 18
_STREAM: list[str] = random.Random(20260101).choices(VOCABULARY, cum_weights=_CUM_WEIGHTS,
                                                     k=_STREAM_LEN)


def digest(*parts: object) -> bytes:
    """A stable 16-byte hash of the parts (independent of PYTHONHASHSEED)."""
    return hashlib.blake2b("\x00".join(map(str, parts)).encode(), digest_size=16).digest()


def rng_for(*parts: object) -> random.Random:
    """A random generator seeded by a stable hash of the parts."""
    return random.Random(int.from_bytes(digest(*parts)[:8], "big"))


def keyword_for(*parts: object) -> str:
    """A rare token, ``kw`` + 10 hex digits, unique per parts with overwhelming probability."""
    return "kw" + digest("keyword", *parts)[:5].hex()


def words(rng: random.Random, n: int) -> list[str]:
    """n words drawn from the Zipf distribution (a random window of the stream)."""
    start = int(rng.random() * (_STREAM_LEN - n))
    return _STREAM[start:start + n]


def between(rng: random.Random, lo: int, hi: int) -> int:
    """A uniform integer in [lo, hi]; cheaper than ``rng.randint``."""
    return lo + int(rng.random() * (hi - lo + 1))


def title_case(ws: list[str]) -> str:
    """Words joined with each capitalized, as in a heading."""
    return " ".join(w.capitalize() for w in ws)


def sentence(rng: random.Random, lo: int = 8, hi: int = 20) -> list[str]:
    """Words of one sentence; the caller capitalizes and punctuates."""
    return words(rng, between(rng, lo, hi))
