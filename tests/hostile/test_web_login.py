"""Login throttling holds under gunicorn: wrong passwords sent in parallel, to every worker,
get at most ``LOGIN_FAILURE_LIMIT`` (10) tries; the count is shared by the workers (the
SQLite cache in DATA_DIR without Redis) and taken before the password is checked."""

from __future__ import annotations

import re
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest

from harness.crawlrun import migrate
from tests.webserver import gunicorn
from webui.sqlitecache import SQLiteCache

pytestmark = pytest.mark.slow

ATTEMPTS = 24


def _post(url: str, cookie: str, token: str, password: str, address: str) -> int:
    data = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": "boss",
                                   "password": password}).encode()
    request = urllib.request.Request(url, data=data, headers={
        "Cookie": cookie, "Referer": url, "X-Forwarded-For": address})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_parallel_wrong_passwords_get_ten_tries(tmp_path):
    migrate(tmp_path)
    with gunicorn(tmp_path, env_extra={"WEB_TRUSTED_PROXIES": "127.0.0.1/32"},
                  args=("--workers", "2", "--threads", "4")) as web:
        url = web.url + "/admin/login/"
        with urllib.request.urlopen(url, timeout=30) as response:
            cookie = response.headers["Set-Cookie"].split(";")[0]
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"',
                              response.read().decode()).group(1)
        with ThreadPoolExecutor(12) as pool:
            codes = Counter(pool.map(lambda n: _post(url, cookie, token, f"wrong{n}",
                                                     "198.51.100.7"), range(ATTEMPTS)))
        # 200: the form again, the password checked and refused; 429: not checked
        assert codes == {200: 10, 429: ATTEMPTS - 10}, (codes, web.output()[-4000:])
        # another client is not locked out
        assert _post(url, cookie, token, "wrong", "198.51.100.8") == 200


@pytest.mark.django_db
def test_a_successful_login_is_not_counted(client, django_user_model, settings):
    django_user_model.objects.create_superuser("boss", "boss@example.test", "right-pass-9")
    settings.LOGIN_FAILURE_LIMIT = 4

    def attempt(password: str) -> int:
        return client.post("/admin/login/", {"username": "boss", "password": password},
                           REMOTE_ADDR="203.0.113.9").status_code

    assert [attempt("wrong") for _ in range(2)] == [200, 200]
    assert attempt("right-pass-9") == 302  # logged in, and taken back off the count
    client.logout()
    assert [attempt("wrong") for _ in range(3)] == [200, 200, 429]


def _increments(path: str, n: int) -> list[int]:
    cache = SQLiteCache(path, {})
    return [cache.incr("attempts") for _ in range(n)]


def test_the_shared_cache_counts_exactly_across_processes(tmp_path):
    path = str(tmp_path / "webcache.sqlite3")
    cache = SQLiteCache(path, {})
    assert cache.add("attempts", 0, 60) and not cache.add("attempts", 5, 60)
    with ProcessPoolExecutor(4) as pool:
        seen = [v for run in pool.map(_increments, [path] * 4, [200] * 4) for v in run]
    assert sorted(seen) == list(range(1, 801))  # every increment saw a count of its own
    assert cache.get("attempts") == 800
    with pytest.raises(ValueError):
        cache.incr("never-added")
