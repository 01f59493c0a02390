"""Worker memory: what the process holds, sampled into the crawl stats, and freed C heap
pages handed back to the operating system.

RSS alone cannot tell a leak from fragmentation: glibc keeps memory a process freed for
reuse, so a crawl whose live data is flat can still show a slowly rising RSS while freed
chunks are scattered between live ones. ``MemoryMonitor`` samples both sides every
``MEMORY_SAMPLE_INTERVAL`` seconds (stats ``memory/*``, exported over time with the other
stats): RSS, the C heap in use and free (glibc's ``mallinfo2``, every arena), the blocks
Python's own allocator holds and its arenas. With ``MEMORY_TRIM`` it then calls glibc's
``malloc_trim(0)``, which returns every free heap page to the kernel, so RSS follows what
is in use. With ``MEMORY_MALLOC_ARENAS`` it caps glibc's per-thread arenas
(``mallopt(M_ARENA_MAX)``, the ``MALLOC_ARENA_MAX`` variable's setting): each arena keeps
its own free memory, and a crawler's threads (DNS, index writer and merges) need no more
than a few. With ``MEMORY_MMAP_THRESHOLD`` it fixes glibc's mmap threshold
(``mallopt(M_MMAP_THRESHOLD)``, the ``MALLOC_MMAP_THRESHOLD_`` variable's setting): blocks
that large get their own mapping, unmapped when freed. Left dynamic, glibc raises the
threshold to the size of each mapped block freed (up to 32 MiB), after which the embedded
index writer's large, short-lived buffers land in the heap between long-lived small chunks,
and the resident free memory that the trim cannot return grows with the index.

Off glibc (musl, macOS) the heap figures and the trim are skipped; RSS is still sampled.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import re
import sys
import tempfile

import psutil
from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from crawler.options import enabled, setting

logger = logging.getLogger(__name__)

#: ``mallopt`` parameter numbers (glibc malloc.h).
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost",
    )]


class GlibcHeap:
    """glibc's allocator of this process: its statistics, trim and arena cap."""

    def __init__(self, libc: ctypes.CDLL):
        self._mallinfo2 = libc.mallinfo2
        self._mallinfo2.restype = _MallInfo2
        self._trim = libc.malloc_trim
        self._trim.argtypes = [ctypes.c_size_t]
        self._mallopt = libc.mallopt
        self._mallopt.argtypes = [ctypes.c_int, ctypes.c_int]

    @classmethod
    def load(cls) -> GlibcHeap | None:
        """The allocator if this process runs on glibc 2.33 or later, else None."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            return cls(libc) if hasattr(libc, "mallinfo2") else None
        except OSError:
            return None

    def usage(self) -> tuple[int, int]:
        """Bytes of C heap in use (chunks and mmapped blocks) and free inside the arenas."""
        info = self._mallinfo2()
        return info.uordblks + info.hblkhd, info.fordblks

    def trim(self) -> bool:
        """Give free heap pages of every arena back to the kernel; True if any were."""
        return bool(self._trim(0))

    def cap_arenas(self, arenas: int) -> bool:
        """At most ``arenas`` malloc arenas from now on; True if glibc accepted it."""
        return bool(self._mallopt(M_ARENA_MAX, arenas))

    def fix_mmap_threshold(self, nbytes: int) -> bool:
        """Blocks of ``nbytes`` or more mapped on their own from now on, with glibc's
        dynamic raising of that threshold off; True if glibc accepted it."""
        return bool(self._mallopt(M_MMAP_THRESHOLD, nbytes))


_PYMALLOC_FIGURES = {
    "arenas allocated current": "memory/pymalloc_arenas",
    "bytes in allocated blocks": "memory/pymalloc_used_bytes",
}
_PYMALLOC_LINE = re.compile(
    rf"^# ({'|'.join(map(re.escape, _PYMALLOC_FIGURES))})\s*=\s*([\d,]+)", re.M)


def pymalloc_stats() -> dict[str, int]:
    """Python's small-object allocator: arenas it holds from the kernel (1 MiB each on 3.10+,
    freed only when every block in them is) and bytes in its live blocks; empty when pymalloc
    is off (``PYTHONMALLOC=malloc``). ``sys._debugmallocstats`` is the only interface and
    writes to file descriptor 2, so that is pointed at a temporary file for the call (~1 ms;
    another thread's write to stderr in that window would land there too)."""
    try:
        with tempfile.TemporaryFile() as out:
            sys.stderr.flush()
            saved = os.dup(2)
            try:
                os.dup2(out.fileno(), 2)
                sys._debugmallocstats()
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            out.seek(0)
            text = out.read().decode(errors="replace")
    except (OSError, ValueError) as exc:  # no descriptor 2, no temporary directory
        logger.debug("pymalloc figures unavailable: %s", exc)
        return {}
    return {_PYMALLOC_FIGURES[name]: int(value.replace(",", ""))
            for name, value in _PYMALLOC_LINE.findall(text)}


class MemoryMonitor:
    """Samples RSS, C heap and Python allocator blocks into ``memory/*`` stats every
    ``interval`` seconds, trimming the C heap first when ``trim`` is set."""

    def __init__(self, stats, interval: float, *, trim: bool, arenas: int = 0,
                 heap: GlibcHeap | None = None, mmap_threshold: int = 0):
        self.stats = stats
        self.interval = interval
        self.trim = trim
        self.heap = heap
        self.process = psutil.Process()
        self.loop: task.LoopingCall | None = None
        if arenas > 0 and heap is not None and not heap.cap_arenas(arenas):
            logger.warning("could not cap malloc arenas at %d", arenas)
        if (mmap_threshold > 0 and heap is not None
                and not heap.fix_mmap_threshold(mmap_threshold)):
            logger.warning("could not fix the malloc mmap threshold at %d bytes", mmap_threshold)

    @classmethod
    def from_crawler(cls, crawler) -> MemoryMonitor:
        settings = crawler.settings
        interval = setting(settings, "MEMORY_SAMPLE_INTERVAL", float)
        if interval <= 0:
            raise NotConfigured
        ext = cls(crawler.stats, interval, trim=enabled(settings, "MEMORY_TRIM"),
                  arenas=setting(settings, "MEMORY_MALLOC_ARENAS", int), heap=GlibcHeap.load(),
                  mmap_threshold=setting(settings, "MEMORY_MMAP_THRESHOLD", int))
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider) -> None:
        self.loop = task.LoopingCall(self.sample)
        self.loop.start(self.interval, now=True)

    def spider_closed(self, spider) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        self.sample()

    def sample(self) -> dict[str, int]:
        """Trim (if on), then record and return the current figures."""
        figures: dict[str, int] = {}
        if self.heap is not None:
            if self.trim:
                self.heap.trim()
                self.stats.inc_value("memory/trims")
            in_use, free = self.heap.usage()
            figures["memory/heap_in_use_bytes"] = in_use
            figures["memory/heap_free_bytes"] = free
        figures["memory/python_blocks"] = sys.getallocatedblocks()
        figures.update(pymalloc_stats())
        rss = self.process.memory_info().rss
        figures["memory/rss_bytes"] = rss
        for name, value in figures.items():
            self.stats.set_value(name, value)
        self.stats.max_value("memory/rss_max_bytes", rss)
        return figures
