"""``gacost calibrate`` end to end: job -> model on the device -> sweep -> profile."""

from __future__ import annotations

import time
import warnings
from dataclasses import replace
from pathlib import Path

import torch

from gacost.base import models
from gacost.base.errors import CalibrationError
from gacost.base.profile import Profile, SplitResult, read_profile
from gacost.base.records import GIB
from gacost.calibration import builder, launch, ranks, trace
from gacost.calibration.env import describe
from gacost.calibration.request import CalibrateRequest, SweepOptions, check_out, default_out
from gacost.calibration.sweep import (
    apply_vram_limit,
    new_profile,
    run_sweep,
    save_profile,
)


def quiet_libraries() -> None:
    """Keep library logs and dataset progress bars out of the calibration output."""
    import datasets
    import transformers

    transformers.logging.set_verbosity_error()
    datasets.disable_progress_bars()
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"transformers\.")


def pick_device(name: str) -> torch.device:
    """``auto`` is the first CUDA GPU if any, else the CPU."""
    if name == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise CalibrationError("--device: no CUDA GPU is visible; use --device cpu")
    try:
        return torch.device(name)
    except RuntimeError as exc:
        raise CalibrationError(f"--device: {exc}") from exc


def calibrate(req: CalibrateRequest) -> tuple[Profile, Path]:
    """Run the calibration and return the profile and where it was written."""
    started = time.perf_counter()
    quiet_libraries()
    job = req.job
    model_name, cfg = models.load_model_config(job.model)
    world = ranks.world_size()
    launcher = req.nproc > 1 and world == 1
    if req.nproc < 1:
        raise CalibrationError("--nproc: give 1 or more processes (one per GPU)")
    if job.effective_batch % max(req.nproc, world):
        raise CalibrationError(
            f"--nproc: effective_batch {job.effective_batch} is not divisible by "
            f"{max(req.nproc, world)} processes"
        )
    backend = ""
    if world > 1:
        device_name, backend = ranks.init(req.device)
        device = pick_device(device_name)
    else:
        device = pick_device(req.device)
    builder.check_precision(job, device)
    env = describe(device)
    if req.host_probe_ms is not None:
        env = env.with_host_probe(req.host_probe_ms)
    workload = job.workload(model_name)
    out = req.out
    if out is None:  # --out was checked before torch was imported; the default path now
        out = default_out(env.gpu, model_name, workload.fingerprint(), max(req.nproc, world))
        check_out(out, workload, req.force, default=True)
    options = req.options
    tokenizer_source = _tokenizer_source(req) if req.data else None
    if launcher:  # re-run this request under torchrun, one process per GPU
        launch.launch(req, out)
        return read_profile(out), out
    if one_process_per_split(req.options, device, world):
        launch.one_split_per_process(req, out)
        return read_profile(out), out
    profile = _resume(out, workload.fingerprint(), env.gpu, world) if req.resume else None
    if profile is None:
        profile = new_profile(workload, env, options)
        if world > 1:
            profile = replace(
                profile,
                gpu_count=world,
                host={**profile.host, "interconnect": ranks.interconnect(),
                      "backend": backend},
                provenance=f"{profile.provenance}; data parallel over {world} processes "
                f"(torchrun, {backend}, DDP), per-GPU micro-batch",
            )
    apply_vram_limit(device, options.vram_limit_gib)
    torch.manual_seed(options.seed)
    try:
        base = builder.build_model(cfg, job, device, req.weights)
    except torch.OutOfMemoryError as exc:  # the weights alone do not fit: every split is OOM
        note = f"out of memory loading the weights: {str(exc).splitlines()[0][:120]}"
        peak = round(torch.cuda.max_memory_reserved(device) / GIB, 3)
        for m, k in options.splits:
            profile = profile.with_split(
                SplitResult(m, k, "oom", peak_reserved_gib=peak, note=note)
            )
        profile = replace(profile, gpu_seconds=round(time.perf_counter() - started, 3))
        save_profile(out, profile)
        return profile, out
    traced = trace.MAX_UPDATES if options.trace else 0  # the trace's extra updates
    n = job.effective_batch * (options.warmup + options.max_timed + traced)
    if req.data:
        tok = builder.load_tokenizer(tokenizer_source or job.model)
        dataset = builder.file_dataset(req.data, tok, job.sequence_length, n)
    else:
        tok = builder.placeholder_tokenizer()
        vocab = int(cfg.get("vocab_size", 32000))
        dataset = builder.synthetic_dataset(n, job.sequence_length, vocab, options.seed)
    builder.align_special_tokens(base, tok)
    model = builder.model_as_trl_builds_it(base, job, tok, dataset, device, options.seed)
    setup = time.perf_counter() - started
    final = run_sweep(model, tok, dataset, device, profile, options, out, setup_seconds=setup)
    return final, out


def one_process_per_split(options: SweepOptions, device: torch.device, world: int) -> bool:
    """Whether each split runs in its own process: ``isolation`` ``process``, or ``auto`` on
    a GPU (on the CPU, a test and smoke-run path, the splits share this process). Under
    torchrun the splits share the workers' processes."""
    if world > 1 or len(options.splits) < 2:
        return False
    if options.isolation == "auto":
        return device.type == "cuda"
    return options.isolation == "process"


def _tokenizer_source(req: CalibrateRequest) -> str:
    """Where the tokenizer for ``--data`` comes from; checked before any GPU work."""
    assert req.data is not None
    if not Path(req.data).is_file():
        raise CalibrationError(f"--data: no file at {req.data}")
    source = req.tokenizer or req.weights
    if source is None and not req.job.model.endswith(".json"):
        source = req.job.model
    if source is None:
        raise CalibrationError(
            "--data needs --tokenizer (a local tokenizer folder or Hub id) for this model"
        )
    return source


def _resume(out: Path, fingerprint: str, gpu: str, world: int = 1) -> Profile | None:
    if not out.exists():
        return None
    profile = read_profile(out)
    if profile.fingerprint != fingerprint:
        raise CalibrationError(
            f"--resume: {out} is a profile of another workload; pass another --out"
        )
    if profile.gpu != gpu:
        raise CalibrationError(
            f"--resume: {out} was measured on {profile.gpu}, this is {gpu}; pass another --out"
        )
    if profile.gpu_count != world:
        raise CalibrationError(
            f"--resume: {out} was measured on {profile.gpu_count} GPU(s), this run uses "
            f"{world}; pass another --out"
        )
    return profile
