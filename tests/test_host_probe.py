"""The host probe: the timed task, ``gacost probe``, and ``recommend --host-probe-ms`` carrying
a calibrated machine's host to another instance of it through the real model."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from gacost.advisor.estimate import (
    PROBE_HOST_EXPONENT,
    PROBE_LOG_SD,
    REFERENCE_PROBE_LOG_SD,
    REFERENCE_PROBE_MS,
    HostProbe,
    estimate_job,
)
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.job import load_job
from gacost.base.profile import HOST_PROBE_KEY, Profile, read_profile, write_profile
from gacost.calibration.host_probe import HostSpeed, probe
from gacost.commands.probe import typical_line
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


def test_probe_command_alone_compares_with_the_typical_host() -> None:
    run = gacost("probe", "--seconds", "0.05", "--quiet")
    assert run.returncode == 0, run.stderr
    first, second, flags, *_, last = run.stdout.splitlines()
    here = float(first.split()[2])
    assert f"typical host ({REFERENCE_PROBE_MS:g} ms per task)" in second
    assert f"--host-probe-ms {here:.1f} --host-probe-gpu GPU" in flags
    assert "gacost probe --profile PROFILE" in last


@pytest.mark.parametrize(("ms", "far"), [
    (REFERENCE_PROBE_MS, False),
    (REFERENCE_PROBE_MS * 1.2, False),
    (REFERENCE_PROBE_MS / 1.2, False),
    (REFERENCE_PROBE_MS * 1.3, True),
    (REFERENCE_PROBE_MS / 1.6, True),
])
def test_a_probe_far_from_typical_points_to_a_calibration(ms: float, far: bool) -> None:
    """Beyond the probe's own error from the typical host (log sd 0.22: 1.25x either way), the
    probe says a calibration there measures what it estimates; nearer, it does not."""
    text = typical_line(ms)
    assert ("`gacost calibrate --job JOB` here" in text) is far
    # the host time it implies moves less than the CPU's speed (PROBE_HOST_EXPONENT < 1)
    factor = (ms / REFERENCE_PROBE_MS) ** PROBE_HOST_EXPONENT
    assert f"host time here about x{factor:.2f} typical" in " ".join(text.split())
    assert f"--host-probe-ms {ms:.1f}" in text


@pytest.mark.parametrize(("args", "message"), [
    (("--seconds", "-1"), "--seconds: must be > 0"),
    (("--seconds", "soon"), "--seconds: expected a number"),
    (("--profile", str(MEASURED)), "recorded no host probe"),
])
def test_probe_command_errors_are_one_line(args: tuple[str, ...], message: str) -> None:
    run = gacost("probe", *args)
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr


def estimates(profiles: list[Profile], probe_ms: float | None, gpu: str = ""
              ) -> dict[tuple[str, int, int], SplitEstimate]:
    probe = None if probe_ms is None else HostProbe(probe_ms, gpu)
    est = estimate_job(load_job(JOB), [], profiles, host_probe=probe)
    return {(e.gpu, e.micro_batch, e.grad_accum): e for e in est.estimates
            if e.seconds_per_update is not None and e.world_size == 1}


def by_split(profiles: list[Profile], probe_ms: float | None, gpu: str = ""
             ) -> dict[tuple[str, int, int], float]:
    return {key: e.seconds_per_update for key, e in estimates(profiles, probe_ms, gpu).items()
            if e.seconds_per_update is not None}


def width(e: SplitEstimate) -> float:
    """The log width of a split's 90 % band."""
    assert e.seconds_low and e.seconds_high
    return math.log(e.seconds_high / e.seconds_low)


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
        return estimates(mine, probe_ms)[("H200-SXM", 4, 1)]

    kept = kept_of(30.0)
    assert width(kept) > width(kept_of(None))
    assert kept.time_source == "measured"
    assert f"host scaled x{h200[('H200-SXM', 4, 1)]:.2f}" in kept.basis
    assert kept.seconds_low is not None and kept.seconds_high is not None
    assert kept.seconds_per_update is not None
    assert kept.seconds_low < kept.seconds_per_update < kept.seconds_high
    notes = estimate_job(load_job(JOB), [], mine, host_probe=HostProbe(30.0)).notes
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


