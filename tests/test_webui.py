"""Search page, API, OpenAPI schema, OpenSearch XML, CSP and rate limits through Django's
test client against the embedded index."""

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

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
from index.query import parse, relaxations
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


PLOT_URL = "http://gnuplot.test/manual.html"
PLOT_FILLER = " Words about something else, at some length." * 6
PLOT_BODY = (f"Plot manual\nOpening words.{PLOT_FILLER}\nKey\nThe key command sets the legend "
             f"of a plot.{PLOT_FILLER}\nMultiplot legends\nPlots side by side share one."
             f"{PLOT_FILLER}\nOther\nNothing of note.")
PLOT_SECTIONS = tuple((PLOT_BODY.index(h), a, h) for h, a in
                      (("Key", "key"), ("Multiplot legends", "multi plot"), ("Other", "other")))


@pytest.fixture(scope="module", autouse=True)
def indexed():
    backend = get_search_backend()
    backend.ensure_index()
    backend.index(
        Document(id=doc_id_for(url), url=url, host="evil.test" if "://" not in url
                 else url.split("/")[2].split('"')[0], title=t, body=b)
        for url, t, b in DOCS
    )
    backend.index([Document(id=doc_id_for(PLOT_URL), url=PLOT_URL, host="gnuplot.test",
                            title="Plot manual", body=PLOT_BODY, sections=PLOT_SECTIONS)])
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
    for size in ("0", "-1", "51", "ten"):  # the schema says 1..SEARCH_MAX_SIZE (50)
        response = client.get("/api/search", {"q": "zebra", "size": size})
        assert response.status_code == 400, size
        assert "Page size runs from 1 to 50" in response.json()["error"]
    assert client.get("/api/search", {"q": "zebra", "size": "1"}).json()["size"] == 1


def test_search_page_escapes_crawled_content(client):
    html = client.get("/", {"q": "zebra"}).content.decode()
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;" in html
    assert "<mark>" in html.lower()


def test_a_result_links_to_its_section_and_lists_jumps(client):
    html = client.get("/", {"q": "key legend"}).content.decode()
    assert f'href="{PLOT_URL}#key"' in html
    assert "› <span class=\"section\">Key</span>" in html
    jumps = re.search(r'<p class="jumps">(.*?)</p>', html).group(1)
    assert f'<a href="{PLOT_URL}#multi%20plot">Multiplot legends</a>' in jumps
    assert "#other" not in jumps  # a heading without the query's words is no jump
    hit = client.get("/api/search", {"q": "key legend"}).json()["results"][0]
    assert (hit["anchor"], hit["section"]) == ("key", "Key")
    assert hit["jumps"] == [{"anchor": "multi plot", "heading": "Multiplot legends"}]


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
    return relaxations(parse(text))


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
    assert 1 <= int(response["Retry-After"]) <= 120  # sliding: into the next window at most
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


