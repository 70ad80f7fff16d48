"""``calibrate --sky``: one SkyPilot cluster per GPU, each calibrating the job, in parallel,
torn down when done; no ``sky`` import here (the clusters are driven through an injected
:class:`ClusterLauncher`, :class:`gacost.launch.skypilot.SkyClusterLauncher` for real).

What it owns:

- the offer each GPU calibrates on (:func:`choose_offer`): the cheapest offer of that GPU,
  at the calibration's GPU count, among the job's providers that SkyPilot 0.14 launches and
  the user has enabled (``sky check``); on-demand, or spot where the job allows spot and it
  is cheaper;
- what that costs before anything is rented (:class:`Target`, :func:`preview`): the
  calibration's expected device time from the model
  (:func:`gacost.advisor.calibration_time.calibration_time`) plus
  :data:`SETUP_ALLOWANCE_MINUTES` for provisioning, installing and tearing down, times the
  offer's hourly rate;
- the SkyPilot task of one calibration (:func:`calibration_task`): the offer's resources (as
  ``recommend --sky-task`` names them, :mod:`gacost.launch.sky_task`), the staged gacost as
  ``workdir`` (:mod:`gacost.launch.staging`), a ``setup`` that installs its requirements
  and a ``run`` that calibrates the staged job and prints the profile into the job's log
  (:mod:`gacost.launch.profile_transfer`);
- running them (:func:`run_remote`): a thread per cluster launches, polls the job's
  status, reads the profile out of the log and downs its cluster, whatever happened. A
  ``KeyboardInterrupt`` (Ctrl-C in the main thread, or raised by the launcher in a worker)
  stops every worker and downs every cluster launched so far, then raises
  :class:`RemoteInterrupted` (exit 130), one line naming what was torn down.
"""

from __future__ import annotations

import re
import shlex
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from tabulate import tabulate

from gacost.advisor.calibration_time import CalibrationTime
from gacost.advisor.planner import Pricing
from gacost.base.errors import GacostError, LaunchError
from gacost.base.interrupts import deferred_interrupt
from gacost.base.records import Offer
from gacost.launch import profile_transfer
from gacost.launch.sky_task import LAUNCHABLE, SKYPILOT_VERSION, sky_region, sky_resources

SETUP_ALLOWANCE_MINUTES = 10.0  # provisioning (2-5 min), pip install of torch & co, teardown
AUTODOWN_IDLE_MINUTES = 15  # SkyPilot downs a cluster idle this long (if gacost died)
POLL_SECONDS = 20.0  # between two job-status calls
JOIN_SECONDS = 60.0  # after Ctrl-C and the teardown, how long workers get to notice
REMOTE_OUT = "$HOME/gacost-out/profile.json"

Phase = Literal["pending", "running", "succeeded", "failed"]
Say = Callable[[str], None]


# --- the clusters, as the orchestration sees them --------------------------------------------


@dataclass(frozen=True)
class JobState:
    """A cluster job's state: ``phase`` for gacost, ``detail`` as SkyPilot names it."""

    phase: Phase
    detail: str = ""


class ClusterLauncher(Protocol):
    """What ``calibrate --sky`` does with SkyPilot; tests pass a fake."""

    def enabled_clouds(self) -> set[str]:
        """The clouds ``sky check`` enabled (lower case, as gacost names providers)."""
        ...

    def launch(self, config: dict[str, Any], *, cluster: str) -> int:
        """Provision cluster ``cluster`` for the task ``config``, run its setup and submit
        its run; returns the job id (blocks until submitted)."""
        ...

    def status(self, cluster: str, job_id: int) -> JobState:
        """The job's state now."""
        ...

    def logs(self, cluster: str, job_id: int) -> str:
        """The job's output so far (how the profile comes back)."""
        ...

    def down(self, cluster: str) -> None:
        """Tear the cluster down (a launch of it still in progress is cancelled first); a
        cluster that does not exist is no error."""
        ...


