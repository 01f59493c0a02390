"""``POST /click`` cannot mark other people's logged searches clicked: a ping names its
search by a reference signed with the site's key, issued with that search's results."""

from __future__ import annotations

import re
from html import unescape

import pytest

from crawler.urls import doc_id_for
from index.base import Document
from webui.search.backend import get_search_backend
from webui.search.models import QueryLogEntry

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def pages():
    backend = get_search_backend()
    docs = [Document(id=doc_id_for(f"http://ping{n}.test/"), url=f"http://ping{n}.test/",
                     host=f"ping{n}.test", title=f"Pangolin {n}", body="pangolin scales")
            for n in range(2)]
    backend.index(docs)
    backend.refresh()
    yield
    backend.delete([d.id for d in docs])
    backend.refresh()
    backend.close()  # releases the index's one-writer lock for the crawls of later tests


def test_only_the_results_page_can_mark_its_search_clicked(client):
    html = client.get("/", {"q": "pangolin"}).content.decode()
    victim = QueryLogEntry.objects.get()
    pings = [unescape(p) for p in re.findall(r'ping="([^"]+)"', html)]
    assert len(pings) == 2
    # an anonymous client counting log ids, or bending a reference it was given
    ref = re.search(r"l=([^&]+)", pings[0]).group(1)
    for forged in (f"/click?l={victim.pk}&r=1", f"/click?l={victim.pk}:x&r=1",
                   f"/click?l={victim.pk + 1}{ref[len(str(victim.pk)):]}&r=1"):
        assert client.post(forged).status_code == 400, forged
    victim.refresh_from_db()
    assert victim.clicked_rank is None
    # the results page's own ping counts
    assert client.post(pings[1]).status_code == 204
    victim.refresh_from_db()
    assert victim.clicked_rank == 2
