"""End to end on the embedded default: crawl the test web, `manage.py rank`, search."""

from __future__ import annotations

import json
import subprocess
import sys
from statistics import median

import pytest

import testweb
from crawler.urls import canonicalize, doc_id_for
from harness.crawlrun import ROOT, crawl_env, migrate, run_crawl
from index.engines.embedded.backend import EmbeddedBackend
from index.query import parse

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("rank-e2e")
    with testweb.run(hosts=4, pages=30) as web:
        migrate(data_dir)
        seeds = [web.home_url(h) for h in web.hosts() if h.startswith("site")]
        crawl = run_crawl(
            data_dir,
            seeds,
            settings={"FRONTIER_DELAY": 0.01},
            args={"allowed_hosts": "*.test", "max_pages": 150},
        )
        assert crawl.returncode == 0, crawl.stderr[-3000:]
        rank = subprocess.run(
            [sys.executable, "manage.py", "rank", "--json"],
            cwd=ROOT,
            env=crawl_env(data_dir),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert rank.returncode == 0, rank.stderr[-3000:]
        backend = EmbeddedBackend(data_dir / "index")
        yield web, json.loads(rank.stdout), backend, seeds
        backend.close()


def test_rank_run_over_the_crawled_link_graph(ranked):
    _, report, backend, _ = ranked
    assert report["committed"]
    assert report["pages"] >= 100 and report["page_edges"] >= report["pages"]
    assert report["hosts"] >= 4 and report["published"] >= 100
    assert backend.stats()["docs"] >= 100


def test_home_pages_are_better_linked_than_deep_pages(ranked):
    _, _, backend, seeds = ranked
    homes = [backend.get(doc_id_for(canonicalize(s))) for s in seeds]
    hits = backend.search("site", size=100).hits
    deep = [h.pagerank for h in hits if h.url.rstrip("/").count("/") >= 4]
    assert deep
    assert all(home is not None and home.pagerank > median(deep) for home in homes)


def test_query_naming_a_host_returns_its_home_page_first(ranked):
    web, _, backend, seeds = ranked
    for seed in seeds:
        host = seed.split("/")[2].split(":")[0]
        query = parse(host.split(".")[0])
        hits = backend.search(query, size=50).hits
        assert hits, f"no hits for {query.raw}"
        top = hits[0]
        assert top.url == canonicalize(seed), (query.raw, [h.url for h in hits[:5]])
