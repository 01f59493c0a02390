"""A page's fields are declared once (``crawler.items``): the extractor's result, the crawl's
item and the index's document share the declarations instead of repeating them."""

import pickle
import pickletools
from dataclasses import fields

from crawler.items import Link, Links, PageItem, PageRecord, PageSummary, Section
from crawler.urls import doc_id_for
from index.base import Document
from pipelines.index import document_from_item

SHARED = [f.name for f in (*fields(PageRecord), *fields(PageSummary))]


def test_the_item_and_the_document_redeclare_no_shared_field():
    assert {"url", "host", "title", "description", "lang", "headings", "fetched_at",
            "cluster_id", "shown", "spam_score", "warc_file", "warc_offset"} == set(SHARED)
    for cls in (PageItem, Document):
        assert set(SHARED) <= {f.name for f in fields(cls)}
        assert set(vars(cls)["__annotations__"]).isdisjoint(SHARED), cls


def test_the_document_of_an_item_carries_every_shared_field_as_it_is():
    url = "http://a.test/guide"
    item = PageItem(url=url, fetched_url=url + "?ref=x", host="a.test", status=200,
                    fetched_at=5.0, title="Guide", description="d", lang="en",
                    headings="Setup", cluster_id="c1", shown=False, spam_score=0.5,
                    warc_file="w.warc.gz", warc_offset=7, text="Setup\nInstall it.",
                    sections=[Section(0, "setup", "Setup")])
    doc = document_from_item(item)
    assert {name: getattr(doc, name) for name in SHARED} == {
        name: getattr(item, name) for name in SHARED}
    assert (doc.id, doc.body, doc.sections) == (
        doc_id_for(url), "Setup\nInstall it.", ((0, "setup", "Setup"),))
    assert Document.from_dict(doc.to_dict()) == doc


def test_a_link_pickles_as_its_fields():
    # the extraction workers send every page's links to the crawl process pickled
    links = [Link("http://a.test/x", "X", True), Link("http://a.test/"), Link("u", nofollow=True)]
    back = pickle.loads(pickle.dumps(links, protocol=5))
    assert back == links and all(type(link) is Link for link in back)
    assert [vars(link) for link in back] == [vars(link) for link in links]
    assert b"__dict__" not in pickle.dumps(links[0]) and b"nofollow" not in pickle.dumps(links[0])


def test_a_pages_links_pickle_as_columns_and_stay_shared_with_its_item():
    links = [Link("http://a.test/x", "X", True), Link("http://a.test/"), Link("u", nofollow=True)]
    item = PageItem(url="http://a.test/", fetched_url="http://a.test/", host="a.test",
                    status=200, links=Links(links))
    assert type(PageItem(url="u", fetched_url="u", host="h", status=200).links) is Links
    page, back = pickle.loads(pickle.dumps((item.links, item), protocol=5))
    assert back == item and back.links == links and type(back.links) is Links
    assert page is back.links  # the page's list and its item's are one, as before
    assert [vars(link) for link in back.links] == [vars(link) for link in links]
    assert all(type(link) is Link and type(link.nofollow) is bool for link in back.links)
    # the list is made in one call on loading, not one a link
    ops = [op.name for op, _, _ in pickletools.genops(pickle.dumps(Links(links * 20), 5))]
    assert ops.count("REDUCE") == 1
