"""Pytest fixtures that run a private Elasticsearch for the tests, through scripts/services.sh.

Use them from a test module or a conftest with::

    pytest_plugins = ["tests.fixtures_es"]

or import the fixtures by name (``from tests.fixtures_es import es_url``).

- ``es_url``: a single-node server on free ports, started once per session and stopped at the
  end. With ``TEST_ELASTICSEARCH_URL`` set, that server is used instead (tests/conftest.py
  clears ``ELASTICSEARCH_URL`` so that nothing else reaches a real cluster by accident).
- ``es_cluster2``: the three-node cluster of ``services.sh es2`` (es2-a, es2-b with data,
  es2-c master-eligible only) that a test may kill nodes of; started per module.

Both skip, with the reason, only when Elasticsearch is not installed
(``scripts/install-services.sh``); a server that is installed but fails to start is an error.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from harness.services import EsProcesses, not_installed_reason


def _started(service: str, nodes: list[str]) -> Iterator[EsProcesses]:
    reason = not_installed_reason()
    if reason:
        pytest.skip(reason)
    processes = EsProcesses(service, nodes)
    try:
        processes.start()
        yield processes
    finally:
        processes.cleanup()


# One private server per test session, however many modules register ``es_url`` (a conftest
# importing it and test modules naming this plugin are separate registrations to pytest).
_session_server: dict = {"processes": None, "users": 0}


@pytest.fixture(scope="session")
def es_url() -> Iterator[str]:
    """The URL of a single-node Elasticsearch for this test session."""
    external = os.environ.get("TEST_ELASTICSEARCH_URL", "").strip()
    if external:
        yield external
        return
    reason = not_installed_reason()
    if reason:
        pytest.skip(reason)
    if _session_server["processes"] is None:
        processes = EsProcesses("es", ["es"])
        try:
            processes.start()
        except BaseException:
            processes.cleanup()
            raise
        _session_server["processes"] = processes
    _session_server["users"] += 1
    try:
        yield _session_server["processes"].url
    finally:
        _session_server["users"] -= 1
        if _session_server["users"] == 0:
            _session_server["processes"].cleanup()
            _session_server["processes"] = None


@pytest.fixture(scope="module")
def es_cluster2() -> Iterator[EsProcesses]:
    """A private three-node cluster (es2-a, es2-b: master-eligible with data; es2-c:
    master-eligible only) whose nodes a test may kill; any one may go."""
    yield from _started("es2", ["es2-a", "es2-b", "es2-c"])
