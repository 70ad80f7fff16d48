"""The data builders of the embedded data that bench results feed (data/README.md): the H200
sweep's reference profiles (``gacost.advisor.build_sweep_profiles``) and the saved reference
fit (``gacost.advisor.build_reference_fit``) are what the builders write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gacost.advisor import build_reference_fit, build_sweep_profiles, predictor

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ROOT / "bench" / "results" / "h200-sweep"
PROFILES = ROOT / "data" / "profiles"
SAVED_FIT = ROOT / "data" / predictor.REFERENCE_FIT


def test_sweep_profiles_are_rebuilt_byte_for_byte(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert build_sweep_profiles.main(["--from", str(SWEEP), "--out", str(tmp_path)]) == 0
    assert "wrote 11 reference profiles" in capsys.readouterr().out
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in PROFILES.glob("*--h200-sweep.json"))
    for name in written:
        assert (tmp_path / name).read_bytes() == (PROFILES / name).read_bytes(), name


def test_sweep_profiles_need_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert build_sweep_profiles.main(["--from", str(tmp_path), "--out", str(tmp_path)]) == 1
    assert "no sweep results" in capsys.readouterr().out


def test_defaults_are_the_checkouts_data() -> None:
    assert build_sweep_profiles.DEFAULT_OUT == PROFILES
    assert build_reference_fit.DEFAULT_OUT == SAVED_FIT


def test_the_saved_fit_is_current(capsys: pytest.CaptureFixture[str]) -> None:
    assert build_reference_fit.main(["--check"]) == 0
    assert "is current" in capsys.readouterr().out


@pytest.mark.parametrize("text", [None, "{}", '{"key": "0123"}', "[1]", "not json"])
def test_a_stale_or_missing_fit_fails_the_check(tmp_path: Path, text: str | None,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fit.json"
    if text is not None:
        out.write_text(text)
    assert build_reference_fit.main(["--check", "--out", str(out)]) == 1
    assert "is stale" in capsys.readouterr().err


def test_the_builder_writes_the_fit_the_saved_one_is(tmp_path: Path) -> None:
    out = tmp_path / "fit.json"
    assert build_reference_fit.main(["--out", str(out)]) == 0
    new, saved = json.loads(out.read_text()), json.loads(SAVED_FIT.read_text())
    assert new["key"] == saved["key"]
    assert (new["used"], new["unused"]) == (saved["used"], saved["unused"])
    assert new["time"]["names"] == saved["time"]["names"]
    # another CPU's BLAS ends the least-squares fit a few 1e-7 away (seen: 3e-7 on a CI
    # machine); a fit made stale by a model change moves it by 1e-3 and more
    assert new["time"]["x"] == pytest.approx(saved["time"]["x"], rel=1e-4, abs=1e-5)
    assert build_reference_fit.main(["--check", "--out", str(out)]) == 0