def test_openapi_schema_matches_real_responses(client, admin_client, settings):
    schema = client.get("/api/openapi.json").json()
    assert schema["openapi"].startswith("3.1")
    operation = schema["paths"]["/api/search"]["get"]
    assert {p["name"] for p in operation["parameters"]} == {
        "q", "page", "size", "explain", "facets"}
    for name in ("Results", "Hit", "Error", "Completions"):
        Draft202012Validator.check_schema(schema["components"]["schemas"][name])
    results, error = _validator(schema, "Results"), _validator(schema, "Error")
    for params in ({"q": "zebra"}, {"q": "okapi", "page": 2, "size": 5}, {"q": "nothingxyz"},
                   {"q": "key legend"}, {"q": "okapi", "facets": 1}):
        response = client.get("/api/search", params)
        assert response.status_code == 200
        results.validate(response.json())
    assert client.get("/api/search", {"q": "zebra"}).json()["results"]
    refused = client.get("/api/search", {"q": "zebra", "explain": 1})  # staff only
    assert refused.status_code == 403 and "403" in operation["responses"]
    error.validate(refused.json())
    response = admin_client.get("/api/search", {"q": "zebra", "explain": 1})
    results.validate(response.json())
    (explained, *_) = response.json()["results"]
    assert explained["explain"]["bm25"]["value"] > 0
    assert "explain" not in client.get("/api/search", {"q": "zebra"}).json()["results"][0]
    bad = client.get("/api/search", {"q": "zebra", "size": 1000})
    assert bad.status_code == 400 and "400" in operation["responses"]
    error.validate(bad.json())
    assert client.get("/api/search", {"q": "okapi", "facets": 1}).json()["facets"]["site"] == [
        {"value": "okapi.test", "count": 25}]
    completions = _validator(schema, "Completions")
    completions.validate(client.get("/api/complete", {"q": "okapi p"}).json())
    assert "/api/complete" in schema["paths"]
    error.validate(client.get("/api/complete", {"q": "o" * 200}).json())
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
    from harness.redisserver import running_redis
    from webui.security import check_rate

    with running_redis(tmp_path) as server:
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                       "LOCATION": server.url}}
        from django.core.cache import caches

        caches["default"].clear()
        assert [check_rate("api:1.2.3.4", 2, 60, now=120.0) for _ in range(3)] == [0, 0, 80]
        assert check_rate("api:1.2.3.4", 2, 60, now=200.0, hit=False) == 20  # sliding out
        assert check_rate("api:1.2.3.4", 2, 60, now=240.0, hit=False) == 0  # slid past it
        settings.SEARCH_RATE_LIMIT = 1
        assert client.get("/api/search", {"q": "zebra"}).status_code == 200
        assert client.get("/api/search", {"q": "zebra"}).status_code == 429
        from redis import Redis

        assert Redis.from_url(server.url).keys("*ratelimit:api:127.0.0.1*")  # kept in Redis


def test_rate_limit_slides_instead_of_resetting_at_a_window_boundary():
    from webui.security import check_rate

    # a client sends the whole limit in the last second of a window, then again at once
    late = [check_rate("api:9.9.9.9", 10, 60, now=119.0) for _ in range(10)]
    early = [check_rate("api:9.9.9.9", 10, 60, now=121.0) for _ in range(10)]
    assert late == [0] * 10
    # fixed windows would allow all ten again (twenty in two seconds); the sliding window
    # still counts nearly all of the previous ten
    assert sum(1 for r in early if r == 0) == 0 and all(r > 0 for r in early)
    # half a window later half of the old requests have slid out
    assert [check_rate("api:9.9.9.8", 10, 60, now=100.0) for _ in range(10)] == [0] * 10
    allowed = sum(check_rate("api:9.9.9.8", 10, 60, now=150.0) == 0 for _ in range(10))
    assert allowed == 5
    # and a full window later all of them
    assert sum(check_rate("api:9.9.9.7", 10, 60, now=100.0 + i) == 0 for i in range(10)) == 10
    assert sum(check_rate("api:9.9.9.7", 10, 60, now=200.0) == 0 for _ in range(10)) == 10


