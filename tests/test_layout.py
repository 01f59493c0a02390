"""Which package may import which: read from the sources (ast), so a function-level import
counts as much as one at the top of a module."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_packages(package: str) -> dict[str, set[str]]:
    """Top-level packages each module under ``package/`` imports -> the modules importing them."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        # the crawl plane does not need the serving plane (doc ids are a URL concern:
        # crawler.urls.doc_id_for)
        ("crawler", {"index", "pipelines", "spiders", "webui", "ranking", "bench", "tests"}),
        ("dedup", {"index", "pipelines", "spiders", "webui", "ranking", "bench", "tests"}),
        # batch jobs that replay the crawl (ranking/rebuild.py) live above the index
        ("index", {"pipelines", "spiders", "webui", "ranking", "bench", "tests"}),
    ],
)
def test_package_imports(package, forbidden):
    imports = imported_packages(package)
    offenders = {name: sorted(imports[name]) for name in forbidden & imports.keys()}
    assert offenders == {}


def test_the_check_sees_imports():
    imports = imported_packages("pipelines")
    assert "pipelines/index.py" in imports["index"]
    assert "crawler" in imported_packages("crawler")


#: The modules of each search engine (one package each); the shared vocabulary is in index/.
ENGINES = {
    name: {f"index.engines.{name}.{p.stem}".removesuffix(".__init__")
           for p in (ROOT / "index" / "engines" / name).glob("*.py")}
    for name in ("embedded", "elasticsearch")
}


def _module_imports(module: str) -> set[str]:
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = ROOT / module.replace(".", "/") / "__init__.py"
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize(("engine", "other"), [("embedded", "elasticsearch"),
                                               ("elasticsearch", "embedded")])
def test_search_engines_share_and_do_not_import_each_other(engine, other):
    """Neither engine imports the other: what they share lives in index/fields.py,
    index/signals.py, index/query.py, index/hits.py and the other shared modules."""
    assert ENGINES[engine] and ENGINES[other]
    offenders = {m: sorted(_module_imports(m) & ENGINES[other]) for m in ENGINES[engine]}
    assert {m: names for m, names in offenders.items() if names} == {}
    shared = {"index.fields", "index.signals", "index.query", "index.hits"}
    backends = ("index.engines.embedded.backend", "index.engines.elasticsearch.backend")
    assert all(shared & _module_imports(m) for m in backends)


#: The most lines a class of index/ may have: a class does one job, and a backend is
#: several small modules (mapping, query compilation, search, paging, suggestions, alias).
MAX_CLASS_LINES = 300


def class_lengths(package: str) -> dict[str, int]:
    """``module:Class`` -> the lines of every class (nested ones too) under ``package/``."""
    lengths = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                name = f"{path.relative_to(ROOT)}:{node.name}"
                lengths[name] = node.end_lineno - first + 1
    return lengths


def test_no_class_in_the_search_plane_is_over_300_lines():
    too_long = {name: n for name, n in class_lengths("index").items() if n > MAX_CLASS_LINES}
    assert too_long == {}


def test_the_class_check_measures_classes():
    lengths = class_lengths("index")
    backend = lengths["index/engines/elasticsearch/backend.py:ElasticsearchBackend"]
    assert 100 < backend <= MAX_CLASS_LINES
    assert lengths["index/base.py:SearchUnavailable"] < 20
