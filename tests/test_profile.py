"""Profiles: round trip, atomic writes, corrupt files give one-line errors."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from gacost.advisor.predictor import reference_profiles
from gacost.base import atomic
from gacost.base.atomic import write_atomic
from gacost.base.errors import DataError
from gacost.base.profile import (
    Profile,
    SplitResult,
    Workload,
    profile_to_dict,
    read_profile,
    write_profile,
)

WL = Workload("Qwen/Qwen3-1.7B", "lora", 16, 32.0, "all-linear", 512, "bf16", True, 4)


def _profile() -> Profile:
    return Profile(
        gpu="H200-SXM",
        gpu_memory_gib=139.8,
        workload=WL,
        source="measured",
        splits=(
            SplitResult(
                1, 4, "ok", seconds_per_update=0.5, iqr_seconds=0.01, ci_low_s=0.49,
                ci_high_s=0.51, update_times=(0.49, 0.5, 0.51), peak_allocated_gib=4.0,
                peak_reserved_gib=5.0, tokens_per_s=4096.0, warmup_updates=2, timed_updates=3,
            ),
            SplitResult(4, 1, "oom", peak_reserved_gib=16.0, note="capped"),
        ),
    )


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    write_profile(path, _profile())
    assert read_profile(path) == _profile()


def test_fingerprint_ignores_batch_and_model_case() -> None:
    other = Workload("qwen/qwen3-1.7b", "lora", 16, 32.0, "all-linear", 512, "bf16", True, 64)
    assert other.fingerprint() == WL.fingerprint()
    assert (
        Workload(
            "Qwen/Qwen3-1.7B", "lora", 16, 32.0, "all-linear", 1024, "bf16", True, 4
        ).fingerprint()
        != WL.fingerprint()
    )


def test_with_split_replaces_and_orders() -> None:
    p = _profile().with_split(SplitResult(2, 2, "ok", 0.4)).with_split(SplitResult(1, 4, "oom"))
    assert [(s.micro_batch, s.status) for s in p.splits] == [(1, "oom"), (2, "ok"), (4, "oom")]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("schema"), "not a gacost profile"),
        (lambda d: d.update(version=99), "version 99 is not supported"),
        (lambda d: d["gpu"].pop("name"), "gpu.name: required key is missing"),
        (lambda d: d["splits"][0].update(status="great"),
         "splits[0].status must be one of ok, oom, dropped, skipped, error, got 'great'"),
        (lambda d: d["splits"][0].update(seconds_per_update=None),
         "splits[0].seconds_per_update: required for a split of status ok"),
        (lambda d: d["splits"][0].update(bogus=1), "splits[0].bogus"),
        (lambda d: d["workload"].pop("precision"), "workload.precision: required key is missing"),
    ],
)
def test_corrupt_profiles(tmp_path: Path, mutate: object, message: str) -> None:
    d = profile_to_dict(_profile())
    mutate(d)  # type: ignore[operator]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    with pytest.raises(DataError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_profile(path)


def test_truncated_json(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    write_profile(path, _profile())
    path.write_text(path.read_text()[:50])
    with pytest.raises(DataError, match="not valid JSON"):
        read_profile(path)


def _temp_files(folder: Path, target: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p != target]


def test_atomic_write_keeps_old_file_when_writing_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "keep.json"
    path.write_text("old")
    seen: list[str] = []

    def disk_full(fd: int) -> None:  # the data is in the temporary file, not yet on disk
        seen.extend(_temp_files(tmp_path, path))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space"):
        write_atomic(path, "new")
    assert len(seen) == 1 and seen[0].startswith(".keep.json.") and seen[0].endswith(".tmp")
    assert path.read_text() == "old"
    assert _temp_files(tmp_path, path) == []


def test_atomic_open_keeps_old_file_when_the_writer_fails(tmp_path: Path) -> None:
    path = tmp_path / "keep.json"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic.atomic_open(path) as handle:
        handle.write("new, half written")
        handle.flush()
        assert len(_temp_files(tmp_path, path)) == 1
        raise RuntimeError("the writer failed")
    assert path.read_text() == "old"
    assert _temp_files(tmp_path, path) == []


def test_atomic_write_refuses_other_data(tmp_path: Path) -> None:
    path = tmp_path / "keep.json"
    path.write_text("old")
    with pytest.raises(TypeError):
        write_atomic(path, 123)  # type: ignore[arg-type]
    assert path.read_text() == "old" and _temp_files(tmp_path, path) == []


def test_shipped_reference_profiles_load() -> None:
    profiles = reference_profiles()
    t4 = next(p for p in profiles if p.gpu == "T4")
    assert [s.seconds_per_update for s in t4.splits] == [2.8709, 2.5847, 2.3792]
    assert [s.peak_reserved_gib for s in t4.splits] == [5.45, 5.58, 5.81]
    assert "19acafc8" in t4.provenance
