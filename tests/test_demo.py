"""``bash scripts/demo.sh`` works on a machine set up as the README says: it serves three
Debian documentation packages as sites, crawls and ranks them, and each of its searches
finds pages of the site it is about (``--no-serve`` stops it before the search page is
served). How long it takes is measured, not asserted here (README.md says it)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from testweb.docsites import available_doc_sites

ROOT = Path(__file__).resolve().parent.parent
SITES = {"git.test", "flask.test", "requests.test"}
#: Each search of the demo and the site its results must come from.
EXPECTED = {
    "how do I undo the last commit": "git.test",
    "git rebase --interactive": "git.test",
    "flask blueprint templates": "flask.test",
    '"session objects" site:requests.test': "requests.test",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def searches(output: str) -> dict[str, list[str]]:
    """The URLs each ``demo: search: QUERY`` printed, by query."""
    found: dict[str, list[str]] = {}
    query = None
    for line in output.splitlines():
        if line.startswith("demo: search: "):
            query = line.removeprefix("demo: search: ")
            found[query] = []
        elif query is not None and (url := re.match(r"\s+(http://\S+)\s+score=", line)):
            found[query].append(url.group(1))
    return found


def test_the_demo_crawls_real_documentation_and_finds_it(tmp_path: Path) -> None:
    if not SITES <= {site.host for site in available_doc_sites()}:
        pytest.skip("git-doc, python-flask-doc or python-requests-doc is not installed "
                    "(scripts/apt-packages.txt)")
    env = {**os.environ, "DATA_DIR": str(tmp_path), "TESTWEB_PORT": str(_free_port())}
    for name in ("REDIS_URL", "ELASTICSEARCH_URL", "DATABASE_URL", "CELERY_BROKER_URL"):
        env.pop(name, None)
    done = subprocess.run(["bash", "scripts/demo.sh", "--no-serve"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = searches(done.stdout)
    assert set(found) == set(EXPECTED)
    for query, site in EXPECTED.items():
        assert found[query], (query, done.stdout[-3000:])
        assert all(f"//{site}:" in url for url in found[query][:1]), (query, found[query])
    assert "Search page:" not in done.stdout
