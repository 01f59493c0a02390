"""A page's fields are declared once (``crawler.items``): the extractor's result, the crawl's
item and the index's document share the declarations instead of repeating them."""

from dataclasses import fields

from crawler.items import PageItem, PageRecord, PageSummary, Section
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
