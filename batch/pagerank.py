"""PageRank over the page and host graphs by SciPy sparse power iteration.

The graph is held as compact NumPy arrays: node keys are 64-bit integers (a document id is
16 hex digits, i.e. exactly 64 bits), interned to dense ``int32`` indices by a sorted key
table, never by a Python dict with an object per node. The iteration is the one of
``networkx.pagerank`` (its SciPy path): out-link-normalized edges, duplicate edges counted
once, dangling nodes' rank spread along the personalization vector, convergence when the L1
change is below ``n * tol``. Scores equal networkx's to float rounding.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from operator import itemgetter

import numpy as np
import scipy.sparse as sp

#: Fibonacci hashing constant; multiplying by it (mod 2**64) is a bijection that spreads
#: sequential keys over the top bits, which the key table buckets on.
_MIX = np.uint64(0x9E3779B97F4A7C15)
_UNMIX = np.uint64(pow(0x9E3779B97F4A7C15, -1, 2**64))
_LOOKUP_CHUNK = 1 << 20

_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", np.uint8)


class PowerIterationFailedConvergence(RuntimeError):
    """PageRank did not reach the tolerance within ``max_iter`` iterations."""


def doc_ids_to_keys(doc_ids: Sequence[str]) -> np.ndarray:
    """Parse 16-hex-digit document ids into ``uint64`` keys, vectorized.

    Raises ``ValueError`` naming the first id that is not 16 hex digits.
    """
    if not doc_ids:
        return np.empty(0, dtype=np.uint64)
    try:
        if set(map(len, doc_ids)) == {16}:
            raw = bytes.fromhex("".join(doc_ids))
            if len(raw) == 8 * len(doc_ids):
                return np.frombuffer(raw, dtype=">u8").astype(np.uint64)
    except ValueError:
        pass
    first = next(i for i in doc_ids if not _is_doc_id(i))
    raise ValueError(f"not a document id (16 hex digits, see crawler.urls.doc_id_for): {first!r}")


def _is_doc_id(value: str) -> bool:
    return len(value) == 16 and all(c in "0123456789abcdefABCDEF" for c in value)


def keys_to_doc_ids(keys: np.ndarray) -> list[str]:
    """The inverse of ``doc_ids_to_keys``: lower-case 16-hex-digit strings."""
    octets = np.ascontiguousarray(keys, dtype=np.uint64).astype(">u8").view(np.uint8)
    octets = octets.reshape(-1, 8)
    chars = np.empty((len(octets), 16), dtype=np.uint8)
    chars[:, 0::2] = _HEX_DIGITS[octets >> 4]
    chars[:, 1::2] = _HEX_DIGITS[octets & 15]
    return chars.view("S16").ravel().astype(str).tolist()


class KeyTable:
    """The distinct 64-bit keys of a graph, with vectorized key -> dense index lookup.

    Index ``i`` is the node's row in every array of the graph; ``keys()[i]`` is its key.
    """

    def __init__(self, key_arrays: Iterable[np.ndarray]):
        parts = [_sorted_unique(_as_u64(a) * _MIX) for a in key_arrays]
        table = _sorted_unique(np.concatenate(parts)) if parts else np.empty(0, np.uint64)
        self._table = table
        bits = max(1, int(np.ceil(np.log2(max(len(table), 2)))))
        self._shift = np.uint64(64 - bits)
        counts = np.bincount((table >> self._shift).astype(np.intp), minlength=1 << bits)
        self._start = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=self._start[1:])

    def __len__(self) -> int:
        return len(self._table)

    def keys(self) -> np.ndarray:
        """Keys as ``uint64``, in index order."""
        return self._table * _UNMIX

    def lookup(self, keys: np.ndarray, missing: int | None = None) -> np.ndarray:
        """Dense ``int32`` index of each key.

        A key not in the table raises ``KeyError``, or maps to ``missing`` when given.
        """
        keys = _as_u64(keys)
        out = np.empty(len(keys), dtype=np.int32)
        for lo in range(0, len(keys), _LOOKUP_CHUNK):
            chunk = keys[lo : lo + _LOOKUP_CHUNK]
            out[lo : lo + _LOOKUP_CHUNK] = self._lookup_chunk(chunk, missing)
        return out

    def _lookup_chunk(self, keys: np.ndarray, missing: int | None) -> np.ndarray:
        mixed = keys * _MIX
        bucket = (mixed >> self._shift).astype(np.intp)
        pos = self._start[bucket]
        end = self._start[bucket + 1]
        out = np.empty(len(keys), dtype=np.int32)
        todo = np.arange(len(keys))
        # Buckets hold about one key each, so a few vectorized probes resolve every key.
        while todo.size:
            p = pos[todo]
            past = p >= end[todo]
            if past.any():
                if missing is None:
                    absent = int(keys[todo[past][0]])
                    raise KeyError(f"key {absent:#018x} is not a node of this graph")
                out[todo[past]] = missing
                todo, p = todo[~past], p[~past]
            found = self._table[p] == mixed[todo]
            out[todo[found]] = p[found]
            todo = todo[~found]
            pos[todo] += 1
        return out


def _sorted_unique(a: np.ndarray) -> np.ndarray:
    # np.unique is several times slower than sort + mask on large uint64 arrays.
    a = np.sort(a)
    if len(a) < 2:
        return a
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def _as_u64(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype == np.uint64:
        return a
    if a.dtype.kind not in "iu":
        raise TypeError(f"node keys must be integers, got {a.dtype}")
    return a.astype(np.int64, copy=False).view(np.uint64)


class IntIds:
    """Node ids that are integers already (generated graphs, tests)."""

    def encode(self, ids: Sequence) -> np.ndarray:
        return np.asarray(ids, dtype=np.int64)

    def decode(self, keys: np.ndarray) -> list:
        return keys.view(np.int64).tolist()


class DocIds:
    """Node ids that are document ids (16 hex digits), kept as ``uint64`` keys."""

    def encode(self, ids: Sequence[str]) -> np.ndarray:
        return doc_ids_to_keys(ids)

    def decode(self, keys: np.ndarray) -> list[str]:
        return keys_to_doc_ids(keys)


class HostNames:
    """Node ids that are host names, numbered in order of first sight.

    Hosts are few next to pages, so a dict is the right tool here.
    """

    def __init__(self) -> None:
        self.number: dict[str, int] = {}

    def intern(self, host: str) -> int:
        return self.number.setdefault(host, len(self.number))

    def encode(self, ids: Sequence[str]) -> np.ndarray:
        unknown = len(self.number)
        return np.array([self.number.get(h, unknown) for h in ids], dtype=np.int64)

    def decode(self, keys: np.ndarray) -> list[str]:
        names = np.array(list(self.number), dtype=object)
        return names[keys.view(np.int64)].tolist()


class LinkGraph:
    """A directed graph as CSR arrays: ``n`` nodes, distinct edges, out-link-normalized.

    ``matrix[i, j] = 1 / outdegree(j)`` for every distinct edge ``j -> i`` (the transpose of
    the row-stochastic link matrix), so one PageRank step is one sparse mat-vec. Node ``i``
    has id ``node_ids()[i]``.
    """

    def __init__(self, keys: KeyTable, src: np.ndarray, dst: np.ndarray, ids=None):
        n = len(keys)
        self.key_table = keys
        self.ids = ids or IntIds()
        matrix = sp.csr_array((np.ones(len(src), dtype=np.float64), (dst, src)), shape=(n, n))
        matrix.sum_duplicates()
        self.out_degree = np.bincount(matrix.indices, minlength=n)
        inverse = np.zeros(n, dtype=np.float64)
        linked = self.out_degree > 0
        inverse[linked] = 1.0 / self.out_degree[linked]
        matrix.data = inverse[matrix.indices]
        self.matrix = matrix
        self.dangling = np.flatnonzero(~linked)

    @property
    def n(self) -> int:
        """Number of nodes."""
        return self.matrix.shape[0]

    @property
    def edges(self) -> int:
        """Number of distinct edges."""
        return self.matrix.nnz

    @classmethod
    def from_arrays(
        cls, src: np.ndarray, dst: np.ndarray, nodes: np.ndarray | None = None, ids=None
    ) -> LinkGraph:
        """Graph of integer-keyed edges ``src[k] -> dst[k]``; ``nodes`` adds unlinked nodes."""
        extra = [] if nodes is None else [np.asarray(nodes)]
        table = KeyTable([src, dst, *extra])
        return cls(table, table.lookup(src), table.lookup(dst), ids)

    @classmethod
    def from_doc_edges(
        cls,
        pairs: Iterable[tuple[str, str]],
        nodes: Iterable[str] = (),
        chunk_size: int = 1 << 18,
    ) -> LinkGraph:
        """Page graph of ``(src_doc_id, dst_doc_id)`` pairs, read in chunks into compact keys.

        ``nodes`` adds documents that no edge names, so they get a rank too.
        """
        src_parts, dst_parts = [], []
        for chunk in _batched(pairs, chunk_size):
            src_parts.append(doc_ids_to_keys(list(map(itemgetter(0), chunk))))
            dst_parts.append(doc_ids_to_keys(list(map(itemgetter(1), chunk))))
        node_parts = [doc_ids_to_keys(c) for c in _batched(nodes, chunk_size)]
        return cls.from_arrays(
            _concat(src_parts), _concat(dst_parts), _concat(node_parts), DocIds()
        )

    @classmethod
    def from_host_edges(
        cls, pairs: Iterable[Sequence[str]], keep_self_links: bool = False
    ) -> LinkGraph:
        """Host graph of ``(src_host, dst_host, ...)`` rows; links within a host are dropped.

        Extra fields (such as a link count) are ignored: a host links to another or not.
        """
        hosts = HostNames()
        src: list[int] = []
        dst: list[int] = []
        for row in pairs:
            a, b = row[0], row[1]
            if a == b and not keep_self_links:
                hosts.intern(a)
                continue
            src.append(hosts.intern(a))
            dst.append(hosts.intern(b))
        return cls.from_arrays(
            np.array(src, dtype=np.int64),
            np.array(dst, dtype=np.int64),
            np.arange(len(hosts.number)),
            hosts,
        )

    def node_keys(self) -> np.ndarray:
        """Node keys (``uint64``) in index order."""
        return self.key_table.keys()

    def node_ids(self, start: int = 0, stop: int | None = None) -> list:
        """Node ids in index order: doc ids, host names or integers, as they came in."""
        return self.ids.decode(self.key_table.keys()[start:stop])

    def index_of(self, ids: Sequence) -> np.ndarray:
        """Dense index of each node id; -1 for an id that is not a node of this graph."""
        return self.key_table.lookup(self.ids.encode(ids), missing=-1)

    def batches(self, scores: np.ndarray, size: int = 1 << 16) -> Iterator[dict]:
        """``{node_id: score}`` in batches of at most ``size`` nodes, in index order."""
        for lo in range(0, self.n, size):
            yield dict(
                zip(self.node_ids(lo, lo + size), scores[lo : lo + size].tolist(), strict=True)
            )


def pagerank(
    graph: LinkGraph,
    alpha: float = 0.85,
    personalization: Mapping | None = None,
    max_iter: int = 100,
    tol: float = 1.0e-6,
    info: dict | None = None,
) -> np.ndarray:
    """PageRank of every node, in index order, summing to 1 (``networkx.pagerank`` semantics).

    ``personalization`` maps node ids (as ``node_ids`` gives them) to non-negative weights;
    ids not in the graph are ignored, as networkx does. Dangling nodes follow it too.
    Convergence is an L1 change below ``n * tol``, as in networkx: loose on big graphs, so
    pass a smaller ``tol`` there. ``info``, when given, receives ``iterations``.
    Raises ``PowerIterationFailedConvergence`` after ``max_iter`` steps without converging.
    """
    n = graph.n
    if n == 0:
        return np.empty(0, dtype=np.float64)
    p = _personalization_vector(graph, personalization)
    x = np.full(n, 1.0 / n)
    matrix = graph.matrix
    dangling = graph.dangling
    for step in range(1, max_iter + 1):
        last = x
        x = alpha * (matrix @ last + last[dangling].sum() * p) + (1 - alpha) * p
        if np.abs(x - last).sum() < n * tol:
            if info is not None:
                info["iterations"] = step
            return x
    raise PowerIterationFailedConvergence(
        f"PageRank did not converge to tol={tol} in {max_iter} iterations; raise max_iter"
    )


def static_rank(scores: np.ndarray) -> np.ndarray:
    """PageRank log-scaled to [0, 1] for ranking: ``log1p(n * pr) / log1p(n * max(pr))``.

    The best node gets 1; a node of average rank (``pr = 1 / n``) gets
    ``log(2) / log1p(n * max(pr))``, so a few hubs do not flatten everyone else to zero.
    """
    if scores.size == 0:
        return scores.copy()
    relative = np.log1p(scores * scores.size)
    return relative / relative.max()


def _personalization_vector(graph: LinkGraph, personalization: Mapping | None) -> np.ndarray:
    n = graph.n
    if personalization is None:
        return np.full(n, 1.0 / n)
    p = np.zeros(n, dtype=np.float64)
    where = graph.index_of(list(personalization))
    weights = np.fromiter(personalization.values(), dtype=np.float64, count=len(where))
    known = where >= 0
    p[where[known]] = weights[known]
    if p.sum() <= 0:
        raise ValueError("personalization must give a positive weight to a node of the graph")
    return p / p.sum()


def _batched(items: Iterable, size: int) -> Iterator[list]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint64)
