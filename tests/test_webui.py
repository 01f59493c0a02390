"""Search page, API, OpenAPI schema, OpenSearch XML, CSP and rate limits through Django's
test client against the embedded index."""

import json
import re
import xml.etree.ElementTree as ET

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.template.loader import render_to_string
from django.test import RequestFactory
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from crawler.urls import doc_id_for
from index.base import Document, Hit, Results
from index.query import parse
from webui.search.backend import get_search_backend

pytestmark = pytest.mark.django_db

DOCS = [
    ("http://alpha.test/", "Alpha home", "Welcome to alpha, the first letter site."),
    ("http://beta.test/zebra", "Zebra facts", "The zebra is a striped animal of Africa."),
    (
        "http://evil.test/x",
        "<script>alert('t')</script> evil",
        "zebra <img src=x onerror=alert(1)> stripes",
    ),
    ("javascript:alert(document.cookie)", "Zebra javascript trap", "zebra click me"),
    ('http://evil.test/"><script>alert(2)</script>', "Zebra quote trap", "zebra quoted url"),
] + [
    (f"http://okapi.test/{n}", f"Okapi page {n}", f"The okapi number {n} lives in the forest.")
    for n in range(25)
]


@pytest.fixture(scope="module", autouse=True)
def indexed():
    backend = get_search_backend()
    backend.ensure_index()
    backend.index(
        Document(id=doc_id_for(url), url=url, host="evil.test" if "://" not in url
                 else url.split("/")[2].split('"')[0], title=t, body=b)
        for url, t, b in DOCS
    )
    backend.refresh()
    backend.close()  # release the writer lock: the admin writes through its own backend


@pytest.fixture(autouse=True)
def fresh_rate_limits():
    cache.clear()


def test_api_returns_hits(client):
    data = client.get("/api/search", {"q": "zebra"}).json()
    assert data["total"] >= 1
    urls = [hit["url"] for hit in data["results"]]
    assert "http://beta.test/zebra" in urls
    assert {"url", "title", "snippet", "score"} <= set(data["results"][0])


def test_api_rejects_empty_and_too_long(client):
    assert client.get("/api/search").status_code == 400
    assert client.get("/api/search", {"q": "a" * 600}).status_code == 400
    assert client.get("/api/search", {"q": "zebra", "page": "0"}).status_code == 400


def test_search_page_escapes_crawled_content(client):
    html = client.get("/", {"q": "zebra"}).content.decode()
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;" in html
    assert "<mark>" in html.lower()


def test_only_http_urls_become_links(client):
    html = client.get("/", {"q": "zebra"}).content.decode()
    assert "Zebra javascript trap" in html
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert hrefs and not any(h.lower().lstrip().startswith("javascript") for h in hrefs)
    assert "javascript:alert(document.cookie)" in html  # shown as text, not as a link
    # the quote in the crawled URL cannot close the attribute
    assert '"><script>alert(2)' not in html
    assert "&quot;&gt;&lt;script&gt;alert(2)" in html


def test_every_script_is_a_file_or_nonced(client):
    response = client.get("/", {"q": "zebra"})
    policy = response["Content-Security-Policy"]
    assert "script-src 'self' 'nonce-" in policy and "object-src 'none'" in policy
    nonce = re.search(r"'nonce-([^']+)'", policy).group(1)
    tags = re.findall(r"<script\b[^>]*>", response.content.decode())
    assert tags
    assert all("src=" in tag or f'nonce="{nonce}"' in tag for tag in tags)
    assert client.get("/api/search", {"q": "zebra"})["Content-Security-Policy"]


def test_search_page_paginates(client):
    first = client.get("/", {"q": "okapi"}).content.decode()
    assert "Results 1–10 of about 25" in first
    assert 'rel="next"' in first and 'rel="prev"' not in first
    assert 'aria-current="page">1<' in first
    third = client.get("/", {"q": "okapi", "page": 3}).content.decode()
    assert "Results 21–25 of about 25" in third
    assert 'rel="prev"' in third and 'rel="next"' not in third
    assert re.search(r"\(\d+\.\d ms\)", third)


def test_search_page_empty_and_zero_results(client):
    home = client.get("/").content.decode()
    assert "Search operators" in home and "site:example.org" in home
    html = client.get("/", {"q": '"zebra okapi" site:nowhere.test'}).content.decode()
    assert "No pages match" in html
    assert "Without quotes" in html and "On every site" in html


def relaxed_queries(text):
    return parse(text).relaxations()


def test_relaxed_queries():
    assert relaxed_queries('"a b" -c site:x.test') == [
        ("Without quotes", "a b -c site:x.test"),
        ("On every site", '"a b" -c'),
        ("Without exclusions", '"a b" site:x.test'),
    ]
    assert relaxed_queries("zebra") == []
    assert relaxed_queries("red striped zebra") == [
        ("Any of the words", "red OR striped OR zebra")
    ]


def test_did_you_mean_and_similar_are_rendered():
    results = Results(
        query="zebar",
        hits=[Hit(id="1", url="http://a.test/", title="A", snippet="x", score=1.0,
                  host="a.test", similar=3)],
        total=1,
        page=1,
        size=10,
        suggestion="zebra",
    )
    request = RequestFactory().get("/", {"q": "zebar"})
    request.csp_nonce = "n"
    html = render_to_string(
        "search/page.html",
        {"query": "zebar", "results": results, "first": 1, "last": 1, "pages": [1]},
        request=request,
    )
    assert 'Did you mean <a href="?q=zebra">zebra</a>' in html
    assert "3 similar pages hidden" in html


