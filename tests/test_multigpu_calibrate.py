"""``gacost calibrate --nproc 2``: a real two-process gloo run through torchrun (tiny CPU job)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gacost.base.errors import CalibrationError
from gacost.base.job import load_job
from gacost.base.profile import Profile, SplitResult, read_profile, write_profile
from gacost.calibration import ranks
from gacost.commands.cli import main


def _run() -> Any:
    """:mod:`gacost.calibration.run` (imports torch), imported on first use."""
    from gacost.calibration import run

    return run


JOB = Path(__file__).parent / "fixtures" / "calib" / "tiny-job.yaml"
FAST = ["--device", "cpu", "--warmup", "1", "--max-updates", "6", "--max-seconds", "0.05",
        "--quiet"]


@pytest.mark.slow
def test_two_gloo_processes_through_torchrun_write_one_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p.json"
    # two passes: every rank must run the same second pass (rank 0 decides what is kept)
    code = main(["calibrate", "--job", str(JOB), "--out", str(out), "--nproc", "2", *FAST,
                 "--passes", "2"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "GPU: 2 x CPU" in captured.out and "interconnect n/a (cpu)" in captured.out
    profile = read_profile(out)
    assert profile.gpu == "CPU" and profile.gpu_count == 2
    assert profile.host["interconnect"] == "n/a (cpu)" and profile.host["backend"] == "gloo"
    assert "data parallel over 2 processes" in profile.provenance
    # per-GPU micro-batch: m x k x 2 = effective_batch 4
    assert {(s.micro_batch, s.grad_accum) for s in profile.splits} == {(1, 2), (2, 1)}
    for s in profile.splits:
        assert s.status in ("ok", "dropped") and s.seconds_per_update
        assert s.tokens_per_s == pytest.approx(4 * 32 / s.seconds_per_update, rel=1e-4, abs=0.06)
        # an ok split has a second pass (one more warm-up update), a dropped one does not
        second = 1 if s.pass_seconds else 0
        assert len(s.update_times) == s.warmup_updates + s.timed_updates + second
        assert len(s.pass_seconds) == (2 if s.status == "ok" else 0)
    assert json.loads(out.read_text())["gpu"]["count"] == 2
    assert list(tmp_path.iterdir()) == [out]  # only rank 0 wrote, no leftovers


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nproc", "3"], "--nproc: effective_batch 4 is not divisible by 3 processes"),
        (["--nproc", "0"], "--nproc: give 1 or more processes"),
        (["--nproc", "2", "--splits", "2x2"], "--splits: 2x2 with 2 processes does not multiply"),
    ],
)
def test_bad_nproc_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code = main(["calibrate", "--job", str(JOB), "--out", str(tmp_path / "p.json"), *FAST, *args])
    err = capsys.readouterr().err
    assert code != 0 and err.startswith(f"error: {message}") and err.count("\n") == 1


@pytest.mark.slow  # imports the torch stack
def test_resume_refuses_a_profile_of_another_gpu_count(tmp_path: Path) -> None:
    job = load_job(JOB)
    workload = job.workload(job.model)
    out = tmp_path / "p.json"
    single = Profile("CPU", 8.0, workload, (SplitResult(4, 1, "ok", 0.1),), "test")
    write_profile(out, single)
    with pytest.raises(CalibrationError, match="measured on 1 GPU"):
        _run()._resume(out, workload.fingerprint(), "CPU", 2)
    write_profile(out, replace(single, gpu_count=2, splits=(SplitResult(2, 1, "ok", 0.1),)))
    assert _run()._resume(out, workload.fingerprint(), "CPU", 2) is not None


@pytest.mark.slow  # imports the torch stack
def test_default_out_names_the_gpu_count() -> None:
    assert _run().default_out("H100-SXM", "Qwen/Qwen3-1.7B", "abcdef0123", 8).name == (
        "H100-SXMx8--Qwen3-1.7B--abcdef01.json"
    )
    assert _run().default_out("L4", "m", "abcdef0123").name == "L4--m--abcdef01.json"


TOPO_NVLINK = """\
\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity
GPU0\t X \tNV18\t0-47\t0
GPU1\tNV18\t X \t0-47\t0
"""
TOPO_PCIE = """\
\tGPU0\tGPU1\tNIC0\tCPU Affinity
GPU0\t X \tSYS\tPIX\t0-15
GPU1\tSYS\t X \tPHB\t0-15
NIC0\tPIX\tPHB\t X
"""


def test_interconnect_from_nvidia_smi_topology() -> None:
    assert ranks.summarise_topology(TOPO_NVLINK) == "nvlink (NV18)"
    assert ranks.summarise_topology(TOPO_PCIE) == "pcie (SYS)"
    assert ranks.summarise_topology("") == "unknown"


def test_outside_torchrun_there_is_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    assert ranks.world_size() == 1 and ranks.is_main()
    assert ranks.agree(True) is True
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    assert ranks.world_size() == 4 and not ranks.is_main()


def test_nproc_must_match_an_outside_launcher(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    code = main(["calibrate", "--job", str(JOB), "--out", str(tmp_path / "p.json"), *FAST,
                 "--nproc", "4"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: --nproc: 4 given, but this process was launched")


def test_liger_without_the_package_is_a_one_line_error_before_torch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    if importlib.util.find_spec("liger_kernel") is not None:
        pytest.skip("liger-kernel is installed here")
    code = main(["calibrate", "--job", str(JOB), "--out", str(tmp_path / "p.json"), *FAST,
                 "--liger"])
    err = capsys.readouterr().err
    assert code == 1 and err == "error: liger: Liger kernels need `pip install liger-kernel`\n"
