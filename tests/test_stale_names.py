"""Docstrings, comments and the docs name only modules, attributes, files and folders that
exist.

The texts read: every docstring and comment of the source folders, README.md, docs/*.md,
bench/*.md, the data notes (data/**/*.md), the shell scripts and the import-linter and
pyproject configuration. A dotted name whose first part is ``gacost`` or one of its packages
(a top-level folder with an ``__init__.py``: ``gacost.<name>`` lives in ``<name>/``) or a
retired package name (``reports``, ``cli``: a mention of one is stale) is read as
``gacost.<name>`` and must resolve: its longest prefix that is a module, then each further
part an attribute of that module (a top-level name of its source, read with :mod:`ast`, so
nothing is imported) or of a class there. Past a function or a value the rest is not
checked (an attribute of what it returns). A path of a ``.py`` file or a folder under one of
the checkout's source folders must exist, and under ``src/gacost/`` there is only the
package face. Any ``bench/...`` path (a script, job, result, note or folder; a glob or a
``{a,b}`` must match) must exist, so a script moved to ``bench/archive/`` or out of bench/
leaves no citation behind. A renamed, moved or deleted module then fails here, not in a
reader's hands.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import subprocess
import tokenize
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", "--", *patterns], cwd=ROOT, capture_output=True,
                         text=True, check=False).stdout.split()
    return [ROOT / p for p in out] if out else []


def _layer_dirs() -> tuple[str, ...]:
    """The top-level folders that are packages: ``gacost.<name>`` lives in ``<name>/``."""
    inits = _tracked("*/__init__.py") or list(ROOT.glob("*/__init__.py"))
    return tuple(sorted({p.parent.name for p in inits if p.parent.parent == ROOT}))


PACKAGES = _layer_dirs()
RETIRED = ("reports", "cli")  # gacost.reports and gacost.cli, merged into gacost.commands
SOURCE_DIRS = ("src", *PACKAGES, "bench", "tests")
FACE = {"__init__.py", "__main__.py", "py.typed"}  # all that src/gacost/ holds
# a dotted name not inside another (no word, dot, slash or hyphen just before it)
DOTTED = re.compile(r"(?<![\w./-])((?:gacost|" + "|".join(PACKAGES + RETIRED)
                    + r")(?:\.\w+)+)")
# a .py path, or a folder path (ending in /), under a source folder of the checkout
PY_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(SOURCE_DIRS) + r")/[\w/]+\.py)\b")
DIR_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(SOURCE_DIRS) + r")/(?:\w+/)+)(?![\w.*])")
# any path under bench/ (a script, a note, a job, a result, a folder), globs and {a,b} included
BENCH_PATH = re.compile(r"(?<![\w./-])(bench/(?:[\w.*/-]|\{[\w.,-]*\})*)")
FILE_ENDINGS = {"py", "md", "csv", "json", "yaml", "yml", "txt", "toml", "png", "svg", "html"}
THIS = Path(__file__).resolve()


def _comments(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of every comment of a Python source."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return [(t.start[0], t.string) for t in tokens if t.type == tokenize.COMMENT]


def _texts() -> list[tuple[str, str]]:
    """``(where, text)`` for every docstring and comment of the source folders, and the
    documentation and configuration files (see the module docstring)."""
    py = _tracked(*(f"{d}/*.py" for d in SOURCE_DIRS)) or [
        p for d in SOURCE_DIRS for p in (ROOT / d).rglob("*.py")]
    items: list[tuple[str, str]] = []
    for path in sorted(py):
        if path.resolve() == THIS or not path.is_file():
            continue
        source = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    items.append((f"{where}:{getattr(node, 'lineno', 1)}", doc))
        items += [(f"{where}:{line}", text) for line, text in _comments(source)]
    docs = [ROOT / "README.md", ROOT / "pyproject.toml", ROOT / ".importlinter",
            *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "bench").rglob("*.md")),
            *sorted((ROOT / "bench").rglob("*.sh")), *sorted((ROOT / "data").rglob("*.md"))]
    for path in docs:
        if path.is_file():
            items.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    return items


@cache
def _module_file(name: str) -> Path | None:
    """The source file of module ``name`` (a package's ``__init__.py``), None if no module.

    Called only with a package as the parent: finding a module imports its parent, and a
    package's ``__init__`` here is light where a module may import torch."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def _names(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """The names a module or class body binds (inside ``if`` and ``try`` blocks too)."""
    out: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for n in ast.walk(target):
                    if isinstance(n, ast.Name):
                        out[n.id] = node
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(
                node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                out[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, (ast.If, ast.Try)):
            blocks = [node.body, node.orelse]
            if isinstance(node, ast.Try):
                blocks += [node.finalbody, *(h.body for h in node.handlers)]
            for block in blocks:
                out.update(_names(block))
    return out


@cache
def _module_names(path: Path) -> dict[str, ast.AST]:
    return _names(ast.parse(path.read_text(encoding="utf-8")).body)


def resolves(dotted: str) -> bool:
    """Whether ``dotted`` (``gacost.`` implied) names a module or an attribute of one."""
    parts = dotted.split(".")
    if parts[0] != "gacost":
        parts = ["gacost", *parts]
    path, cut = _module_file("gacost"), 1
    while path is not None and path.name == "__init__.py" and cut < len(parts):
        sub = _module_file(".".join(parts[: cut + 1]))
        if sub is None:
            break
        path, cut = sub, cut + 1
    if path is None:
        return False
    rest = parts[cut:]
    scope, inherits = _module_names(path), False
    for part in rest:
        node = scope.get(part)
        if node is None:
            return inherits  # a class with bases may inherit it: not followed
        if not isinstance(node, ast.ClassDef):
            return True  # a re-export, function or value: the rest is not checked
        scope, inherits = _names(node.body), bool(node.bases)
    return True


def _candidates(text: str) -> set[str]:
    found = set()
    for match in DOTTED.finditer(text):
        name = match.group(1).rstrip(".")
        if name.rsplit(".", 1)[-1].lower() in FILE_ENDINGS:
            continue  # a file name (pricing.md), not a module
        found.add(name)
    return found


def test_named_modules_and_attributes_exist() -> None:
    stale = sorted(
        f"{where}: {name}"
        for where, text in _texts()
        for name in _candidates(text)
        if not resolves(name)
    )
    assert not stale, "stale module names:\n" + "\n".join(stale)


def test_named_source_files_exist() -> None:
    stale = sorted(
        f"{where}: {path}"
        for where, text in _texts()
        for path in PY_PATH.findall(text) + DIR_PATH.findall(text)
        if not (ROOT / path).exists()
    )
    assert not stale, "stale file paths:\n" + "\n".join(stale)


def _expand(path: str) -> list[str]:
    """``path`` with its first ``{a,b}`` expanded, recursively."""
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    return [q for alt in match.group(1).split(",")
            for q in _expand(path[: match.start()] + alt + path[match.end():])]


def _bench_paths(text: str) -> list[str]:
    """The ``bench/...`` paths of ``text``, less those a shell variable ends (``seq$seq``)."""
    return [m.group(1) for m in BENCH_PATH.finditer(text)
            if text[m.end():m.end() + 1] not in ("$", "<", "%")]


def bench_path_exists(path: str) -> bool:
    """Whether a ``bench/...`` path named in a text names something of the checkout: a file
    or folder, or a glob (``w06-*.json``, ``rep-{a,b}``) that matches one."""
    path = path.rstrip(".")
    return all(any(ROOT.glob(p)) if "*" in p else (ROOT / p).exists() for p in _expand(path))


def test_named_bench_paths_exist() -> None:
    """A script, job, result or note under bench/ that a text names must be there: moving
    one to bench/archive/ or to a data builder fails here until every citation follows."""
    stale = sorted(
        f"{where}: {path}"
        for where, text in _texts()
        for path in _bench_paths(text)
        if not bench_path_exists(path)
    )
    assert not stale, "stale bench paths:\n" + "\n".join(stale)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("run `python bench/model_v2.py`.", True),
        ("bench/results/h200-sweep/w06-*.json", True),
        ("bench/results/repeatability/rep-{a,b,c}", True),
        ("bench/results/repeatability/rep-{a,z}", False),
        ("bench/reference_fit.py", False),  # moved: gacost.advisor.build_reference_fit
        ("bench/results/no-such-file.json", False),
        ("bench/jobs/qwen3-8b-lora-seq$seq.yaml", True),  # a shell variable: not checked
        ("see bench/RESULTS.md, bench/MODEL.md.", True),
    ],
)
def test_bench_path_resolution(text: str, ok: bool) -> None:
    assert all(bench_path_exists(p) for p in _bench_paths(text)) is ok


