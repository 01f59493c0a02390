"""Anchor text and static rank from crawled links."""

from __future__ import annotations

import pytest

from crawler.items import Link
from index.base import doc_id_for
from ranking.links import AnchorText, page_static_ranks


def test_anchor_text_keeps_each_label_once_and_skips_self_links():
    anchors = AnchorText()
    for n in range(5):
        anchors.add_page(f"http://a.test/{n}", [Link("http://a.test/next", "Next")])
    anchors.add_page("http://b.test/", [{"url": "http://a.test/next", "text": " git  stash "}])
    anchors.add_page("http://a.test/next", [Link("http://a.test/next", "myself")])
    assert anchors.for_url("http://a.test/next") == "next\ngit stash"
    assert anchors.for_url("http://a.test/unlinked") == ""


def test_anchor_text_caps_labels_per_page():
    anchors = AnchorText(max_texts=2, max_chars=5)
    anchors.add_page("http://a.test/", [Link("http://a.test/x", f"label {n}") for n in range(4)])
    assert anchors.for_url("http://a.test/x") == "label"
    anchors.add_page("http://b.test/", [Link("http://a.test/x", "other words")])
    assert anchors.for_url("http://a.test/x").split("\n") == ["label", "other"]


def test_static_rank_favours_the_page_everyone_links_to():
    pages = [("http://a.test/", ["http://a.test/1", "http://a.test/2"])]
    pages += [(f"http://a.test/{n}", ["http://a.test/", "http://elsewhere.test/"]) for n in (1, 2)]
    ranks = page_static_ranks(pages)
    home, one = ranks[doc_id_for("http://a.test/")], ranks[doc_id_for("http://a.test/1")]
    assert set(ranks) == {doc_id_for(url) for url, _ in pages}
    assert home == pytest.approx(1.0)
    assert 0 < one < home
