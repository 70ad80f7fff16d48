"""Inputs shared by the command modules: flags, the job, profiles, prices and numbers.

The job comes from ``--job F`` (a gacost job file), or from ``--trl-config F`` (the user's
``trl sft`` YAML or saved TrainingArguments JSON, see :mod:`gacost.calibration.trl_config`) with
``--job`` then a partial job file of the keys a TRL config lacks, and ``--samples``,
``--runs`` and ``--gpus-per-run``.

Commands never import each other; what two of them share lives here."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from gacost.base.clock import utc_now
from gacost.base.errors import JobSpecError, RefreshFailedError
from gacost.base.gpu_names import resolve_gpus
from gacost.base.gpu_table import gpu_specs
from gacost.base.inputfile import clip
from gacost.base.job import MAX_GPUS_PER_RUN, Job, load_job, read_job_file
from gacost.base.profile import Profile, read_profile
from gacost.commands.formats import add_format_flag
from gacost.pricing.cache import PriceCache, max_age_from_env
from gacost.pricing.combine import REFRESH_ADVICE, load_freshest
from gacost.pricing.price_file import read_price_file
from gacost.pricing.snapshot import PriceTable, load_snapshot

if TYPE_CHECKING:
    from gacost.advisor.estimate import HostProbe
    from gacost.calibration.trl_config import TrlJob
    from gacost.pricing.fetch.refresh import Outcome


def price_table(
    path: str | None = None,
    *,
    refresh: bool = False,
    sources: Sequence[str] = (),
    providers: Sequence[str] = (),
    max_age: timedelta | None = None,
    force: bool = False,
    deadline: timedelta | None = None,
    verbose: bool = False,
    strict: bool = False,
) -> PriceTable:
    """The offers of a price file, or the freshest of the price cache and the snapshot.

    Without ``refresh`` no network is used (and httpx is not imported). With it, the
    ``sources`` (default: every default source of ``providers``) whose cache is older than
    ``max_age`` (default ``$GACOST_PRICE_MAX_AGE`` or 24 h) are fetched first, failures
    falling back to the cache or the snapshot. One line sums the refresh up (a warning
    when a source failed); ``verbose`` adds one line per source first. ``strict`` raises
    :class:`RefreshFailedError` (exit 4) when a source failed, instead of going on.
    """
    if path is not None:
        return _price_file(path)
    snapshot = load_snapshot()
    cache = PriceCache()
    now = utc_now()
    age = max_age if max_age is not None else max_age_from_env()
    said = warn
    if refresh:
        failed = refresh_prices(
            cache, snapshot, now, age, sources, providers, force, deadline, verbose, strict
        )
        if failed:
            said = _without_refresh_advice
        # what this refresh stored is stamped `now` to the second: never past the max age
        # (`--max-age 0` means "fetch everything", not "warn about what was just fetched")
        age = max(age, STAMP_RESOLUTION)
    return load_freshest(cache=cache, snapshot=snapshot, now=now, max_age=age, warn=said)


STAMP_RESOLUTION = timedelta(seconds=1)  # cache stamps are whole seconds (format_timestamp)


def _without_refresh_advice(message: str) -> None:
    """A warning after a refresh that failed: advising that refresh again is no help."""
    warn(message.replace(REFRESH_ADVICE, "the refresh above did not get them"))


def refresh_prices(
    cache: PriceCache,
    snapshot: PriceTable,
    now: datetime,
    max_age: timedelta,
    sources: Sequence[str] = (),
    providers: Sequence[str] = (),
    force: bool = False,
    deadline: timedelta | None = None,
    verbose: bool = False,
    strict: bool = False,
) -> list[Outcome]:
    """Fetch the stale sources into ``cache`` (imports the fetch layer, hence httpx) and
    print the summary line; returns the sources that failed (see :func:`price_table`)."""
    from gacost.pricing.fetch.refresh import Refresher, deadline_from_env, select_sources

    names = select_sources(sources, providers)
    seconds = deadline.total_seconds() if deadline is not None else deadline_from_env()
    quiet: Callable[[str], None] = lambda _message: None  # noqa: E731 - the detail is --verbose
    refresher = Refresher(
        cache=cache, snapshot=snapshot, now=now, env=os.environ,
        warn=warn if verbose else quiet, note=note if verbose else quiet,
        deadline_s=seconds, force=force,
    )  # fmt: skip
    outcomes = refresher.refresh(names, max_age)
    failed = [o for o in outcomes if o.failed]
    line = f"prices: {refresher.summary(outcomes, max_age)}"
    if failed and strict:
        raise RefreshFailedError(f"{line}; stopped by --strict")
    if failed:
        warn(line if verbose else f"{line} (--verbose says why)")
    else:
        note(line)
    return failed


def warn(message: str) -> None:
    """One ``warning:`` line on stderr."""
    print(f"warning: {message}", file=sys.stderr)


def note(message: str) -> None:
    """One ``note:`` line on stderr (progress that is not a problem)."""
    print(f"note: {message}", file=sys.stderr)


def _price_file(path: str) -> PriceTable:
    read = read_price_file(path)
    for line in read.notes():
        warn(line)
    return read.table


def add_job_flags(p: argparse.ArgumentParser, *, work: bool = True) -> None:
    """``--job`` and ``--trl-config``, and with ``work`` the flags that complete a TRL
    config (``--samples``, ``--runs``, ``--gpus-per-run``)."""
    p.add_argument("--job", metavar="F",
                   help="the job spec (YAML); with --trl-config, a job file of the extra keys "
                        "(runs, gpus, objective, ...)")
    p.add_argument("--trl-config", metavar="F",
                   help="your `trl sft` YAML config or saved TrainingArguments JSON as the "
                        "job (README 'Using your TRL config')")
    if work:
        p.add_argument("--samples", metavar="N",
                       help="with --trl-config: rows in the train split (a TRL config trains "
                            "num_train_epochs over them unless max_steps is set)")
        p.add_argument("--runs", metavar="N", help="with --trl-config: how many fine-tunes")
        p.add_argument("--gpus-per-run", metavar="N",
                       help="with --trl-config: the GPUs each run launches on (default 1); "
                            "effective batch = per-device batch x accumulation x N")


def add_price_age_flag(p: argparse.ArgumentParser) -> None:
    """``--price-age``: prices last confirmed longer ago are marked ``!``."""
    p.add_argument("--price-age", metavar="AGE",
                   help="mark prices last confirmed longer ago than this (default 180d, "
                        "$GACOST_PRICE_DATE_MAX_AGE; a bare number is days)")


MAX_PROBE_MS = 10_000.0  # a probe task takes 13-31 ms on the lent hosts; 10 s is no CPU


def add_host_probe_flag(p: argparse.ArgumentParser) -> None:
    """``--host-probe-ms`` and ``--host-probe-gpu``: the probe of the instance to train on
    (``gacost probe``)."""
    p.add_argument("--host-probe-ms", metavar="MS",
                   help="the host probe of the instance you will train on (`gacost probe` "
                        "there): your probed profile's host times scaled to it, or with "
                        "--host-probe-gpu the host of a machine nobody calibrated")
    p.add_argument("--host-probe-gpu", metavar="GPU",
                   help="the GPU of the probed instance (needed without a probed --profile "
                        "of its machine)")


def host_probe(args: argparse.Namespace) -> HostProbe | None:
    """The ``--host-probe-ms`` / ``--host-probe-gpu`` pair, checked (None without them)."""
    text, gpu = getattr(args, "host_probe_ms", None), getattr(args, "host_probe_gpu", None)
    if text is None:
        if gpu is not None:
            raise JobSpecError("--host-probe-gpu needs --host-probe-ms (`gacost probe` on "
                               "the instance prints it)")
        return None
    from gacost.advisor.estimate import HostProbe  # the model: only where a probe is given

    ms = number("--host-probe-ms", text, high=MAX_PROBE_MS)
    if gpu is None:
        return HostProbe(ms)
    found = [g for g in resolve_gpus([gpu]) if g in gpu_specs()]
    if len(found) != 1:
        named = ", ".join(found) or "no GPU with a spec"
        raise JobSpecError(f"--host-probe-gpu {gpu}: names {named}; name the one GPU of the "
                           "probed instance (`gacost gpus` lists them)")
    return HostProbe(ms, found[0])


def add_common(p: argparse.ArgumentParser) -> None:
    """Flags shared by ``budget`` and ``compare``."""
    add_job_flags(p)
    p.add_argument("--profile", action="append", default=[], metavar="P",
                   help="a calibration profile (JSON) to use; repeatable")
    add_host_probe_flag(p)
    p.add_argument("--prices", metavar="F",
                   help="a price file in the snapshot CSV format (default: embedded snapshot)")
    p.add_argument("--spot", action="store_true",
                   help="also price spot offers (as the job's spot: true does)")
    p.add_argument("--spot-allowance", metavar="X",
                   help="extra time added to spot runs for interruptions (default: the job's "
                        "spot_allowance, 0.2 = 20%%)")
    add_format_flag(p)
    p.add_argument("--refresh-prices", action="store_true",
                   help="fetch price sources whose cache is older than the max age first "
                        "(network; see `gacost prices --list-sources`)")


def load_job_args(
    args: argparse.Namespace, *, need_work: bool = True, gpus_per_run: int | None = None
) -> tuple[Job, TrlJob | None]:
    """The job of ``--job`` or ``--trl-config`` (with its TRL view, else None).

    ``gpus_per_run`` is a GPU count the command already knows (calibrate's ``--nproc``),
    used when ``--gpus-per-run`` is not given; ``need_work=False`` lets an epoch-based TRL
    config go without ``--samples``.
    """
    flags = {
        "--samples": (getattr(args, "samples", None), float("inf")),
        "--runs": (getattr(args, "runs", None), 100_000),
        "--gpus-per-run": (getattr(args, "gpus_per_run", None), MAX_GPUS_PER_RUN),
    }
    values = {flag: None if text is None else int(number(flag, text, integer=True, high=high))
              for flag, (text, high) in flags.items()}
    if args.trl_config is None:
        if args.job is None:
            raise JobSpecError("--job: give the job file (YAML), or --trl-config F with your "
                               "`trl sft` config")
        for flag, value in values.items():
            if value is not None:
                raise JobSpecError(f"{flag}: only with --trl-config; put the value in the job "
                                   f"file {args.job}")
        return load_job(args.job), None
    from gacost.calibration.trl_config import build_job, load_trl_config  # --trl-config only

    config = load_trl_config(args.trl_config)
    extra = None if args.job is None else read_job_file(args.job)
    world = values["--gpus-per-run"] if values["--gpus-per-run"] is not None else gpus_per_run
    trl = build_job(config, extra, args.job or "the job", samples=values["--samples"],
                    runs=values["--runs"], gpus_per_run=world, need_work=need_work)
    return trl.job, trl


def trl_notes(trl: TrlJob | None) -> list[str]:
    """The ``note:`` lines that say how a TRL config became the job (none without one)."""
    if trl is None:
        return []
    gpus = f" x {trl.world} GPUs" if trl.world > 1 else ""
    lines = [
        f"note: job from {trl.config.path}: your split {trl.split} per GPU "
        f"(per_device_train_batch_size x gradient_accumulation_steps){gpus} = effective "
        f"batch {trl.job.effective_batch}; gacost plans every split of it"
    ]
    return lines + [f"note: {n}" for n in trl.notes]


def number(flag: str, text: str, *, low: float = 0.0, high: float = float("inf"),
           integer: bool = False, strict_low: bool = True) -> float:
    """A flag's number, or a one-line ``--flag: ...`` error (exit code 2)."""
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise JobSpecError(f"{flag}: expected {kind}, got {clip(text)}") from None
    too_low = value <= low if strict_low else value < low
    if too_low or value > high or not math.isfinite(value):
        bound = f"> {low:g}" if strict_low else f">= {low:g}"
        upper = f" and <= {high:g}" if high != float("inf") else ""
        finite = "" if math.isfinite(value) else "finite and "
        raise JobSpecError(f"{flag}: must be {finite}{bound}{upper}, got {clip(text)[1:-1]}")
    return value


@dataclass(frozen=True)
class Inputs:
    """What ``budget`` and ``compare`` read: the job (and its TRL view), prices, profiles,
    and the ``--spot-allowance`` (None: the job's)."""

    job: Job
    table: PriceTable
    profiles: list[Profile]
    allowance: float | None
    trl: TrlJob | None
    host_probe: HostProbe | None = None


def load_inputs(args: argparse.Namespace) -> Inputs:
    """The inputs of the shared flags."""
    allowance = None if args.spot_allowance is None else number(
        "--spot-allowance", args.spot_allowance, low=0.0, high=10.0, strict_low=False)
    job, trl = load_job_args(args)
    probe = host_probe(args)
    profiles = [read_profile(p) for p in args.profile]
    table = price_table(args.prices, refresh=args.refresh_prices)
    return Inputs(job, table, profiles, allowance, trl, probe)
