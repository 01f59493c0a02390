"""``manage.py train-ranker`` on a small crawl of two real documentation sites: it fits the
embedded engine's weights on training queries made from the index (never reading the
judged queries), writes the fitted file under DATA_DIR, and the engine built from the
configuration then ranks with it."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from harness.relevance import QUERIES, build_index, crawl, documents, read_pages
from index import get_backend
from index.signals import FITTED_WEIGHTS_NAME, load_weights

ROOT = Path(__file__).resolve().parent.parent
SITES = ("requests.test", "docutils.test")

_opened: list[str] | None = None


def _audit(event: str, args: tuple) -> None:
    if _opened is not None and event == "open" and isinstance(args[0], (str, Path)):
        _opened.append(str(args[0]))


sys.addaudithook(_audit)


@pytest.fixture(scope="module")
def crawled(tmp_path_factory):
    """A DATA_DIR holding the embedded index of a small crawl of two sites."""
    cache = tmp_path_factory.mktemp("train-ranker")
    pages = read_pages(crawl(cache, SITES, max_pages=160, timeout=600))
    data = cache / "data-dir"
    data.mkdir()
    build_index(data / "index", documents(pages, cache / "links.sqlite")).close()
    return data


def test_train_ranker_fits_writes_and_the_engine_loads_it(crawled, monkeypatch):
    global _opened
    monkeypatch.setenv("DATA_DIR", str(crawled))
    out, err = io.StringIO(), io.StringIO()
    _opened = []
    try:
        call_command("train-ranker", "--per-site", "40", "--depth", "30", "--folds", "2",
                     "--force", stdout=out, stderr=err)
        opened = list(_opened)
    finally:
        _opened = None
    assert not any(Path(p).resolve() == QUERIES.resolve() for p in opened)
    assert not any("tests/relevance" in p for p in opened)
    summary = out.getvalue()
    assert "train-ranker: embedded engine" in summary
    assert "held out by site (2 folds" in summary
    assert "written to" in summary
    assert "queries\n" in err.getvalue() and "fold 1/2" in err.getvalue()  # progress

    path = crawled / FITTED_WEIGHTS_NAME
    data = json.loads(path.read_text())
    fitted = data["embedded"]
    assert set(fitted) == set(load_weights("embedded"))
    assert data["elasticsearch"] == load_weights("elasticsearch")
    about = data["_fitted"]["embedded"]
    assert about["training_queries"] > 40
    assert set(about["sites"]) == set(SITES)
    assert about["mrr_at_10_fitted"] >= about["mrr_at_10_hand"]
    backend = get_backend(cache=False)
    try:
        assert backend.ranker.weights == fitted
    finally:
        backend.close()

    out = io.StringIO()
    call_command("train-ranker", "--per-site", "20", "--depth", "20", "--folds", "0",
                 "--dry-run", "--json", stdout=out, stderr=io.StringIO())
    report = json.loads(out.getvalue())
    assert report["written"] is False and "heldout" not in report
    assert report["beats_hand"] is True  # nothing held out to lose on
    assert json.loads(path.read_text())["embedded"] == fitted  # untouched


def test_train_ranker_reads_training_queries_and_rejects_bad_ones(crawled, monkeypatch,
                                                                  tmp_path):
    monkeypatch.setenv("DATA_DIR", str(crawled))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x"}\n')
    with pytest.raises(CommandError, match="expected JSON lines with query, url and site"):
        call_command("train-ranker", "--training", str(bad), stdout=io.StringIO(),
                     stderr=io.StringIO())
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps({"query": q, "url": u, "site": s}) + "\n" for q, u, s in [
        ("session objects", "http://requests.test/user/advanced.html", "requests.test"),
        ("reStructuredText directives", "http://docutils.test/ref/rst/directives.html",
         "docutils.test"),
    ]))
    out = io.StringIO()
    call_command("train-ranker", "--training", str(good), "--folds", "0", "--dry-run",
                 "--json", stdout=out, stderr=io.StringIO())
    assert json.loads(out.getvalue())["training_queries"] == 2
    with pytest.raises(CommandError, match="hand weights"):
        call_command("train-ranker", "--output", str(ROOT / "index" / "weights.json"),
                     stdout=io.StringIO(), stderr=io.StringIO())


def test_train_ranker_help():
    shown = subprocess.run([sys.executable, "manage.py", "train-ranker", "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120, check=True).stdout
    for option in ("--output", "--training", "--per-site", "--depth", "--folds", "--dry-run"):
        assert option in shown
