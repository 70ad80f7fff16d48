"""The recommended plan as a SkyPilot task (``recommend --sky-task run.yaml``); pure, no
``sky`` import.

What it owns: which gacost providers SkyPilot 0.14 can launch, the name SkyPilot's
catalogs give each offer's accelerator, and the task itself:

- ``resources``: ``infra: <cloud>/<region>``, ``instance_type``, ``accelerators:
  <name>:<count>``, ``use_spot``. gacost's offers are rows of SkyPilot's v8 catalogs
  (:mod:`gacost.pricing.skypilot`), so the cloud, region and instance type are SkyPilot's
  own; only the GPU name is gacost's canonical one and is mapped back here.
- ``num_nodes``: the plan's instances. A run is indivisible and runs on one instance, so
  the nodes of one cluster share the runs: node ``r`` of ``N`` runs runs ``r, r+N, ...``
  one after another (every run of a ``recommend`` plan takes the same time, so this is the
  planner's packing). One task, one ``sky launch``; no chain of tasks.
- ``envs``: the split (``GACOST_MICRO_BATCH``, ``GACOST_GRAD_ACCUM``, and
  ``GACOST_WORLD_SIZE`` for a data-parallel plan, whose run line starts with ``torchrun
  --nproc_per_node``), ``GACOST_TORCH_COMPILE``/``GACOST_LIGER`` (``true``) when the plan
  turns them on, the run count, and where each run's profile goes
  (``GACOST_PROFILE``, one file per run, for ``GacostCallback``).
- ``setup``: installs this version of gacost with the ``calibrate`` extra, so the user's
  script can attach ``GacostCallback(os.environ["GACOST_PROFILE"])``.
- ``run``: the user's training command (``--train-command`` or the job's
  ``train_command``), once per run.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import yaml

from gacost import __version__
from gacost.advisor.planner import Plan
from gacost.base.errors import LaunchError
from gacost.base.records import Offer

SKYPILOT_VERSION = "0.14.0"

# gacost providers that SkyPilot 0.14 has a cloud for (sky/utils/registry.py's
# CLOUD_REGISTRY and sky/clouds/ of skypilot 0.14.0, read 2026-12-03; tests/test_sky_task.py
# checks this list against the installed SkyPilot). Daytona, Hyperstack, JarvisLabs, Lium
# and Spheron have catalogs in skypilot-catalog v8 but no cloud in SkyPilot 0.14.
LAUNCHABLE = frozenset({
    "aws", "azure", "cudo", "gcp", "hyperbolic", "lambda", "mithril", "nebius", "oci",
    "primeintellect", "runpod", "seeweb", "shadeform", "vast", "verda", "yotta",
})

# gacost GPU name -> SkyPilot's AcceleratorName, the name most catalogs give it; the
# exceptions per provider and instance type follow. Derived from the GPU rows of the v8
# catalogs of the clouds above (the rows the embedded snapshot is built from; every
# snapshot offer of a launchable provider is checked against them by
# tests/test_sky_task.py).
_SKY_NAMES: dict[str, str] = {
    "A10": "A10", "A100-40GB-PCIe": "A100", "A100-40GB-SXM": "A100",
    "A100-80GB-PCIe": "A100-80GB", "A100-80GB-SXM": "A100-80GB", "A100-NVL": "A100-80GB",
    "A10G": "A10G", "A16": "A16", "A30": "A30", "A40": "A40", "A800": "A800",
    "B200": "B200", "B300": "B300", "GB200": "GB200", "GB300": "GB300", "GH200": "GH200",
    "H100-NVL": "H100", "H100-PCIe": "H100", "H100-SXM": "H100",
    "H200-NVL": "NVIDIA-H200-NVL", "H200-SXM": "H200", "K80": "K80", "L4": "L4",
    "L40": "L40", "L40S": "L40S", "M60": "M60", "MI300X": "MI300X", "MI355X": "MI355X",
    "P100": "P100", "P4": "P4", "RADEON-MI25": "Radeon MI25",
    "RADEON-PRO-V520": "Radeon Pro V520", "RTX-2000-ADA": "RTX2000-Ada",
    "RTX-3060": "RTX3060", "RTX-3070": "RTX3070", "RTX-3090": "RTX3090",
    "RTX-4000-ADA": "RTX4000-Ada", "RTX-4090": "RTX4090", "RTX-5090": "RTX5090",
    "RTX-6000": "RTX6000", "RTX-6000-ADA": "RTX6000Ada", "RTX-A4000": "A4000",
    "RTX-A4500": "RTXA4500", "RTX-A5000": "RTXA5000", "RTX-A6000": "RTXA6000",
    "RTX-PRO-6000": "RTXPRO6000", "T4": "T4", "V100-PCIe-16GB": "V100",
    "V100-SXM2-16GB": "V100", "V100-SXM2-32GB": "V100-32GB",
}
_PROVIDER_NAMES: dict[tuple[str, str], str] = {
    ("cudo", "A100-80GB-PCIe"): "A100", ("cudo", "A100-80GB-SXM"): "A100",
    ("cudo", "H100-SXM"): "H100-SXM",
    ("lambda", "RTX-A6000"): "A6000", ("primeintellect", "RTX-A6000"): "A6000",
    ("runpod", "A100-80GB-SXM"): "A100-80GB-SXM", ("runpod", "H100-NVL"): "H100-NVL",
    ("runpod", "H100-SXM"): "H100-SXM", ("runpod", "H200-SXM"): "H200-SXM",
    ("runpod", "RTX-6000-ADA"): "RTX6000-Ada", ("runpod", "RTX-A4000"): "RTXA4000",
    ("seeweb", "A100-80GB-SXM"): "A100",
    ("shadeform", "RTX-A5000"): "A5000", ("shadeform", "RTX-A6000"): "A6000",
    ("shadeform", "RTX-PRO-6000"): "RTXPro6000",
    ("vast", "A100-80GB-PCIe"): "A100", ("vast", "RTX-6000-ADA"): "RTX6000-Ada",
    ("vast", "RTX-PRO-6000"): "RTXPRO6000WS",
    ("verda", "RTX-6000-ADA"): "RTX-6000-Ada", ("verda", "RTX-PRO-6000"): "RTX-PRO-6000",
}
# Instance types whose accelerator differs from their provider's usual name for the GPU.
_INSTANCE_NAMES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("aws", re.compile(r"^g5g\."), "T4g"),  # Graviton + T4G
    ("runpod", re.compile(r"_RTXPRO6000-WK_"), "RTXPRO6000-WK"),
)
# GCP machine families with built-in GPUs, as SkyPilot's GCP catalog names them (the same
# families as pricing/skypilot.py's _GCP_HOSTS; a3-megagpu is SkyPilot's H100-MEGA).
_GCP_BUILTIN: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^a2-(highgpu|megagpu)-\d+g$"), "A100"),
    (re.compile(r"^a2-ultragpu-\d+g$"), "A100-80GB"),
    (re.compile(r"^a3-(highgpu|edgegpu)-\d+g$"), "H100"),
    (re.compile(r"^a3-megagpu-\d+g$"), "H100-MEGA"),
    (re.compile(r"^a3-ultragpu-\d+g$"), "H200"),
    (re.compile(r"^a4-highgpu-\d+g$"), "B200"),
    (re.compile(r"^g2-standard-\d+$"), "L4"),
)
# Where gacost's price data corrects a catalog's GPU count (pricing/skypilot.py's
# _COUNT_FIXES), SkyPilot still checks the task's accelerators against its catalog's count.
_CATALOG_COUNTS: dict[tuple[str, str], int] = {
    ("azure", "Standard_ND96isr_H100_v5"): 12,  # 8 H100s; the catalog says 12
}
# GCP's general n1 hosts with attached GPUs: gacost names the offer "<host>+<N>x<GPU>".
_GCP_ATTACHED = re.compile(r"^(n1-[a-z]+-\d+)\+(\d+)x(.+)$")

_LAUNCHERS = ("torchrun", "accelerate", "deepspeed")  # commands that start their processes
_PYTHON = re.compile(r"^python(3(\.\d+)?)?$")
PROFILE_DIR = "gacost-profiles"  # under the remote home; one profile per run
WIRE = "gacost.calibration.wire"  # runs a python command with GacostCallback attached


class _Dumper(yaml.SafeDumper):
    """Safe YAML with multi-line strings (setup, run) as literal blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def sky_resources(offer: Offer) -> tuple[str, str, int]:
    """``(instance type, accelerator name, count)`` of ``offer`` as SkyPilot names them."""
    if offer.provider not in LAUNCHABLE:
        can = sorted(LAUNCHABLE)
        raise LaunchError(
            f"--sky-task: the recommended offer is on {offer.provider}, which SkyPilot "
            f"{SKYPILOT_VERSION} cannot launch; list the providers it can in the job's "
            f"providers: ({', '.join(can)})"
        )
    count = offer.gpu_count
    if count < 1 or count != int(count):
        raise LaunchError(f"--sky-task: {offer.instance_type} has {count:g} GPUs; SkyPilot "
                          "launches whole GPUs only")
    instance = offer.instance_type
    if offer.provider == "gcp":
        attached = _GCP_ATTACHED.match(instance)
        if attached:
            return attached.group(1), attached.group(3), int(attached.group(2))
        for pattern, name in _GCP_BUILTIN:
            if pattern.match(instance):
                return instance, name, int(count)
    for provider, pattern, name in _INSTANCE_NAMES:
        if provider == offer.provider and pattern.search(instance):
            return instance, name, int(count)
    usual = _PROVIDER_NAMES.get((offer.provider, offer.gpu)) or _SKY_NAMES.get(offer.gpu)
    if usual is None:
        raise LaunchError(f"--sky-task: no SkyPilot accelerator name known for {offer.gpu} "
                          f"({offer.provider} {instance}); report it")
    return instance, usual, _CATALOG_COUNTS.get((offer.provider, instance), int(count))


