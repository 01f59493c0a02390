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
