from crawler.extract import extract

PAGE = """<!doctype html><html lang="en-GB"><head>
<title>  The  Title </title>
<meta name="description" content="A page about things">
<link rel="canonical" href="/canonical?utm_source=feed">
</head><body>
<header><nav><a href="/">Home</a> <a href="/about">About</a></nav></header>
<main><h1>Heading</h1><p>First paragraph with <b>bold</b> words.</p>
<p>Second <a href="rel/link.html">relative link</a> here.</p>
<a href="http://other.test/x?fbclid=1" rel="nofollow">elsewhere</a>
<a href="javascript:alert(1)">js</a><a href="mailto:x@y.z">mail</a><a href="#top">top</a>
<script>var hidden = "script text";</script><style>.x{}</style></main>
<footer>Copyright footer</footer></body></html>"""


def test_title_text_and_meta():
    page = extract(PAGE, "http://a.test/dir/page.html")
    assert page.title == "The Title"
    assert page.description == "A page about things"
    assert page.lang == "en"
    assert page.canonical == "http://a.test/canonical"
    assert "First paragraph with bold words." in page.text
    assert "Heading" in page.text
    assert "script text" not in page.text
    assert "Copyright footer" not in page.text
    assert "Home" not in page.text


def test_links_resolved_canonical_with_anchor_text():
    page = extract(PAGE, "http://a.test/dir/page.html")
    by_url = {link.url: link for link in page.links}
    assert by_url["http://a.test/dir/rel/link.html"].text == "relative link"
    assert by_url["http://other.test/x"].nofollow
    assert "http://a.test/" in by_url
    assert not any(u.startswith(("javascript:", "mailto:")) for u in by_url)


def test_base_href_changes_link_resolution():
    html = '<html><head><base href="http://cdn.test/root/"></head><a href="x">x</a></html>'
    page = extract(html, "http://a.test/p")
    assert [link.url for link in page.links] == ["http://cdn.test/root/x"]


def test_meta_robots_and_x_robots_tag():
    html = (
        '<html><head><meta name="robots" content="noindex, nofollow"></head><body>x</body></html>'
    )
    page = extract(html, "http://a.test/")
    assert page.noindex and page.nofollow
    page = extract("<p>ok</p>", "http://a.test/", x_robots_tag="noindex")
    assert page.noindex and not page.nofollow


def test_boilerplate_removed_without_main_element():
    html = """<html><body><div id="navbar"><a href="/a">A</a><a href="/b">B</a></div>
    <div class="sidebar">Sidebar junk</div>
    <div><p>The real article text is long enough to matter for readers.</p></div>
    <div class="links"><a href="/1">one link</a> <a href="/2">two link</a>
    <a href="/3">three link</a>
    <a href="/4">four link</a> <a href="/5">five link</a></div></body></html>"""
    page = extract(html, "http://a.test/")
    assert "real article text" in page.text
    assert "Sidebar junk" not in page.text
    assert "three link" not in page.text


def test_malformed_html_never_raises():
    cases = [
        "<p>unclosed <b>bold <i>italic",
        "<<<>>><html><body></div></span>text after junk",
        "\x00\x01\x02 binary \xff junk <title>t",
        "<html><head><title>only head",
        "",
        "   ",
        "<table><tr><td>cell<td>cell2</table></table></table>",
        "<a href='http://[broken'>bad link</a><a href='http://ok.test/'>ok</a>",
    ]
    for html in cases:
        page = extract(html, "http://a.test/")
        assert isinstance(page.text, str)
    assert "unclosed bold italic" in extract(cases[0], "http://a.test/").text
    links = extract(cases[-1], "http://a.test/").links
    assert [link.url for link in links] == ["http://ok.test/"]


def test_meta_refresh_target():
    html = '<html><head><meta http-equiv="refresh" content="0; url=/next"></head></html>'
    assert extract(html, "http://a.test/a/b").refresh_url == "http://a.test/next"


def test_inline_links_do_not_glue_words():
    page = extract('<p><a href="/a">alpha</a><a href="/b">beta</a></p>', "http://a.test/")
    assert "alpha beta" in page.text


# --- charsets, binary bodies, language ---

from crawler.extract import decode_html, detect_language, looks_binary  # noqa: E402

RUSSIAN = "Съешь же ещё этих мягких французских булок да выпей чаю, сказал учёный."
JAPANESE = "東京都の天気は晴れです。今日は良い一日になるでしょう。" * 3


def _doc(text: str, head: str = "") -> str:
    return f"<html><head>{head}<title>t</title></head><body><p>{text}</p></body></html>"


def test_charset_from_header_meta_and_bom():
    body = _doc(RUSSIAN).encode("windows-1251")
    assert decode_html(body, "text/html; charset=windows-1251") == (_doc(RUSSIAN), "cp1251")
    body = _doc(RUSSIAN, '<meta charset="windows-1251">').encode("windows-1251")
    assert RUSSIAN in decode_html(body, "text/html")[0]
    body = _doc(RUSSIAN, '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">')
    assert RUSSIAN in decode_html(body.encode("koi8-r"), "")[0]
    assert decode_html(b"\xef\xbb\xbf" + _doc("caf\u00e9").encode(), "text/html; charset=latin-1")[
        0] == _doc("caf\u00e9")  # the BOM wins over the header, as in browsers