def sky_region(offer: Offer) -> str:
    """The offer's region as SkyPilot's catalog spells it: Vast's ``"State, CC,
    continent"`` with the state empty is ``", CC, continent"`` there (gacost drops the
    empty part: pricing/skypilot.py's _clean_region)."""
    if offer.provider == "vast" and len(offer.region.split(",")) == 2:
        return f", {offer.region}"
    return offer.region


def run_line(command: str, world: int) -> str:
    """The user's command as one run runs it. A ``python ...`` command runs through
    :mod:`gacost.calibration.wire` (``GacostCallback`` attached to its trainers, so the run
    writes ``$GACOST_PROFILE``), under ``torchrun --nproc_per_node`` for a data-parallel
    plan; a command that starts its own processes, or any other for one GPU, as given."""
    try:
        words = shlex.split(command)
    except ValueError as exc:  # an unclosed quote
        raise LaunchError(f"--train-command: cannot split {command!r} into words ({exc})"
                          ) from None
    if words and words[0] in _LAUNCHERS:
        return command  # it starts its own processes (and reads GACOST_WORLD_SIZE)
    if words and _PYTHON.match(words[0]):
        rest = command.lstrip()[len(words[0]):].lstrip()
        if world == 1:
            return f"{words[0]} -m {WIRE} {rest}"
        return f"torchrun --nproc_per_node=$GACOST_WORLD_SIZE -m {WIRE} {rest}"
    if world == 1:
        return command
    raise LaunchError(
        f"--train-command: a {world}-GPU plan runs the script under `torchrun "
        f"--nproc_per_node={world}`; give it as `python train.py ...` (or start it with "
        "torchrun or accelerate launch yourself)"
    )


