"""The checkout's one layout rule: every ``gacost.<name>`` lives in the top-level folder
``<name>/``, and ``src/gacost/`` holds only the package face.

``pyproject.toml`` maps each top-level package folder into ``gacost`` (``package-dir``) and
lists every package (``packages``); both must agree with the folders, so a new folder or
subpackage that is not mapped fails here rather than going missing from the wheel.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FACE = {"__init__.py", "__main__.py", "py.typed"}


def _setuptools() -> dict[str, object]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(ROOT / "pyproject.toml", "rb") as f:
        config: dict[str, object] = tomllib.load(f)["tool"]["setuptools"]
    return config


def _tracked(pattern: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "--", pattern], cwd=ROOT, capture_output=True,
                         text=True, check=False)
    if out.returncode != 0 or not out.stdout.strip():
        pytest.skip("not a git checkout")
    return out.stdout.split()


def _package_folders() -> set[str]:
    """Every folder of the checkout with an ``__init__.py`` outside src/, tests/ and bench/."""
    return {str(Path(p).parent) for p in _tracked("*__init__.py")
            if Path(p).parts[0] not in ("src", "tests", "bench")}


def test_every_gacost_name_maps_to_its_top_level_folder() -> None:
    dirs = _setuptools()["package-dir"]
    assert isinstance(dirs, dict)
    assert dirs.pop("gacost") == "src/gacost"
    assert dirs == {f"gacost.{name}": name for name in dirs.values()}
    top = {folder for folder in _package_folders() if "/" not in folder}
    assert set(dirs.values()) == top


def test_packages_are_exactly_the_package_folders() -> None:
    packages = _setuptools()["packages"]
    assert isinstance(packages, list)
    expected = {"gacost"} | {"gacost." + folder.replace("/", ".") for folder in
                             _package_folders()}
    assert sorted(packages) == sorted(expected)


def test_src_gacost_holds_only_the_package_face() -> None:
    assert {Path(p).name for p in _tracked("src/gacost")} == FACE