# --- which offer, and what it costs ------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One GPU to calibrate: where, at what rate, and for how long."""

    gpu: str
    offer: Offer
    pricing: Pricing
    rate_hour: float
    world: int
    time: CalibrationTime
    setup_minutes: float = SETUP_ALLOWANCE_MINUTES

    @property
    def label(self) -> str:
        """``provider region instance (pricing)``."""
        o = self.offer
        return f"{o.provider} {o.region} {o.instance_type} ({self.pricing})"

    @property
    def calibration_minutes(self) -> float:
        """The calibration itself, from the model."""
        return self.time.seconds / 60.0

    @property
    def device_minutes(self) -> float:
        """What the instance is billed for: the calibration and the setup allowance."""
        return self.calibration_minutes + self.setup_minutes

    @property
    def cost(self) -> float:
        """Expected dollars."""
        return self.device_minutes / 60.0 * self.rate_hour


def choose_offer(gpu: str, offers: Sequence[Offer], world: int, *, spot: bool,
                 enabled: set[str]) -> tuple[Offer, Pricing, float]:
    """The cheapest offer of ``gpu`` with ``world`` GPUs that SkyPilot can launch on an
    enabled cloud (``offers``: the job's, already limited to its providers); on-demand, or
    spot when ``spot`` and cheaper. A one-line :class:`LaunchError` says why there is none."""
    count = f" with {world} GPUs" if world > 1 else ""
    mine = [o for o in offers if o.gpu == gpu and o.gpu_count == world]
    if not mine:
        raise LaunchError(f"calibrate --sky: no provider in the job offers {gpu}{count}; "
                          f"widen the job's providers: (`gacost compare --gpu {gpu}` lists "
                          "who sells it) or calibrate another GPU")
    launchable = [o for o in mine if o.provider in LAUNCHABLE and _whole(o)]
    if not launchable:
        who = ", ".join(sorted({o.provider for o in mine}))
        raise LaunchError(f"calibrate --sky: {gpu}{count} is offered by {who} only, which "
                          f"SkyPilot {SKYPILOT_VERSION} cannot launch; add a provider it can "
                          "to the job's providers:")
    usable = [o for o in launchable if o.provider in enabled]
    if not usable:
        who = ", ".join(sorted({o.provider for o in launchable}))
        on = ", ".join(sorted(enabled)) or "none"
        raise LaunchError(f"calibrate --sky: {gpu}{count} is offered by {who}, none of them "
                          f"enabled in SkyPilot (enabled: {on}); `sky check` enables a cloud "
                          "you have credentials for")
    priced: list[tuple[float, str, str, str, Pricing, Offer]] = []
    for o in usable:
        if o.price_hour is not None:
            priced.append((o.price_hour, o.provider, o.region, o.instance_type, "on-demand", o))
        if spot and o.spot_hour is not None:
            priced.append((o.spot_hour, o.provider, o.region, o.instance_type, "spot", o))
    if not priced:
        raise LaunchError(f"calibrate --sky: {gpu}{count} has no price on an enabled cloud "
                          "(spot-only offers need spot: true in the job)")
    rate, _, _, _, pricing, offer = min(priced, key=lambda p: p[:5])
    return offer, pricing, rate


def _whole(o: Offer) -> bool:
    try:
        sky_resources(o)
    except LaunchError:  # fractional GPUs, or a GPU SkyPilot has no name for
        return False
    return True


def preview(targets: Sequence[Target]) -> str:
    """What the calibrations will cost, per GPU and in total, before anything is launched."""
    rows = [[t.gpu, t.label, f"{t.rate_hour:.3f}", str(t.time.splits),
             f"{t.calibration_minutes:.1f} ({t.time.basis})", f"{t.setup_minutes:.0f}",
             f"{t.device_minutes:.1f}", f"${t.cost:.2f}"] for t in targets]
    minutes = sum(t.device_minutes for t in targets)
    dollars = sum(t.cost for t in targets)
    rows.append(["total", "", "", "", "", "", f"{minutes:.1f}", f"${dollars:.2f}"])
    table = tabulate(rows, headers=["GPU", "offer", "$/h", "splits", "calibration min",
                                    "setup min", "device min", "cost"],
                     disable_numparse=True)
    plural = "s" if len(targets) != 1 else ""
    return (f"calibrate --sky: {len(targets)} calibration{plural} on SkyPilot, in parallel, "
            "each torn down when it ends:\n"
            f"{table}\n"
            "device min = the calibration's expected time from the model (the full time "
            "budget of every split; stopping early only shortens it) + "
            f"{SETUP_ALLOWANCE_MINUTES:.0f} min stated allowance per machine for "
            "provisioning, installing torch and gacost, and tear-down; cost = device min x "
            "the offer's rate")