def test_client_address_trusts_only_configured_proxies(client, settings):
    from django.test import RequestFactory

    from webui.security import client_address

    factory = RequestFactory()
    spoofed = factory.get("/", REMOTE_ADDR="203.0.113.7", HTTP_X_FORWARDED_FOR="1.2.3.4")
    settings.TRUSTED_PROXIES = []
    assert client_address(spoofed) == "203.0.113.7"
    settings.TRUSTED_PROXIES = ["10.0.0.0/8", "::1/128"]
    assert client_address(spoofed) == "203.0.113.7"  # not from a trusted proxy
    via_proxy = factory.get("/", REMOTE_ADDR="10.1.1.1",
                            HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.2, 10.2.2.2")
    assert client_address(via_proxy) == "198.51.100.2"  # the client's own claim is ignored
    assert client_address(factory.get("/", REMOTE_ADDR="::1")) == "::1"
    assert client_address(factory.get("/", REMOTE_ADDR="10.1.1.1",
                                      HTTP_X_FORWARDED_FOR="junk")) == "10.1.1.1"
    # behind the proxy, clients get limits of their own
    settings.SEARCH_RATE_LIMIT = 1
    for n in (1, 2):
        assert client.get("/api/search", {"q": "zebra"}, REMOTE_ADDR="10.1.1.1",
                          HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").status_code == 200
    assert client.get("/api/search", {"q": "zebra"}, REMOTE_ADDR="10.1.1.1",
                      HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 429


@pytest.mark.django_db
def test_login_is_throttled_after_repeated_failures(client, django_user_model, settings):
    django_user_model.objects.create_superuser("boss", "boss@example.test", "right-pass-9")
    settings.LOGIN_FAILURE_LIMIT = 10
    codes = [client.post("/admin/login/", {"username": "boss", "password": f"wrong{n}"}
                         ).status_code for n in range(25)]
    assert codes[:10] == [200] * 10 and set(codes[10:]) == {429}
    response = client.post("/admin/login/?next=/admin/",
                           {"username": "boss", "password": "right-pass-9"})
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert "Too many failed logins" in response.content.decode()
    assert client.get("/admin/").status_code == 302  # not logged in
    # another address is not locked out
    other = client.post("/admin/login/?next=/admin/",
                        {"username": "boss", "password": "right-pass-9"}, REMOTE_ADDR="10.9.9.9")
    assert other.status_code == 302 and other["Location"] == "/admin/"


def _manage_env(data_dir, **extra) -> dict:
    import os

    env = {k: v for k, v in os.environ.items()
           if k not in ("REDIS_URL", "ELASTICSEARCH_URL", "DATABASE_URL", "WEB_HTTPS",
                        "WEB_TRUSTED_PROXIES",
                        # set for the browser tests' live server, never in a deployment
                        "DJANGO_ALLOW_ASYNC_UNSAFE")}
    return {**env, "DATA_DIR": str(data_dir), **extra}


def test_deploy_check_is_clean_with_https_on(tmp_path):
    import subprocess
    import sys

    cmd = [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"]
    root = Path(__file__).resolve().parent.parent
    plain = subprocess.run(cmd, cwd=root, env=_manage_env(tmp_path), capture_output=True,
                           text=True, timeout=120)
    assert plain.returncode != 0
    for warning in ("W004", "W008", "W012", "W016"):
        assert f"security.{warning}" in plain.stderr + plain.stdout
    https = subprocess.run(cmd, cwd=root, env=_manage_env(tmp_path, WEB_HTTPS="1",
                                                          WEB_TRUSTED_PROXIES="127.0.0.1/32"),
                           capture_output=True, text=True, timeout=120)
    assert https.returncode == 0, https.stderr + https.stdout
    assert "no issues" in https.stdout


def test_secret_key_file_is_private(tmp_path):
    import subprocess
    import sys

    code = ("import os; os.umask(0); os.environ['DJANGO_SETTINGS_MODULE'] = 'webui.settings'; "
            "from django.conf import settings; print(settings.SECRET_KEY)")
    root = Path(__file__).resolve().parent.parent
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=root, env=_manage_env(tmp_path),
                              stdout=subprocess.PIPE, text=True) for _ in range(3)]
    keys = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert len(keys) == 1 and len(keys.pop()) >= 50  # concurrent starts share one key
    key_file = tmp_path / "secret_key"
    assert key_file.stat().st_mode & 0o777 == 0o600  # under umask 0 too
    # no temporary key file left behind (logs/ and static/ are made by the settings)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", "secret_key", "static"]


def test_search_answers_503_with_retry_after_while_the_index_is_unreachable(
        client, monkeypatch, tmp_path):
    from harness.services import free_port
    from index.engines.elasticsearch.backend import ElasticsearchBackend

    # a real client against a port nothing listens on: every request is refused
    dead = ElasticsearchBackend(f"http://127.0.0.1:{free_port()}", index_prefix="gone",
                                spool_dir=tmp_path / "spool", request_timeout_s=2)
    monkeypatch.setattr("webui.search.backend.get_search_backend", lambda: dead)
    try:
        api = client.get("/api/search", {"q": "zebra"})
        assert api.status_code == 503 and api["Content-Type"] == "application/json"
        assert int(api["Retry-After"]) >= 1
        assert "briefly unavailable" in api.json()["error"]
        page = client.get("/", {"q": "zebra"})
        assert page.status_code == 503 and int(page["Retry-After"]) >= 1
        assert "Search is briefly unavailable" in page.content.decode()
    finally:
        dead.close()
