"""SkyPilot's own check of a task gacost wrote, and its launch: the one module that imports
``sky`` (``gacost[sky]``), and only inside its functions, so importing it costs nothing.
:class:`SkyLauncher` launches ``recommend --sky-task``'s task; :class:`SkyClusterLauncher`
runs ``calibrate --sky``'s clusters (launch, job status, logs, down).

:func:`resolve` loads the task with SkyPilot's parser (``sky.Task.from_yaml_config``) and
asks SkyPilot's catalog code, for each of its resources, what the optimizer asks before a
launch: is the instance type and accelerator pair feasible on that cloud (for the task's
node count), which regions offer it (spot or not), and what it costs per hour. SkyPilot
reads its catalogs from ``~/.sky/catalogs/v8/<cloud>/vms.csv`` (under
``$SKY_RUNTIME_DIR`` when set) and fetches a missing one over the network.
"""

from __future__ import annotations

import copy
import importlib
import io
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from gacost.base.errors import LaunchError
from gacost.launch.remote_calibration import JobState, Phase

INSTALL = "pip install 'gacost[sky]'"
AUTODOWN_MINUTES = 60  # an on-demand cluster goes down after this long idle (fetch profiles)


def require_sky(flag: str = "--sky-task") -> ModuleType:
    """The ``sky`` module, or a one-line error saying ``flag`` needs it and how to install
    it."""
    os.environ.setdefault("SKYPILOT_DISABLE_USAGE_COLLECTION", "1")
    try:
        import sky
    except ImportError:
        raise LaunchError(f"{flag} needs SkyPilot, which is not installed; {INSTALL}") from None
    module: ModuleType = sky
    return module


@dataclass(frozen=True)
class Resolved:
    """One resources entry of a task as SkyPilot's catalog code resolves it."""

    cloud: str  # lower case, as in the task's ``infra``
    region: str
    instance_type: str
    accelerators: dict[str, int]
    use_spot: bool
    num_nodes: int
    hourly_cost: float  # SkyPilot's price of one instance in that region


def resolve(config: dict[str, Any]) -> list[Resolved]:
    """Every resources entry of the task ``config``, checked by SkyPilot; a task SkyPilot
    refuses, or a resource it cannot place, is a :class:`LaunchError` naming why."""
    sky = require_sky()
    try:
        task = sky.Task.from_yaml_config(copy.deepcopy(config))  # it pops keys
    except Exception as exc:  # noqa: BLE001 - SkyPilot raises many kinds; one line each
        raise LaunchError(f"SkyPilot refuses the task: {_one_line(exc)}") from None
    out = []
    for r in task.resources:
        where = f"{r.cloud} {r.region} {r.instance_type}"
        try:
            feasible = r.cloud.get_feasible_launchable_resources(r, task.num_nodes)
            if not feasible.resources_list:
                hint = f": {_one_line(feasible.hint)}" if feasible.hint else ""
                raise LaunchError(f"SkyPilot cannot launch {where}{hint}")
            regions = r.cloud.regions_with_offering(
                r.instance_type, r.accelerators, r.use_spot, r.region, r.zone, r)
            if not regions:
                spot = " as spot" if r.use_spot else ""
                raise LaunchError(f"SkyPilot's catalog has no {where}{spot}; the price data "
                                  "and SkyPilot's catalog disagree (`gacost prices --refresh`)")
            cost = float(r.get_cost(3600.0))
        except LaunchError:
            raise
        except Exception as exc:  # noqa: BLE001 - a catalog SkyPilot could not read or fetch
            raise LaunchError(f"SkyPilot could not check {where}: {_one_line(exc)}") from None
        out.append(Resolved(
            cloud=str(r.cloud).lower(), region=str(r.region), instance_type=str(r.instance_type),
            accelerators=dict(r.accelerators or {}), use_spot=bool(r.use_spot),
            num_nodes=int(task.num_nodes), hourly_cost=cost,
        ))
    return out


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return text if len(text) <= 300 else text[:300] + "..."


class Launcher(Protocol):
    """What ``recommend --launch`` needs from SkyPilot; tests pass a fake."""

    def launch(self, config: dict[str, Any], *, name: str, managed: bool) -> str:
        """Launch the task ``config``; a managed job (spot recovery) when ``managed``, else
        a cluster called ``name``. Returns what was started, in words."""
        ...


