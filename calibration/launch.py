"""Calibration in other processes, parent side: one process per split, or torchrun.

``one_split_per_process``: each split is measured by ``python -m gacost.calibration.worker
REQUEST.json`` in a fresh process, as the user's own script runs its split, and the
process adds its split to the same profile (``--resume`` semantics: the best split so far,
an OOM boundary and the trace already taken carry over through the file). Two splits or
two trainers sharing one process read 10-31% fast against a plain TRL script on the H200
(``shared/research/measurements-2026-12-03.md``); a process per split costs a model load
per split (seconds for a few-B model; see bench/RESULTS.md).

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
from gacost.base.profile import OWN_PROCESS, read_profile, write_profile
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
            raise _interrupted(out) from None
    if code != 0:
        if errors:
            raise CalibrationError(errors[0])
        raise CalibrationError(
            f"--nproc: the torchrun calibration failed (exit {code}); see the messages above"
        )


PER_PROCESS = OWN_PROCESS  # said in the profile's provenance
ERROR_PREFIX = b"error: "


def one_split_per_process(req: CalibrateRequest, out: Path) -> None:
    """Measure ``req``'s splits (largest micro-batch first) one process each, into ``out``."""
    fresh = not req.resume
    with tempfile.TemporaryDirectory(prefix="gacost-split-") as tmp:
        for split in sorted(req.options.splits, reverse=True):
            one = replace(
                req, out=out, resume=not fresh,
                options=replace(req.options, splits=(split,), isolation="shared"),
            )
            path = Path(tmp) / f"request-{split}.json"
            path.write_text(json.dumps(request_to_dict(one)), encoding="utf-8")
            cmd = [sys.executable, "-m", "gacost.calibration.worker", str(path)]
            proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
            try:
                errors = _pump(proc)
                code = proc.wait()
            except KeyboardInterrupt:
                proc.wait()  # the child got the same SIGINT and keeps what it measured
                raise _interrupted(out) from None
            if code == CalibrationInterrupted.exit_code:
                raise _interrupted(out)
            if code != 0:
                raise CalibrationError(
                    f"split {split}: " + (errors[0] if errors else
                                          f"its process failed (exit {code}); see above")
                )
            fresh = False
    profile = read_profile(out)
    if PER_PROCESS not in profile.provenance:
        write_profile(out, replace(profile, provenance=f"{profile.provenance}; {PER_PROCESS}"))


def _interrupted(out: Path) -> CalibrationInterrupted:
    return CalibrationInterrupted(
        f"interrupted: the splits measured so far are kept in {out}; run again with --resume "
        "to finish"
    )


def _pump(proc: subprocess.Popen[bytes]) -> list[str]:
    """Copy the child's stderr through (progress bars included) and keep back its
    ``error:`` lines, which the parent reports as its own one line."""
    assert proc.stderr is not None
    errors: list[str] = []
    pending = b""
    while chunk := proc.stderr.read1(4096):  # type: ignore[attr-defined]
        pending += chunk
        while True:
            cut = min((i for i in (pending.find(b"\n"), pending.find(b"\r")) if i >= 0),
                      default=-1)
            if cut < 0:
                break
            segment, pending = pending[: cut + 1], pending[cut + 1 :]
            if segment.startswith(ERROR_PREFIX):
                errors.append(segment.decode(errors="replace").strip()[len(ERROR_PREFIX) :])
            else:
                _write(segment)
        if pending and not ERROR_PREFIX.startswith(pending[: len(ERROR_PREFIX)]):
            _write(pending)  # a progress bar's line so far; an error line waits for its end
            pending = b""
    if pending.startswith(ERROR_PREFIX):
        errors.append(pending.decode(errors="replace").strip()[len(ERROR_PREFIX) :])
    elif pending:
        _write(pending)
    return errors


def _write(data: bytes) -> None:
    stream = getattr(sys.stderr, "buffer", None)
    if stream is not None:
        stream.write(data)
    else:  # a captured text stream (tests)
        sys.stderr.write(data.decode(errors="replace"))
    sys.stderr.flush()


def _noise(line: str) -> bool:
    """torchrun's and the workers' routine warnings, hidden with ``--quiet``."""
    return "OMP_NUM_THREADS" in line or line.startswith(("W1", "W0", "*****", "  warnings"))