def test_did_you_mean_from_the_embedded_index(client):
    html = client.get("/", {"q": "zebar stripes"}).content.decode()
    assert 'Did you mean <a href="?q=zebra%20stripes">zebra stripes</a>?' in html
    assert client.get("/api/search", {"q": "zebar"}).json()["suggestion"] == "zebra"
    assert client.get("/api/search", {"q": "zebra"}).json()["suggestion"] is None


def test_query_length_limit_on_page(client):
    response = client.get("/", {"q": "a" * 600})
    assert response.status_code == 400
    assert "limited to 500 characters" in response.content.decode()


def test_rate_limit_answers_429_with_retry_after(client, settings):
    settings.SEARCH_RATE_LIMIT = 3
    settings.SEARCH_RATE_WINDOW_S = 60
    codes = [client.get("/api/search", {"q": "zebra"}).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    response = client.get("/api/search", {"q": "zebra"})
    assert 1 <= int(response["Retry-After"]) <= 60
    assert "Too many requests" in response.json()["error"]
    # another client is not affected
    assert client.get("/api/search", {"q": "zebra"}, REMOTE_ADDR="10.0.0.9").status_code == 200
    page = client.get("/", {"q": "zebra"})
    assert page.status_code == 200  # the page has its own budget
    settings.SEARCH_RATE_LIMIT = 0
    assert client.get("/api/search", {"q": "zebra"}).status_code == 200


def _validator(schema: dict, name: str) -> Draft202012Validator:
    resource = Resource.from_contents(schema, default_specification=DRAFT202012)
    registry = Registry().with_resource("urn:api", resource)
    return Draft202012Validator({"$ref": f"urn:api#/components/schemas/{name}"}, registry=registry)


def test_openapi_schema_matches_real_responses(client, settings):
    schema = client.get("/api/openapi.json").json()
    assert schema["openapi"].startswith("3.1")
    operation = schema["paths"]["/api/search"]["get"]
    assert {p["name"] for p in operation["parameters"]} == {"q", "page", "size", "explain"}
    for name in ("Results", "Hit", "Error"):
        Draft202012Validator.check_schema(schema["components"]["schemas"][name])
    results, error = _validator(schema, "Results"), _validator(schema, "Error")
    for params in ({"q": "zebra"}, {"q": "okapi", "page": 2, "size": 5}, {"q": "nothingxyz"},
                   {"q": "zebra", "explain": 1}):
        response = client.get("/api/search", params)
        assert response.status_code == 200
        results.validate(response.json())
    assert client.get("/api/search", {"q": "zebra"}).json()["results"]
    (explained, *_) = client.get("/api/search", {"q": "zebra", "explain": 1}).json()["results"]
    assert explained["explain"]["bm25"]["value"] > 0
    assert "explain" not in client.get("/api/search", {"q": "zebra"}).json()["results"][0]
    bad = client.get("/api/search", {"q": "zebra", "size": 1000})
    assert bad.status_code == 400 and "400" in operation["responses"]
    error.validate(bad.json())
    settings.SEARCH_RATE_LIMIT = 1
    client.get("/api/search", {"q": "zebra"})
    limited = client.get("/api/search", {"q": "zebra"})
    assert limited.status_code == 429 and "Retry-After" in operation["responses"]["429"]["headers"]
    error.validate(limited.json())
    with pytest.raises(Exception, match="required"):
        results.validate({"query": "x"})


def test_opensearch_description_is_linked_and_valid(client):
    html = client.get("/").content.decode()
    assert 'type="application/opensearchdescription+xml"' in html
    response = client.get("/opensearch.xml")
    assert response["Content-Type"].startswith("application/opensearchdescription+xml")
    root = ET.fromstring(response.content)
    ns = {"os": "http://a9.com/-/spec/opensearch/1.1/"}
    assert root.find("os:ShortName", ns).text
    templates = [u.get("template") for u in root.findall("os:Url", ns)]
    assert "http://testserver/?q={searchTerms}&page={startPage?}" in templates


def test_about_page_names_the_user_agent(client):
    from crawler import settings as crawl_settings

    text = client.get("/about").content.decode()
    assert crawl_settings.USER_AGENT in text and "Disallow: /" in text
    assert "/about" in crawl_settings.USER_AGENT


def test_search_command_json(capsys):
    call_command("search", "zebra", "--json")
    payload = json.loads(capsys.readouterr().out)
    assert payload["results"][0]["url"] in {u for u, _, _ in DOCS}
    assert set(payload["results"][0]) >= {"url", "title", "score", "snippet"}


def test_rate_limit_shared_through_redis(client, settings, tmp_path):
    from crawler.redisserver import running_redis
    from webui.security import check_rate

    with running_redis(tmp_path) as server:
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                       "LOCATION": server.url}}
        from django.core.cache import caches

        caches["default"].clear()
        assert [check_rate("api:1.2.3.4", 2, 60, now=120.0) for _ in range(3)] == [0, 0, 60]
        assert check_rate("api:1.2.3.4", 2, 60, now=150.5) == 30  # same window, half gone
        assert check_rate("api:1.2.3.4", 2, 60, now=180.0) == 0  # next window
        settings.SEARCH_RATE_LIMIT = 1
        assert client.get("/api/search", {"q": "zebra"}).status_code == 200
        assert client.get("/api/search", {"q": "zebra"}).status_code == 429
        from redis import Redis

        assert Redis.from_url(server.url).keys("*ratelimit:api:127.0.0.1*")  # kept in Redis
