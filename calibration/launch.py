"""Data-parallel calibration, parent side: re-launch the sweep under torchrun.

``gacost calibrate --nproc N`` writes the request to a JSON file and runs
``python -m torch.distributed.run --standalone --nproc-per-node N -m
gacost.calibration.worker REQUEST.json``. Every worker builds the same model (same seed)
and trains through TRL's trainer, which wraps it in DDP (gloo on the CPU, NCCL on CUDA),
so each timed update includes the gradient all-reduce. Rank 0 decides when a split stops
(broadcast to all ranks, so they stop together) and alone writes the profile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from gacost.base.errors import CalibrationError
from gacost.calibration.request import CalibrateRequest, CalibrationInterrupted, request_to_dict


def launch(req: CalibrateRequest, out: Path) -> None:
    """Run ``req`` under torchrun with ``req.nproc`` workers; rank 0 writes ``out``."""
    with tempfile.TemporaryDirectory(prefix="gacost-ddp-") as tmp:
        path = Path(tmp) / "request.json"
        path.write_text(json.dumps(request_to_dict(replace(req, out=out))), encoding="utf-8")
        cmd = [
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={req.nproc}", "-m", "gacost.calibration.worker", str(path),
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
