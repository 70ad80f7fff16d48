"""The split value type: one formatter, one parser, and the records that carry a split
keep their saved field names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.errors import CalibrationError, DataError, JobSpecError
from gacost.base.job import parse_job
from gacost.base.profile import SplitResult, loads_profile, profile_to_dict, read_profile
from gacost.base.split import Split
from gacost.calibration.request import (
    CalibrateRequest,
    SweepOptions,
    parse_splits,
    request_from_dict,
    request_to_dict,
)

SHIPPED = (Path(__file__).resolve().parent.parent / "data" / "profiles"
           / "H200-SXM--Qwen3-1.7B--lora-r16-seq512-bf16-B4--measured.json")
JOB = parse_job({"model": "Qwen/Qwen3-1.7B", "sequence_length": 512, "effective_batch": 8,
                 "work": {"updates": 10}}, origin="test")


def test_a_split_formats_as_m_x_k_and_multiplies_to_its_batch() -> None:
    split = Split(4, 2)
    assert str(split) == "4x2" and f"split {split}" == "split 4x2"
    assert split.effective_batch == 8
    m, k = split  # unpacks as the (m, k) pairs it replaces
    assert (m, k) == (4, 2) and split == (4, 2)


def test_splits_sort_by_micro_batch_then_accumulation_steps() -> None:
    assert sorted([Split(4, 1), Split(1, 4), Split(2, 2)]) == [Split(1, 4), Split(2, 2),
                                                               Split(4, 1)]


@pytest.mark.parametrize("text", ["4x2", "4X2", " 4 * 2 ", "4x2 "])
def test_parse_reads_what_str_writes(text: str) -> None:
    assert Split.parse(text) == Split(4, 2)
    assert Split.parse(str(Split(16, 3))) == Split(16, 3)


@pytest.mark.parametrize("text", ["4", "4x", "x2", "4x2x1", "a x b", "4.0x2", "-1x2", ""])
def test_parse_names_the_text_it_refuses(text: str) -> None:
    with pytest.raises(JobSpecError, match="is not of the form MxK") as exc:
        Split.parse(text)
    assert f"'{text}'" in str(exc.value)


def test_parse_refuses_a_zero_part() -> None:
    with pytest.raises(JobSpecError, match="'0x4': .* at least 1"):
        Split.parse("0x4")


def test_calibrate_splits_flag_parses_through_the_one_parser() -> None:
    assert parse_splits("2x2, 1x4,4x1,2x2", 4) == (Split(1, 4), Split(2, 2), Split(4, 1))
    with pytest.raises(CalibrationError, match=r"^--splits: '2y2' is not of the form MxK"):
        parse_splits("2y2", 4)
    with pytest.raises(CalibrationError, match="--splits: 2x1 with 2 processes does not "
                                               "multiply to the job's effective_batch 8"):
        parse_splits("2x1", 8, world=2)


def test_sweep_options_hold_splits_even_when_given_pairs() -> None:
    options = SweepOptions(splits=((2, 2), (1, 4)))  # type: ignore[arg-type]
    assert [str(s) for s in options.splits] == ["2x2", "1x4"]
    again = request_from_dict(request_to_dict(CalibrateRequest(JOB, None, options)))
    assert again.options.splits == options.splits
    assert all(isinstance(s, Split) for s in again.options.splits)


def test_a_job_lists_its_candidate_splits_as_splits() -> None:
    assert JOB.splits() == (Split(1, 8), Split(2, 4), Split(4, 2), Split(8, 1))
    assert [str(s) for s in JOB.splits(2)] == ["1x4", "2x2", "4x1"]


def test_records_offer_the_split_and_keep_their_fields() -> None:
    result = SplitResult(2, 4, "ok", seconds_per_update=1.0)
    assert result.split == Split(2, 4)
    estimate = SplitEstimate("T4", 2, 4, 1.0, "predicted", 3.0, "predicted", 14.0, True,
                             levers=("torch_compile",))
    assert estimate.split == Split(2, 4) and estimate.split_label == "2x4 +compile"


def test_a_saved_profile_round_trips_with_micro_batch_and_grad_accum_fields() -> None:
    profile = read_profile(SHIPPED)
    saved = profile_to_dict(profile)
    assert {"micro_batch", "grad_accum"} <= set(saved["splits"][0])
    assert "split" not in saved["splits"][0]
    again = loads_profile(json.dumps(saved), str(SHIPPED))
    assert [s.split for s in again.splits] == [s.split for s in profile.splits]
    first = profile.splits[0]
    assert profile.split(*first.split) is first


def test_a_profile_naming_a_split_twice_says_which() -> None:
    saved = profile_to_dict(read_profile(SHIPPED))
    saved["splits"].append(dict(saved["splits"][0]))
    split = Split(saved["splits"][0]["micro_batch"], saved["splits"][0]["grad_accum"])
    with pytest.raises(DataError, match=f"splits\\[{len(saved['splits']) - 1}\\]: {split} "
                                        "appears twice"):
        loads_profile(json.dumps(saved), "twice.json")
