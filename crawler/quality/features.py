"""What the dedup and quality pipelines read of a page's text, computed with its extraction.

Tokenizing, shingling and hashing a page's text for the deduplicator (exact key, MinHash or
SimHash fingerprint), the template-trap check (``template_shingles``) and the spam rules
(``text_stats``) is per-page CPU that needs no crawl state: an extraction worker
(``crawler.extractpool``) computes it with the page (``item_with_features``) and the item
carries it (``PageItem.text_features``), so the crawl process's reactor thread only looks
the results up. Every hash is stable across processes (xxh3), so the values are the ones
the pipelines would compute themselves, which they do for an item without features (built
outside a crawl, or by a worker told other dedup settings: ``DedupSpec`` must match).

This module and what it imports stay light (no Scrapy, Twisted or datasketch): a worker
imports it on its first page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from crawler.extract import Extracted, item_from_response
from crawler.items import PageItem
from crawler.quality.dedup.simhash import simhash
from crawler.quality.dedup.text import (
    exact_key,
    first_words,
    minhash_values,
    shingle_hashes,
    word_hashes,
    words,
)
from crawler.quality.judges import TextStats, template_shingles, text_stats


@dataclass(frozen=True)
class DedupSpec:
    """The deduplicator's parameters its features depend on (``Deduplicator.spec``):
    ``method`` (``minhash`` or ``simhash``), shingle size, the fewest tokens a fingerprint
    is taken of, the most tokens read, and MinHash's permutations (``uint32`` bytes)."""

    method: str
    shingle_size: int
    min_tokens: int
    max_tokens: int
    perm_a: bytes = b""
    perm_b: bytes = b""


@dataclass(frozen=True)
class DedupFeatures:
    """A text's exact-duplicate key (None: no words), its token count (at most
    ``max_tokens``) and its fingerprint (MinHash values, a SimHash, or None under
    ``min_tokens``), computed under ``spec``."""

    spec: DedupSpec
    exact_key: str | None
    tokens: int
    fingerprint: Any = None


@dataclass(frozen=True)
class TextFeatures:
    """A page's ``DedupFeatures`` (None: dedup is off), its ``template_shingles`` and its
    ``TextStats``."""

    dedup: DedupFeatures | None
    template_shingles: np.ndarray
    stats: TextStats


def dedup_features(text: str, spec: DedupSpec,
                   words: tuple[list[str], str] | None = None, title: str = "") -> DedupFeatures:
    """What ``Deduplicator.check`` computes of a page's ``text`` and ``title`` before it
    looks anything up (``words``: ``first_words(text, spec.max_tokens)``, when already
    split). The exact key of a text under ``spec.min_tokens`` words covers the title too."""
    tokens, rest = words or first_words(text, spec.max_tokens)
    # A few words (a book's entry page whose table of contents extraction leaves out: "Next
    # Next", a doxygen member list's heading) do not tell one page from another: such pages
    # are copies only under the same title too.
    short = len(tokens) < spec.min_tokens
    key = exact_key(tokens, rest, title if short else None) if tokens else None
    fingerprint = None
    if len(tokens) >= spec.min_tokens:
        shingles = shingle_hashes(word_hashes(tokens), spec.shingle_size)
        if spec.method == "minhash":
            fingerprint = minhash_values(shingles, np.frombuffer(spec.perm_a, np.uint32),
                                         np.frombuffer(spec.perm_b, np.uint32))
        else:
            fingerprint = simhash(shingles)
    return DedupFeatures(spec, key, len(tokens), fingerprint)


def text_features(title: str, text: str, dedup: DedupSpec | None) -> TextFeatures:
    """The ``TextFeatures`` of a page's ``title`` and ``text``."""
    if dedup is None:
        every = words(text)
        return TextFeatures(None, template_shingles(text, words=every),
                            text_stats(title, text, every))
    first = first_words(text, dedup.max_tokens)
    tokens, rest = first
    # without a rest, the dedup's tokens are every word of the text, as the spam rules
    # and the template check read them (``\w+`` of the lower-cased text): split once
    every = None if rest else tokens
    return TextFeatures(dedup_features(text, dedup, first, title),
                        template_shingles(text, words=every), text_stats(title, text, every))


def item_with_features(*, features: DedupSpec | None = None,
                       **kwargs: Any) -> tuple[Extracted, PageItem]:
    """``item_from_response(**kwargs)`` with the item's ``text_features`` (dedup's under
    ``features``): what an extraction worker runs for each page of a crawl."""
    page, item = item_from_response(**kwargs)
    item.text_features = text_features(item.title, item.text, features)
    return page, item
