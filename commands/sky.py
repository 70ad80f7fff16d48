"""``recommend --sky-task FILE [--train-command CMD] [--force] [--launch [--yes]]``: write
the recommended plan as a SkyPilot task, checked by SkyPilot first (:mod:`gacost.launch`),
and with ``--launch`` hand it to SkyPilot.

The file is written atomically, only after SkyPilot has resolved the task to the plan's
cloud, region and instance type; an existing file is replaced only with ``--force``.
``--launch`` asks before it spends money (what the plan costs), unless ``--yes``; spot
plans run as managed jobs (SkyPilot's spot recovery), on-demand plans on a cluster.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gacost.advisor.planner import Plan
from gacost.base.atomic import write_atomic
from gacost.base.errors import LaunchError
from gacost.base.job import Job

if TYPE_CHECKING:
    from gacost.launch.skypilot import Launcher

# gacost.launch is imported only when --sky-task is given: a plain recommend loads none of it


def _sky_launcher() -> Launcher:
    from gacost.launch.skypilot import SkyLauncher

    return SkyLauncher()


# how --launch reaches SkyPilot; tests replace it with a fake
launcher_factory: Callable[[], Launcher] = _sky_launcher


def add_sky_flags(p: argparse.ArgumentParser) -> None:
    """``--sky-task``, ``--train-command`` and ``--force``."""
    p.add_argument("--sky-task", metavar="FILE",
                   help="also write the recommended plan as a SkyPilot task (YAML; checked "
                        "by SkyPilot's catalog code first; needs the sky extra)")
    p.add_argument("--train-command", metavar="CMD",
                   help="the command each run runs in the task (default: the job's "
                        "train_command), e.g. 'python train.py'")
    p.add_argument("--force", action="store_true",
                   help="overwrite an existing --sky-task file")
    p.add_argument("--launch", action="store_true",
                   help="with --sky-task: also launch the task with SkyPilot (asks first)")
    p.add_argument("--yes", action="store_true", help="--launch without asking")


def check_sky_path(args: argparse.Namespace) -> None:
    """Before any work: ``--sky-task`` names a file that may be written, SkyPilot is
    installed, and ``--train-command`` comes with ``--sky-task``."""
    if args.sky_task is None:
        for flag, value in (("--train-command", args.train_command),
                            ("--launch", args.launch or None), ("--force", args.force or None)):
            if value is not None:
                raise LaunchError(f"{flag} applies only with --sky-task FILE")
        return
    if args.launch and not args.yes and not sys.stdin.isatty():
        raise LaunchError("--launch asks before it spends money; pass --yes to launch "
                          "without asking")
    path = Path(args.sky_task)
    if path.is_dir():
        raise LaunchError(f"--sky-task: {path} is a folder; give a file name like run.yaml")
    if path.exists() and not args.force:
        raise LaunchError(f"--sky-task: {path} exists; choose another file, or pass --force "
                          "to overwrite it")
    from gacost.launch.skypilot import require_sky

    require_sky()


def write_sky_task(args: argparse.Namespace, job: Job, plan: Plan) -> str | None:
    """Write the task for ``plan`` to ``--sky-task``; the line the report ends with."""
    if args.sky_task is None:
        return None
    command = args.train_command if args.train_command is not None else job.train_command
    if command is None:
        raise LaunchError("--sky-task: give the command each run runs: --train-command "
                          "'python train.py ...' or train_command: in the job")
    if job.sweep is not None:
        raise LaunchError("--sky-task: this job has a sweep: section and recommend plans one "
                          "run of the base job; write the task from a job without sweep:")
    from gacost.launch.sky_task import render_task, sky_region, task_config
    from gacost.launch.skypilot import resolve

    config = task_config(plan, command)
    resolved = resolve(config)
    for r in resolved:
        if (r.cloud, r.region, r.instance_type) != (plan.provider, sky_region(plan.offer),
                                                     config["resources"]["instance_type"]):
            raise LaunchError(f"SkyPilot resolves the task to {r.cloud} {r.region} "
                              f"{r.instance_type}, not the plan's {plan.label}; report it")
    path = Path(args.sky_task)
    write_atomic(path, render_task(plan, config))
    cost = f"; SkyPilot prices it at ${resolved[0].hourly_cost:.3f}/h" if resolved else ""
    line = f"sky task: {path} ({plan.label}{cost})"
    if not args.launch:
        return (f"{line}; `sky launch -c gacost-run {path}` runs it (README, 'Launching "
                "with SkyPilot')")
    return f"{line}\nlaunched: {launch(args, plan, config)}"


def launch(args: argparse.Namespace, plan: Plan, config: dict[str, object]) -> str:
    """Ask (unless ``--yes``), then launch ``config`` through :data:`launcher_factory`."""
    if not args.yes:
        question = (f"launch {plan.label} x {plan.instances} instance(s), {plan.runs} run(s), "
                    f"about ${plan.cost:.2f} ({plan.time_source})? [y/N] ")
        print(question, end="", file=sys.stderr, flush=True)
        try:
            answer = input()
        except EOFError:
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            raise LaunchError("--launch: not launched (answered no); the task file is "
                              "written")
    name = str(config["name"])
    try:
        return launcher_factory().launch(dict(config), name=name,
                                         managed=plan.pricing == "spot")
    except LaunchError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever SkyPilot raises, one line
        text = " ".join(str(exc).split())[:300] or exc.__class__.__name__
        raise LaunchError(f"SkyPilot could not launch {plan.label}: {text}; the task file "
                          "is written, `sky launch` it by hand after fixing that "
                          "(`sky check` lists the enabled clouds)") from None
