"""The profile folder of ``recommend``, ``budget`` and ``compare``: the profiles they read
without ``--profile`` (where ``calibrate --sky`` puts the ones that come back), and what
changed since ``recommend`` last ran.

The folder is :func:`gacost.base.profile_dir.profile_dir`. Each command uses the profiles
there whose workload is the job's (with any machinery option the job may turn on), on
top of every ``--profile``; ``--no-profile-folder`` leaves the folder out. A file that
is not a readable profile is skipped with a note, never an error: the folder is gacost's,
not the command line's.

What changed: the folder keeps ``.recommend-seen.json`` (written atomically), per workload
fingerprint, the profiles the last ``recommend`` of that workload used (name and SHA-256)
and the plan it recommended. The next ``recommend`` says which profiles are newly used
(new or changed files), which are gone, and whether the recommended plan moved.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gacost.advisor.estimate import lever_choices
from gacost.advisor.recommend import Report
from gacost.base import models
from gacost.base.atomic import write_atomic
from gacost.base.errors import DataError
from gacost.base.job import Job
from gacost.base.profile import Profile, read_profile
from gacost.base.profile_dir import SEEN_FILE, profile_dir, profile_files


@dataclass(frozen=True)
class Saved:
    """The folder's profiles for one job, and what ``recommend`` last saw of them."""

    folder: Path
    key: str  # the job's workload fingerprint
    used: list[tuple[Path, Profile, str]] = field(default_factory=list)  # path, profile, sha
    notes: list[str] = field(default_factory=list)
    enabled: bool = True

    @property
    def profiles(self) -> list[Profile]:
        """The profiles to add to ``--profile``'s."""
        return [p for _, p, _ in self.used]

    def used_lines(self) -> list[str]:
        """The note naming the folder's profiles in use (for ``budget`` and ``compare``,
        which do not keep a record of what they saw)."""
        if not self.used:
            return []
        return [used_line(self.folder, [path.name for path, _, _ in self.used])]


def used_line(folder: Path, names: list[str]) -> str:
    """``profile folder: N profile(s) of this workload used from F[: names]``."""
    return (f"profile folder: {len(names)} profile(s) of this workload used from {folder}"
            + (f": {', '.join(names)}" if names else ""))


def add_profile_folder_flag(p: argparse.ArgumentParser) -> None:
    """``--no-profile-folder``."""
    p.add_argument("--no-profile-folder", action="store_true",
                   help="do not read the profile folder (where `calibrate --sky` puts "
                        "profiles; $GACOST_PROFILE_DIR moves it), only --profile")


def load_saved(args: argparse.Namespace, job: Job) -> Saved:
    """The folder's profiles of ``job``'s workload (none with ``--no-profile-folder``),
    leaving out files also given as ``--profile``."""
    folder = profile_dir()
    model_name = models.load_model_config(job.model)[0]
    base = job.workload(model_name)
    if getattr(args, "no_profile_folder", False):
        return Saved(folder, base.fingerprint(), enabled=False)
    wanted = {replace(base, torch_compile="torch_compile" in levers,
                      liger="liger" in levers).fingerprint() for levers in lever_choices(job)}
    explicit = {Path(p).resolve() for p in getattr(args, "profile", [])}
    used: list[tuple[Path, Profile, str]] = []
    notes: list[str] = []
    for path in profile_files(folder):
        if path.resolve() in explicit:
            continue
        try:
            data = path.read_bytes()
            profile = read_profile(path)
        except (DataError, OSError) as exc:
            notes.append(f"profile folder: skipped {path.name} ({str(exc)[:160]})")
            continue
        if profile.fingerprint in wanted:
            used.append((path, profile, hashlib.sha256(data).hexdigest()))
    return Saved(folder, base.fingerprint(), used, notes)


def _read_seen(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class Changes:
    """What moved since the last ``recommend`` of this workload."""

    used: list[str]
    new: list[str]
    gone: list[str]
    recommended_before: str | None
    recommended_now: str
    first: bool  # no earlier record of this workload

    def lines(self, folder: Path) -> list[str]:
        """The report's lines (none when the folder has nothing for this job, ever)."""
        if not self.used and self.first:
            return []
        out = [used_line(folder, self.used)]
        if self.first and self.used:
            out.append(f"profile folder: newly used: {', '.join(self.new)} (first recommend "
                       "of this workload with them)")
        elif self.new or self.gone:
            if self.new:
                out.append(f"profile folder: newly used since the last recommend: "
                           f"{', '.join(self.new)}")
            if self.gone:
                out.append(f"profile folder: no longer there: {', '.join(self.gone)}")
        else:
            out.append("profile folder: no change since the last recommend")
        before = self.recommended_before
        if before is not None and before != self.recommended_now:
            out.append(f"recommended: was {before}; now {self.recommended_now}")
        elif before is not None and (self.new or self.gone):
            out.append(f"recommended: unchanged ({self.recommended_now})")
        return out

    def as_dict(self) -> dict[str, Any]:
        """For ``--format json``."""
        return {"used": self.used, "newly_used": self.new, "gone": self.gone,
                "recommended_before": self.recommended_before}


def changes(saved: Saved, report: Report, *, remember: bool = True) -> Changes | None:
    """Compare with the folder's record and (``remember``) update it; None without the
    folder. A record that cannot be written is only a missed comparison next time."""
    if not saved.enabled:
        return None
    now = {path.name: sha for path, _, sha in saved.used}
    plan = report.recommended
    recommended = f"{plan.label}, split {plan.split}"
    seen_path = saved.folder / SEEN_FILE
    seen = _read_seen(seen_path) if seen_path.exists() else {}
    entry = seen.get(saved.key)
    first = not isinstance(entry, dict)
    before_profiles: dict[str, str] = {}
    before_plan: str | None = None
    if isinstance(entry, dict):
        raw = entry.get("profiles")
        before_profiles = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) \
            else {}
        before_plan = str(entry["recommended"]) if "recommended" in entry else None
    new = sorted(n for n, sha in now.items() if before_profiles.get(n) != sha)
    gone = sorted(n for n in before_profiles if n not in now)
    result = Changes(sorted(now), new, gone, before_plan, recommended, first)
    if remember and (now or not first):
        seen[saved.key] = {"profiles": now, "recommended": recommended}
        try:
            write_atomic(seen_path, json.dumps(seen, indent=1, sort_keys=True) + "\n",
                         make_parents=True)
        except OSError:
            pass
    return result
