"""SkyPilot's own check of a task gacost wrote, and its launch: the one module that imports
``sky`` (``gacost[sky]``), and only inside its functions, so importing it costs nothing.

:func:`resolve` loads the task with SkyPilot's parser (``sky.Task.from_yaml_config``) and
asks SkyPilot's catalog code, for each of its resources, what the optimizer asks before a
launch: is the instance type and accelerator pair feasible on that cloud (for the task's
node count), which regions offer it (spot or not), and what it costs per hour. SkyPilot
reads its catalogs from ``~/.sky/catalogs/v8/<cloud>/vms.csv`` (under
``$SKY_RUNTIME_DIR`` when set) and fetches a missing one over the network.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from gacost.base.errors import LaunchError

INSTALL = "pip install 'gacost[sky]'"
AUTODOWN_MINUTES = 60  # an on-demand cluster goes down after this long idle (fetch profiles)


def require_sky() -> ModuleType:
    """The ``sky`` module, or a one-line error saying how to install it."""
    os.environ.setdefault("SKYPILOT_DISABLE_USAGE_COLLECTION", "1")
    try:
        import sky
    except ImportError:
        raise LaunchError(f"--sky-task needs SkyPilot, which is not installed; {INSTALL}") from None
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
