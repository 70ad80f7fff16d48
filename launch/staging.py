"""The folder ``calibrate --sky`` hands SkyPilot as the calibration task's ``workdir``: the
running gacost, its requirements and the job. Owns what goes in it; no ``sky`` import.

Why not ``pip install 'gacost[calibrate]==<version>'`` (what ``recommend --sky-task``'s
setup does for a released gacost)? It needs this exact version on the package index: a
checkout that is not released (or has local changes) would install something else, or
nothing. So the cloud machine gets *this* gacost, copied from where it is imported:

- ``src/gacost/``: every file of the imported ``gacost`` package (its folder, links
  followed, so an editable install's link tree and a wheel install both work), and any
  subpackage imported from elsewhere (a lenient editable install maps ``gacost.advisor``
  to a folder of its own); no ``__pycache__``. The task runs it with
  ``PYTHONPATH=$PWD/src``, so ``python3 -m gacost`` and the calibration's worker
  processes import the same code;
- ``requirements.txt``: gacost's own requirements and those of its ``calibrate`` extra, as
  the installed distribution declares them (``pip install -r`` on the machine: torch's
  default wheel there is the CUDA one);
- ``job.yaml``: the job as gacost parsed it (``--job`` or ``--trl-config``), keys as set;
  a local model config (``model: ./my-config.json``, or a folder's ``config.json``) is
  copied in next to it as :data:`STAGED_MODEL` and named relative to it (a profile that
  comes back names that copy: ``calibrate --sky`` puts the local name back, so the
  profile matches the job here);
- ``VERSION``: the gacost version, for the log.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from gacost import __version__
from gacost.base.errors import LaunchError
from gacost.base.job import Job

EXTRA = "calibrate"
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([A-Za-z0-9_.-]+)["']""")


def requirements(declared: list[str] | None = None) -> list[str]:
    """gacost's requirements and its ``calibrate`` extra's, markers of the extra removed
    (``declared``: the distribution's ``Requires-Dist`` lines; default the installed ones)."""
    if declared is None:
        try:
            declared = importlib.metadata.requires("gacost") or []
        except importlib.metadata.PackageNotFoundError:
            raise LaunchError("calibrate --sky: gacost's requirements are unknown (it is not "
                              "installed as a distribution); pip install -e '.[calibrate]' "
                              "first") from None
    out: list[str] = []
    for line in declared:
        spec, _, marker = line.partition(";")
        marker = marker.strip()
        extra = _EXTRA_MARKER.search(marker)
        if extra is None:
            out.append(line.strip())
        elif extra.group(1) == EXTRA:
            rest = _EXTRA_MARKER.sub("", marker).strip()
            rest = re.sub(r"^(and\s+)|(\s+and)$", "", rest).strip()
            out.append(f"{spec.strip()}; {rest}" if rest else spec.strip())
    if not any(r.split(">")[0].split("=")[0].strip() == "torch" for r in out):
        raise LaunchError("calibrate --sky: gacost's calibrate extra lists no torch; "
                          "reinstall gacost (pip install -e '.[calibrate]')")
    return out


def package_folders() -> list[tuple[Path, Path]]:
    """``(source folder, path under src/)`` of the imported gacost and of every imported
    subpackage that lives outside its folder."""
    import gacost

    root = Path(next(iter(gacost.__path__)))
    folders = [(root, Path("gacost"))]
    for name, module in sorted(sys.modules.items()):
        parts = name.split(".")
        paths = getattr(module, "__path__", None)
        if len(parts) != 2 or parts[0] != "gacost" or not paths:
            continue
        here = Path(next(iter(paths)))
        if here.resolve() != (root / parts[1]).resolve() and not (root / parts[1]).is_dir():
            folders.append((here, Path("gacost") / parts[1]))
    return folders


def _ignore(_folder: str, names: list[str]) -> list[str]:
    return [n for n in names if n == "__pycache__" or n.endswith((".pyc", ".pyo"))
            or n.startswith(".")]


def stage(folder: Path, job: Job) -> Path:
    """Fill ``folder`` (new or empty) with the workdir of the calibration task; returns it."""
    for subpackage in ("gacost.calibration", "gacost.data", "gacost.advisor"):
        importlib.import_module(subpackage)  # so a lenient editable install maps them
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        raise LaunchError(f"calibrate --sky: the staging folder {folder} is not empty")
    for source, dest in package_folders():
        shutil.copytree(source, folder / "src" / dest, symlinks=False, ignore=_ignore,
                        dirs_exist_ok=True)
    (folder / "requirements.txt").write_text("\n".join(requirements()) + "\n",
                                             encoding="utf-8")
    (folder / "job.yaml").write_text(job_yaml(job, folder), encoding="utf-8")
    (folder / "VERSION").write_text(__version__ + "\n", encoding="utf-8")
    return folder


STAGED_MODEL = "model-config.json"  # a local model config's name in the staged folder


def local_model_config(model: str) -> Path | None:
    """The local config file a job's ``model`` names (a folder: its ``config.json``), or
    None for a shipped name or Hub id; a local path with no config is a
    :class:`LaunchError`."""
    path = Path(model).expanduser()
    if not (model.startswith((".", "~", "/")) or path.suffix == ".json" or path.is_dir()):
        return None
    config = path / "config.json" if path.is_dir() else path
    if not config.is_file():
        raise LaunchError(f"calibrate --sky: model: {model} has no config file here; the "
                          "machine needs the model's config.json")
    return config


def job_yaml(job: Job, folder: Path) -> str:
    """The job as YAML for the machine; a local model config is copied into ``folder`` as
    :data:`STAGED_MODEL`."""
    data: dict[str, Any] = job.model_dump(mode="json", exclude_unset=True)
    data["model"] = job.model
    config = local_model_config(job.model)
    if config is not None:
        shutil.copyfile(config, folder / STAGED_MODEL)
        data["model"] = f"./{STAGED_MODEL}"
    header = f"# the job as gacost {__version__} parsed it, for calibrate --sky\n"
    return header + yaml.safe_dump(data, sort_keys=False)
