"""The real-web acceptance bench in its quick form: real documentation sites crawled with
the default quality settings beside hostile hosts; no real site is judged spam, a trap or
a mirror, and the hostile hosts are still contained."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness import ROOT
from testweb.docsites import available_doc_sites

pytestmark = pytest.mark.slow


def test_quick_real_web_crawl_judges_no_real_site():
    installed = {site.host for site in available_doc_sites()}
    if not {"httpd.test", "postgresql.test"} <= installed:
        pytest.skip("apache2-doc and postgresql-doc-15 are not installed "
                    "(scripts/apt-packages.txt)")
    proc = subprocess.run([sys.executable, "-m", "bench.realweb", "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["real_sites_judged"] == {}, out
    assert out["min_site_coverage"] >= 0.99, out
    assert out["violations"] == 0 and out["finished"], out
    # the lag from "due with work" is measured for (nearly) every request after a host's first
    assert out["due_lag_ms"]["n"] >= 0.9 * (out["requests"] - len(out["per_site"])), out
    assert out["stats"]["reactor/ticks"] > 0, out  # the reactor's lateness is probed
    verdicts = {host: row["verdicts"] for host, row in out["per_site"].items()}
    assert verdicts["httpd.test"] == [] and verdicts["postgresql.test"] == []
    # the real site's mirror may be cut as its mirror (when its copies came later), only so
    assert all(v.startswith("mirror of postgresql.test")
               for v in verdicts["pgdocs-mirror.test"])
    for host in ("stuffing.test", "doorway.test", "farm0.test"):
        assert verdicts[host] == ["spam: budget_cut"], out
        assert out["hostile"][host] < out["budget"], out  # cut within its budget
    assert verdicts["mirror.test"] == ["mirror of site0.test: budget_cut"], out
    assert out["hostile"]["events.test"] < out["budget"], out  # a calendar: endless
