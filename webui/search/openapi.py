"""The hand-written OpenAPI 3.1 description of ``/api/search`` and ``/api/complete`` (tests
check real responses)."""

from __future__ import annotations

from django.conf import settings

from index.query import MAX_QUERY_CHARS

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string", "description": "What to change and retry"}},
    "additionalProperties": False,
}

_HIT = {
    "type": "object",
    "required": [
        "id", "url", "title", "snippet", "score", "host", "cluster_id", "similar", "languages",
        "pagerank",
        "cached", "anchor", "section", "jumps",
    ],
    "properties": {
        "id": {"type": "string", "description": "Document id (hash of the canonical URL)"},
        "url": {"type": "string", "description": "Canonical URL of the page"},
        "title": {"type": "string", "description": "Page title as crawled (plain text)"},
        "snippet": {
            "type": "string",
            "description": "HTML-escaped excerpt; query words wrapped in <mark>",
        },
        "score": {"type": "number"},
        "host": {"type": "string"},
        "cluster_id": {"type": "string", "description": "Near-duplicate cluster, may be empty"},
        "similar": {
            "type": "integer",
            "minimum": 0,
            "description": "Near-copies and translations collapsed into this hit",
        },
        "languages": {
            "type": "integer",
            "minimum": 0,
            "description": "Languages other than this hit's that its translations are in "
                           "(\"also in N languages\")",
        },
        "pagerank": {"type": "number", "description": "Static rank of the page"},
        "cached": {
            "type": "boolean",
            "description": "A stored copy is shown at /cache?id=<id>",
        },
        "anchor": {
            "type": "string",
            "description": "The id of the section that answers the query: the result links "
                           "to url#anchor (empty: the page itself)",
        },
        "section": {"type": "string", "description": "The heading of that section"},
        "jumps": {
            "type": "array",
            "maxItems": 3,
            "description": "Other sections of the page to jump to (url#anchor)",
            "items": {
                "type": "object",
                "required": ["anchor", "heading"],
                "properties": {"anchor": {"type": "string"}, "heading": {"type": "string"}},
                "additionalProperties": False,
            },
        },
        "explain": {
            "type": "object",
            "description": "With explain=1: each ranking signal's value, weight and "
                           "contribution to the score",
            "additionalProperties": {
                "type": "object",
                "required": ["value", "weight", "contribution"],
                "properties": {
                    "value": {"type": "number"},
                    "weight": {"type": "number"},
                    "contribution": {"type": "number"},
                    "factor": {"type": "number", "description": "A demoting signal "
                               "(spam): the factor the whole score is multiplied by"},
                    "raw": {"type": "number",
                            "description": "The text signal only: the engine's own text "
                                           "score, before it is made relative"},
                },
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}


_FACET = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["value", "count"],
        "properties": {"value": {"type": "string"}, "count": {"type": "integer", "minimum": 1}},
        "additionalProperties": False,
    },
}

_COMPLETIONS = {
    "type": "object",
    "required": ["query", "completions"],
    "properties": {
        "query": {"type": "string"},
        "completions": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Queries often searched, then page titles, starting with the "
                           "text typed (compared case- and accent-insensitively)",
        },
    },
    "additionalProperties": False,
}


def _results() -> dict:
    return {
        "type": "object",
        "required": [
            "query", "total", "page", "size", "took_ms", "partial", "suggestion", "results",
        ],
        "properties": {
            "query": {"type": "string"},
            "total": {"type": "integer", "minimum": 0, "description": "Matching documents"},
            "page": {"type": "integer", "minimum": 1, "maximum": settings.SEARCH_MAX_PAGE},
            "size": {"type": "integer", "minimum": 1, "maximum": settings.SEARCH_MAX_SIZE},
            "took_ms": {"type": "number", "minimum": 0},
            "partial": {
                "type": "boolean",
                "description": "True when part of the index did not answer in time",
            },
            "suggestion": {
                "type": ["string", "null"],
                "description": "A corrected query (did you mean)",
            },
            "results": {"type": "array", "items": {"$ref": "#/components/schemas/Hit"}},
            "facets": {
                "type": "object",
                "description": "With facets=1: matches per site (host) and per language, "
                               "most first (add site:<value> or lang:<value> to narrow)",
                "required": ["site", "lang"],
                "properties": {"site": _FACET, "lang": _FACET},
                "additionalProperties": False,
            },
        },
        "additionalProperties": False,
    }


