"""The embedded index's section vectors, kept out of tantivy's document store.

A question re-ranked by its results' sections (:class:`index.semantic.SectionMatch`) reads
each of its first ``SEARCH_SEMANTIC_DEPTH`` results' id and vectors. From the document
store, a read decompresses the result's whole stored block (a real page's hit fields and
source, ~50 KB): ~3.5 ms a question of 30 results on 100,000 real pages. Here a page's
vectors are one record of an append-only file beside the index, ``section-vectors.bin``,
found by the page's ``vectors_at`` fast column (the record's offset, plus one; 0 or none:
no vectors), which tantivy keeps with the page through merges and drops with it on
delete: ~0.04 ms a question for the same reads.

A record is its length (4 bytes, little-endian, the bytes after them), the length of the
page's id (2 bytes), a digest of its vectors (8 bytes of BLAKE2b), the id (UTF-8), then the
vectors: the model's version, ``:``, and the int8 rows as they
are (:func:`index.semantic.pack` without its base64), however many windows the page has.
Records are never changed: a page written again with the same vectors points at its last
record, one with other vectors gets a new one, and the records no page points at any more
stay until the index is rebuilt. The writer flushes the file to disk before each commit of
the index (:meth:`VectorFile.sync`), so a committed page's record is always there; a
record written before a commit that never happened is one no page points at. Readers in
other processes map the file again when a page points past what they mapped.
"""

from __future__ import annotations

import base64
import hashlib
import mmap
import os
import struct
import threading
from pathlib import Path

__all__ = ["VECTORS_AT", "VECTOR_FILE", "VectorFile", "binary_vectors"]

#: The fast column of a page's record (its offset in the file plus one; 0: none).
VECTORS_AT = "vectors_at"
#: The file of the records, in the index's directory.
VECTOR_FILE = "section-vectors.bin"

_RECORD = struct.Struct("<IH8s")


def binary_vectors(packed: str) -> bytes:
    """``packed`` vectors (:func:`index.semantic.pack`: ``version:`` and base64) as a
    record holds them: the version, ``:``, the int8 rows."""
    version, _, data = packed.rpartition(":")
    return version.encode("ascii") + b":" + base64.b64decode(data)


def _packed(binary: bytes) -> str:
    """The :func:`index.semantic.pack` form of a record's vectors."""
    version, _, data = binary.partition(b":")
    return f"{version.decode('ascii')}:{base64.b64encode(data).decode('ascii')}"


class VectorFile:
    """The records of section vectors of the index in ``directory`` (see the module): one
    process appends (the index's writer), any number read. Thread-safe."""

    def __init__(self, directory: str | os.PathLike):
        self.path = Path(directory) / VECTOR_FILE
        self._lock = threading.Lock()
        self._map: mmap.mmap | None = None
        self._out = None
        #: The last record of each id (and its vectors' digest) the writer found or wrote.
        self._last: dict[str, tuple[int, bytes]] | None = None
        self._end = 0

    # --- reads ------------------------------------------------------------------------

    def _mapped(self, end: int) -> mmap.mmap | None:
        """The file mapped at least to ``end`` (mapped again when it grew), or ``None``
        when it is shorter."""
        view = self._map
        if view is not None and len(view) >= end:
            return view
        with self._lock:
            view = self._map
            if view is None or len(view) < end:
                try:
                    with open(self.path, "rb") as f:
                        size = os.fstat(f.fileno()).st_size
                        if size < end:
                            return None
                        view = self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                except FileNotFoundError:
                    return None
        return view

    def read(self, at: int | None) -> tuple[str, bytes] | None:
        """The id and vectors (version, ``:``, int8 rows) of the record a page's
        ``vectors_at`` value ``at`` points at; ``None`` for none (0, ``None``)."""
        if not at:
            return None
        start = at - 1
        view = self._mapped(start + _RECORD.size)
        if view is None:
            return None
        size, id_size, _ = _RECORD.unpack_from(view, start)
        end = start + 4 + size
        if len(view) < end:
            view = self._mapped(end)
            if view is None:
                return None
        head = start + _RECORD.size
        return (view[head : head + id_size].decode("utf-8", "surrogatepass"),
                view[head + id_size : end])

    def packed(self, at: int | None) -> str:
        """The vectors of the record at ``at`` as a document holds them
        (:func:`index.semantic.pack`'s form; ``""``: none)."""
        record = self.read(at)
        return _packed(record[1]) if record else ""

    # --- writes -----------------------------------------------------------------------

    def append(self, doc_id: str, packed: str) -> int:
        """The ``vectors_at`` value of a record of ``doc_id``'s ``packed`` vectors: its last
        record when that holds the same vectors, else a new one at the end of the file."""
        binary = binary_vectors(packed)
        digest = hashlib.blake2b(binary, digest_size=8).digest()
        with self._lock:
            last = self._records()
            known = last.get(doc_id)
            if known is not None and known[1] == digest:
                return known[0]
            key = doc_id.encode("utf-8", "surrogatepass")
            out = self._writer()
            at = out.tell() + 1
            out.write(_RECORD.pack(_RECORD.size - 4 + len(key) + len(binary), len(key), digest)
                      + key + binary)
            last[doc_id] = (at, digest)
            return at

    def _writer(self):
        """The file opened for appending, cut after its last whole record (a record cut
        short by a crash before a commit is one no page points at)."""
        if self._out is None:
            self._records()
            out = open(self.path, "ab")  # noqa: SIM115 (open until close())
            if out.tell() > self._end:
                out.truncate(self._end)
                out.seek(self._end)
            self._out = out
        return self._out

    def _records(self) -> dict[str, tuple[int, bytes]]:
        """Each id's last record in the file and its vectors' digest, read once (the
        records' heads only)."""
        if self._last is None:
            last: dict[str, tuple[int, bytes]] = {}
            at = 0
            try:
                with open(self.path, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
            except FileNotFoundError:
                view = b""
            end = len(view)
            while at + _RECORD.size <= end:
                size, id_size, digest = _RECORD.unpack_from(view, at)
                if at + 4 + size > end:
                    break
                head = at + _RECORD.size
                last[bytes(view[head : head + id_size]).decode("utf-8", "surrogatepass")] = (
                    at + 1, digest)
                at += 4 + size
            if isinstance(view, mmap.mmap):
                view.close()
            self._last, self._end = last, at
        return self._last

    def sync(self) -> None:
        """Put the records written so far on disk (before the index commits pages that
        point at them)."""
        with self._lock:
            if self._out is not None:
                self._out.flush()
                os.fsync(self._out.fileno())

    def close(self) -> None:
        """Sync and close the file (a later :meth:`append` opens it again)."""
        self.sync()
        with self._lock:
            if self._out is not None:
                self._out.close()
                self._out = None
            self._last = None
            if self._map is not None:
                self._map.close()
                self._map = None
