"""Text normalization, word tokens and stable 64-bit feature hashes shared by all methods.

Hashes must be identical in every worker process (the near-duplicate indexes may be
shared through Redis), so Python's randomized ``hash()`` is never used.
"""

from __future__ import annotations

import re

import numpy as np
import xxhash

_WORD = re.compile(r"\w+")
_NON_WORD = re.compile(r"\W")
#: ASCII bytes to what ``\w+`` of the lower-cased text keeps: a letter lower-cased, a digit
#: or ``_`` as it is, any other byte a space (``_ascii_words``).
_ASCII_LOWER_WORDS = bytes(
    ord(chr(b).lower()) if chr(b).isalnum() or b == ord("_") else 32 for b in range(128)
) + b" " * 128

# Odd multipliers that spread each position of a shingle over the whole 64-bit word.
_POSITION_MULTIPLIERS = np.array(
    [
        0x9E3779B97F4A7C15,
        0xC2B2AE3D27D4EB4F,
        0x165667B19E3779F9,
        0x85EBCA77C2B2AE63,
        0x27D4EB2F165667C5,
        0xFF51AFD7ED558CCD,
        0xC4CEB9FE1A85EC53,
        0xD6E8FEB86659FD93,
    ],
    dtype=np.uint64,
)


def _ascii_words(text: str) -> list[str]:
    """``_WORD.findall(text.lower())`` of an ASCII ``text``, by a byte table and a split
    (a fifth of the regex's CPU)."""
    return text.encode("ascii").translate(_ASCII_LOWER_WORDS).decode("ascii").split()


def words(text: str) -> list[str]:
    """The lower-cased word tokens of ``text`` (Unicode ``\\w+`` runs)."""
    if text.isascii():
        return _ascii_words(text)
    return _WORD.findall(text.lower())


def first_words(text: str, limit: int) -> tuple[list[str], str]:
    """The first ``limit`` lower-cased word tokens of ``text`` and the rest of it (``""``
    when there is none): the words of its first ``8 * limit`` characters (to the end of the
    word there) are tokenized, so a text costs a bounded amount however long it is. The
    rest is the words of that part past ``limit`` and the lower-cased text after it."""
    if len(text) <= 8 * limit and text.isascii():  # every word tokenized: no text after
        tokens = _ascii_words(text)
        if len(tokens) <= limit:
            return tokens, ""
        return tokens[:limit], " ".join(tokens[limit:]) + " "
    lowered = text.lower()
    end = len(lowered)
    if end > 8 * limit:
        boundary = _NON_WORD.search(lowered, 8 * limit)
        end = boundary.start() if boundary else end
    tokens = _WORD.findall(lowered, 0, end)
    rest = lowered[end:] if _WORD.search(lowered, end) else ""
    if len(tokens) > limit:
        rest = " ".join(tokens[limit:]) + " " + rest
        del tokens[limit:]
    return tokens, rest


def exact_key(tokens: list[str], rest: str = "", title: str | None = None) -> str:
    """A 128-bit hex digest of the normalized text: equal iff the token sequences are equal.
    ``rest``: the (lower-cased) text after ``tokens``, hashed as it is (``first_words``);
    ``title``: a title the key covers too (its words, lower-cased), where not None."""
    digest = xxhash.xxh3_128(" ".join(tokens).encode("utf-8"))
    if rest:
        digest.update(b"\x00")
        digest.update(rest.encode("utf-8", "surrogatepass"))
    if title is not None:
        digest.update(b"\x01")
        digest.update(" ".join(_WORD.findall(title.lower())).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


class _HashCache(dict):
    """Token -> 64-bit hash, filled on first use; word frequencies are Zipfian, so most
    lookups hit and the per-token cost is a C-level dict lookup instead of a Python call.

    Started over at ``max_size`` tokens (~130 bytes each): the frequent words are back
    within a few pages, and a crawl's vocabulary grows without end (Heaps' law), so a
    larger bound only grows the worker's memory through the whole crawl. 16,384 is also the
    fastest size measured on 119,302 crawled test web pages: 28 us per page against 43 for
    65,536 (a dict that outgrows the CPU caches) and 144 without a cache.
    """

    max_size = 16_384

    def __missing__(self, token: str) -> int:
        if len(self) >= self.max_size:
            self.clear()
        value = self[token] = xxhash.xxh3_64_intdigest(token.encode("utf-8"))
        return value


_hash_cache = _HashCache()


def word_hash(token: str) -> int:
    """The stable 64-bit hash of one token, as ``word_hashes`` gives it."""
    return _hash_cache[token]


def word_hashes(tokens: list[str]) -> np.ndarray:
    """A stable 64-bit hash per token (xxh3 of its UTF-8 bytes), as a ``uint64`` array."""
    return np.fromiter(map(_hash_cache.__getitem__, tokens), dtype=np.uint64, count=len(tokens))


def fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer, element-wise (a bijection that avalanches all bits)."""
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def shingle_hashes(hashes: np.ndarray, k: int) -> np.ndarray:
    """64-bit hashes of the ``k``-word shingles (contiguous windows) of a token-hash array.

    A text shorter than ``k`` words yields one shingle of all its words; an empty text none.
    """
    if not 1 <= k <= len(_POSITION_MULTIPLIERS):
        raise ValueError(f"shingle size must be between 1 and {len(_POSITION_MULTIPLIERS)}")
    n = len(hashes)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    k = min(k, n)
    count = n - k + 1
    combined = hashes[:count] * _POSITION_MULTIPLIERS[0]
    for i in range(1, k):
        combined = combined + hashes[i : i + count] * _POSITION_MULTIPLIERS[i]
    return fmix64(combined)


#: Shingles hashed at once into a signature (a chunk x num_perm uint32 matrix, 2 MB at 128).
SIGNATURE_CHUNK = 4096


def fold32(hashes: np.ndarray) -> np.ndarray:
    """Fold 64-bit hashes to 32 bits (xor of the halves)."""
    return ((hashes >> np.uint64(32)) ^ hashes).astype(np.uint32)


def fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer, element-wise (datasketch's pre-mix for affine32)."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def minhash_values(shingles: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The ``affine32`` MinHash values (``uint32``, one per permutation ``(a, b)``) of a set
    given as 64-bit element hashes: what ``crawler.quality.dedup.minhash.MinHasher`` signs
    with, here without datasketch so that an extraction worker computes it cheaply."""
    values = np.full(len(a), np.iinfo(np.uint32).max, dtype=np.uint32)
    # chunks at a time: the whole (num_perm x shingles) matrix of a long page took ~1 KB
    # a word (1.9 GB for a 9 MiB page); a chunk's is ~2 MB and the minimum the same. One
    # buffer for every chunk: a fresh 2 MB array per product and sum (mapped and faulted
    # in each time) made 5,000 shingles cost 3.2 ms, against 0.6 ms in place. A row per
    # permutation: its minimum is over contiguous values (a fifth less CPU for 1,500
    # shingles than the minimum down the columns of a row per shingle).
    buffer = np.empty((len(a), min(SIGNATURE_CHUNK, len(shingles))), dtype=np.uint32)
    offsets = b[:, None]
    for start in range(0, len(shingles), SIGNATURE_CHUNK):
        hv = fmix32(fold32(shingles[start:start + SIGNATURE_CHUNK]))
        rows = buffer[:, :len(hv)]
        np.multiply.outer(a, hv, out=rows)
        np.add(rows, offsets, out=rows)
        np.minimum(values, rows.min(axis=1), out=values)
    return values
