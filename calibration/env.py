"""Facts about the machine a calibration ran on (GPU, host, driver, library versions)."""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass, field
from importlib import metadata

import torch

from gacost.base.gpu_names import canonical_gpu
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


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


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
