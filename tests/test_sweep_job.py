"""The ``sweep:`` section of the job schema: counts, overrides, strict errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gacost.base.errors import JobSpecError
from gacost.base.job import load_job, parse_job
from gacost.cli import main

ROOT = Path(__file__).resolve().parent.parent
JOBS = Path(__file__).parent / "fixtures" / "jobs"
BASE = {"model": "Qwen3-0.6B", "sequence_length": 512, "effective_batch": 4,
        "work": {"updates": 10}}


def test_mixed_sweep_counts_and_overrides() -> None:
    job = load_job(JOBS / "valid" / "sweep-mixed.yaml")
    groups = job.run_groups()
    assert [(g.name, g.runs) for g in groups] == [("lr-seed", 4), ("long", 2), ("epochs", 1)]
    assert job.total_runs == 7
    assert [g.job.updates for g in groups] == [1000, 3000, 1000]
    for g in groups:  # every group job is a plain job with the group's run count
        assert g.job.sweep is None and g.job.runs == g.runs
        assert (g.job.model, g.job.precision, g.job.gpus) == (job.model, "fp16", ["T4"])


def test_sequence_length_and_batch_overrides() -> None:
    job = load_job(JOBS / "valid" / "sweep-seq.yaml")
    short, long, wide = job.run_groups()
    assert (short.job.sequence_length, short.job.effective_batch, short.job.updates) == (
        512, 8, 200)
    assert (long.job.sequence_length, long.job.updates) == (4096, 200)
    assert (wide.runs, wide.job.effective_batch, wide.job.updates) == (2, 16, 100)
    assert wide.job.splits() == ((1, 16), (2, 8), (4, 4))  # micro_batches kept


def test_plain_job_is_one_group() -> None:
    job = parse_job({**BASE, "runs": 5})
    (group,) = job.run_groups()
    assert (group.name, group.runs, group.job) == ("job", 5, job)
    assert job.total_runs == 5


@pytest.mark.parametrize(
    ("sweep", "extra", "expected"),
    [
        ([{"name": "a", "rusn": 3}], {}, "sweep[0].rusn: unknown key (did you mean 'runs'?)"),
        ([{"name": "a", "runs": 1, "work": {"update": 3}}], {},
         "sweep[0].work.update: unknown key (did you mean 'updates'?)"),
        ([{"name": "a", "runs": 2}], {"runs": 2}, "runs: give either runs or sweep, not both"),
        ([{"name": "a"}], {}, "sweep[0]: group 'a': give exactly one of 'grid'"),
        ([{"name": "a", "runs": 1, "grid": {"s": [1]}}], {}, "give exactly one of 'grid'"),
        ([{"name": "a", "grid": {}}], {}, "sweep[0].grid: give at least one hyper-parameter"),
        ([{"name": "a", "grid": {"seed": []}}], {}, "seed: give at least one value"),
        ([{"name": "a", "grid": {"seed": 3}}], {}, "sweep[0].grid.seed: must be a valid list"),
        ([{"name": "a", "runs": 1}, {"name": "a", "runs": 1}], {},
         "sweep[1].name: 'a' is used by another group"),
        ([], {}, "sweep: give at least one run group"),
        ([{"name": "a", "runs": 0}], {}, "sweep[0].runs: must be greater than 0"),
        ([{"name": "a", "runs": 1, "effective_batch": 6}], {"micro_batches": [4]},
         "sweep[0]: micro_batches 4 does not divide the group's effective_batch 6"),
        ([{"runs": 1}], {}, "sweep[0].name: required key is missing"),
        ([{"name": "a", "runs": 60_000}, {"name": "b", "runs": 60_000}], {},
         "sweep: 120000 runs in all; at most 100000"),
    ],
)
def test_bad_sweeps(sweep: object, extra: dict[str, object], expected: str) -> None:
    with pytest.raises(JobSpecError) as info:
        parse_job({**BASE, **extra, "sweep": sweep})
    assert expected in str(info.value)


def test_grid_count_is_the_product() -> None:
    job = parse_job({**BASE, "sweep": [
        {"name": "g", "grid": {"lr": [1, 2, 3], "seed": [1, 2], "wd": [0.0, 0.1]}}]})
    assert job.total_runs == 12


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("sweep-typo.yaml", "error: sweep[0].rusn: unknown key (did you mean 'runs'?)"),
        ("sweep-and-runs.yaml", "error: runs: give either runs or sweep, not both"),
        ("sweep-grid-and-runs.yaml", "error: sweep[0]: group 'both': give exactly one"),
    ],
)
def test_cli_reports_bad_sweeps_on_one_line(
    name: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["budget", "--job", str(JOBS / "invalid" / name)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
