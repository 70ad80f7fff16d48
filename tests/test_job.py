"""Job schema: valid fixtures load, invalid ones give a one-line, field-named error."""

from __future__ import annotations

from pathlib import Path

import pytest

from gacost.base.errors import JobSpecError
from gacost.base.job import load_job, parse_job

JOBS = Path(__file__).parent / "fixtures" / "jobs"
BASE = {
    "model": "Qwen3-0.6B",
    "sequence_length": 512,
    "effective_batch": 4,
    "work": {"updates": 10},
}


def test_minimal_job_defaults() -> None:
    job = load_job(JOBS / "valid" / "minimal.yaml")
    assert job.method == "lora" and job.precision == "bf16" and job.runs == 1
    assert job.lora.effective_alpha == 32.0
    assert job.splits() == ((1, 8), (2, 4), (4, 2), (8, 1))
    assert job.updates == 200


def test_full_options_job() -> None:
    job = load_job(JOBS / "valid" / "full-options.yaml")
    assert job.splits() == ((1, 32), (4, 8), (8, 4))
    assert job.updates == 2 * 157  # ceil(5000 / 32) per epoch, two epochs
    assert job.lora.targets == ("q_proj", "v_proj")
    assert job.objective == "min_time_under_budget" and job.budget_usd == 100


def test_relative_model_path_is_read_next_to_the_job() -> None:
    job = load_job(JOBS / "valid" / "local-config.yaml")
    assert Path(job.model) == JOBS / "valid" / "tiny-config.json"


def test_fractional_epochs_round_up_once() -> None:
    job = parse_job({**BASE, "work": {"samples": 10, "epochs": 1.5}})
    assert job.updates == 4  # ceil(15 / 4)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("bad-yaml.yaml", "line 3"),
        ("not-a-mapping.yaml", "must be a YAML mapping"),
        ("typo-key.yaml", "sequence_lenght: unknown key (did you mean 'sequence_length'?)"),
        ("string-int.yaml", "sequence_length: must be a valid integer, got '512'"),
        ("zero-batch.yaml", "effective_batch: must be greater than 0"),
        ("bad-method.yaml", "method: must be one of 'lora', 'qlora' or 'full'"),
        ("both-work.yaml", "work: give exactly one of 'updates' or 'samples'"),
        ("deadline-missing.yaml", "deadline_hours: required when objective"),
        ("micro-not-divisor.yaml", "micro_batches: 4 does not divide effective_batch 6"),
        ("bad-targets.yaml", "lora.target_modules: give 'all-linear' or a list"),
        ("margin.yaml", "vram_margin: must be less than 0.9"),
    ],
)
def test_invalid_jobs(name: str, expected: str) -> None:
    with pytest.raises(JobSpecError) as info:
        load_job(JOBS / "invalid" / name)
    assert expected in str(info.value)
    assert info.value.exit_code == 2


def test_nested_unknown_key_lists_known_keys() -> None:
    with pytest.raises(JobSpecError, match=r"lora\.rank: unknown key"):
        parse_job({**BASE, "lora": {"rank": 8}})


def test_literal_typo_suggests() -> None:
    with pytest.raises(JobSpecError, match=r"did you mean 'min_cost'"):
        parse_job({**BASE, "objective": "min_cots"})


def test_every_error_is_reported() -> None:
    with pytest.raises(JobSpecError) as info:
        parse_job({"model": "x"})
    text = str(info.value)
    for key in ("sequence_length", "effective_batch", "work"):
        assert f"{key}: required key is missing" in text


def test_missing_file() -> None:
    with pytest.raises(JobSpecError, match="cannot read"):
        load_job(JOBS / "nope.yaml")


def test_machinery_options_change_the_workload_but_defaults_keep_old_fingerprints() -> None:
    plain = parse_job(BASE)
    assert plain.torch_compile is False and plain.liger is False
    assert not plain.qlora.prepare_for_kbit
    qlora = parse_job({**BASE, "method": "qlora"})
    prepared = parse_job({**BASE, "method": "qlora", "qlora": {"prepare_for_kbit": True}})
    compiled = parse_job({**BASE, "torch_compile": True, "liger": "auto"})
    assert prepared.workload().prepare_for_kbit and not qlora.workload().prepare_for_kbit
    assert compiled.workload().torch_compile and not compiled.workload().liger
    prints = {j.workload().fingerprint() for j in (plain, qlora, prepared, compiled)}
    assert len(prints) == 4
    # a workload without the option fields (as profiles written before them) hashes the same
    from dataclasses import asdict

    from gacost.base.profile import WORKLOAD_OPTION_DEFAULTS, Workload

    old = {k: v for k, v in asdict(plain.workload()).items() if k not in WORKLOAD_OPTION_DEFAULTS}
    assert Workload(**old).fingerprint() == plain.workload().fingerprint()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"qlora": {"prepare_for_kbit": True}}, "qlora: only applies with method: qlora"),
        ({"torch_compile": "yes"}, "torch_compile"),
        ({"liger": 1}, "liger"),
        ({"method": "qlora", "qlora": {"prepare": True}}, "qlora.prepare: unknown key"),
    ],
)
def test_machinery_option_errors(extra: dict[str, object], message: str) -> None:
    with pytest.raises(JobSpecError, match=message):
        parse_job({**BASE, **extra})
