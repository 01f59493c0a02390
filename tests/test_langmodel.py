"""py3langid's model from its decompressed copy (crawler/langmodel.py): the same guesses as
py3langid's own load, made once per cache directory; an extraction worker loads it before
its first page."""

import pytest
from py3langid import langid

from crawler import langmodel
from crawler.extractpool import ExtractPool

TEXTS = [
    "The quick brown fox jumps over the lazy dog while the crawler fetches pages.",
    "Le renard brun saute par-dessus le chien paresseux pendant que le robot lit.",
    "Der schnelle braune Fuchs springt über den faulen Hund, während er Seiten holt.",
    "El rápido zorro marrón salta sobre el perro perezoso mientras lee las páginas.",
    "素早い茶色の狐がのろまな犬を飛び越える。クローラーはページを取得する。",
    "Быстрая коричневая лиса прыгает через ленивую собаку, пока робот читает.",
    "def main():\n    for path in sys.argv[1:]:\n        print(open(path).read())",
    "",
]


@pytest.fixture()
def fresh_identifier():
    """py3langid with no model loaded; the one it had is put back afterwards."""
    kept = langid.IDENTIFIER
    langid.IDENTIFIER = None
    yield
    langid.IDENTIFIER = kept


def test_the_copy_guesses_as_py3langid_does(tmp_path):
    own = langid._load_identifier()
    copied = langmodel._mapped(langmodel._copy(tmp_path))
    for text in TEXTS:
        assert copied.classify(text) == own.classify(text)
        assert copied.rank(text) == own.rank(text)
    assert copied.classify(TEXTS[1])[0] == "fr"


def test_load_makes_the_copy_once_and_then_maps_it(tmp_path, fresh_identifier):
    langmodel.load(tmp_path)
    assert langid.IDENTIFIER is not None
    assert langid.classify(TEXTS[2])[0] == "de"
    (copy,) = [p for p in tmp_path.iterdir()]
    assert copy.name.startswith("py3langid-") and (copy / "ptc.npy").is_file()
    made = (copy / "ptc.npy").stat().st_mtime_ns
    langid.IDENTIFIER = None
    langmodel.load(tmp_path)
    assert (copy / "ptc.npy").stat().st_mtime_ns == made
    assert [p.name for p in tmp_path.iterdir()] == [copy.name]  # no temporary left


def test_a_cache_that_is_a_file_leaves_py3langid_loading_it(tmp_path, fresh_identifier):
    (tmp_path / "cache").write_text("not a directory")
    langmodel.load(tmp_path / "cache")
    assert langid.classify(TEXTS[0])[0] == "en"


def loaded() -> bool:
    """Whether this process has py3langid's model loaded (run in a worker)."""
    return langid.IDENTIFIER is not None


def fails() -> None:
    raise RuntimeError("an initializer that fails")


def test_a_worker_loads_the_model_before_its_first_page(tmp_path):
    from functools import partial

    from crawler.extract import load_language_model

    pool = ExtractPool(1, function=loaded,
                       initializer=partial(load_language_model, str(tmp_path)))
    try:
        assert pool.run().result(timeout=60) is True
    finally:
        pool.close()
    plain = ExtractPool(1, function=loaded)
    try:
        assert plain.run().result(timeout=60) is False
    finally:
        plain.close()


def test_a_worker_whose_initializer_fails_goes_on():
    pool = ExtractPool(1, function=loaded, initializer=fails)
    try:
        assert pool.run().result(timeout=60) is False
    finally:
        pool.close()