# --- the task ---------------------------------------------------------------------------------


def cluster_name(gpu: str, token: str) -> str:
    """``gacost-cal-<gpu>-<token>``: lower case letters, digits and dashes (SkyPilot's rule)."""
    slug = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")[:16].strip("-")
    return f"gacost-cal-{slug}-{token}"


def calibration_task(target: Target, workdir: str, calibrate_args: Sequence[str],
                     name: str, *, device: str = "cuda") -> dict[str, Any]:
    """The SkyPilot task (its YAML's mapping) that calibrates ``target`` from the staged
    folder ``workdir`` (:mod:`gacost.launch.staging`: ``src/``, ``requirements.txt``,
    ``job.yaml``), passing ``calibrate_args`` on to ``gacost calibrate``. ``--device cuda``:
    a machine whose torch sees no GPU fails, rather than calibrating its CPU."""
    instance, accelerator, count = sky_resources(target.offer)
    command = shlex.join(["python3", "-m", "gacost", "calibrate", "--job", "job.yaml",
                          "--device", device, "--quiet", *calibrate_args])
    return {
        "name": name,
        "workdir": workdir,
        "resources": {
            "infra": f"{target.offer.provider}/{sky_region(target.offer)}",
            "instance_type": instance,
            "accelerators": f"{accelerator}:{count}",
            "use_spot": target.pricing == "spot",
        },
        "setup": (
            "set -e\n"
            "python3 -m pip install -q -r requirements.txt\n"
        ),
        "run": (
            'export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"\n'
            'mkdir -p "$HOME/gacost-out"\n'
            "code=0\n"
            f'{command} --out "{REMOTE_OUT}" || code=$?\n'
            f'if [ -f "{REMOTE_OUT}" ]; then\n'
            f'  python3 -m gacost.launch.profile_transfer "{REMOTE_OUT}"\n'
            "fi\n"
            'exit "$code"\n'
        ),
    }


# --- running them -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RemoteRun:
    """One calibration to run: the target, its cluster's name and its task."""

    target: Target
    cluster: str
    config: dict[str, Any]


@dataclass
class Outcome:
    """What became of one :class:`RemoteRun` (filled in by its worker thread)."""

    run: RemoteRun
    launched: bool = False
    profile: bytes | None = None
    error: str | None = None
    down_error: str | None = None


class RemoteInterrupted(LaunchError):
    """Ctrl-C (or an interrupt from the launcher) during ``calibrate --sky``; ``outcomes``
    holds what had come back by then."""

    exit_code = 130

    def __init__(self, message: str, outcomes: Sequence[Outcome] = ()) -> None:
        super().__init__(message)
        self.outcomes = list(outcomes)


def one_line(exc: BaseException, limit: int = 300) -> str:
    """An exception's message on one line, at most ``limit`` characters."""
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return text if len(text) <= limit else text[:limit] + "..."


def last_error(log: str) -> str:
    """The last ``error: ...`` line gacost printed in a job's log, or ''."""
    found = re.findall(r"error: (.+)", log)
    return " ".join(found[-1].split())[:300] if found else ""


