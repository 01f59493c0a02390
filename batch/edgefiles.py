"""A link source over tab-separated edge files, the ranking batch's exchange format.

Each line of every ``*.tsv`` file in a directory is ``src_doc_id TAB dst_doc_id TAB
src_host TAB dst_host``: the "files per worker, merged by the batch" form of the link
graph. It offers the two methods the ranking batch reads from
``pipelines.linkgraph.LinkStore``, so graphs exported from elsewhere (or written by tests)
rank the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from crawler.config import Config


class EdgeFiles:
    """Edges read from ``*.tsv`` files under ``directory``, in file-name order."""

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    @classmethod
    def from_config(cls, config: Config) -> EdgeFiles:
        """Edge files under ``DATA_DIR/edges``."""
        return cls(config.data_dir / "edges")

    def _rows(self) -> Iterator[list[str]]:
        for path in sorted(self.directory.glob("*.tsv")):
            with path.open(encoding="utf-8") as lines:
                for line in lines:
                    fields = line.rstrip("\n").split("\t")
                    if len(fields) == 4:
                        yield fields

    def iter_edges(self) -> Iterator[tuple[str, str]]:
        """``(src_doc_id, dst_doc_id)`` of every link."""
        for src, dst, _, _ in self._rows():
            yield src, dst

    def iter_host_edges(self) -> Iterator[tuple[str, str]]:
        """``(src_host, dst_host)`` of every link."""
        for _, _, src_host, dst_host in self._rows():
            yield src_host, dst_host

    @staticmethod
    def write(path: str | Path, edges: Iterable[tuple[str, str, str, str]]) -> int:
        """Write ``(src_id, dst_id, src_host, dst_host)`` rows to ``path`` atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".part")
        count = 0
        with tmp.open("w", encoding="utf-8") as out:
            for row in edges:
                out.write("\t".join(row) + "\n")
                count += 1
        tmp.replace(path)
        return count
