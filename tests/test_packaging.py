"""The built wheel installs one import name, ``gacost``, and the ``gacost`` script; nothing
else lands in site-packages (no generic ``advisor``/``pricing``/``calibration``)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _run(*cmd: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_wheel_adds_only_gacost_and_its_script(tmp_path: Path) -> None:
    # no network: the build uses this environment's setuptools, the install no index
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", tmp_path / "dist", ROOT, cwd=tmp_path)
    wheel = next((tmp_path / "dist").glob("gacost-*.whl"))
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    py = env / ("Scripts" if sys.platform == "win32" else "bin") / "python"
    purelib = Path(_run(py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
                   .strip())
    scripts = Path(_run(py, "-c", "import sysconfig; print(sysconfig.get_path('scripts'))")
                   .strip())
    before_lib, before_bin = set(p.name for p in purelib.iterdir()), set(
        p.name for p in scripts.iterdir())
    _run(py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel)
    added_lib = {p.name for p in purelib.iterdir()} - before_lib
    added_bin = {p.name for p in scripts.iterdir()} - before_bin
    assert {n for n in added_lib if not n.endswith(".dist-info")} == {"gacost"}
    assert [n for n in added_lib if n.endswith(".dist-info")] == [wheel.name.split("-py")[0]
                                                                  + ".dist-info"]
    assert added_bin == {"gacost"}
    # the embedded data and the layers are inside the one package
    for part in ("advisor", "pricing", "calibration", "base", "data/gpus.csv",
                 "data/prices/snapshot.csv", "py.typed"):
        assert (purelib / "gacost" / part).exists(), part
    assert sysconfig.get_path("purelib") != str(purelib)
