"""The link graph and its ranks as Parquet files: what the Spark engine reads and writes.

A ranking run on Spark works in one directory (on storage the driver and every executor
see at the same path when the master is a cluster):

    graph/pages/edges.parquet   src int64, dst int64    page graph, doc ids as 64-bit keys
    graph/hosts/edges.parquet   src string, dst string  host graph, links between hosts
    ranks/pages/part-*.parquet  id int64, score double  static rank per page (Spark writes)
    ranks/hosts/part-*.parquet  id string, score double static rank per host

A document id is 16 hex digits, i.e. 64 bits (``batch.pagerank.doc_ids_to_keys``); Spark
has no unsigned type, so keys travel as the ``int64`` of the same bits. Writing reads the
link store once, in chunks, so no Python object per edge outlives its chunk; reading ranks
back streams them in batches of the size the score store stages.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from operator import itemgetter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from batch.pagerank import doc_ids_to_keys, keys_to_doc_ids

PAGE_EDGES = pa.schema([("src", pa.int64()), ("dst", pa.int64())])
HOST_EDGES = pa.schema([("src", pa.string()), ("dst", pa.string())])
_CHUNK = 1 << 18


def page_keys(doc_ids: Sequence[str]) -> np.ndarray:
    """Doc ids as the ``int64`` keys the Parquet page graph holds."""
    return doc_ids_to_keys(doc_ids).view(np.int64)


def write_page_edges(link_store, path: Path, chunk_size: int = _CHUNK) -> int:
    """Write the page graph of ``link_store`` to ``path``; return the rows written.

    Takes ``edge_arrays()`` (``uint64`` key arrays) when the store offers it, else reads
    ``iter_edges()`` pairs in chunks. Duplicate edges are kept: the engine drops them.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = 0
    with pq.ParquetWriter(path, PAGE_EDGES) as out:
        for src, dst in _page_edge_chunks(link_store, chunk_size):
            out.write_table(pa.table({"src": src, "dst": dst}, schema=PAGE_EDGES))
            rows += len(src)
    return rows


def _page_edge_chunks(link_store, chunk_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    edge_arrays = getattr(link_store, "edge_arrays", None)
    if edge_arrays is not None:
        src, dst = edge_arrays()
        src = np.asarray(src).astype(np.uint64, copy=False).view(np.int64)
        dst = np.asarray(dst).astype(np.uint64, copy=False).view(np.int64)
        for lo in range(0, len(src), chunk_size * 4):
            yield src[lo : lo + chunk_size * 4], dst[lo : lo + chunk_size * 4]
        return
    pairs = iter(link_store.iter_edges())
    while chunk := list(islice(pairs, chunk_size)):
        yield page_keys(list(map(itemgetter(0), chunk))), page_keys(list(map(itemgetter(1), chunk)))


def write_host_edges(rows: Iterable[Sequence[str]], path: Path, chunk_size: int = _CHUNK) -> int:
    """Write ``(src_host, dst_host, ...)`` rows to ``path``, links within a host dropped."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    rows = iter(rows)
    with pq.ParquetWriter(path, HOST_EDGES) as out:
        while chunk := list(islice(rows, chunk_size)):
            pairs = [(r[0], r[1]) for r in chunk if r[0] != r[1]]
            if pairs:
                src, dst = zip(*pairs, strict=True)
                out.write_table(pa.table({"src": src, "dst": dst}, schema=HOST_EDGES))
                written += len(pairs)
    return written


def _part_files(directory: Path) -> list[Path]:
    # Spark writes part-NNNNN-*.parquet in partition order, beside _SUCCESS and .crc files.
    return sorted(p for p in directory.glob("*.parquet") if not p.name.startswith((".", "_")))


def read_score_batches(directory: Path, size: int, doc_ids: bool) -> Iterator[dict]:
    """``{node_id: score}`` batches of exactly ``size`` (the last one smaller), in file order.

    ``doc_ids``: the ids are ``int64`` page keys, given back as 16-hex-digit doc ids.
    """
    ids: list = []
    scores: list[float] = []
    for path in _part_files(directory):
        for batch in pq.ParquetFile(path).iter_batches(batch_size=size, columns=["id", "score"]):
            column = batch.column(0).to_numpy(zero_copy_only=False)
            ids.extend(
                keys_to_doc_ids(column.view(np.uint64)) if doc_ids else column.tolist()
            )
            scores.extend(batch.column(1).to_pylist())
            while len(ids) >= size:
                yield dict(zip(ids[:size], scores[:size], strict=True))
                del ids[:size], scores[:size]
    if ids:
        yield dict(zip(ids, scores, strict=True))