def test_a_probe_informs_the_host_of_a_gpu_nobody_calibrated() -> None:
    """No profile: a probe on an H100 instance at the measured machines' typical probe leaves
    the H100's times and narrows their bands (the probe's error replaces the spread between
    machines); twice that probe grows the host-bound splits by the model's host factor, less
    than 2x; other GPUs do not move."""
    alone = estimates([], None)
    typical = estimates([], REFERENCE_PROBE_MS, "H100-SXM")
    slow = estimates([], 2 * REFERENCE_PROBE_MS, "H100-SXM")
    h100 = [key for key in alone if key[0] == "H100-SXM"]
    assert h100
    for key in h100:
        assert typical[key].seconds_per_update == pytest.approx(alone[key].seconds_per_update)
        assert width(typical[key]) < width(alone[key])
        assert "from its probe" in typical[key].basis
    grown = {key: slow[key].seconds_per_update / alone[key].seconds_per_update  # type: ignore[operator]
             for key in alone}
    assert max(grown[key] for key in h100) > 1.5
    assert all(1.0 < grown[key] <= 2.0 for key in h100)
    assert all(g == pytest.approx(1.0) for key, g in grown.items() if key[0] != "H100-SXM")


def test_a_probe_carries_the_measured_splits_of_the_shipped_machines() -> None:
    """The H200 splits the shipped profiles measured, on a probed H200 instance nobody
    calibrated: carried from the machine they ran on by the model's host factor, the probe's
    error in their bands."""
    slow, fast = (estimates([], ms, "H200-SXM")[("H200-SXM", 4, 1)]
                  for ms in (2 * REFERENCE_PROBE_MS, REFERENCE_PROBE_MS / 2))
    as_measured = estimates([], None)[("H200-SXM", 4, 1)]
    assert slow.time_source == fast.time_source == as_measured.time_source == "measured"
    assert slow.seconds_per_update and fast.seconds_per_update and as_measured.seconds_per_update
    assert fast.seconds_per_update < as_measured.seconds_per_update < slow.seconds_per_update
    assert "by the host probes" in slow.basis and width(slow) > width(as_measured)


def test_recommend_takes_a_probe_of_a_gpu_nobody_calibrated() -> None:
    run = gacost("recommend", "--job", str(JOB), "--host-probe-ms", "20",
                 "--host-probe-gpu", "h100-sxm")
    assert run.returncode == 0, run.stderr
    assert (f"H100-SXM: host probe 20 ms on the instance to train on, against "
            f"{REFERENCE_PROBE_MS:g} ms") in run.stdout
    assert f"{REFERENCE_PROBE_LOG_SD:.0%} on the host's share" in run.stdout


@pytest.mark.parametrize(("args", "message"), [
    (("--host-probe-gpu", "H100-SXM"), "--host-probe-gpu needs --host-probe-ms"),
    (("--host-probe-ms", "20", "--host-probe-gpu", "a100"), "name the one GPU"),
    (("--host-probe-ms", "20", "--host-probe-gpu", "H9000"), "unknown GPU 'H9000'"),
    (("--host-probe-ms", "20", "--host-probe-gpu", "H200-SXM", "--profile", str(MEASURED)),
     "your profile for H200-SXM recorded no host probe"),
])
def test_recommend_refuses_a_probe_gpu_it_cannot_use(args: tuple[str, ...], message: str
                                                     ) -> None:
    run = gacost("recommend", "--job", str(JOB), *args)
    assert run.returncode == 2 and message in run.stderr and "Traceback" not in run.stderr


