"""What a calibration is asked to do: the sweep options and the whole request, as plain
records (no torch), and their JSON form for the torchrun workers; where the profile goes
(the default path) and whether an existing file there may be overwritten."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gacost.base.errors import CalibrationError, DataError, GacostError, JobSpecError
from gacost.base.job import Job, parse_job
from gacost.base.profile import Workload, read_profile
from gacost.base.split import Split

ONE_COMPILED_SPLIT = (
    "torch.compile: one split per process (a second trainer in the same process ran its "
    "split uncompiled on the H200); run the same command with --resume for the next split"
)


class CalibrationInterrupted(GacostError):
    """Ctrl-C during a sweep; the splits measured so far are kept."""

    exit_code = 130


@dataclass(frozen=True)
class SweepOptions:
    """How hard to measure."""

    splits: tuple[Split, ...]
    warmup: int = 3
    min_timed: int = 5
    max_timed: int = 40
    max_seconds: float = 12.0
    rel_tol: float = 0.02
    drop_margin: float = 0.15
    min_timed_for_drop: int = 3
    vram_limit_gib: float | None = None
    seed: int = 42
    progress: bool = True
    trace: bool = True  # sample NVML per split; profile 1-2 extra updates (calibration.trace)
    trace_all: bool = False  # profile every split, not only the first one measured
    passes: int = 1  # timed passes over the splits (a second one in reverse order; see sweep)
    # one process per split (a fresh process, as the user's own run is: see calibration.run)
    # or every split in this process; "auto" is a process per split on a GPU
    isolation: str = "auto"

    def __post_init__(self) -> None:
        # (m, k) pairs from a script or a test become Splits, which print as "4x2"
        object.__setattr__(self, "splits", tuple(Split(*s) for s in self.splits))


@dataclass(frozen=True)
class CalibrateRequest:
    """Everything the command line decides."""

    job: Job
    out: Path | None
    options: SweepOptions
    device: str = "auto"
    resume: bool = False
    weights: str | None = None
    data: str | None = None
    tokenizer: str | None = None
    nproc: int = 1  # data-parallel processes (GPUs); > 1 re-launches under torchrun
    force: bool = False  # overwrite the output even if it is not a profile of this workload
    host_probe_ms: float | None = None  # the host's speed, probed before torch was imported


def request_to_dict(req: CalibrateRequest) -> dict[str, Any]:
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
        "force": req.force,
        "host_probe_ms": req.host_probe_ms,
    }


def request_from_dict(data: dict[str, Any]) -> CalibrateRequest:
    opts = dict(data["options"])
    opts["splits"] = tuple(Split(int(m), int(k)) for m, k in opts["splits"])
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
        force=bool(data.get("force", False)),
        host_probe_ms=data.get("host_probe_ms"),
    )


def default_out(gpu: str, model: str, fingerprint: str, world: int = 1) -> Path:
    """``<gpu>[x<N>]--<model>--<fingerprint>.json`` in the current folder."""
    short = re.sub(r"[^A-Za-z0-9._-]+", "_", model.split("/")[-1])
    count = f"x{world}" if world > 1 else ""
    return Path(f"{gpu}{count}--{short}--{fingerprint[:8]}.json")


def check_out(out: Path, workload: Workload, force: bool, default: bool = False) -> None:
    """The profile may go to ``out``: a new file, or a profile of this workload (any GPU:
    ``--resume`` checks the GPU); anything else (another workload's profile, a job file,
    ...) only with ``force``. ``default`` says ``out`` is the default path, not ``--out``."""
    name = f"{out} (the default --out)" if default else f"--out: {out}"
    instead = "pass another --out" if default else "choose another --out"
    if out.is_dir():
        raise CalibrationError(f"{name} is a folder; give a file name like h200.json")
    if not out.parent.expanduser().is_dir() and str(out.parent):
        return  # a new folder: the writer creates it
    if not out.exists() or force:
        return
    try:
        existing = read_profile(out)
    except DataError:
        raise CalibrationError(
            f"{name} exists and is not a gacost profile; {instead}, or pass --force to "
            "overwrite it"
        ) from None
    if existing.fingerprint != workload.fingerprint():
        raise CalibrationError(
            f"{name} holds a profile of another workload ({existing.workload.model}, "
            f"{existing.workload.method}, sequence_length {existing.workload.sequence_length}"
            f"); {instead}, or pass --force to overwrite it"
        )


def parse_splits(text: str, effective_batch: int, world: int = 1) -> tuple[Split, ...]:
    """``"1x4,2x2"`` -> (1x4, 2x2), sorted, each checked: ``m * k * world = effective_batch``."""
    if not text.strip():
        raise CalibrationError("--splits: give at least one split, e.g. 1x4,2x2")
    out = []
    for part in text.split(","):
        try:
            split = Split.parse(part)
        except JobSpecError as exc:
            raise CalibrationError(f"--splits: {exc}") from None
        if split.effective_batch * world != effective_batch:
            per = f" with {world} processes" if world > 1 else ""
            raise CalibrationError(
                f"--splits: {split}{per} does not multiply to the job's effective_batch "
                f"{effective_batch}"
            )
        out.append(split)
    return tuple(sorted(set(out)))


def parse_size_gib(text: str) -> float:
    """``16GiB``, ``16GB`` (taken as GiB), ``24g`` or ``16`` -> GiB."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(gib|gb|g)?\s*", text.lower())
    if not found or float(found.group(1)) <= 0:
        raise CalibrationError(f"--vram-limit: '{text}' is not a size like 16GiB")
    return float(found.group(1))
