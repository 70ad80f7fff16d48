"""The ``sweep:`` section of the job schema: counts, overrides, strict errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gacost.base.errors import JobSpecError
from gacost.base.job import load_job, parse_job
from gacost.commands.cli import main

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
    ("grid", "expected"),
    [
        ({"learning_rate": ["😀"]}, "sweep[0].grid.learning_rate[0]: must be a number, e.g. "
                                   "2.0e-4, got '😀'"),
        ({"learning_rate": [1e-4, float("nan")]},
         "sweep[0].grid.learning_rate[1]: must be a number > 0 and <= 10"),
        ({"learning_rate": [-1]}, "learning_rate[0]: must be a number > 0 and <= 10"),
        ({"lr": [0]}, "sweep[0].grid.lr[0]: must be a number > 0"),
        ({"learning_rate": ["2e-4"]}, "got '2e-4' (a quoted string: write the number without"),
        ({"seed": [1, 2.0]}, "sweep[0].grid.seed[1]: must be an integer, e.g. 42, got 2.0"),
        ({"seed": [True]}, "sweep[0].grid.seed[0]: must be an integer"),
        ({"seed": [-1]}, "seed[0]: must be an integer from 0 to 4294967295"),
        ({"seed": [10**400]}, "seed[0]: must be an integer from 0 to 4294967295"),
        ({"weight_decay": [-0.1]}, "weight_decay[0]: must be a number >= 0"),
        ({"warmup_ratio": [1.5]}, "warmup_ratio[0]: must be a number from 0 to 1"),
        ({"lora_dropout": [1.0]}, "lora_dropout[0]: must be a number >= 0 and < 1"),
        ({"Learning-Rate": [float("inf")]}, "Learning-Rate[0]: must be a number > 0"),
        ({"dataset": ["a", float("nan")]},
         "sweep[0].grid.dataset[1]: must be finite (a label may be any text or finite number)"),
        ({"sequence_length": [512, 1024]},
         "sweep[0].grid.sequence_length: changes each run's time or memory, which a grid does "
         "not plan (it only multiplies runs); give each value its own run group with "
         "'sequence_length:'"),
        ({"per_device_train_batch_size": [1, 2]}, "own run group with 'effective_batch:'"),
        ({"max_steps": [100]}, "own run group with 'work:'"),
        ({"lora_r": [8, 16]}, "sweep[0].grid.lora_r: changes each run's time or memory"),
    ],
)
def test_bad_grid_values(grid: dict[str, list[object]], expected: str) -> None:
    with pytest.raises(JobSpecError) as info:
        parse_job({**BASE, "sweep": [{"name": "g", "grid": grid}]})
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_grid_labels_and_known_values_count_runs() -> None:
    """Known hyper-parameters in range and labels of any text pass; only the count matters."""
    job = parse_job({**BASE, "sweep": [{"name": "g", "grid": {
        "learning_rate": [1e-5, 2e-4, 1.0], "seed": [0, 4294967295], "weight_decay": [0.0],
        "warmup_ratio": [0, 1], "lora_alpha": [16, 32.5], "lora_dropout": [0.0, 0.05],
        "dataset": ["alpaca", "😀", 3, True, None, [1, 2]]}}]})
    assert job.total_runs == 3 * 2 * 2 * 2 * 2 * 6
    (group,) = job.run_groups()
    assert group.job.sequence_length == 512 and group.job.updates == 10


def test_cli_reports_a_bad_grid_value_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("model: Qwen3-0.6B\nsequence_length: 512\neffective_batch: 4\n"
                   "work: {updates: 10}\nsweep: [{name: lr, grid: {learning_rate: [.nan]}}]\n")
    assert main(["budget", "--job", str(job)]) == 2
    err = capsys.readouterr().err
    assert err == ("error: sweep[0].grid.learning_rate[0]: must be a number > 0 and <= 10, "
                   "e.g. 2.0e-4, got nan\n")


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
