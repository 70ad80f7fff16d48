"""Which process this is in a data-parallel calibration, and how the GPUs are linked.

Outside torchrun there is one process (rank 0, world size 1). torch is imported inside
the functions that need it.
"""

from __future__ import annotations

import os
import subprocess
from typing import Any

from gacost.base.errors import CalibrationError


def world_size() -> int:
    """The launcher's ``WORLD_SIZE`` (1 outside torchrun)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def rank() -> int:
    """This process's global rank (0 outside torchrun)."""
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def is_main() -> bool:
    """Whether this process writes files and makes the decisions (rank 0)."""
    return rank() == 0


def init(device_name: str) -> tuple[str, str]:
    """Join the process group; returns (device for this rank, backend)."""
    import torch
    import torch.distributed as dist

    cuda = device_name != "cpu" and torch.cuda.is_available()
    if device_name.startswith("cuda") and not cuda:
        raise CalibrationError("--device: no CUDA GPU is visible; use --device cpu")
    backend = "nccl" if cuda else "gloo"
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = f"cuda:{local}" if cuda else "cpu"
    if cuda:
        torch.cuda.set_device(local)
    if not dist.is_initialized():
        dist.init_process_group(backend=backend)
    return device, backend


def finish() -> None:
    """Leave the process group, if one was joined."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def agree(flag: bool) -> bool:
    """Rank 0's ``flag`` on every rank (all ranks must call it together)."""
    if world_size() == 1:
        return flag
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return flag
    box: list[Any] = [flag]
    dist.broadcast_object_list(box, src=0)
    return bool(box[0])


def interconnect() -> str:
    """How the GPUs are linked, from ``nvidia-smi topo -m`` ("n/a (cpu)" without a GPU).

    ``NV#`` entries are NVLink; ``PIX``/``PXB``/``PHB``/``NODE``/``SYS`` are PCIe paths.
    """
    try:
        out = subprocess.run(
            ["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=10, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return "n/a (cpu)"
    return summarise_topology(out)


def summarise_topology(text: str) -> str:
    """``nvlink (NV18)``, ``pcie (SYS)`` or ``unknown`` from a ``topo -m`` matrix (GPU-to-GPU
    cells only; NIC columns are ignored)."""
    header: list[str] = []
    links: set[str] = set()
    for line in text.splitlines():
        cells = line.split()
        if not cells:
            continue
        if not header and cells[0] == "GPU0" and not line[:1].strip():
            header = cells
            continue
        if not header or not cells[0].startswith("GPU"):
            continue
        for name, cell in zip(header, cells[1:], strict=False):
            if not name.startswith("GPU") or cell == "X":
                continue
            if (cell.startswith("NV") and cell[2:].isdigit()) or cell in PCIE_PATHS:
                links.add(cell)
    nv = sorted(c for c in links if c.startswith("NV"))
    if nv:
        return f"nvlink ({', '.join(nv)})"
    if links:
        return f"pcie ({', '.join(sorted(links))})"
    return "unknown"


PCIE_PATHS = ("PIX", "PXB", "PHB", "NODE", "SYS")
