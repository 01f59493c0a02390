"""No raw engine query syntax reaches Elasticsearch: user text only enters the DSL through
the shared query AST (index.query.parse) and QueryCompiler, as analyzed terms."""

import json
import re
from pathlib import Path

import pytest

from index.engines.elasticsearch.backend import QueryCompiler
from index.query import parse

HOSTILE = [
    'title:zebra AND body:* OR _exists_:url',
    '{"query_string": {"query": "*"}}',
    "zebra~2 okapi^100 /reg.*ex/ foo?bar",
    '"unclosed phrase (a OR (b',
    "script:doc['x'].value -site:evil.test site:\"a.test\"",
    "<script>alert(1)</script> ${jndi:ldap://x} \\u0000",
    "a" * 300,
]

ALLOWED_QUERIES = {"bool", "multi_match", "term"}
ALLOWED_KEYS = ALLOWED_QUERIES | {
    "must", "must_not", "should", "minimum_should_match", "query", "type", "fields",
    "tie_breaker", "analyzer", "site",
}


def _walk(node, path="$"):
    if isinstance(node, dict):
        for key, value in node.items():
            yield path, key, value
            yield from _walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for n, value in enumerate(node):
            yield from _walk(value, f"{path}[{n}]")


@pytest.mark.parametrize("text", HOSTILE)
def test_compiled_queries_hold_only_analyzed_terms(text):
    parsed = parse(text)
    if parsed.matches_nothing:
        return
    dsl = QueryCompiler().compile(parsed.root)
    for path, key, value in _walk(dsl):
        assert key in ALLOWED_KEYS, f"{key} at {path}"
        if key == "multi_match":
            assert value["type"] in ("best_fields", "phrase")
            assert value["analyzer"] == "whitespace"
            # analyzed terms only: no operators, wildcards, fields or escapes survive
            assert re.fullmatch(r"[^\s:*?~^/\\(){}\[\]\"']+( [^\s:*?~^/\\(){}\[\]\"']+)*",
                                value["query"]), value["query"]
        if key == "term":
            assert set(value) == {"site"} and re.fullmatch(r"[a-z0-9.\-\[\]:]+", value["site"])
    assert "query_string" not in json.dumps(dsl)


def test_backend_never_builds_string_queries():
    source = Path("index/engines/elasticsearch/backend.py").read_text()
    for forbidden in ("query_string", "simple_query_string", '"regexp"', '"wildcard"',
                      '"script"'):
        assert forbidden not in source, forbidden
    # search() takes text or a parsed Query, and text is always parsed first
    assert "parsed = query if isinstance(query, Query) else parse(query)" in source