class SkyLauncher:
    """:class:`Launcher` through SkyPilot's SDK (its API server starts locally if needed)."""

    def launch(self, config: dict[str, Any], *, name: str, managed: bool) -> str:
        """``sky.jobs.launch`` or ``sky.launch`` (autodown after
        :data:`AUTODOWN_MINUTES` idle minutes), followed to the end of the submission."""
        sky = require_sky()
        task = sky.Task.from_yaml_config(copy.deepcopy(config))
        if managed:
            job_ids, _ = sky.stream_and_get(sky.jobs.launch(task, name=name))
            ids = ", ".join(str(i) for i in job_ids or ())
            return f"managed job {ids} ({name}); `sky jobs queue` follows it"
        job_id, _ = sky.stream_and_get(sky.launch(
            task, cluster_name=name, idle_minutes_to_autostop=AUTODOWN_MINUTES, down=True))
        return (f"job {job_id} on cluster {name} (down after {AUTODOWN_MINUTES} idle "
                f"minutes); `sky logs {name}` follows it")


_PHASES: dict[str, Phase] = {
    "INIT": "pending", "PENDING": "pending", "SETTING_UP": "pending", "RUNNING": "running",
    "SUCCEEDED": "succeeded",
}  # anything else (FAILED, FAILED_SETUP, FAILED_DRIVER, CANCELLED, no job) is failed


class SkyClusterLauncher:
    """:class:`gacost.launch.remote_calibration.ClusterLauncher` through SkyPilot 0.14's
    SDK (``calibrate --sky``; its API server starts locally if none is configured).

    Each call is a request to the API server: ``sky.launch`` (with autodown after
    :data:`~gacost.launch.remote_calibration.AUTODOWN_IDLE_MINUTES` idle minutes, in case
    gacost dies before its own ``down``), ``sky.job_status``, ``sky.tail_logs`` (the job's
    output, into a string), ``sky.down``; a launch still in progress when its cluster is
    downed is cancelled first (``sky.api_cancel``), so Ctrl-C does not leave a launch
    running on the server. Provisioning and setup output goes to ``<log_dir>/<cluster>.log``.
    """

    def __init__(self, log_dir: Path, autodown_minutes: int) -> None:
        self.sky = require_sky("calibrate --sky")
        self.sdk = importlib.import_module("sky.client.sdk")  # enabled_clouds is not on sky
        self.exceptions = importlib.import_module("sky.exceptions")
        self.log_dir = log_dir
        self.autodown_minutes = autodown_minutes
        self._requests: dict[str, Any] = {}  # cluster -> its launch request, while it runs
        self._lock = threading.Lock()

    def enabled_clouds(self) -> set[str]:
        """``sky check``'s enabled clouds (SkyPilot's canonical names are lower case)."""
        return {str(c).lower() for c in self.sky.get(self.sdk.enabled_clouds())}

    def launch(self, config: dict[str, Any], *, cluster: str) -> int:
        """``sky.launch`` the task on a new cluster; the submitted job's id."""
        sky = self.sky
        task = sky.Task.from_yaml_config(copy.deepcopy(config))
        request = sky.launch(task, cluster_name=cluster,
                             idle_minutes_to_autostop=self.autodown_minutes, down=True)
        with self._lock:
            self._requests[cluster] = request
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            with (self.log_dir / f"{cluster}.log").open("a", encoding="utf-8") as log:
                result = sky.stream_and_get(request, output_stream=log)
        finally:
            with self._lock:
                self._requests.pop(cluster, None)
        job_id = result[0] if result else None
        if job_id is None:
            raise LaunchError(f"SkyPilot launched {cluster} but submitted no job")
        return int(job_id)

    def status(self, cluster: str, job_id: int) -> JobState:
        """``sky.job_status`` of the job, as a phase."""
        statuses = self.sky.get(self.sky.job_status(cluster, [job_id]))
        status = statuses.get(job_id)
        name = "no such job" if status is None else str(getattr(status, "value", status))
        phase: Phase = _PHASES.get(name, "failed")
        return JobState(phase, name)

    def logs(self, cluster: str, job_id: int) -> str:
        """The job's whole output (``sky.tail_logs`` without following)."""
        out = io.StringIO()
        self.sky.tail_logs(cluster, job_id, False, output_stream=out)
        return out.getvalue()

    def down(self, cluster: str) -> None:
        """Cancel the cluster's launch if it is still in progress, then ``sky.down`` it."""
        sky = self.sky
        with self._lock:
            request = self._requests.get(cluster)
        if request is not None:
            try:
                sky.get(sky.api_cancel(request, silent=True))
            except Exception:  # noqa: BLE001, S110 - finished meanwhile: the down follows
                pass
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            with (self.log_dir / f"{cluster}.log").open("a", encoding="utf-8") as log:
                sky.stream_and_get(sky.down(cluster), output_stream=log)
        except self.exceptions.ClusterDoesNotExist:
            return