def test_a_host_bound_recommendation_points_to_the_probe(tmp_path: Path) -> None:
    """A predicted host-bound pick says the rented host decides it and how to probe it; with
    a slow host probed there, the advice says the host came from the probe."""
    job = tmp_path / "h100.yaml"
    job.write_text(JOB.read_text() + "gpus: [H100-SXM]\n")
    plain = gacost("recommend", "--job", str(job))
    assert plain.returncode == 0, plain.stderr
    assert "`gacost probe` on the rented" in plain.stdout
    slow = gacost("recommend", "--job", str(job), "--host-probe-ms",
                  str(2 * REFERENCE_PROBE_MS), "--host-probe-gpu", "H100-SXM")
    assert slow.returncode == 0, slow.stderr
    # twice the typical probe: the host's time x 2 ** PROBE_HOST_EXPONENT (1.71)
    assert f"host from its probe, x{2 ** PROBE_HOST_EXPONENT:.2f}" in " ".join(slow.stdout.split())


@pytest.mark.parametrize(("before", "after", "moved"), [(36.2, 24.4, True), (15.9, 15.9, False)])
def test_calibrate_says_when_the_host_moved_while_it_calibrated(
    before: float, after: float, moved: bool
) -> None:
    """The probes before and after the splits (a lent H200's 36.2 and 24.4 ms, run 17):
    their mean is the machine's speed, and a pair more than 25 % apart is said."""
    from gacost.commands.calibrate import probe_note

    p = read_profile(MEASURED).with_host_probes(before, after)
    assert p.host_probe_ms == pytest.approx((before + after) / 2)
    assert p.host_probes() == (before, after)
    note = probe_note(p)
    assert f"({before:.1f} before the splits, {after:.1f} after)" in note
    assert ("the host's speed moved while it calibrated" in note) is moved


def test_the_shipped_reference_probe_is_the_one_the_starts_give() -> None:
    """``REFERENCE_PROBE_MS`` and ``REFERENCE_PROBE_LOG_SD`` are derived by
    bench/host_speed.py from the probed machine starts (its committed result)."""
    saved = json.loads((ROOT / "bench" / "results" / "host_speed.json").read_text())
    reference = saved["reference_probe"]
    assert len(reference["starts"]) >= 15
    fit = reference["exponent"]
    assert fit["p0_ms"] == pytest.approx(REFERENCE_PROBE_MS, abs=0.05)
    # P0 is the probe of a machine nobody measured: derived against today's centre of the
    # measured machines (it moves with the reference fit's machines)
    from gacost.advisor import predictor

    assert reference["unmeasured_host"] == pytest.approx(
        predictor.reference_model().time.unmeasured_host)
    assert fit["b"] == pytest.approx(PROBE_HOST_EXPONENT, abs=0.005)
    # the exponent earns its place: each start predicted from the others does better with it
    assert fit["left_out_rms"]["fitted"] < fit["left_out_rms"]["b=1"]
    assert math.hypot(PROBE_LOG_SD, fit["residual_log_sd"]) == pytest.approx(
        REFERENCE_PROBE_LOG_SD, abs=0.01)


def test_the_probe_line_is_recovered_from_starts_that_follow_it() -> None:
    """bench/host_speed.py's fit: starts whose host scale is (probe / 25 ms) ** 0.6, each
    start's reference its probe over that scale, give back 0.6 and 25 ms; left out one at a
    time, each is predicted exactly, where the plain ratio misses the far ones."""
    from bench_loader import load_bench

    host_speed = load_bench("host_speed")
    probes = {f"s{i}": ms for i, ms in enumerate((14.0, 19.0, 25.0, 31.0, 38.0))}
    starts = {n: (ms, ms / (ms / 25.0) ** 0.6) for n, ms in probes.items()}
    fit = host_speed.probe_exponent(starts)
    assert fit["b"] == pytest.approx(0.6) and fit["p0_ms"] == pytest.approx(25.0)
    assert fit["left_out_rms"]["fitted"] == pytest.approx(0.0, abs=1e-9)
    assert fit["left_out_rms"]["b=1"] > 0.1
    assert fit["left_out_fits"]["s0"] == {"b": pytest.approx(0.6), "p0_ms": pytest.approx(25.0)}
