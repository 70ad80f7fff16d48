"""``gacost calibrate --sky [GPU,...] --job F [--yes] [--prices F]``: calibrate the job on
each GPU where it would be rented, through SkyPilot, and bring the profiles back.

The GPUs: those named, or those the recommendation for this job says to calibrate (the
same job, prices and profile folder as ``recommend``). For each, the cheapest fitting
offer on an enabled SkyPilot cloud among the job's providers
(:func:`gacost.launch.remote_calibration.choose_offer`). Before anything is launched it
prints what each calibration will cost (expected device minutes x the offer's rate) and
asks on stdin, unless ``--yes``; without a terminal ``--yes`` is required. Then one
cluster per GPU, in parallel, each torn down when its job ends (also on failure and on
Ctrl-C). The profiles that come back land in the profile folder
(:mod:`gacost.base.profile_dir`), which ``recommend`` reads by default, never over an
existing file.

Every error is one line: SkyPilot not installed, no enabled cloud, a GPU no provider in
the job offers, a launch or calibration that fails (the others are still collected).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import platformdirs

from gacost.advisor.calibration_time import calibration_time
from gacost.advisor.estimate import estimate_job
from gacost.advisor.recommend import recommend
from gacost.base import models
from gacost.base.errors import DataError, GacostError, LaunchError, UnknownNameError
from gacost.base.gpu_names import no_spec_text, resolve_gpus, without_spec
from gacost.base.job import Job
from gacost.base.profile import Profile, loads_profile, profile_to_dict
from gacost.base.profile_dir import profile_dir, write_new
from gacost.base.records import Offer
from gacost.base.split import Split
from gacost.calibration.request import SweepOptions, default_out, parse_splits
from gacost.commands.inputs import load_job_args, price_table
from gacost.commands.saved_profiles import load_saved
from gacost.launch.remote_calibration import (
    AUTODOWN_IDLE_MINUTES,
    ClusterLauncher,
    Outcome,
    RemoteInterrupted,
    RemoteRun,
    Target,
    calibration_task,
    choose_offer,
    cluster_name,
    one_line,
    preview,
    run_remote,
)
from gacost.launch.staging import STAGED_MODEL, local_model_config, stage

# flags of a local calibration that mean nothing on a rented machine: (dest, default)
LOCAL_ONLY = (("out", None), ("resume", False), ("weights", None), ("data", None),
              ("tokenizer", None), ("vram_limit", None), ("force", False), ("device", "auto"))


def log_dir() -> Path:
    """Where SkyPilot's provisioning output goes: ``$GACOST_HOME/logs``, else platformdirs'
    user log directory."""
    home = os.environ.get("GACOST_HOME")
    if home:
        return Path(home).expanduser() / "logs"
    return Path(platformdirs.user_log_dir("gacost", appauthor=False))


def _sky_launcher() -> ClusterLauncher:
    from gacost.launch.skypilot import SkyClusterLauncher

    return SkyClusterLauncher(log_dir() / "sky", AUTODOWN_IDLE_MINUTES)


# how --sky reaches SkyPilot, and the clusters' name suffix; tests replace them
launcher_factory: Callable[[], ClusterLauncher] = _sky_launcher
token_factory: Callable[[], str] = lambda: secrets.token_hex(2)  # noqa: E731
poll_seconds: float | None = None  # None: remote_calibration.POLL_SECONDS


def add_sky_calibrate_flags(p: argparse.ArgumentParser) -> None:
    """``--sky [GPU,...]``, ``--yes`` and ``--prices``."""
    p.add_argument("--sky", nargs="?", const="", metavar="GPU,...",
                   help="calibrate on rented GPUs through SkyPilot, one cluster each, in "
                        "parallel (default: the GPUs the recommendation says to calibrate); "
                        "profiles land in the profile folder recommend reads; needs the sky "
                        "extra and `sky check`")
    p.add_argument("--yes", action="store_true",
                   help="with --sky: launch without asking (needed without a terminal)")
    p.add_argument("--prices", metavar="F",
                   help="with --sky: a price file in the snapshot CSV format (default: the "
                        "freshest of the price cache and the embedded snapshot)")


def check_sky_flags(args: argparse.Namespace) -> None:
    """``--yes`` and ``--prices`` come with ``--sky``; with it, stdin can answer the
    question (or ``--yes``) and no flag of a local calibration is given."""
    if args.sky is None:
        for flag, value in (("--yes", args.yes), ("--prices", args.prices)):
            if value:
                raise LaunchError(f"{flag} applies only with --sky")
        return
    if not args.yes and not sys.stdin.isatty():
        raise LaunchError("calibrate --sky asks before it spends money and stdin is not a "
                          "terminal; pass --yes to launch without asking")
    for dest, default in LOCAL_ONLY:
        if getattr(args, dest) != default:
            flag = "--" + dest.replace("_", "-")
            raise LaunchError(f"calibrate --sky: {flag} applies to a calibration on this "
                              "machine only; leave it out (profiles land in the profile "
                              "folder, README 'Calibrating on SkyPilot')")


def requested_gpus(text: str, offers: Sequence[Offer] = ()) -> tuple[str, ...]:
    """``--sky H100-SXM,L4``: canonical names, one GPU each (a family is refused), resolved
    as every command resolves GPU names (the GPUs of ``offers`` included)."""
    out: list[str] = []
    for name in (n.strip() for n in text.split(",")):
        if not name:
            raise LaunchError("--sky: give GPU names separated by commas, e.g. "
                              "--sky H100-SXM,L4 (or no list: the recommendation's)")
        found = resolve_gpus([name], priced=(o.gpu for o in offers))
        if without_spec(found):
            raise UnknownNameError(f"--sky: {no_spec_text(found)}")
        if len(found) > 1:
            raise LaunchError(f"--sky: {name} names {len(found)} GPUs ({', '.join(found)}); "
                              "name the one to calibrate")
        out += [g for g in found if g not in out]
    return tuple(out)


def forwarded(args: argparse.Namespace, world: int) -> list[str]:
    """The ``gacost calibrate`` flags the machine runs with (the protocol's, as given)."""
    out = ["--warmup", str(args.warmup), "--max-updates", str(args.max_updates),
           "--max-seconds", f"{args.max_seconds:g}", "--tolerance", f"{args.tolerance:g}",
           "--passes", str(args.passes), "--isolation", args.isolation,
           "--nproc", str(world)]
    if args.splits is not None:
        out += ["--splits", args.splits]
    for flag, on in (("--compile", args.compile), ("--liger", args.liger),
                     ("--no-trace", not args.trace), ("--trace-all", args.trace_all)):
        if on:
            out.append(flag)
    return out


def ask(text: str, question: str, yes: bool) -> None:
    """Print the cost preview ``text``; ask ``question`` unless ``yes``; a no is a
    :class:`LaunchError`."""
    print(text, file=sys.stderr, flush=True)
    if yes:
        return
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    try:
        answer = input()
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        raise LaunchError("calibrate --sky: not launched (answered no)")


def run_sky(args: argparse.Namespace) -> str:
    """The whole ``calibrate --sky``; the report's text (errors raise)."""
    launcher = launcher_factory()  # SkyPilot not installed: one line, before any work
    job, _ = load_job_args(args, need_work=False, gpus_per_run=args.nproc)
    world = args.nproc if args.nproc is not None else (
        job.gpus_per_run if isinstance(job.gpus_per_run, int) else 1)
    if world < 1 or job.effective_batch % world:
        raise LaunchError(f"--nproc: effective_batch {job.effective_batch} is not divisible "
                          f"by {world} GPUs")
    splits = (parse_splits(args.splits, job.effective_batch, world) if args.splits is not None
              else job.splits(world))
    table = price_table(args.prices)
    saved = load_saved(argparse.Namespace(profile=[], no_profile_folder=False), job)
    if args.sky:
        gpus = requested_gpus(args.sky, table.offers)
        why = "named"
    else:
        report = recommend(job, table.offers, saved.profiles)
        gpus = tuple(report.calibrate)
        why = "the recommendation says to calibrate"
        if not gpus:
            best = report.recommended
            return ("calibrate --sky: nothing launched; the recommendation for this job "
                    f"names no GPU to calibrate (it recommends {best.label}, its time "
                    f"{best.time_source}); name GPUs to calibrate anyway: --sky {best.gpu}")
    try:
        enabled = launcher.enabled_clouds()
    except GacostError:
        raise
    except Exception as exc:  # noqa: BLE001 - SkyPilot's API server did not answer
        raise LaunchError(f"calibrate --sky: SkyPilot could not say which clouds are enabled "
                          f"({one_line(exc)}); `sky api info` and `sky check` show why"
                          ) from None
    if not enabled:
        raise LaunchError("calibrate --sky: SkyPilot has no enabled cloud; run `sky check` "
                          "after setting up a cloud's credentials")
    calibrated = job.model_copy(update={
        "torch_compile": True if args.compile else job.torch_compile,
        "liger": True if args.liger else job.liger})
    targets = plan_targets(args, calibrated, gpus, splits, world, enabled, table.offers,
                           saved.profiles)
    total = sum(t.cost for t in targets)
    ask(f"GPUs ({why}): {', '.join(gpus)}\n{preview(targets)}",
        f"launch {len(targets)} calibration(s), about ${total:.2f}?", args.yes)
    local = models.load_model_config(job.model)[0] if local_model_config(job.model) else None
    token = token_factory()
    with tempfile.TemporaryDirectory(prefix="gacost-sky-") as tmp:
        workdir = stage(Path(tmp) / "workdir", job)
        runs = []
        for t in targets:
            name = cluster_name(t.gpu, token)
            runs.append(RemoteRun(t, name, calibration_task(
                t, str(workdir), forwarded(args, world), name)))
        try:
            outcomes = run_remote(runs, launcher, poll_seconds=poll_seconds)
        except RemoteInterrupted as exc:  # keep what came back before the interrupt
            kept = [k for k in save(exc.outcomes, profile_dir(), local) if k.path is not None]
            more = (f"; {len(kept)} profile(s) that came back are in {profile_dir()}"
                    if kept else "")
            raise RemoteInterrupted(f"{exc}{more}") from None
    return collect(outcomes, profile_dir(), args.job, local)


@dataclass(frozen=True)
class Kept:
    """A profile that came back: the file written, or why none was."""

    outcome: Outcome
    path: Path | None
    text: str  # the line to show: the path (and the GPU measured if not the one asked), or why


def save(outcomes: Sequence[Outcome], folder: Path, local_model: str | None = None
         ) -> list[Kept]:
    """Write each profile that came back to ``folder`` (a new name when the name exists),
    after checking that it is a profile. ``local_model``: the job's local model config as
    gacost names it here; a profile naming the staged copy of it is given that name (the
    copy's bytes are the same), so it matches the job here."""
    kept: list[Kept] = []
    for out in outcomes:
        if out.profile is None:
            continue
        try:
            profile = loads_profile(out.profile.decode("utf-8", "replace"),
                                    origin=f"the profile from {out.run.cluster}")
        except DataError as exc:
            kept.append(Kept(out, None, str(exc)))
            continue
        data = out.profile
        if local_model is not None and Path(profile.workload.model).name == STAGED_MODEL:
            profile = replace(profile, workload=replace(profile.workload, model=local_model))
            data = (json.dumps(profile_to_dict(profile), indent=2) + "\n").encode()
        name = default_out(profile.gpu, profile.workload.model, profile.fingerprint,
                           profile.gpu_count).name
        path = write_new(folder, name, data)
        other = "" if profile.gpu == out.run.target.gpu else f" (measured {profile.gpu})"
        kept.append(Kept(out, path, f"{path}{other}"))
    return kept


def plan_targets(args: argparse.Namespace, job: Job, gpus: Sequence[str],
                 splits: Sequence[Split], world: int, enabled: set[str],
                 offers: Sequence[Offer], profiles: Sequence[Profile]) -> list[Target]:
    """Each GPU's offer and expected calibration time (errors for a GPU nobody offers)."""
    est = estimate_job(job.model_copy(update={"gpus": list(gpus)}), offers, profiles)
    levers = tuple(n for n, v in (("torch_compile", job.torch_compile), ("liger", job.liger))
                   if v is True)
    options = SweepOptions(splits=tuple(splits), warmup=args.warmup,
                           max_timed=args.max_updates, max_seconds=args.max_seconds,
                           rel_tol=args.tolerance, passes=args.passes,
                           isolation=args.isolation, trace=args.trace,
                           trace_all=args.trace_all)
    targets = []
    for gpu in gpus:
        offer, pricing, rate = choose_offer(gpu, est.offers, world, spot=job.spot,
                                            enabled=enabled)
        mine = [e for e in est.estimates
                if e.gpu == gpu and e.world_size == world and e.levers == levers]
        targets.append(Target(gpu, offer, pricing, rate, world,
                              calibration_time(splits, mine, options, world)))
    return targets


def collect(outcomes: Sequence[Outcome], folder: Path, job_path: str | None,
            local_model: str | None = None) -> str:
    """Save what came back (never over a file), then the report; a one-line
    :class:`LaunchError` when any calibration failed or a cluster may still be up."""
    lines: list[str] = []
    failed: list[str] = []
    written = {id(k.outcome): k for k in save(outcomes, folder, local_model)}
    for out in outcomes:
        t = out.run.target
        where = f"{t.label}, cluster {out.run.cluster}"
        kept = written.get(id(out))
        if kept is not None and kept.path is not None:
            lines.append(f"  {t.gpu}: {kept.text}")
        elif kept is not None:
            failed.append(f"{t.gpu} ({where}): {kept.text}")
        elif out.error is not None:
            failed.append(f"{t.gpu} ({where}): {out.error}")
        if out.down_error is not None:
            failed.append(f"cluster {out.run.cluster} may still be up ({out.down_error}); "
                          f"run `sky down {out.run.cluster}`")
    job = f" --job {job_path}" if job_path else ""
    head = f"calibrate --sky: {len(lines)} of {len(outcomes)} profile(s) saved"
    if failed:
        for line in [f"{head} in {folder}", *lines]:
            print(line, file=sys.stderr)
        raise LaunchError(f"calibrate --sky: {len(outcomes) - len(lines)} of {len(outcomes)} "
                          f"calibration(s) failed: {'; '.join(failed)}")
    return "\n".join([f"{head}:", *lines,
                      f"`gacost recommend{job}` uses them (it reads {folder}, and says which "
                      "profiles are newly used)"])