def test_src_gacost_is_named_only_for_the_package_face() -> None:
    """Everything but the face moved to its top-level folder: a ``src/gacost/base/...``
    path is stale even where a folder of that name came back."""
    face = re.compile(r"src/gacost/(?:" + "|".join(map(re.escape, FACE)) + r")?(?![\w/.])")
    stale = sorted(
        f"{where}: {match.group(0)}"
        for where, text in _texts()
        for match in re.finditer(r"src/gacost/[\w./]*", text)
        if not face.fullmatch(match.group(0).rstrip("."))
    )
    assert not stale, "stale src/gacost paths:\n" + "\n".join(stale)


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("gacost.advisor.predictor", True),
        ("advisor.predictor.fitted_model", True),  # a module attribute
        ("gacost.base.records.GpuSpec.tensor_tflops", True),  # a method of a class
        ("gacost.base.records.GpuSpec.memory_gib", True),  # a dataclass field
        ("predictor.fitted_model.cache_clear", False),  # no leading package: not checked
        ("gacost.advisor.timemodel", False),
        ("advisor.predictor.no_such_name", False),
        ("gacost.base.records.GpuSpec.no_such_field", False),
        ("gacost.data", True),
        ("gacost.commands.recommend.render_text", True),
        ("gacost.pricing.fetch.http.Deadline", True),
        ("gacost.reports.formats", False),  # retired: merged into gacost.commands
        ("cli.main", False),  # retired: gacost.commands.cli
    ],
)
def test_resolution(name: str, ok: bool) -> None:
    if name.split(".")[0] not in ("gacost", *PACKAGES, *RETIRED):
        assert not _candidates(f" {name} ")
        return
    assert resolves(name) is ok
