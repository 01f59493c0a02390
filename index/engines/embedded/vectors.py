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
record, one with other vectors gets a new one. The records no page points at any more (a
page's earlier vectors, a deleted page's) are dropped by :meth:`EmbeddedBackend.compact_vectors
<index.engines.embedded.backend.EmbeddedBackend.compact_vectors>`: it starts a new
generation of the file (``section-vectors.N.bin``; the generation is the ``vectors_at``
value's bits from ``GENERATION_SHIFT`` up), writes every page again so that each gets a
record there, commits, then deletes the older generations' files. A reader holding a
searcher from before the commit reads the file it points at while that is mapped; once it
is deleted, such a result reads no vectors (ranked as a page without) until the reader's
next reload. The writer flushes the file to disk before each commit of
the index (:meth:`VectorFile.sync`), so a committed page's record is always there; a
record written before a commit that never happened is one no page points at. Readers in
other processes map the file again when a page points past what they mapped.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import mmap
import os
import re
import struct
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["COMPACT_MIN_BYTES", "COMPACT_SHARE", "GENERATION_SHIFT", "VECTORS_AT", "VECTOR_FILE",
           "VectorFile", "binary_vectors", "compact", "vector_file_name"]

#: The fast column of a page's record: its offset in its generation's file plus one (0:
#: none), plus the generation times ``2 ** GENERATION_SHIFT``.
VECTORS_AT = "vectors_at"
#: The file of the records of generation 0, in the index's directory; generation N's is
#: ``section-vectors.N.bin``.
VECTOR_FILE = "section-vectors.bin"
#: The bits of a ``vectors_at`` value below its generation (a file of up to 1 TiB).
GENERATION_SHIFT = 40
_OFFSET = (1 << GENERATION_SHIFT) - 1
#: The files are compacted (:func:`compact`) once this share of their bytes is records no
#: page points at, and at least ``COMPACT_MIN_BYTES`` of them: a page's vectors are copied
#: once per compaction, so the files stay under twice their live records for one more
#: write of each record, amortised.
COMPACT_SHARE = 0.5
COMPACT_MIN_BYTES = 64 << 20
_GENERATION_NAME = re.compile(r"section-vectors(?:\.(\d+))?\.bin")


def vector_file_name(generation: int) -> str:
    """The name of generation ``generation``'s file of records."""
    return VECTOR_FILE if generation == 0 else f"section-vectors.{generation}.bin"

logger = logging.getLogger(__name__)

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
        self.directory = Path(directory)
        self._lock = threading.Lock()
        #: Each generation's file as mapped for reads.
        self._maps: dict[int, mmap.mmap] = {}
        self._out = None
        #: The generation appended to (the newest whose file exists, found on first use).
        self._generation: int | None = None
        #: The last record of each id (and its vectors' digest and size) the writer found or
        #: wrote in its generation's file.
        self._last: dict[str, tuple[int, bytes, int]] | None = None
        self._end = 0
        #: Bytes of the appended generation's records superseded by a later record of the
        #: same page (a deleted page's are not counted: :meth:`live_bytes` counts exactly).
        self.superseded_bytes = 0

    def generations(self) -> list[int]:
        """The generations whose files exist, oldest first."""
        found = (_GENERATION_NAME.fullmatch(p.name) for p in self.directory.iterdir())
        return sorted(int(m.group(1) or 0) for m in found if m)

    @property
    def generation(self) -> int:
        """The generation new records go to: the newest file's (0 without files)."""
        if self._generation is None:
            self._generation = max(self.generations(), default=0)
        return self._generation

    @property
    def path(self) -> Path:
        """The file new records go to."""
        return self.directory / vector_file_name(self.generation)

    def size(self) -> int:
        """Bytes of every generation's file."""
        return sum((self.directory / vector_file_name(g)).stat().st_size
                   for g in self.generations())

    def due(self) -> bool:
        """Whether the records replaced since the file was opened (a page's earlier
        vectors; a deleted page's are not known here) call for :func:`compact`."""
        return self.superseded_bytes >= max(COMPACT_MIN_BYTES, self.size() * COMPACT_SHARE)

    # --- reads ------------------------------------------------------------------------

    def _mapped(self, generation: int, end: int) -> mmap.mmap | None:
        """The file of ``generation`` mapped at least to ``end`` (mapped again when it
        grew), or ``None`` when it is shorter or gone."""
        view = self._maps.get(generation)
        if view is not None and len(view) >= end:
            return view
        with self._lock:
            view = self._maps.get(generation)
            if view is None or len(view) < end:
                try:
                    with open(self.directory / vector_file_name(generation), "rb") as f:
                        size = os.fstat(f.fileno()).st_size
                        if size < end:
                            return None
                        view = self._maps[generation] = mmap.mmap(f.fileno(), 0,
                                                                  access=mmap.ACCESS_READ)
                except FileNotFoundError:
                    return None
        return view

    def read(self, at: int | None) -> tuple[str, bytes] | None:
        """The id and vectors (version, ``:``, int8 rows) of the record a page's
        ``vectors_at`` value ``at`` points at; ``None`` for none (0, ``None``, a record
        of a generation deleted since)."""
        if not at:
            return None
        generation, start = at >> GENERATION_SHIFT, (at & _OFFSET) - 1
        view = self._mapped(generation, start + _RECORD.size)
        if view is None:
            return None
        size, id_size, _ = _RECORD.unpack_from(view, start)
        end = start + 4 + size
        if len(view) < end:
            view = self._mapped(generation, end)
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

    def live_bytes(self, values) -> int:
        """Bytes of the records the ``vectors_at`` ``values`` (every page's) point at."""
        total = 0
        for at in set(values):
            if at:
                generation, start = at >> GENERATION_SHIFT, (at & _OFFSET) - 1
                view = self._mapped(generation, start + 4)
                if view is not None:
                    total += 4 + _RECORD.unpack_from(view, start)[0]
        return total

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
            size = _RECORD.size + len(key) + len(binary)
            at = (self.generation << GENERATION_SHIFT) | (out.tell() + 1)
            out.write(_RECORD.pack(size - 4, len(key), digest) + key + binary)
            if known is not None:
                self.superseded_bytes += known[2]
            last[doc_id] = (at, digest, size)
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

    def _records(self) -> dict[str, tuple[int, bytes, int]]:
        """Each id's last record in the appended generation's file, its vectors' digest and
        its size, read once (the records' heads only)."""
        if self._last is None:
            last: dict[str, tuple[int, bytes, int]] = {}
            at, superseded, base = 0, 0, self.generation << GENERATION_SHIFT
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
                doc_id = bytes(view[head : head + id_size]).decode("utf-8", "surrogatepass")
                known = last.get(doc_id)
                if known is not None:
                    superseded += known[2]
                last[doc_id] = (base | (at + 1), digest, 4 + size)
                at += 4 + size
            if isinstance(view, mmap.mmap):
                view.close()
            self._last, self._end, self.superseded_bytes = last, at, superseded
        return self._last

    def start_generation(self) -> int:
        """Append to a new generation's file from now on (created at once, empty); returns
        its number. The older files stay readable until :meth:`drop_before`."""
        with self._lock:
            self._close_writer()
            self._generation = self.generation + 1
            self.path.touch()
            self._last, self._end, self.superseded_bytes = {}, 0, 0
            return self._generation

    def drop_before(self, generation: int) -> list[int]:
        """Delete the files of the generations older than ``generation`` (no committed page
        points at them any more); returns the generations deleted."""
        dropped = [g for g in self.generations() if g < generation]
        with self._lock:
            for g in dropped:
                # not closed: a search may be reading it (closed once no one holds it)
                self._maps.pop(g, None)
                (self.directory / vector_file_name(g)).unlink(missing_ok=True)
        return dropped

    def sync(self) -> None:
        """Put the records written so far on disk (before the index commits pages that
        point at them)."""
        with self._lock:
            if self._out is not None:
                self._out.flush()
                os.fsync(self._out.fileno())

    def _close_writer(self) -> None:
        """Sync and close the appended file (lock held)."""
        if self._out is not None:
            self._out.flush()
            os.fsync(self._out.fileno())
            self._out.close()
            self._out = None

    def close(self) -> None:
        """Sync and close the file (a later :meth:`append` opens it again)."""
        with self._lock:
            self._close_writer()
            self._last = None
            self._generation = None
            for view in self._maps.values():
                view.close()
            self._maps.clear()


def compact(vectors: VectorFile | None, values: Callable[[], list[int]],
            write_again: Callable[[list[str]], object], commit: Callable[[], object],
            force: bool = False) -> dict:
    """Drop the records no page points at, once they are ``COMPACT_SHARE`` of the files and
    at least ``COMPACT_MIN_BYTES`` (``force``: whatever they are): a new generation of the
    file is started, ``write_again`` writes the pages (ids, a thousand at a time) of the
    ``vectors_at`` ``values()`` (every page's) again, each page getting a record there, and
    once they are committed (``commit``) the older generations' files are deleted. Returns
    ``vector_bytes`` and ``live_bytes`` before, ``compacted``, and once compacted ``pages``
    written again and ``vector_bytes_after``. No ``vectors`` (an index written before the
    file, its vectors in the stored fields): nothing to compact."""
    if vectors is None:
        return {"compacted": False, "vector_bytes": 0, "live_bytes": 0}
    values = [at for at in values() if at]
    size, live = vectors.size(), vectors.live_bytes(values)
    report = {"compacted": False, "vector_bytes": size, "live_bytes": live}
    if not force and size - live < max(COMPACT_MIN_BYTES, size * COMPACT_SHARE):
        return report
    ids = [record[0] for record in map(vectors.read, values) if record]
    generation = vectors.start_generation()
    for start in range(0, len(ids), 1000):
        write_again(ids[start : start + 1000])
    commit()
    vectors.drop_before(generation)
    report.update(compacted=True, pages=len(ids), vector_bytes_after=vectors.size())
    logger.info("section vectors compacted: %d pages written again, %d -> %d bytes",
                len(ids), size, report["vector_bytes_after"])
    return report