def test_undeclared_legacy_charset_detected():
    for text, charset in ((JAPANESE, "shift_jis"), (RUSSIAN * 3, "windows-1251")):
        decoded, encoding = decode_html(_doc(text).encode(charset), "text/html")
        assert text in decoded, encoding
    assert decode_html(_doc("plain ascii and caf\u00e9").encode(), "")[1] == "utf-8"


def test_binary_served_as_html():
    assert looks_binary(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(256)) * 4)
    assert not looks_binary(_doc(RUSSIAN).encode())
    assert not looks_binary(b"")


def test_language_from_attribute_else_detected():
    assert extract(_doc("hello"), "http://a.test/").lang == ""  # too short to tell
    declared = '<html lang="fr-CA"><p>' + RUSSIAN + "</p></html>"
    assert extract(declared, "http://a.test/").lang == "fr"
    assert extract(_doc(RUSSIAN), "http://a.test/").lang == "ru"
    assert detect_language("Voilà une façade naïve près de la rivière à Noël, où l'élève") == "fr"
    assert detect_language(JAPANESE) == "ja"


def test_div_soup_boilerplate_removed():
    html = (
        '<html><body><div class="site-header"><div class="brand">Brand</div>'
        '<ul><li><a href="/">Home</a></li><li><a href="/a">About us here</a></li></ul></div>'
        '<div class="content"><h1>Real title</h1><p>Real text with a <a href="/x">link</a>.</p>'
        '<ul><li><a href="/1">A list of articles next to the title is content</a></li></ul>'
        '<div class="pager"><a href="/2">Next</a></div></div>'
        '<div class="sidebar"><h3>Popular</h3><ul><li><a href="/p">Popular page</a></li></ul></div>'
        '<ul><li><a href="/n">Stray nav item</a></li></ul>'
        '<div class="site-footer">Copyright notice</div></body></html>'
    )
    text = extract(html, "http://a.test/").text
    assert text.splitlines() == ["Real title", "Real text with a link .",
                                 "A list of articles next to the title is content"]


def test_bare_links_between_paragraphs_are_navigation():
    html = ('<html><body><div id="root"><h1>T</h1><p>Para one.</p><a href="/a">App 4</a>'
            '<a href="/b">App 6</a></div><div>Read <a href="/x">this</a></div></body></html>')
    assert extract(html, "http://a.test/").text == "T\nPara one.\nRead this"


def test_xhtml_with_xml_declaration_as_str():
    page = extract(
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN"'
        ' "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">\n'
        '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>git-stash(1)</title></head>'
        '<body><p>Stash the changes in a dirty working directory away.</p>'
        '<a href="git-reset.html">git-reset(1)</a></body></html>',
        "http://git.test/git-stash.html",
    )
    assert page.title == "git-stash(1)"
    assert "dirty working directory" in page.text
    assert [link.url for link in page.links] == ["http://git.test/git-reset.html"]


def test_links_with_bad_hosts_are_counted_not_kept():
    from crawler.extract import extract

    html = ('<html><body><p>text</p><a href=\'http://"><img src=x>.test/\'>x</a>'
            '<a href="http://a%00b.test/">y</a><a href="ftp://f.test/">z</a>'
            '<a href="http://ok.test/">ok</a></body></html>')
    page = extract(html, "http://site.test/")
    assert [link.url for link in page.links] == ["http://ok.test/"]
    assert page.invalid_links == {"invalid_host": 2, "invalid_url": 1}


def test_language_from_header_and_url_prefix():
    from crawler.extract import page_language, url_language

    assert url_language("http://h.test/fr/guide.html") == "fr"
    assert url_language("http://h.test/docs/pt-BR/guide.html") == "pt"
    assert url_language("http://h.test/ja_JP/x.html") == "ja"
    assert url_language("http://h.test/manual/index.html.de") == "de"
    assert url_language("http://h.test/id/123") == ""  # a record id, not Indonesian
    assert url_language("http://h.test/guide/intro.html") == ""
    english = "Install the package with apt and configure the web server for your site. " * 5
    french = "Installez le paquet avec apt puis configurez le serveur web de votre site. " * 5
    assert extract(_doc(english), "http://h.test/x", content_language="de-DE").lang == "de"
    assert page_language("", "", "http://h.test/fr-FR/x.html", french) == "fr"
    # an English copy in a translation's tree stays English
    assert page_language("", "", "http://h.test/fr-FR/x.html", english) == "en"
    assert page_language("", "", "http://h.test/ja-JP/x.html", english) == "en"
    japanese = "apt-cache コマンドは APT の内部データベースに保存された情報を表示できます。" * 3
    assert page_language("", "", "http://h.test/ja-JP/x.html", japanese + english) == "ja"
    assert page_language("es", "de", "http://h.test/fr/x.html", english) == "es"


