"""A charset declaration the bytes contradict does not turn a page into mojibake: the
crawl's decoder (``crawler.extract.decode_html``, replayed here through the WARC rebuild's
``page_item_from_response``, the spider's own steps) and the cached copy take the charset
from the bytes."""

from __future__ import annotations

import pytest

from batch.rebuild import WarcResponse, page_item_from_response
from crawler.extract import decode_html
from webui.search.cache import cached_copy

PAGE = "<!doctype html><title>Grüße aus Köln</title><p>Der Dom zu Köln ist groß.</p>"


def _response(body: bytes, content_type: str) -> WarcResponse:
    return WarcResponse(url="http://koeln.test/", status=200,
                        headers=[("Content-Type", content_type)], body=body,
                        fetched_at=1.0, warc_file="", warc_offset=-1)


@pytest.mark.parametrize("declared", ["utf-16", "UTF-16LE", "utf-16be", "utf-32"])
@pytest.mark.parametrize("where", ["header", "meta"])
def test_a_wide_charset_the_bytes_contradict_is_ignored(declared, where):
    body = PAGE.encode()
    content_type = "text/html"
    if where == "header":
        content_type += f"; charset={declared}"
    else:
        body = f'<meta charset="{declared}">'.encode() + body
    item = page_item_from_response(_response(body, content_type))
    assert item.title == "Grüße aus Köln"
    assert "Der Dom zu Köln ist groß." in item.text
    ascii_only = decode_html(b"<p>plain words</p>", content_type)
    assert ascii_only == ("<p>plain words</p>", "utf-8")


def test_declarations_the_bytes_agree_with_still_win():
    wide = "\ufeff<p>Köln</p>".encode("utf-16-le")
    assert decode_html(wide, "text/html; charset=utf-16") == ("<p>Köln</p>", "utf-16-le")
    latin = "<p>Köln</p>".encode("latin-1")
    assert decode_html(latin, "text/html; charset=iso-8859-1")[0] == "<p>Köln</p>"


def test_the_cached_copy_decodes_as_the_crawl_does(tmp_path):
    from index.base import Document
    from pipelines.warc import RotatingWarcWriter

    writer = RotatingWarcWriter(tmp_path, "t", prefix="cs", max_bytes=10**8, software="test",
                                min_free_bytes=0)
    name, offset = writer.write("http://koeln.test/", 200,
                                [("Content-Type", "text/html; charset=utf-16")],
                                PAGE.encode(), fetched_at=1.0)
    writer.close()
    doc = Document(id="0" * 16, url="http://koeln.test/", host="koeln.test", title="", body="",
                   warc_file=name, warc_offset=offset)
    assert "Der Dom zu Köln ist groß." in cached_copy(doc, tmp_path, 2**20).html
