"""testweb's real documentation sites: files served unchanged per host, robots.txt, listings."""

from __future__ import annotations

import http.client
import os

import pytest

import testweb
from testweb import TestWeb
from testweb.docsites import DOC_SITES, DocSite, available_doc_sites


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    (root / "guide").mkdir(parents=True)
    (root / "listed").mkdir()
    (root / "_sources").mkdir()
    (root / "index.html").write_text('<html><a href="guide/intro.html">intro</a></html>')
    (root / "guide" / "intro.html").write_bytes("<p>café</p>".encode())
    (root / "guide" / "index.html").write_text("<p>guide</p>")
    (root / "listed" / "a.html").write_text("<p>a</p>")
    (root / "listed" / "notes.txt").write_text("notes")
    (root / "listed" / "deeper").mkdir()
    (tmp_path / "secret.html").write_text("<p>outside</p>")
    os.symlink(tmp_path / "secret.html", root / "escape.html")
    return DocSite("docs.test", "some-doc", root)


def test_files_served_unchanged_with_html_type(site):
    web = TestWeb(1, 8000, doc_sites=[site])
    response = web.render("docs.test", "/guide/intro.html")
    assert response.status == 200
    assert response.body == "<p>café</p>".encode()
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert web.render("docs.test", "/").body == (site.root / "index.html").read_bytes()
    assert web.render("docs.test", "/guide/").body == b"<p>guide</p>"
    assert web.doc_hosts == ["docs.test"]
    assert "docs.test" in web.all_hosts() and "docs.test" not in web.hosts()


def test_directory_without_slash_redirects_and_without_index_is_listed(site):
    web = TestWeb(1, 8000, doc_sites=[site])
    moved = web.render("docs.test", "/guide")
    assert moved.status == 301
    assert moved.headers["Location"] == "http://docs.test:8000/guide/"
    listing = web.render("docs.test", "/listed/").body.decode()
    assert 'href="a.html"' in listing and 'href="deeper/"' in listing
    assert "notes.txt" not in listing


def test_robots_disallows_build_byproducts(site):
    web = TestWeb(1, 8000, doc_sites=[site])
    robots = web.render("docs.test", "/robots.txt").body.decode()
    assert robots.startswith("User-agent: *\n")
    assert "Disallow: /_sources/" in robots


def test_nothing_outside_the_site_is_served(site):
    web = TestWeb(1, 8000, doc_sites=[site])
    assert web.render("docs.test", "/../secret.html").status == 404
    assert web.render("docs.test", "/guide/../../secret.html").status == 404
    assert web.render("docs.test", "/escape.html").status == 404
    assert web.render("docs.test", "/missing.html").status == 404
    assert web.render("docs.test", "/", method="POST").status == 405


def test_installed_sites_reach_the_25000_pages_the_corpus_needs():
    sites = available_doc_sites()
    missing = [s.package for s in DOC_SITES if s not in sites]
    assert not missing, f"apt-get install -y {' '.join(missing)} (scripts/apt-packages.txt)"
    pages = sum(
        1 for s in sites for _, _, files in os.walk(s.root) for f in files if f.endswith(".html")
    )
    assert pages >= 25000


def test_server_serves_real_docs_by_host_header():
    with testweb.run(hosts=1, fresh_hosts=0, real_docs=True) as web:
        assert "python.test" in web.web.doc_hosts
        conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=10)
        conn.request("GET", "/library/os.html", headers={"Host": "python.test"})
        response = conn.getresponse()
        body = response.read()
        assert response.status == 200
        python = next(s for s in DOC_SITES if s.host == "python.test")
        expected = (python.root / "library" / "os.html").read_bytes()
        assert body == expected
        conn.request("GET", "/robots.txt", headers={"Host": "git.test"})
        assert b"Disallow: /_sources/" in conn.getresponse().read()
        conn.close()
