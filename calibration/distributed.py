"""Data-parallel calibration: re-launch the sweep under torchrun, one process per GPU.

The parent (``gacost calibrate --nproc N``) writes the request to a JSON file and runs
``python -m torch.distributed.run --standalone --nproc-per-node N -m calibration.distributed
REQUEST.json``. Every worker builds the same model (same seed) and trains through TRL's
trainer, which wraps it in DDP (gloo on the CPU, NCCL on CUDA), so each timed update
includes the gradient all-reduce. Rank 0 decides when a split stops (broadcast to all
ranks, so they stop together) and alone writes the profile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from advisor.errors import CalibrationError, GacostError
from advisor.job import parse_job


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


def _request_dict(req: Any) -> dict[str, Any]:
    return {
        "job": req.job.model_dump(exclude_unset=True),
        "out": str(req.out) if req.out is not None else None,
        "options": {**asdict(req.options), "splits": [list(s) for s in req.options.splits]},
        "device": req.device,
        "resume": req.resume,
        "weights": req.weights,
        "data": req.data,
        "tokenizer": req.tokenizer,
        "nproc": req.nproc,
    }


def _request_from(data: dict[str, Any]) -> Any:
    from calibration.run import CalibrateRequest
    from calibration.sweep import SweepOptions

    opts = dict(data["options"])
    opts["splits"] = tuple((int(m), int(k)) for m, k in opts["splits"])
    return CalibrateRequest(
        job=parse_job(data["job"], origin="calibration request"),
        out=Path(data["out"]) if data["out"] else None,
        options=SweepOptions(**opts),
        device=data["device"],
        resume=bool(data["resume"]),
        weights=data["weights"],
        data=data["data"],
        tokenizer=data["tokenizer"],
        nproc=int(data["nproc"]),
    )


def launch(req: Any, out: Path) -> None:
    """Run ``req`` under torchrun with ``req.nproc`` workers; rank 0 writes ``out``."""
    from dataclasses import replace

    with tempfile.TemporaryDirectory(prefix="gacost-ddp-") as tmp:
        path = Path(tmp) / "request.json"
        path.write_text(json.dumps(_request_dict(replace(req, out=out))), encoding="utf-8")
        cmd = [
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={req.nproc}", "-m", "calibration.distributed", str(path),
        ]
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
        errors: list[str] = []
        proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
        assert proc.stderr is not None
        try:
            for line in proc.stderr:
                if line.startswith("error: "):
                    errors.append(line.strip().removeprefix("error: "))
                elif not req.options.progress and _noise(line):
                    continue
                sys.stderr.write(line)
            code = proc.wait()
        except KeyboardInterrupt:
            proc.wait()  # torchrun forwards the signal; rank 0 keeps the measured splits
            from calibration.sweep import CalibrationInterrupted

            raise CalibrationInterrupted(
                f"interrupted: the splits measured so far are kept in {out}; run again with "
                "--resume to finish"
            ) from None
    if code != 0:
        if errors:
            raise CalibrationError(errors[0])
        raise CalibrationError(
            f"--nproc: the torchrun calibration failed (exit {code}); see the messages above"
        )


def _noise(line: str) -> bool:
    """torchrun's and the workers' routine warnings, hidden with ``--quiet``."""
    return "OMP_NUM_THREADS" in line or line.startswith(("W1", "W0", "*****", "  warnings"))


def main(argv: list[str] | None = None) -> int:
    """Worker entry point: ``python -m calibration.distributed REQUEST.json``."""
    args = sys.argv[1:] if argv is None else argv
    try:
        from calibration.run import calibrate

        data = json.loads(Path(args[0]).read_text(encoding="utf-8"))
        calibrate(_request_from(data))
    except GacostError as exc:
        if is_main():
            print(f"error: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    finally:
        finish()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
