"""``gacost probe``: how fast this machine's CPU runs the host's share of a fine-tune, against
the measured machines' typical host or, with ``--profile``, against the machine a profile
was calibrated on.

Run it on a freshly rented instance before training: the same GPU kind's instances ran one
host-bound split 2x apart (bench/MODEL.md, "Host speed: a probe"). No GPU, torch or network
is needed; it prints the ``recommend --host-probe-ms`` value that carries the profile's
hours to this instance (without a profile, with ``--host-probe-gpu``: the host of a machine
nobody calibrated).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from gacost.advisor.estimate import (
    PROBE_HOST_EXPONENT,
    REFERENCE_PROBE_LOG_SD,
    REFERENCE_PROBE_MS,
    carried_splits,
    probe_host_factor,
)
from gacost.base.errors import JobSpecError
from gacost.base.profile import Profile, read_profile
from gacost.calibration.host_probe import DEFAULT_SECONDS, MAX_SECONDS, HostSpeed, probe
from gacost.commands.inputs import number

PROBE_SECONDS = 10.0  # twice calibrate's: the probe's mean settles over slow spells of ~1 s


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``gacost probe`` (its parser made by :mod:`gacost.commands.cli`)."""
    p.add_argument("--seconds", default=str(PROBE_SECONDS), metavar="S",
                   help=f"how long to time the task (default {PROBE_SECONDS:g}; calibrate "
                        f"records {DEFAULT_SECONDS:g})")
    p.add_argument("--profile", action="append", default=[], metavar="P",
                   help="a calibration profile (JSON): compare with the host it recorded; "
                        "repeatable")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> str:
    """Probe this host, then compare it with each profile's recorded probe."""
    seconds = number("--seconds", args.seconds, high=MAX_SECONDS)
    profiles = [(Path(path), read_profile(path)) for path in args.profile]
    for path, p in profiles:
        if p.host_probe_ms is None:
            raise JobSpecError(
                f"--profile {path}: it recorded no host probe (`gacost calibrate` records one "
                "from this version on); calibrate again, or probe without --profile")
    if not args.quiet:
        print(f"timing this host's CPU ({seconds:g} s)...", file=sys.stderr, flush=True)
    speed = probe(seconds)
    lines = [speed_line(speed)]
    lines += [compare_line(path, p, speed.mean_ms) for path, p in profiles]
    if not profiles:
        lines.append(typical_line(speed.mean_ms))
    return "\n".join(lines)


def typical_line(here_ms: float) -> str:
    """How this host compares with the measured machines' typical host, and the flags that
    give a machine nobody calibrated this host (``recommend --host-probe-gpu``); beyond the
    probe's own error from typical, that a calibration here measures what it estimates (the
    hosts farthest from typical ran nearer to it than their probes said, bench/MODEL.md "A
    probe for a machine nobody calibrated")."""
    lines = [
        f"against the measured machines' typical host ({REFERENCE_PROBE_MS:g} ms per task) "
        f"this CPU runs {relative(here_ms, REFERENCE_PROBE_MS)}; a fine-tune's host time "
        f"here about x{probe_host_factor(here_ms / REFERENCE_PROBE_MS):.2f} typical (hosts "
        f"follow the probe to the {PROBE_HOST_EXPONENT:g} power).",
        f"  hours and dollars on this instance: gacost recommend --job JOB --host-probe-ms "
        f"{here_ms:.1f} --host-probe-gpu GPU (this instance's GPU, as `gacost gpus` names it)"]
    if abs(math.log(here_ms / REFERENCE_PROBE_MS)) > REFERENCE_PROBE_LOG_SD:
        lines.append(
            f"  this far from typical the probe is an estimate (about "
            f"{REFERENCE_PROBE_LOG_SD:.0%} on the host's share): `gacost calibrate --job JOB` "
            "here measures it in about a minute")
    lines.append("  against a machine you calibrated: gacost probe --profile PROFILE")
    return "\n".join(lines)


def relative(here_ms: float, there_ms: float) -> str:
    """``1.48x faster`` / ``1.35x slower``: this CPU against another probe's."""
    ratio = here_ms / there_ms
    return f"{ratio:.2f}x slower" if ratio >= 1 else f"{1 / ratio:.2f}x faster"


def speed_line(speed: HostSpeed) -> str:
    """``host probe: 15.9 ms per task (median 15.7, 218 tasks; slow spells 0% of tasks)``."""
    return (f"host probe: {speed.mean_ms:.1f} ms per task (median {speed.median_ms:.1f}, "
            f"{len(speed.task_ms)} tasks; slow spells {speed.slow_share:.0%} of tasks)")


def compare_line(path: Path, p: Profile, here_ms: float) -> str:
    """How this host compares with the one ``p`` recorded, and the flag to carry it."""
    there = p.host_probe_ms
    assert there is not None  # run() checked
    lines = [f"{path}: calibrated on {p.machine} at {there:g} ms per task; this CPU runs "
             f"{relative(here_ms, there)}."]
    lines += [f"  {split}: {then:.3f} s per update there, about {now:.3f} s here"
              for split, then, now in carried_splits(p, round(here_ms, 1))]
    lines.append(f"  hours and dollars on this instance: gacost recommend --job JOB "
                 f"--profile {path} --host-probe-ms {here_ms:.1f}")
    return "\n".join(lines)