def task_config(plan: Plan, command: str, *, name: str = "gacost-run") -> dict[str, Any]:
    """The SkyPilot task (as its YAML's mapping) running every run of ``plan``."""
    if not command.strip():
        raise LaunchError("--sky-task: the training command is empty; give --train-command "
                          "'python train.py ...' or train_command: in the job")
    if not plan.offer.instance_type:
        raise LaunchError("--sky-task: the recommended plan has no offer (instance type) to "
                          "launch")
    if len(plan.groups) != 1:
        raise LaunchError("--sky-task: the plan has several run groups (a sweep); write "
                          "one task per group's job")
    instance, accelerator, count = sky_resources(plan.offer)
    e = plan.estimate
    envs: dict[str, str] = {
        "GACOST_MICRO_BATCH": str(e.micro_batch),
        "GACOST_GRAD_ACCUM": str(e.grad_accum),
    }
    if e.world_size > 1:
        envs["GACOST_WORLD_SIZE"] = str(e.world_size)
    for lever in e.levers:  # the machinery options the plan turned on ("auto" in the job)
        envs[f"GACOST_{lever.upper()}"] = "true"
    envs["GACOST_RUNS"] = str(plan.runs)
    resources: dict[str, Any] = {
        "infra": f"{plan.offer.provider}/{sky_region(plan.offer)}",
        "instance_type": instance,
        "accelerators": f"{accelerator}:{count}",
        "use_spot": plan.pricing == "spot",
    }
    config: dict[str, Any] = {"name": name, "workdir": ".", "resources": resources}
    if plan.instances > 1:
        config["num_nodes"] = plan.instances
    config["envs"] = envs
    config["setup"] = (
        "set -e\n"
        f"pip install 'gacost[calibrate]=={__version__}'\n"
    )
    config["run"] = (
        "set -e\n"
        f'mkdir -p "$HOME/{PROFILE_DIR}"\n'
        'for i in $(seq "${SKYPILOT_NODE_RANK:-0}" "${SKYPILOT_NUM_NODES:-1}" '
        '"$((GACOST_RUNS - 1))"); do\n'
        "  export GACOST_RUN_INDEX=$i\n"
        f'  export GACOST_PROFILE="$HOME/{PROFILE_DIR}/run-$i.json"\n'
        f"  {run_line(command, e.world_size)}\n"
        "done\n"
    )
    return config


