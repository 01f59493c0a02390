"""The deduplicator: exact duplicates by normalized-text hash, near-duplicates by MinHash or
SimHash, and a cluster id for every document (the id of its cluster's first document)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from crawler.options import Option, settings_to_options
from crawler.quality.dedup.compact import CompactRedisStore
from crawler.quality.dedup.minhash import MinHasher, MinHashIndex
from crawler.quality.dedup.simhash import SimHashIndex
from crawler.quality.dedup.store import DedupStore, MemoryDedupStore, RedisDedupStore
from crawler.quality.features import DedupFeatures, DedupSpec, dedup_features

METHODS = ("minhash", "simhash")
#: How MinHash state is laid out in Redis: ``compact`` (crawler.quality.dedup.compact, the
#: default) or
#: ``datasketch`` (datasketch's own bucket layout, ~9 KB per page).
REDIS_LAYOUTS = ("compact", "datasketch")


@dataclass(frozen=True)
class Verdict:
    """What the deduplicator decided for one document.

    ``kind`` is ``"new"`` (first of its cluster), ``"exact"`` (same normalized text as
    ``match``), ``"near"`` (near-copy of ``match``) or ``"known"`` (this id was seen before).
    """

    doc_id: str
    cluster_id: str
    kind: str
    match: str = ""
    match_host: str = ""
    #: The host's ``(pages, copies)`` totals when the store counted them with the check
    #: (``CompactRedisStore``); None: count with ``store.count_host``.
    host_totals: tuple[int, int] | None = None


def _spec(method: str, shingle_size: int, min_tokens: int, max_tokens: int,
          hasher: MinHasher | None) -> DedupSpec:
    if hasher is None:
        return DedupSpec(method, shingle_size, min_tokens, max_tokens)
    return DedupSpec(method, shingle_size, min_tokens, max_tokens, hasher.a.tobytes(),
                     hasher.b.tobytes())


class Deduplicator:
    """Classifies documents as new, exact duplicates or near-duplicates, in arrival order.

    Texts shorter than ``min_tokens`` words are only checked for exact duplicates (shingle
    similarity means little on a few words), and only under the same title (a few words do
    not tell one page from another); empty texts are never duplicates. Only the
    first ``max_tokens`` words are shingled, so a page costs the same bounded work however
    long its text (a 9 MiB page of short words has ~2 million). A text's features
    (``crawler.quality.features.dedup_features``) are computed in one place, here or in an
    extraction worker.
    """

    #: Setting -> option of ``create``; the defaults are in crawler/settings.py.
    SETTINGS: ClassVar[dict[str, Option]] = {
        "DEDUP_METHOD": ("method", str),
        "DEDUP_REDIS_PREFIX": ("prefix", str),
        "DEDUP_MINHASH_THRESHOLD": ("threshold", float),
        "DEDUP_MINHASH_PERMUTATIONS": ("num_perm", int),
        "DEDUP_SIMHASH_DISTANCE": ("hamming_k", int),
        "DEDUP_SHINGLE_SIZE": ("shingle_size", int),
        "DEDUP_MIN_TOKENS": ("min_tokens", int),
        "DEDUP_MAX_TOKENS": ("max_tokens", int),
        "DEDUP_REDIS_LAYOUT": ("redis_layout", str),
    }

    def __init__(
        self,
        method: str,
        store: DedupStore,
        index: MinHashIndex | SimHashIndex,
        *,
        shingle_size: int,
        min_tokens: int,
        max_tokens: int = 100_000,
    ):
        if method not in METHODS:
            raise ValueError(f"unknown dedup method {method!r}; use one of {METHODS}")
        self.method = method
        self.store = store
        self.index = index
        self.shingle_size = shingle_size
        self.max_tokens = max_tokens
        self.min_tokens = min_tokens
        self._spec: DedupSpec | None = None

    #: Setting -> option of ``CompactRedisStore`` (``create``'s ``compact_options``).
    COMPACT_SETTINGS: ClassVar[dict[str, Option]] = {
        "DEDUP_COMPACT_BANDS": ("bands", int),
        "DEDUP_COMPACT_ROWS": ("rows", int),
        "DEDUP_COMPACT_SIGNATURE_BITS": ("signature_bits", int),
        "DEDUP_COMPACT_PARTITION_BITS": ("partition_bits", int),
    }

    @classmethod
    def from_settings(cls, settings: Any, **overrides: Any) -> Deduplicator:
        """The deduplicator the ``DEDUP_*`` settings describe (Scrapy or Django settings, a
        mapping or None), ``overrides`` (options of ``create``, e.g. ``redis_url``) on top."""
        overrides.setdefault("compact_options",
                             settings_to_options(settings, cls.COMPACT_SETTINGS))
        return cls.create(**settings_to_options(settings, cls.SETTINGS, **overrides))

    @classmethod
    def create(
        cls,
        *,
        method: str,
        prefix: str,
        threshold: float,
        num_perm: int,
        hamming_k: int,
        shingle_size: int,
        min_tokens: int,
        max_tokens: int,
        redis_url: str | None = None,
        simhash_blocks: int = 6,
        redis_layout: str,
        compact_options: dict | None = None,
    ) -> Deduplicator:
        """A deduplicator whose state is in Redis when ``redis_url`` is given, else in memory.

        MinHash in Redis uses ``redis_layout`` (``REDIS_LAYOUTS``); ``compact_options`` are
        ``CompactRedisStore``'s ``bands``, ``rows``, ``signature_bits``, ``partition_bits``.
        """
        if method not in METHODS:
            raise ValueError(f"unknown dedup method {method!r}; use one of {METHODS}")
        if redis_layout not in REDIS_LAYOUTS:
            raise ValueError(f"unknown Redis layout {redis_layout!r}; use one of {REDIS_LAYOUTS}")
        client = None
        if redis_url:
            import redis

            client = redis.Redis.from_url(redis_url)
        if client is not None and method == "minhash" and redis_layout == "compact":
            store = CompactRedisStore(
                client,
                prefix,
                threshold,
                MinHasher(num_perm=num_perm),
                **(compact_options or {}),
            )
            return cls(method, store, store, shingle_size=shingle_size, min_tokens=min_tokens,
                       max_tokens=max_tokens)
        store = RedisDedupStore(client, prefix) if client else MemoryDedupStore()
        if method == "minhash":
            index = MinHashIndex(
                threshold, num_perm, redis_url=redis_url, basename=f"{prefix}:minhash"
            )
        else:
            index = SimHashIndex(hamming_k, simhash_blocks, client, basename=f"{prefix}:simhash")
        return cls(method, store, index, shingle_size=shingle_size, min_tokens=min_tokens,
                   max_tokens=max_tokens)

    def spec(self) -> DedupSpec:
        """The parameters this deduplicator's features of a text depend on: features
        computed elsewhere (an extraction worker, ``crawler.quality.features``) under an
        equal spec are the ones ``check`` would compute."""
        if self._spec is None:
            self._spec = self._make_spec()
        return self._spec

    def _make_spec(self) -> DedupSpec:
        hasher = self.index.hasher if self.method == "minhash" else None
        return _spec(self.method, self.shingle_size, self.min_tokens, self.max_tokens, hasher)

    @classmethod
    def spec_from_settings(cls, settings: Any) -> DedupSpec:
        """The ``spec`` of the deduplicator ``from_settings(settings)`` builds, without
        building it (no store is opened)."""
        o = settings_to_options(settings, cls.SETTINGS)
        hasher = MinHasher(num_perm=o["num_perm"]) if o["method"] == "minhash" else None
        return _spec(o["method"], o["shingle_size"], o["min_tokens"], o["max_tokens"], hasher)

    def features(self, text: str, title: str = "") -> DedupFeatures:
        """The exact key, token count and fingerprint ``check`` reads of ``text``."""
        return dedup_features(text, self.spec(), title=title)

    def check(self, doc_id: str, host: str, text: str,
              features: DedupFeatures | None = None, title: str = "") -> Verdict:
        """Classify ``doc_id`` and record it; checking the same id again returns ``known``.

        The exact key covers the whole text, and the ``title`` of a text under
        ``min_tokens`` words; the near-duplicate fingerprint its first ``max_tokens``
        words. ``features``: ``features(text, title)``, when already computed (by an
        extraction worker; ignored unless computed under this deduplicator's ``spec``)."""
        if features is None or features.spec != self.spec():
            features = self.features(text, title)
        key = features.exact_key
        if isinstance(self.store, CompactRedisStore):
            return self._check_compact(doc_id, host, features)
        owner, known = self.store.claim(key, doc_id)
        if owner is not None and owner != doc_id:
            owner_cluster, owner_host = self.store.lookup(owner) or (owner, "")
            cluster = self.store.assign(doc_id, owner_cluster, host)
            return Verdict(doc_id, cluster, "exact", owner, owner_host)
        if known is not None:
            return Verdict(doc_id, known[0], "known")
        if features.fingerprint is None:  # fewer than min_tokens words
            return Verdict(doc_id, self.store.assign(doc_id, doc_id, host), "new")
        found = self.index.match_and_add(doc_id, self.fingerprint(features))
        if found is None:
            return Verdict(doc_id, self.store.assign(doc_id, doc_id, host), "new")
        match = found[0]
        match_cluster, match_host = self.store.lookup(match) or (match, "")
        cluster = self.store.assign(doc_id, match_cluster, host)
        return Verdict(doc_id, cluster, "near", match, match_host)

    def fingerprint(self, features: DedupFeatures):
        """The fingerprint of ``features`` (``features(text)``) as the index takes it: a
        MinHash signature or a 64-bit SimHash."""
        if self.method == "minhash":
            return self.index.hasher.from_values(features.fingerprint)
        return features.fingerprint

    def _check_compact(self, doc_id: str, host: str, features: DedupFeatures) -> Verdict:
        """``check`` in two round trips, host counts included (``CompactRedisStore``)."""
        signature = None if features.fingerprint is None else self.fingerprint(features)
        kind, cluster, match, match_host, pages, copies = self.store.check_document(
            doc_id, host, features.exact_key, signature
        )
        totals = None if pages is None else (pages, copies)
        return Verdict(doc_id, cluster, kind, match, match_host, totals)

    def cluster_size(self, cluster_id: str) -> int:
        """How many documents share ``cluster_id`` (1 for a document without copies)."""
        return self.store.cluster_size(cluster_id)
