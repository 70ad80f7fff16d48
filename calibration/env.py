"""Facts about the machine a calibration ran on (GPU, host, driver, library versions)."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path

import torch

from gacost.base.gpu_names import canonical_gpu
from gacost.base.profile import HOST_PROBE_KEY
from gacost.base.records import GIB

LIBRARIES = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "bitsandbytes")


@dataclass(frozen=True)
class Environment:
    """What ``describe`` found."""

    gpu: str
    raw_gpu_name: str
    memory_gib: float
    host: dict[str, str] = field(default_factory=dict)
    software: dict[str, str] = field(default_factory=dict)

    def with_host_probe(self, ms: float) -> Environment:
        """This environment with the host probe's mean ms per task as a host fact."""
        return replace(self, host={**self.host, HOST_PROBE_KEY: f"{ms:.2f}"})


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


DMI = "/sys/class/dmi/id"


def machine_facts(dmi: str = DMI, cpuinfo: str = "/proc/cpuinfo") -> dict[str, str]:
    """What can be told of the machine beyond its CPU model: the system vendor and product
    from DMI (a cloud's VM names its provider: ``Amazon EC2``, ``Google Compute Engine``,
    ``Microsoft Corporation``/``Virtual Machine``, ``QEMU``...), and whether the CPU runs
    under a hypervisor. The host term of the model belongs to such a machine."""
    facts: dict[str, str] = {}
    for key, name in (("system_vendor", "sys_vendor"), ("system_product", "product_name")):
        try:
            value = Path(dmi, name).read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if value:
            facts[key] = value[:80]
    try:
        with open(cpuinfo, encoding="utf-8") as f:
            flags = next((ln for ln in f if ln.startswith("flags")), "")
        facts["hypervisor"] = "yes" if " hypervisor" in flags else "no"
    except OSError:
        pass
    return facts


def _driver() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return ""


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def describe(device: torch.device) -> Environment:
    """Describe the device and host."""
    host = {
        "cpu": _cpu_model(),
        "cpu_count": str(os.cpu_count() or 0),
        "platform": platform.platform(),
        **machine_facts(),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        raw = props.name
        memory = props.total_memory / GIB
        host.update(
            driver=_driver(),
            cuda=str(torch.version.cuda),
            compute_capability=f"{props.major}.{props.minor}",
        )
        gpu = canonical_gpu(raw, memory_gib=memory) or raw
    else:
        raw, gpu = "cpu", "CPU"
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
        except (ValueError, OSError, AttributeError):
            memory = 0.0
    return Environment(
        gpu=gpu, raw_gpu_name=raw, memory_gib=round(memory, 2), host=host, software=_versions()
    )
