"""Near-copy mirror hosts serve the labelled set of testweb.nearcopies."""

from __future__ import annotations

import http.client
from collections import Counter
from urllib.parse import urlsplit

import testweb
from testweb import TestWeb
from testweb.nearcopies import generate


def test_mirror_hosts_serve_the_labelled_set():
    web = TestWeb(2, 8000, seed=4, mirror_articles=40)
    pages = generate(articles=40, short_pages=13, seed=4)
    assert web.mirror_hosts == sorted({p.host for p in pages})
    assert any(h.startswith("mirror") for h in web.mirror_hosts)
    labels = web.mirror_labels()
    assert len(labels) == len(pages)
    for p in pages:
        path = urlsplit(p.url).path
        response = web.render(p.host, path)
        assert response.status == 200 and response.body == p.html.encode()
        info = web.page(p.host, path)
        assert info.extra["label"] == p.label and info.main_text == p.text
        assert labels[web.url(p.host, path)] == p.label
    copies = Counter(labels.values())
    assert max(copies.values()) >= 2  # some articles have near-copies on mirrors
    for host in web.mirror_hosts:  # each home page links to all pages of its host
        served = {u for u in labels if urlsplit(u).hostname == host}
        body = web.render(host, "/").body.decode()
        assert served and all(f'href="{u}"' in body for u in served)
    assert web.render(web.mirror_hosts[0], "/a/999999.html").status == 404
    assert TestWeb(2, 8000).mirror_hosts == []


def test_mirror_hosts_over_the_server():
    with testweb.run(hosts=1, pages=10, mirror_articles=10, seed=2) as server:
        host = server.web.mirror_hosts[0]
        path = next(urlsplit(u).path for u in server.web.mirror_labels()
                    if urlsplit(u).hostname == host)
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("GET", path, headers={"Host": host})
        response = conn.getresponse()
        assert response.status == 200
        assert response.read() == server.web.render(host, path).body
        conn.close()
        assert server.resolve_map()[host] == "127.0.0.1"
