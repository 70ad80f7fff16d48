"""The calibration trace: the analysis on hand-made profiler events (fast, no torch), the
profile's version-2 ``trace`` field, the summary line, and real CPU calibrations with the
trace on (slow: TRL training of the tiny model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gacost.base.errors import DataError
from gacost.base.profile import (
    Profile,
    SplitResult,
    SplitTrace,
    Workload,
    profile_to_dict,
    read_profile,
    write_profile,
)
from gacost.calibration.trace import (
    MICROSTEP,
    OPTIMIZER,
    UPDATE,
    Event,
    UtilisationSampler,
    Windows,
    analyse,
    classify,
    subclassify,
    union_within,
    updates_for,
)
from gacost.commands.calibrate import trace_line

ROOT = Path(__file__).resolve().parents[1]
JOB = Path(__file__).parent / "fixtures" / "calib" / "tiny-job.yaml"
US = 1000  # ns per microsecond: the hand-made events are written in microseconds


def rng(name: str, start: int, end: int) -> Event:
    return Event("range", name, start * US, end * US)


def launch(corr: int, at: int) -> Event:
    return Event("launch", "cudaLaunchKernel", at * US, at * US + 5 * US, corr)


def kernel(name: str, start: int, end: int, corr: int, linked: int = 0) -> Event:
    return Event("gpu", name, start * US, end * US, corr, linked)


def op(name: str, at: int, corr: int, flops: float = 0.0) -> Event:
    return Event("op", name, at * US, at * US + 10 * US, corr, flops=flops)


def one_update_two_microsteps() -> list[Event]:
    """One update (0-1000 us) of two micro-steps and an optimizer step, on a GPU.

    Kernel names are the ones torch.profiler reported on the H200 (bench/H200-SWEEP.md).
    """
    return [
        rng(UPDATE, 0, 1000),
        rng(MICROSTEP, 10, 300),
        rng(MICROSTEP, 310, 600),
        rng(OPTIMIZER, 700, 800),
        op("aten::mm", 15, 41, flops=1e6),
        op("aten::add", 100, 42),
        op("aten::bmm", 315, 44, flops=2e6),
        op("aten::addmm", 705, 43, flops=5e5),  # in the optimizer: not a micro-step GEMM
        launch(1, 20),
        kernel("nvjet_sm90_tst_256x128_64x4_2x1_v_bz_TNT", 50, 150, 1),
        launch(2, 30),
        kernel(
            "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128",
            150, 200, 2,
        ),
        launch(3, 320),
        kernel("void at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)", 330, 400, 3),
        launch(4, 330),
        kernel("Memcpy DtoD (Device -> Device)", 400, 420, 4),
        launch(5, 340),
        kernel("void kDequantizeBlockwise<__nv_bfloat16, 512, 64, 8, 2>(float*)", 420, 500, 5),
        # launched at the end of micro-step 2, runs after it: still the micro-step's
        launch(6, 590),
        kernel("nvjet_sm90_tss_64x64_64x8_1x2_h_bz_badd_NNT", 650, 690, 6),
        launch(7, 710),
        kernel("void at::native::multi_tensor_apply_kernel<TensorListMetadata<4>>", 720, 760, 7),
        launch(8, 850),
        kernel("void at::native::reduce_kernel<512, 1>", 860, 880, 8),
        # no launch record: attributed through the operator it is linked to (micro-step 1)
        kernel("triton_red_fused_add_0", 200, 210, 99, linked=42),
        # no launch record and no operator: attributed by its start (the rest of the update)
        kernel("splitKreduce_kernel", 950, 960, 77),
        # after the update: not counted, not busy
        launch(9, 1100),
        kernel("void at::native::elementwise_kernel<128, 2>", 1100, 1200, 9),
    ]


def test_kernel_classes_match_the_h200_names() -> None:
    assert classify("nvjet_sm90_tst_256x128_64x4_2x1_v_bz_TNT") == "gemm"
    assert classify("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64") == "gemm"
    assert classify("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm>") == "gemm"
    assert classify("splitKreduce_kernel") == "gemm"
    # cuDNN's SDPA kernels say "wgmma" too: attention is checked first
    sdpa_backward = "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_3"
    assert classify(sdpa_backward) == "attention"
    assert classify("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits>") == "attention"
    assert classify("void kDequantizeBlockwise<__nv_bfloat16, 512, 64, 8, 2>") == "dequant"
    assert classify("Memcpy DtoD (Device -> Device)") == "memcpy"
    assert classify("Memset (Device)") == "memcpy"
    assert classify("void at::native::direct_copy_kernel_cuda") == "other"
    assert classify("void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add>") == "other"
    assert classify("_rms_norm_forward_kernel") == "other"  # Liger's Triton kernels


def test_other_kernels_are_broken_down_by_name() -> None:
    assert subclassify("void at::native::multi_tensor_apply_kernel<FusedAdamMathFunctor>") == (
        "foreach_optimizer")
    assert subclassify("void at::native::cross_entropy_loss_forward") == "loss_softmax"
    assert subclassify("_rms_norm_forward_kernel") == "norm"
    assert subclassify("void at::native::reduce_kernel<512, 1>") == "reduce"
    assert subclassify("void at::native::direct_copy_kernel_cuda") == "cast_copy"
    assert subclassify("triton_poi_fused_add_mul_0") == "triton"
    assert subclassify("void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add>") == (
        "elementwise")
    assert subclassify("CatArrayBatchedCopy") == "cast_copy"
    assert subclassify("something_else") == "rest"


def test_the_h200_sweep_classes_kernels_with_this_module() -> None:
    """bench/h200_sweep.py keeps no copy of the kernel classes or the interval helpers: it
    imports them from here (gacost installed on the device), and records them as before."""
    from bench_loader import load_bench

    from gacost.calibration import trace

    bench = load_bench("h200_sweep")
    for name in ("KERNEL_CLASSES", "OTHER_SUBCLASSES", "GEMM_OPS", "classify", "subclassify",
                 "union_within", "Windows"):
        assert getattr(bench, name) is getattr(trace, name), name


def test_analysis_of_one_profiled_update() -> None:
    t = analyse(one_update_two_microsteps(), grad_accum=2, seconds_per_update=0.001, on_gpu=True)
    assert t.profiled_updates == 1 and t.profiled_microsteps == 2
    assert t.ops_per_microstep == 1.5  # mm, add, bmm in the micro-steps; addmm is not
    # gemm x2, attention, copy kernel, dequant, triton: 6 kernels; one memcpy apart
    assert t.kernels_per_microstep == 3.0 and t.copies_per_microstep == 0.5
    assert t.gpu_ms_per_microstep_by_class == {
        "memcpy": 0.01,
        "dequant": 0.04,
        "attention": 0.025,
        "gemm": 0.07,
        "other": 0.04,
    }
    # union of 50-210, 330-500, 650-690, 720-760, 860-880, 950-960 us over 1000 us
    assert t.busy_fraction == 0.44
    # 3e6 FLOPs of mm/bmm in micro-steps over 140 us of GEMM kernels there
    assert t.gemm_tflops == pytest.approx(3e6 / 140e-6 / 1e12, abs=0.05)
    # 10 GPU events launched in the update (the one after it is not): 1000 us / 10
    assert t.host_us_per_kernel == 100.0
    assert t.note == "1 of 11 GPU events without a launch record"
    assert t.nvml_util_mean is None and t.wall_seconds is None


def test_missing_microsteps_are_noted() -> None:
    t = analyse(one_update_two_microsteps(), grad_accum=4, on_gpu=True)
    assert "2 micro-steps profiled, expected 4" in t.note
    assert t.host_us_per_kernel is None  # no unprofiled time given


def test_cpu_only_events_leave_the_gpu_fields_empty() -> None:
    events = [e for e in one_update_two_microsteps() if e.kind in ("range", "op")]
    t = analyse(events, grad_accum=2, seconds_per_update=0.5)
    assert t.ops_per_microstep == 1.5 and t.profiled_microsteps == 2
    assert t.kernels_per_microstep is None and t.gpu_ms_per_microstep_by_class is None
    assert t.busy_fraction is None and t.gemm_tflops is None and t.host_us_per_kernel is None
    assert t.note == "CPU: host ops only"
    on_gpu = analyse(events, grad_accum=2, on_gpu=True)
    assert "no GPU activity recorded" in on_gpu.note


def test_no_update_range_is_no_trace() -> None:
    t = analyse([op("aten::mm", 1, 1)], grad_accum=1)
    assert t.profiled_updates == 0 and "no complete update" in t.note


def test_union_and_windows() -> None:
    w = Windows([(100, 200), (0, 50)])
    assert 0 in w and 49 in w and 50 not in w and 150 in w and 200 not in w and -1 not in w
    assert w.total_ns() == 150 and len(w) == 2
    assert union_within([(10, 30), (20, 40), (45, 120), (190, 300)], w) == 30 + 5 + 20 + 10
    assert union_within([], w) == 0


def test_updates_per_split() -> None:
    assert [updates_for(k) for k in (1, 2, 3, 4, 8)] == [2, 2, 2, 1, 1]


def test_utilisation_sampler_averages_readings() -> None:
    readings = iter([40.0, 50.0, 60.0])

    def read() -> float:
        return next(readings)  # StopIteration after three: sampling ends, samples kept

    sampler = UtilisationSampler(read, period=0.001)
    sampler.start()
    for _ in range(200):
        if len(sampler.samples) == 3:
            break
        import time

        time.sleep(0.005)
    assert sampler.stop() == 50.0
    assert UtilisationSampler(lambda: 1.0).stop() is None  # never started: no samples


# ----------------------------------------------------------------------- profile, version 2


WL = Workload("Qwen/Qwen3-1.7B", "lora", 16, 32.0, "all-linear", 512, "bf16", True, 4)
GPU_TRACE = SplitTrace(
    profiled_updates=2,
    profiled_microsteps=2,
    wall_seconds=1.5,
    ops_per_microstep=20011.0,
    kernels_per_microstep=10853.0,
    copies_per_microstep=500.0,
    gpu_ms_per_microstep_by_class={"memcpy": 1.2, "dequant": 0.0, "attention": 2.8,
                                   "gemm": 37.8, "other": 62.0},
    busy_fraction=0.18,
    gemm_tflops=566.0,
    host_us_per_kernel=23.9,
    nvml_util_mean=41.0,
)


def _profile(trace: SplitTrace | None = GPU_TRACE) -> Profile:
    return Profile(
        gpu="H200-SXM",
        gpu_memory_gib=139.8,
        workload=WL,
        source="measured",
        splits=(
            SplitResult(4, 1, "ok", seconds_per_update=0.284, timed_updates=5, trace=trace),
            SplitResult(2, 2, "oom", note="capped"),
        ),
    )


def test_current_version_round_trips_the_trace(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    write_profile(path, _profile())
    raw = json.loads(path.read_text())
    assert raw["version"] == 3
    assert raw["splits"][0]["trace"]["kernels_per_microstep"] == 10853.0
    assert "trace" not in raw["splits"][1]  # no trace, no key (as in version 1)
    assert read_profile(path) == _profile()
    hash(read_profile(path).splits[0])  # still hashable with the class map inside


@pytest.mark.parametrize(
    "path",
    [p for p in sorted((ROOT / "data" / "profiles").glob("*.json"))
     if json.loads(p.read_text())["version"] == 1]
    + sorted((ROOT / "bench" / "results").glob("h200-*profile*.json"))
    + sorted((ROOT / "bench" / "results").glob("h200-qwen3-*.json")),
    ids=lambda p: p.name,
)
def test_committed_version_1_profiles_still_load(path: Path, tmp_path: Path) -> None:
    assert json.loads(path.read_text())["version"] == 1
    profile = read_profile(path)
    assert profile.splits and all(s.trace is None for s in profile.splits)
    again = tmp_path / "v3.json"
    write_profile(again, profile)  # re-written as version 3, same content
    assert json.loads(again.read_text())["version"] == 3 and read_profile(again) == profile


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(version=4), "version 4 is not supported (this gacost reads versions 1"),
        (lambda d: d["splits"][0]["trace"].update(bogus=1), "splits[0].trace.bogus: unknown key"),
        (lambda d: d["splits"][0].update(trace=[1]), "splits[0].trace must be an object"),
        (
            lambda d: d["splits"][0]["trace"].update(busy_fraction="high"),
            "splits[0].trace.busy_fraction must be a finite number",
        ),
        (
            lambda d: d["splits"][0]["trace"].update(gpu_ms_per_microstep_by_class=3),
            "gpu_ms_per_microstep_by_class must be an object",
        ),
    ],
)
def test_corrupt_traces_are_one_line_errors(tmp_path: Path, mutate: Any, message: str) -> None:
    d = profile_to_dict(_profile())
    mutate(d)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    with pytest.raises(DataError) as err:
        read_profile(path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_summary_lines() -> None:
    line = trace_line(GPU_TRACE)
    assert line.startswith(
        "GPU busy 18% (NVML 41% unprofiled): host-bound; 10853 kernels/micro-step"
    )
    assert "GEMM 566 TFLOP/s" in line and "23.9 us/kernel" in line
    assert "GPU ms/micro-step 103.8 (memcpy 1.2, attention 2.8, gemm 37.8, other 62.0)" in line
    busy = SplitTrace(busy_fraction=0.85, kernels_per_microstep=4092.0)
    assert trace_line(busy) == "GPU busy 85%: GPU-bound; 4092 kernels/micro-step"
    assert trace_line(SplitTrace(busy_fraction=0.5)) == "GPU busy 50%: host and GPU both matter"
    cpu = SplitTrace(profiled_updates=1, ops_per_microstep=4148.0, note="CPU: host ops only")
    assert trace_line(cpu) == "4148 host ops/micro-step; CPU: host ops only"
    assert trace_line(SplitTrace(note="trace skipped: x")) == "trace skipped: x"


# --------------------------------------------------------------- real calibrations (slow)


def _cli(out: Path, *extra: str) -> list[str]:
    return [
        "calibrate", "--job", str(JOB), "--out", str(out), "--device", "cpu", "--warmup", "1",
        "--max-updates", "6", "--max-seconds", "0.05", "--quiet", *extra,
    ]


@pytest.mark.slow
def test_cpu_calibration_records_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gacost.commands.cli import main

    out = tmp_path / "p.json"
    assert main(_cli(out, "--splits", "4x1,1x4", "--trace-all", "--passes", "1")) == 0
    text = capsys.readouterr().out
    assert "Where the time goes (profiled updates):" in text
    assert "  4x1: " in text and "host ops/micro-step; CPU: host ops only" in text
    profile = read_profile(out)
    assert json.loads(out.read_text())["version"] == 3
    for s in profile.splits:
        t = s.trace
        assert t is not None, s
        assert t.profiled_updates == updates_for(s.grad_accum)
        assert t.profiled_microsteps == t.profiled_updates * s.grad_accum
        assert t.ops_per_microstep is not None and t.ops_per_microstep > 100
        assert t.kernels_per_microstep is None and t.busy_fraction is None
        assert t.nvml_util_mean is None and t.note == "CPU: host ops only"
        # the trace is a separate re-run after the timing: its wall time is recorded, and is
        # not compared with the split's (profiler overhead vs a 0.05 s timing budget)
        assert t.wall_seconds is not None and t.wall_seconds > 0
        # the profiled updates are not among the timed ones
        assert len(s.update_times) == s.warmup_updates + s.timed_updates
    again = tmp_path / "again.json"
    write_profile(again, profile)
    assert read_profile(again) == profile


@pytest.mark.slow
def test_by_default_only_the_first_split_is_profiled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gacost.calibration.sweep import NOT_PROFILED
    from gacost.commands.cli import main

    out = tmp_path / "p.json"
    assert main(_cli(out, "--splits", "4x1,2x2")) == 0
    profile = read_profile(out)
    ok = [s for s in profile.splits if s.status == "ok"]
    fastest = min(ok, key=lambda s: s.seconds_per_update or 0)
    others = [s for s in profile.splits if s is not fastest]
    assert fastest.trace is not None
    assert fastest.trace.profiled_updates == updates_for(fastest.grad_accum)
    # the trace ran after the timing: its updates are not among the split's (one pass)
    assert fastest.pass_seconds == ()
    assert len(fastest.update_times) == fastest.warmup_updates + fastest.timed_updates
    text = capsys.readouterr().out
    for s in others:
        assert s.trace is not None and s.trace.profiled_updates == 0
        assert s.trace.note == NOT_PROFILED
        assert f"  {s.micro_batch}x{s.grad_accum}: {NOT_PROFILED}" in text


@pytest.mark.slow
def test_no_trace_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gacost.commands.cli import main

    out = tmp_path / "p.json"
    assert main(_cli(out, "--splits", "4x1", "--no-trace")) == 0
    assert "Where the time goes" not in capsys.readouterr().out
    raw = json.loads(out.read_text())
    assert raw["splits"][0]["status"] == "ok" and "trace" not in raw["splits"][0]


@pytest.mark.slow
def test_out_of_memory_in_the_profiled_updates_keeps_the_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CUDA OOM raised inside the real trainer, only while the profiler runs."""
    import torch

    from gacost.calibration import sweep
    from gacost.calibration.request import CalibrateRequest, SweepOptions
    from gacost.calibration.run import calibrate

    real = sweep.measure_split

    def hook(_mod: Any, _args: Any) -> None:
        if torch.autograd.profiler._is_profiler_enabled:
            raise torch.OutOfMemoryError("CUDA out of memory (injected while profiling)")

    def measured(ctx: Any, *args: Any, **kw: Any) -> Any:
        handle = ctx.model.register_forward_pre_hook(hook)
        try:
            return real(ctx, *args, **kw)
        finally:
            handle.remove()

    monkeypatch.setattr(sweep, "measure_split", measured)
    from gacost.base.job import load_job

    job = load_job(JOB)
    opts = SweepOptions(splits=((4, 1),), warmup=1, max_timed=6, max_seconds=0.05,
                        progress=False)
    profile, _ = calibrate(CalibrateRequest(job=job, out=tmp_path / "p.json", options=opts,
                                            device="cpu"))
    s = profile.splits[0]
    assert s.status == "ok" and s.seconds_per_update and s.timed_updates >= 3
    assert s.trace is not None and s.trace.profiled_updates == 0
    assert s.trace.note.startswith("trace skipped: out of memory in the profiled updates")
    assert read_profile(tmp_path / "p.json") == profile
