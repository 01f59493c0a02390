"""JSON log lines (LOG_FORMAT=json) for the crawl and the web app."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

import testweb
from crawler.logjson import JsonFormatter, JsonLogRecord
from harness.crawlrun import ROOT, crawl_env, run_crawl


def _record(cls, exc_info=None):
    return cls("crawler.x", logging.ERROR, __file__, 1, "failed %s", ("fetch",), exc_info)


def test_a_record_is_one_json_line_with_its_traceback():
    try:
        raise ValueError("boom")
    except ValueError:
        exc_info = sys.exc_info()
    for record in (_record(logging.LogRecord, exc_info), _record(JsonLogRecord, exc_info)):
        line = JsonFormatter().format(record)
        assert "\n" not in line
        data = json.loads(line)
        assert data["level"] == "ERROR" and data["logger"] == "crawler.x"
        assert data["message"] == "failed fetch" and data["time"].endswith("Z")
        assert "ValueError: boom" in data["exception"]
    # what Scrapy's own handlers do with LOG_FORMAT "%(message)s": the same single line
    record = _record(JsonLogRecord, exc_info)
    assert logging.Formatter("%(message)s").format(record) == record.getMessage()
    assert "ValueError: boom" in json.loads(record.getMessage())["exception"]


@pytest.mark.slow
def test_crawl_log_is_json_lines(tmp_path):
    with testweb.run(hosts=1, pages=5) as web:
        result = run_crawl(tmp_path, [web.home_url("site0.test"), "http://10.0.0.1/"],
                           settings={"LOG_FILE": str(tmp_path / "crawl.log")},
                           args={"max_pages": 3}, env_extra={"LOG_FORMAT": "json"},
                           timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = (tmp_path / "crawl.log").read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line, the banner included
    messages = [r["message"] for r in records]
    assert messages[0].startswith("Scrapy ") and "Dumping Scrapy stats" in " ".join(messages)
    assert any(r["level"] == "WARNING" and "SSRF guard" in r["message"] for r in records)
    echoed = [line for line in result.stderr.splitlines() if "SSRF guard" in line]
    assert echoed and all(json.loads(line)["logger"] == "crawler.ssrf" for line in echoed)


def test_web_app_logs_json_lines(tmp_path):
    code = ("import django, logging; django.setup(); "
            "logging.getLogger('django.request').warning('Not Found: %s', '/nowhere')")
    env = crawl_env(tmp_path, {"LOG_FORMAT": "json", "DJANGO_SETTINGS_MODULE": "webui.settings"})
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.splitlines()
    data = json.loads(line)
    assert data["message"] == "Not Found: /nowhere" and data["logger"] == "django.request"