def openapi_schema(server_url: str) -> dict:
    """The OpenAPI document, with ``server_url`` as the one server."""
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "websearch API",
            "version": "1.0.0",
            "description": (
                'Query language: words (all must match), "phrases", -exclude, site:host, '
                "lang:code, a OR b, (groups)."
            ),
        },
        "servers": [{"url": server_url}],
        "paths": {
            "/api/search": {
                "get": {
                    "operationId": "search",
                    "summary": "One page of search results",
                    "parameters": [
                        {
                            "name": "q",
                            "in": "query",
                            "required": True,
                            "description": "The query",
                            "schema": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": MAX_QUERY_CHARS,
                            },
                        },
                        {
                            "name": "page",
                            "in": "query",
                            "schema": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": settings.SEARCH_MAX_PAGE,
                                "default": 1,
                            },
                        },
                        {
                            "name": "size",
                            "in": "query",
                            "description": "Results a page; page x size is at most "
                                           f"{settings.SEARCH_MAX_RESULTS}",
                            "schema": {
                                "type": "integer", "minimum": 1,
                                "maximum": settings.SEARCH_MAX_SIZE, "default": 10,
                            },
                        },
                        {
                            "name": "explain",
                            "in": "query",
                            "description": "1: each hit says what every ranking signal "
                                           "gave it (staff only; 403 otherwise)",
                            "schema": {"type": "integer", "enum": [0, 1], "default": 0},
                        },
                        {
                            "name": "facets",
                            "in": "query",
                            "description": "1: count the matches per site and per language",
                            "schema": {"type": "integer", "enum": [0, 1], "default": 0},
                        },
                    ],
                    "responses": {
                        "200": {
                            "description": "Results",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/Results"}
                                }
                            },
                        },
                        "400": {"description": "Missing, too long or bad query, or a page "
                                               "past the results served", "content": error},
                        "403": {"description": "explain=1 without a staff login",
                                "content": error},
                        "429": {
                            "description": "Rate limit exceeded",
                            "headers": {
                                "Retry-After": {
                                    "description": "Seconds until requests are accepted again",
                                    "schema": {"type": "integer", "minimum": 1},
                                }
                            },
                            "content": error,
                        },
                        "503": {
                            "description": "The index is briefly unreachable (its cluster is "
                                           "failing over); send the query again later",
                            "headers": {
                                "Retry-After": {
                                    "description": "Seconds to wait before trying again",
                                    "schema": {"type": "integer", "minimum": 1},
                                }
                            },
                            "content": error,
                        },
                    },
                }
            },
            "/api/complete": {
                "get": {
                    "operationId": "complete",
                    "summary": "Completions for the search box",
                    "parameters": [
                        {
                            "name": "q",
                            "in": "query",
                            "description": "What was typed so far",
                            "schema": {"type": "string",
                                       "maxLength": settings.SEARCH_COMPLETE_MAX_CHARS},
                        },
                    ],
                    "responses": {
                        "200": {
                            "description": "Completions",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/Completions"}
                                }
                            },
                        },
                        "400": {"description": "Text too long", "content": error},
                        "429": {"description": "Rate limit exceeded", "content": error},
                    },
                }
            },
        },
        "components": {"schemas": {"Results": _results(), "Hit": _HIT, "Error": _ERROR,
                                   "Completions": _COMPLETIONS}},
    }