class _Fleet:
    """The clusters of one ``calibrate --sky``, shared by the worker threads."""

    def __init__(self, launcher: ClusterLauncher, say: Say, poll_seconds: float) -> None:
        self.launcher = launcher
        self.say = say
        self.poll_seconds = poll_seconds
        self.lock = threading.Lock()
        self.stop = threading.Event()  # set on an interrupt: workers leave, main downs all
        self.interrupted = threading.Event()
        self.changed = threading.Event()  # a worker finished
        self.launched: list[str] = []
        self.downed: dict[str, str | None] = {}  # cluster -> the down's error, None if ok

    def down(self, cluster: str, *, again: bool = False) -> str | None:
        """Down ``cluster`` once (``again``: even if it was downed already); its error."""
        with self.lock:
            if cluster in self.downed and not again:
                return self.downed[cluster]
            self.downed[cluster] = None
        try:
            self.launcher.down(cluster)
            error = None
        except Exception as exc:  # noqa: BLE001 - reported, and the others still go down
            error = one_line(exc)
        with self.lock:
            self.downed[cluster] = error
        return error

    def work(self, run: RemoteRun, out: Outcome) -> None:
        """One cluster's life: launch, wait, collect, down (a worker thread)."""
        gpu = run.target.gpu
        try:
            with self.lock:
                if self.stop.is_set():
                    return
                self.launched.append(run.cluster)
                out.launched = True
            self.say(f"{gpu}: launching cluster {run.cluster} on {run.target.label}")
            job_id = self.launcher.launch(run.config, cluster=run.cluster)
            if self.stop.is_set():  # interrupted while it launched: down it once it is up
                self.down(run.cluster, again=True)
                return
            self.say(f"{gpu}: calibrating (job {job_id} on {run.cluster})")
            state = self.launcher.status(run.cluster, job_id)
            while state.phase not in ("succeeded", "failed"):
                if self.stop.wait(self.poll_seconds):
                    return
                state = self.launcher.status(run.cluster, job_id)
            log = self.launcher.logs(run.cluster, job_id)
            if state.phase == "failed":
                why = last_error(log)
                out.error = (f"the job ended {state.detail or 'FAILED'}"
                             + (f": {why}" if why else f" (`sky logs {run.cluster}` while "
                                "it is up)"))
            else:
                out.profile = profile_transfer.decode(log)
        except KeyboardInterrupt:
            self.interrupted.set()
            self.stop.set()
        except GacostError as exc:
            out.error = one_line(exc)
        except Exception as exc:  # noqa: BLE001 - whatever SkyPilot raises, one line
            out.error = one_line(exc)
        finally:
            if out.launched and not self.stop.is_set():
                out.down_error = self.down(run.cluster)
                if out.down_error is None:
                    self.say(f"{gpu}: cluster {run.cluster} torn down")
            self.changed.set()

    def down_all(self) -> list[tuple[str, str]]:
        """Down every cluster launched so far; the ones that failed, with why."""
        with self.lock:
            clusters = list(self.launched)
        failed = []
        for cluster in clusters:
            error = self.down(cluster)
            if error is not None:
                failed.append((cluster, error))
        return failed


def run_remote(runs: Sequence[RemoteRun], launcher: ClusterLauncher, *,
               say: Say | None = None, poll_seconds: float | None = None) -> list[Outcome]:
    """Run every calibration in parallel (a thread each) and return what became of each;
    each cluster is downed when its job ends, fails, or cannot be read (``poll_seconds``
    between status calls, default :data:`POLL_SECONDS`). On
    ``KeyboardInterrupt`` every cluster launched so far is downed and
    :class:`RemoteInterrupted` raised."""
    fleet = _Fleet(launcher, say or _stderr,
                   POLL_SECONDS if poll_seconds is None else poll_seconds)
    outcomes = [Outcome(run) for run in runs]
    threads = [threading.Thread(target=fleet.work, args=(run, out), daemon=True,
                                name=f"gacost-{run.cluster}")
               for run, out in zip(runs, outcomes, strict=True)]
    try:
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads) and not fleet.interrupted.is_set():
            fleet.changed.wait(0.5)
            fleet.changed.clear()
        if fleet.interrupted.is_set():
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        fleet.stop.set()
        with deferred_interrupt():  # a second Ctrl-C must not leave clusters up
            failed = fleet.down_all()
            for t in threads:
                t.join(JOIN_SECONDS / max(len(threads), 1))
        raise RemoteInterrupted(interrupted_message(fleet.launched, failed),
                                outcomes) from None
    return outcomes


def interrupted_message(launched: Sequence[str], failed: Sequence[tuple[str, str]]) -> str:
    """The one line after an interrupt: what was torn down, and what may still be up."""
    if not launched:
        return "calibrate --sky: interrupted before any cluster was launched"
    if not failed:
        return (f"calibrate --sky: interrupted; every cluster launched was torn down "
                f"({', '.join(launched)})")
    names = " ".join(c for c, _ in failed)
    why = "; ".join(f"{c}: {e}" for c, e in failed)
    return (f"calibrate --sky: interrupted; could not tear down {why}; run `sky down {names}` "
            "(`sky status` lists what is up)")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
