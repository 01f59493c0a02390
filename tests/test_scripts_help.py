"""Every script of scripts/ (and ``python -m harness.with_postgres``, which scripts/test.sh
runs) answers ``--help`` with what it does, and does nothing else: a newcomer's first
``bash scripts/test.sh --help`` must not start the whole suite."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Scripts that hand their arguments, ``--help`` included, to a ``manage.py`` command.
FORWARDING = {"backup.sh", "restore.sh"}
#: The line that answers ``-h`` / ``--help`` with the script's opening comment.
HELP = re.compile(r'^case "\$\{1:-\}" in -h \| --help\) .*exit 0 ;; esac$', re.MULTILINE)


def scripts() -> list[Path]:
    return sorted((ROOT / "scripts").glob("*.sh"))


@pytest.mark.parametrize("script", [p for p in scripts() if p.name not in FORWARDING],
                         ids=lambda p: p.name)
def test_help_prints_the_opening_comment_and_runs_nothing(script: Path):
    text = script.read_text(encoding="utf-8")
    handler = HELP.search(text)
    # before anything runs: only comments, `set`, and the handler come first
    assert handler is not None
    assert all(line.startswith(("#", "set ")) or not line.strip()
               for line in text[:handler.start()].splitlines())
    done = subprocess.run(["bash", str(script), "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=10)
    first = text.splitlines()[1].removeprefix("#").strip()
    assert done.returncode == 0 and done.stdout.splitlines()[0] == first
    assert "set -euo" not in done.stdout


def test_forwarding_scripts_say_so():
    for name in FORWARDING:
        assert "(`--help` for them)" in (ROOT / "scripts" / name).read_text(encoding="utf-8")


def test_with_postgres_help_starts_no_server():
    done = subprocess.run([sys.executable, "-m", "harness.with_postgres", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "TEST_DATABASE_URL" in done.stdout
    assert "private PostgreSQL on" not in done.stderr