def test_headings_and_definition_terms_are_kept():
    html = ("<html><body><main><h1>os.path</h1><p>Path functions.</p><dl><dt>os.path.join(a, b)"
            "</dt><dd>Join paths.</dd></dl><h2>Notes</h2></main></body></html>")
    assert extract(html, "http://h.test/").headings == "os.path\nos.path.join(a, b)\nNotes"


def test_a_table_of_contents_entry_is_no_definition_term():
    # DocBook's contents: each term a link to the page that defines it
    html = ("<html><body><main><h1>Functions</h1><dl><dt><span><a href='fcpatternreference."
            "html'>FcPatternReference</a></span> -- Increment pattern reference count</dt>"
            "<dt><a href='x19.html'>2.2. Font properties</a></dt>"
            "<dt id='fcfini'>FcFini <a href='#fcfini'>#</a></dt>"
            "<dt>create_in(dirname) <a href='../_modules/index.html'>[source]</a></dt>"
            "</dl><p>Every function of the library, by the type it works on.</p>"
            "</main></body></html>")
    assert extract(html, "http://h.test/x.html").headings == (
        "Functions\nFcFini #\ncreate_in(dirname) [source]")


def test_a_page_item_carries_every_field_the_extractor_read():
    """A page's fields are declared once (``crawler.items.PageContent``): the extractor's
    result and the item made of it share them."""
    from dataclasses import fields

    from crawler.extract import item_from_response
    from crawler.items import PageContent

    body = (b'<html lang="en"><head><title>Guide</title><meta name="description" content="d">'
            b'<link rel="canonical" href="http://a.test/guide"><meta name="robots" '
            b'content="nofollow"></head><body><main><h2 id="s">Setup</h2><p>Install it with '
            b'pip and run it.</p><a href="/next">next page</a></main></body></html>')
    page, item = item_from_response("http://a.test/guide?ref=x", 200, body, 5.0,
                                    content_type="text/html")
    names = [f.name for f in fields(PageContent)]
    assert {"title", "text", "sections", "links", "nofollow"} <= set(names)
    assert {name: getattr(item, name) for name in names} == {
        name: getattr(page, name) for name in names}
    assert (item.title, item.description, item.nofollow, item.url) == (
        "Guide", "d", True, "http://a.test/guide")
    assert item.sections and item.links


#: The root of an edoc or javadoc site: a frameset, its fallback in <noframes>.
FRAMESET = """<html><head><title>PropEr Reference Manual</title></head>
<frameset cols="20%,80%">
<frame src="modules-frame.html" name="modulesFrame" title="">
<frame src="overview-summary.html" name="overviewFrame" title="Overview">
<noframes>
<h2>This page uses frames</h2>
<p>Your browser does not accept frames.
<br>You should go to the <a href="overview-summary.html">non-frame version</a> instead,
or the <A HREF="proper.html">proper module</A>.
</p>
</noframes>
</frameset>
</html>"""


def test_frames_and_noframes_links_are_outlinks():
    page = extract(FRAMESET, "http://proper.test/doc/index.html")
    assert [(link.url, link.text, link.nofollow) for link in page.links] == [
        ("http://proper.test/doc/modules-frame.html", "modulesFrame", False),
        ("http://proper.test/doc/overview-summary.html", "Overview", False),
        ("http://proper.test/doc/proper.html", "proper module", False),
    ]
    # the fallback is the page's text, read as markup; the title stays the title
    assert " ".join(page.text.split()) == (
        "This page uses frames Your browser does not accept frames. You should go to the "
        "non-frame version instead, or the proper module .")
    assert page.title == "PropEr Reference Manual"


def test_iframe_src_is_an_outlink_and_empty_frames_are_none():
    html = ('<html><body><p>A demo below.</p>'
            '<iframe src="demo/run.html" title="Live demo">no frames</iframe>'
            '<iframe src="about:blank" name="spare"></iframe><iframe srcdoc="<p>x</p>"></iframe>'
            '<iframe src="javascript:false"></iframe>'
            '<iframe src="//video.test/embed/1"></iframe>'
            '<iframe src="classX__inherit__graph.svg"></iframe><iframe src="/manual.PDF?v=2">'
            '</iframe><a href="classX__inherit__graph.svg">graph</a></body></html>')
    page = extract(html, "http://a.test/guide/")
    assert [(link.url, link.text) for link in page.links] == [
        ("http://a.test/guide/demo/run.html", "Live demo"), ("http://video.test/embed/1", ""),
        ("http://a.test/guide/classX__inherit__graph.svg", "graph")]
    assert page.invalid_links == {}
    assert page.text == "A demo below."


def test_noframes_markup_is_never_text():
    def read(fallback):
        page = extract(f"<html><frameset><noframes>{fallback}</noframes></frameset></html>",
                       "http://a.test/")
        return page.text, [link.url for link in page.links]

    assert read("<!-- no fallback -->") == ("", [])
    assert read("<noframes><p>Inner <a href=in.html>in</a></p>") == (
        "Inner in", ["http://a.test/in.html"])
    assert read("1 < 2") == ("1 < 2", [])
