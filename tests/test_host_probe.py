"""The host probe: the timed task, ``gacost probe``, and ``recommend --host-probe-ms`` carrying
a calibrated machine's host to another instance of it through the real model."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from gacost.advisor.estimate import PROBE_LOG_SD, estimate_job
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.job import load_job
from gacost.base.profile import HOST_PROBE_KEY, Profile, read_profile, write_profile
from gacost.calibration.host_probe import HostSpeed, probe
from tests.test_cli import gacost

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "bench" / "jobs" / "qwen3-1.7b-lora-bf16.yaml"
MEASURED = (ROOT / "data" / "profiles"
            / "H200-SXM--Qwen3-1.7B--lora-r16-seq512-bf16-B4--measured.json")


def probed(ms: float) -> Profile:
    """The shipped H200 calibration of JOB's workload as if it had recorded a host probe."""
    p = read_profile(MEASURED)
    return replace(p, host={**p.host, HOST_PROBE_KEY: f"{ms:.2f}"})


def test_the_probe_times_at_least_three_tasks() -> None:
    seen: list[int] = []
    speed = probe(0.0, pause=0.0, on_task=seen.append)
    assert seen == [1, 2, 3] and len(speed.task_ms) == 3
    assert all(t > 0 for t in speed.task_ms) and speed.mean_ms > 0


def test_slow_spells_are_tasks_over_one_and_a_half_times_the_fast_tenth() -> None:
    speed = HostSpeed((10.0,) * 15 + (16.0,) * 5)
    assert speed.median_ms == 10.0 and speed.mean_ms == pytest.approx(11.5)
    assert speed.slow_share == pytest.approx(0.25)


def test_probe_command_compares_with_a_probed_profile(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    write_profile(path, probed(1.0))  # a host far faster than any CPU: this one is slower
    run = gacost("probe", "--seconds", "0.05", "--profile", str(path))
    assert run.returncode == 0, run.stderr
    first, second, *splits, last = run.stdout.splitlines()
    assert first.startswith("host probe: ") and "ms per task" in first
    assert "x slower" in second
    here = float(last.rsplit("--host-probe-ms ", 1)[1])
    assert here > 1.0 and "timing this host's CPU" in run.stderr
    # each measured split carried here by the model's host factor: slower, at most by the ratio
    timed = {str(x.split): x.seconds_per_update for x in read_profile(MEASURED).splits
             if x.seconds_per_update}
    assert len(splits) == len(timed)
    for line in splits:
        name, rest = line.strip().split(": ")
        there, now = (float(w) for w in rest.split() if w[0].isdigit())
        assert there == pytest.approx(timed[name], abs=5e-4)
        assert there < now <= there * here * 1.01


@pytest.mark.parametrize(("args", "message"), [
    (("--seconds", "-1"), "--seconds: must be > 0"),
    (("--seconds", "soon"), "--seconds: expected a number"),
    (("--profile", str(MEASURED)), "recorded no host probe"),
])
def test_probe_command_errors_are_one_line(args: tuple[str, ...], message: str) -> None:
    run = gacost("probe", *args)
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr


def by_split(profiles: list[Profile], probe_ms: float | None) -> dict[tuple[str, int, int], float]:
    est = estimate_job(load_job(JOB), [], profiles, host_probe_ms=probe_ms)
    return {(e.gpu, e.micro_batch, e.grad_accum): e.seconds_per_update for e in est.estimates
            if e.seconds_per_update is not None and e.world_size == 1}


def test_a_slower_instance_scales_the_calibrated_gpu_only() -> None:
    """Twice the probe's time: the H200 splits (measured and predicted) grow by the model's
    host factor, between 1x and 2x; every other GPU stays as it was, and the measured split's
    band holds the probe's error."""
    mine = [probed(15.0)]
    same, slower = by_split(mine, 15.0), by_split(mine, 30.0)
    assert same == by_split(mine, None)  # the calibrated machine's own probe changes nothing
    grown = {key: slower[key] / same[key] for key in same}
    h200 = {key: g for key, g in grown.items() if key[0] == "H200-SXM"}
    assert h200 and all(1.05 < g <= 2.0 for g in h200.values())
    assert all(g == pytest.approx(1.0) for key, g in grown.items() if key[0] != "H200-SXM")
    def kept_of(probe_ms: float | None) -> SplitEstimate:
        est = estimate_job(load_job(JOB), [], mine, host_probe_ms=probe_ms)
        return next(e for e in est.estimates if (e.gpu, e.micro_batch, e.grad_accum)
                    == ("H200-SXM", 4, 1))

    def width(e: SplitEstimate) -> float:
        assert e.seconds_low and e.seconds_high
        return math.log(e.seconds_high / e.seconds_low)

    kept = kept_of(30.0)
    assert width(kept) > width(kept_of(None))
    assert kept.time_source == "measured"
    assert f"host scaled x{h200[('H200-SXM', 4, 1)]:.2f}" in kept.basis
    assert kept.seconds_low is not None and kept.seconds_high is not None
    assert kept.seconds_per_update is not None
    assert kept.seconds_low < kept.seconds_per_update < kept.seconds_high
    notes = estimate_job(load_job(JOB), [], mine, host_probe_ms=30.0).notes
    assert any(f"{PROBE_LOG_SD:.0%} on the host's share" in n for n in notes)


def test_recommend_takes_the_probe_and_says_what_it_did(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    write_profile(path, probed(15.0))
    run = gacost("recommend", "--job", str(JOB), "--profile", str(path),
                 "--host-probe-ms", "30")
    assert run.returncode == 0, run.stderr
    assert "host probe 30 ms on the instance to train on against 15 ms" in run.stdout


@pytest.mark.parametrize(("extra", "message"), [
    ((), "--host-probe-ms: no --profile recorded a host probe"),
    (("--profile", str(MEASURED)), "--host-probe-ms: no --profile recorded a host probe"),
])
def test_recommend_refuses_a_probe_without_a_probed_profile(
    extra: tuple[str, ...], message: str
) -> None:
    run = gacost("recommend", "--job", str(JOB), "--host-probe-ms", "20", *extra)
    assert run.returncode == 2 and message in run.stderr


def test_recommend_refuses_a_probe_that_is_not_a_time() -> None:
    run = gacost("recommend", "--job", str(JOB), "--host-probe-ms", "0")
    assert run.returncode == 2 and "--host-probe-ms: must be > 0" in run.stderr


def h200_hours(command: str, path: Path, *probe: str) -> float:
    """The H200's instance-hours of one run in ``budget``'s or ``compare``'s JSON."""
    import json

    job = path.with_suffix(".yaml")
    job.write_text(JOB.read_text() + "gpus: [H200-SXM]\n")
    run = gacost(command, "--job", str(job), "--profile", str(path), "--format", "json",
                 *probe)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    row = data["best"] if command == "budget" else data["rows"][0]
    assert row["gpu"] == "H200-SXM"
    return float(row["instance_hours"])


@pytest.mark.parametrize("command", ["budget", "compare"])
def test_budget_and_compare_carry_the_host_too(command: str, tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    write_profile(path, probed(15.0))
    as_calibrated = h200_hours(command, path)
    slower = h200_hours(command, path, "--host-probe-ms", "30")
    assert 1.05 < slower / as_calibrated <= 2.0
