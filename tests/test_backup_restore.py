"""The restore drill, on real services: index documents, fill a frontier, write host rules;
``scripts/backup.sh``; destroy (delete the index, FLUSHALL, drop the control database);
``scripts/restore.sh``; the same queries give the same results and the crawl resumes from
the restored frontier (the next lease returns what was queued)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from redis import Redis

from crawler.frontier import Entry
from crawler.frontier.redis_backend import RedisFrontier
from crawler.urls import doc_id_for
from harness import ROOT
from harness.redisserver import running_redis
from index.base import Document
from index.engines.elasticsearch.backend import ElasticsearchBackend
from tests.frontiers import options

pytest_plugins = ["tests.fixtures_es"]
pytestmark = pytest.mark.services

QUERIES = ["backup", "restore drill", '"drill page"', "page -seven", "site:drill3.test"]
HOSTS = [f"queued{i}.test" for i in range(6)]
SHELL_RULES = (
    "from webui.control.models import HostRule, Seed\n"
    "print(sorted(HostRule.objects.values_list('pattern', 'action', 'page_budget')), "
    "sorted(Seed.objects.values_list('url', flat=True)))\n"
)


def docs(n: int) -> list[Document]:
    return [
        Document(
            id=doc_id_for(f"http://drill{i % 7}.test/{i}"),
            url=f"http://drill{i % 7}.test/{i}",
            host=f"drill{i % 7}.test",
            title=f"Drill page {i}",
            body=f"backup and restore drill page {'seven' if i % 7 == 0 else 'other'} {i}",
        )
        for i in range(n)
    ]


def run(args: list[str], env: dict, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True,
                          input=stdin, timeout=600)


def manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    result = run([sys.executable, "manage.py", *args], env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def answers(backend: ElasticsearchBackend) -> list:
    found = []
    for q in QUERIES:
        r = backend.search(q, size=50)
        found.append((q, r.total, [h.id for h in r.hits], r.partial))
    return found


def frontier(url: str) -> RedisFrontier:
    return RedisFrontier(Redis.from_url(url), "web", **options(bloom_capacity=10_000))


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request):
    """No DATABASE_URL (SQLite in DATA_DIR), or a private PostgreSQL's."""
    if request.param == "sqlite":
        return None
    return request.getfixturevalue("postgres_url")


def destroy_database(env: dict, data_dir: Path) -> None:
    if env.get("DATABASE_URL"):
        drop = ("from django.db import connection\n"
                "with connection.cursor() as c:\n"
                "    c.execute('DROP SCHEMA public CASCADE'); c.execute('CREATE SCHEMA public')\n")
        manage(env, "shell", "-c", drop)
    else:
        (data_dir / "db.sqlite3").unlink()


def test_restore_drill(es_url, tmp_path, database_url):
    data_dir = tmp_path / "data"
    prefix = f"drill-{uuid.uuid4().hex[:8]}"
    with running_redis(tmp_path / "redis") as redis:
        env = {k: v for k, v in os.environ.items()
               if k not in ("DATABASE_URL", "REDIS_URL", "ELASTICSEARCH_URL")}
        env.update(DATA_DIR=str(data_dir), REDIS_URL=redis.url, ELASTICSEARCH_URL=es_url)
        if database_url:
            env["DATABASE_URL"] = database_url
        # the control database: migrated, with host rules and seeds
        manage(env, "migrate", "--noinput", "-v0")
        manage(env, "shell", "-c",
               "from webui.control.models import HostRule, Seed\n"
               "HostRule.objects.create(pattern='*.spam.test', action='block')\n"
               "HostRule.objects.create(pattern='drill1.test', page_budget=7)\n"
               "Seed.objects.create(url='http://drill0.test/')\n")
        rules = manage(env, "shell", "-c", SHELL_RULES).stdout
        assert "*.spam.test" in rules
        # the index
        index = ElasticsearchBackend(es_url, index_prefix=prefix, spool_dir=tmp_path / "spool")
        index.ensure_index()
        index.index(docs(140))
        index.refresh()
        before = answers(index)
        assert all(total > 0 for _, total, _, _ in before), before
        # the frontier: queued entries on six hosts, seeds waiting to be popped
        queued = frontier(redis.url)
        queued.add([Entry(f"http://{h}/page{n}", h) for h in HOSTS for n in range(3)])
        client = Redis.from_url(redis.url)
        client.rpush("web:start_urls", "http://seed.test/")
        pending = queued.pending()
        assert pending == 3 * len(HOSTS)

        backup_dir = tmp_path / "backup"
        made = run(["bash", "scripts/backup.sh", str(backup_dir), "--prefix", prefix], env)
        assert made.returncode == 0, made.stderr[-3000:]
        assert "Backup written to" in made.stdout and "Restore with:" in made.stdout
        for part in ("database", "redis", "elasticsearch"):
            assert f"  {part}" in made.stdout, made.stdout
        assert "backup: elasticsearch: snapshot done" in made.stderr, made.stderr
        manifest = json.loads((backup_dir / "manifest.json").read_text())
        assert manifest["parts"]["elasticsearch"]["docs"] == 140

        # the disaster
        index.drop()
        client.flushall()
        destroy_database(env, data_dir)
        assert frontier(redis.url).next_ready(10) == []
        assert index.current_index() is None

        # a restore asks before it replaces anything
        asked = run(["bash", "scripts/restore.sh", str(backup_dir), "--prefix", prefix], env,
                    stdin="no\n")
        assert asked.returncode != 0 and "nothing was changed" in asked.stderr
        assert index.current_index() is None
        restored = run(["bash", "scripts/restore.sh", str(backup_dir), "--prefix", prefix,
                        "--no-input"], env)
        assert restored.returncode == 0, restored.stderr[-3000:]
        summary = restored.stdout
        for part in ("database", "redis", "elasticsearch"):
            assert any(line.split()[:2] == [part, "ok"] for line in summary.splitlines()), summary

        # the same queries, the same results
        searcher = ElasticsearchBackend(es_url, index_prefix=prefix,
                                        spool_dir=tmp_path / "spool2")
        assert answers(searcher) == before
        # the crawl resumes from the restored frontier
        resumed = frontier(redis.url)
        assert resumed.pending() == pending
        leases = resumed.next_ready(len(HOSTS))
        assert sorted(lease.host for lease in leases) == sorted(HOSTS)
        assert all(lease.url.startswith(f"http://{lease.host}/page") for lease in leases)
        assert client.lpop("web:start_urls") == b"http://seed.test/"
        # the control database is back
        assert manage(env, "shell", "-c", SHELL_RULES).stdout == rules
        for b in (index, searcher):
            b.drop()
            b.close()
        client.close()


def test_bad_backup_directories_get_a_clear_error(tmp_path):
    env = dict(os.environ, DATA_DIR=str(tmp_path / "data"))
    missing = run(["bash", "scripts/restore.sh", str(tmp_path / "none"), "--no-input"], env)
    assert missing.returncode != 0 and "manifest.json not found" in missing.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    busy = run(["bash", "scripts/backup.sh", str(tmp_path / "full"), "--only", "database"], env)
    assert busy.returncode != 0 and "not an empty directory" in busy.stderr
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