def render_task(plan: Plan, config: dict[str, Any]) -> str:
    """The task file of :func:`task_config`'s ``config``: a header saying what it runs and
    how to launch it, then the YAML."""
    e = plan.estimate
    nodes = f" on {plan.instances} instances" if plan.instances > 1 else ""
    header = [
        f"# SkyPilot task written by gacost {__version__} for SkyPilot {SKYPILOT_VERSION}:",
        f"# {plan.label}, split {e.split}"
        + (f" x {e.world_size} GPUs" if e.world_size > 1 else "")
        + f", {plan.runs} run(s){nodes}.",
        "# Your script reads GACOST_MICRO_BATCH / GACOST_GRAD_ACCUM as "
        "per_device_train_batch_size /",
        "# gradient_accumulation_steps. "
        + (f"A python command runs through `-m {WIRE}`, which attaches GacostCallback"
           if WIRE in config["run"] else
           'Your script attaches GacostCallback(os.environ["GACOST_PROFILE"])'),
        "# so each run writes its profile to $GACOST_PROFILE.",
        "# Launch: sky launch -c gacost-run <this file>   (spot: sky jobs launch <this file>)",
        f"# Profiles: rsync -Pavz gacost-run:{PROFILE_DIR}/ ./{PROFILE_DIR}/",
        f"#   then: gacost recommend --job JOB --profile {PROFILE_DIR}/run-0.json",
    ]
    body = yaml.dump(config, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     width=1000)
    return "\n".join(header) + "\n" + body
