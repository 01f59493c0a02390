"""py3langid's language model, loaded from a decompressed copy in milliseconds.

py3langid ships its model LZMA-compressed (4.5 MB for 68 MB of arrays) and decompresses
it on first use: 0.6 s of CPU (0.5 s of it LZMA) in every process that guesses a
language, so in each extraction worker on its first page that declares none, while that
page and the pages behind it wait. :func:`load` decompresses it once per machine into
``cache_dir`` (``LANGUAGE_MODEL_CACHE``: one ``.npy`` file an array) and from then on maps
those files (``numpy.load`` with ``mmap_mode``): ~10 ms of CPU, the model's pages shared
by every process that reads them. The identifier it builds is py3langid's own class on
the same arrays, so it guesses exactly as py3langid does
(``tests/test_langmodel.py``).

A copy is named after the model file's size and modification time and the py3langid
version, is written to a temporary directory renamed into place (concurrent first loads
do not see half a copy), and is only ever read: a directory that cannot be written leaves
py3langid loading its compressed model itself.
"""

from __future__ import annotations

import logging
import lzma
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

#: The arrays of py3langid's ``.npz`` model (``py3langid.modelio``).
ARRAYS = ("ptc", "pc", "classes", "nextmove", "nextmove_row", "out_feat")
#: array.array / memoryview type codes by item size, for the DFA's transitions.
_TYPECODE = {2: "H", 4: "I", 8: "Q"}


def load(cache_dir: str | os.PathLike | None = None) -> None:
    """Make py3langid's ``classify`` and ``rank`` ready: from the decompressed copy in
    ``cache_dir`` (written there first if missing), or py3langid's own load when
    ``cache_dir`` is empty or cannot be written. Does nothing once loaded."""
    from py3langid import langid

    if langid.IDENTIFIER is not None:
        return
    if cache_dir:
        try:
            langid.IDENTIFIER = _mapped(_copy(Path(cache_dir)))
            return
        except OSError as exc:
            logger.warning("language model not cached in %s (%s): loading it compressed",
                           cache_dir, exc)
    langid.classify("warm up")


def _model_file() -> Path:
    from py3langid import langid

    return langid.MODEL_DIR / langid.MODEL_FILE


def _copy(cache_dir: Path) -> Path:
    """The directory of the model's decompressed arrays under ``cache_dir``, made now if
    missing."""
    import py3langid

    model = _model_file()
    info = model.stat()
    target = cache_dir / f"py3langid-{py3langid.__version__}-{info.st_size}-{info.st_mtime_ns}"
    if (target / "done").exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".py3langid-", dir=cache_dir))
    try:
        with tempfile.TemporaryFile(dir=work) as npz:
            with lzma.open(model) as src:
                shutil.copyfileobj(src, npz, length=1 << 20)
            npz.seek(0)
            with np.load(npz, allow_pickle=False) as data:
                for name in ARRAYS:
                    np.save(work / f"{name}.npy", data[name], allow_pickle=False)
        (work / "done").touch()
        try:
            work.rename(target)
        except OSError:  # another process put its copy there first
            if not (target / "done").exists():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _mapped(directory: Path):
    """py3langid's ``LanguageIdentifier`` over the arrays in ``directory``, mapped."""
    from py3langid.langid import LanguageIdentifier

    def array(name: str, mapped: bool = True) -> np.ndarray:
        return np.load(directory / f"{name}.npy", mmap_mode="r" if mapped else None,
                       allow_pickle=False)

    nextmove = array("nextmove")
    transitions = memoryview(nextmove).cast("B").cast(_TYPECODE[nextmove.dtype.itemsize])
    return LanguageIdentifier(array("ptc"), array("pc", mapped=False),
                              array("classes", mapped=False).tolist(), transitions,
                              array("out_feat", mapped=False).tolist(),
                              tk_row=array("nextmove_row", mapped=False).tolist())
