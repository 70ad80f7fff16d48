"""``gacost calibrate`` through the real TRL SFTTrainer + PEFT path, on the CPU, tiny model."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gacost.base import models
from gacost.base.errors import CalibrationError
from gacost.base.job import load_job
from gacost.base.profile import read_profile
from gacost.calibration.request import CalibrationInterrupted
from gacost.commands.cli import main

# Every test here trains for real (torch, transformers, TRL, PEFT on the CPU): slow, and
# the calibration modules are imported inside the tests so that collecting them is cheap.
pytestmark = pytest.mark.slow

JOB = Path(__file__).parent / "fixtures" / "calib" / "tiny-job.yaml"
FAST = {"warmup": 1, "max_timed": 6, "max_seconds": 0.05, "progress": False}
SWEEP_KEYS = {"splits"}


def calibrate(request: Any) -> Any:
    """:func:`gacost.calibration.run.calibrate`, imported on first use."""
    from gacost.calibration.run import calibrate as run

    return run(request)


def inject_oom_above(limit: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every micro-batch larger than ``limit`` raise a CUDA OOM inside the real trainer:
    a forward pre-hook on the model, registered around each split's measurement."""
    import torch

    from gacost.calibration import sweep

    real = sweep.measure_split

    def hook(_mod: Any, args: Any, kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is not None and ids.shape[0] > limit:
            raise torch.OutOfMemoryError(
                f"CUDA out of memory (injected: micro-batch {ids.shape[0]} > {limit})"
            )

    def measured(ctx: Any, *args: Any, **kw: Any) -> Any:
        handle = ctx.model.register_forward_pre_hook(hook, with_kwargs=True)
        try:
            return real(ctx, *args, **kw)
        finally:
            handle.remove()

    monkeypatch.setattr(sweep, "measure_split", measured)


def _request(out: Path, **kw: object) -> Any:
    """A fast CPU request; ``splits`` goes to the sweep options."""
    from gacost.calibration.request import CalibrateRequest, SweepOptions

    job = load_job(JOB)
    opts = {"splits": job.splits(), **FAST, **{k: v for k, v in kw.items() if k in SWEEP_KEYS}}
    rest = {k: v for k, v in kw.items() if k not in SWEEP_KEYS}
    return CalibrateRequest(job=job, out=out, options=SweepOptions(**opts), device="cpu", **rest)


def test_cli_writes_a_profile_that_reads_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p.json"
    code = main(
        [
            "calibrate",
            "--job",
            str(JOB),
            "--out",
            str(out),
            "--device",
            "cpu",
            "--warmup",
            "1",
            "--max-updates",
            "6",
            "--max-seconds",
            "0.05",
            "--passes",
            "2",
            "--probe-seconds",
            "0.2",
            "--quiet",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "profile written to" in text and "4x1" in text
    profile = read_profile(out)
    # the host probe ran before torch was imported and again after the splits: the profile's
    # host fact is their mean, each recorded
    assert profile.host_probe_ms is not None and profile.host_probe_ms > 0
    pair = profile.host_probes()
    assert pair is not None and profile.host_probe_ms == pytest.approx(sum(pair) / 2, abs=0.01)
    assert f"host probe: {profile.host_probe_ms:.1f} ms per task" in text
    assert f"({pair[0]:.1f} before the splits, {pair[1]:.1f} after" in text
    assert profile.gpu == "CPU" and profile.workload.sequence_length == 32
    assert {(s.micro_batch, s.grad_accum) for s in profile.splits} == {(1, 4), (2, 2), (4, 1)}
    best = min(
        (s for s in profile.splits if s.seconds_per_update), key=lambda s: s.seconds_per_update or 0
    )
    assert best.status == "ok"
    for s in profile.splits:
        assert s.status in ("ok", "dropped")
        assert s.timed_updates >= 3 and s.seconds_per_update and s.seconds_per_update > 0
        assert s.tokens_per_s == pytest.approx(4 * 32 / s.seconds_per_update, rel=1e-4, abs=0.06)
        if s.status == "dropped":  # one pass
            assert len(s.update_times) == s.warmup_updates + s.timed_updates
            assert s.pass_seconds == ()
            continue
        # two passes: pass 1 (warm-up + timed), then pass 2 (one warm-up + timed), pooled
        assert len(s.update_times) == s.warmup_updates + s.timed_updates + 1
        assert len(s.pass_seconds) == 2
        assert s.precision is not None
        gap = abs(s.pass_seconds[0] - s.pass_seconds[1]) / 2 / s.seconds_per_update
        assert gap - 1e-3 <= s.precision
    assert profile.software["trl"] and profile.gpu_seconds and profile.gpu_seconds > 0
    raw = json.loads(out.read_text())
    assert raw["schema"] == "gacost-profile" and raw["fingerprint"] == profile.fingerprint


def test_oom_is_a_result_and_the_sweep_continues(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inject_oom_above(2, monkeypatch)
    profile, _ = calibrate(_request(tmp_path / "p.json"))
    status = {(s.micro_batch, s.grad_accum): s.status for s in profile.splits}
    assert status[(4, 1)] == "oom"
    assert status[(2, 2)] in ("ok", "dropped") and status[(1, 4)] in ("ok", "dropped")
    oom = profile.split(4, 1)
    assert oom is not None and "out of memory" in oom.note


def test_resume_keeps_measured_splits_and_skips_above_an_oom(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "p.json"
    inject_oom_above(1, monkeypatch)
    first, _ = calibrate(_request(out, splits=((2, 2),)))
    monkeypatch.undo()
    assert first.split(2, 2) is not None and first.split(2, 2).status == "oom"  # type: ignore[union-attr]
    second, _ = calibrate(_request(out, resume=True))
    assert second.split(2, 2) == first.split(2, 2)
    above = second.split(4, 1)
    assert above is not None and above.status == "skipped"
    below = second.split(1, 4)
    assert below is not None and below.status == "ok"
    assert read_profile(out) == second


def test_resume_refuses_another_workload(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    calibrate(_request(out, splits=((4, 1),)))
    req = _request(out, resume=True)
    other = replace(req, job=req.job.model_copy(update={"sequence_length": 16}))
    with pytest.raises(CalibrationError, match="another workload"):
        calibrate(other)


def test_interrupt_keeps_the_splits_already_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gacost.calibration import sweep

    real = sweep.measure_split
    calls = {"n": 0}

    def interrupted_second(*args: object, **kw: object) -> object:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(sweep, "measure_split", interrupted_second)
    out = tmp_path / "p.json"
    with pytest.raises(CalibrationInterrupted, match="--resume"):
        calibrate(_request(out))
    kept = read_profile(out)
    assert [(s.micro_batch, s.status) for s in kept.splits] == [(4, "ok")]


def test_local_jsonl_data_with_a_local_tokenizer(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [f"sample number {i} says hello to the tiny model" for i in range(20)]
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        corpus, trainers.WordLevelTrainer(special_tokens=["<pad>", "<unk>", "<eos>"])
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>"
    )
    fast.save_pretrained(tmp_path / "tok")
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps({"text": t}) for t in corpus) + "\n")
    profile, _ = calibrate(
        _request(
            tmp_path / "p.json", splits=((4, 1),), data=str(data), tokenizer=str(tmp_path / "tok")
        )
    )
    assert profile.splits[0].status == "ok"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--splits", "3x1"], "does not multiply to the job's effective_batch 4"),
        (["--vram-limit", "16GiB"], "--vram-limit: needs a CUDA GPU"),
        (["--data", "missing.jsonl"], "--data: no file at"),
        (["--max-seconds", "0"], "--max-seconds > 0"),
    ],
)
def test_bad_inputs_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code = main(
        [
            "calibrate",
            "--job",
            str(JOB),
            "--out",
            str(tmp_path / "p.json"),
            "--device",
            "cpu",
            "--quiet",
            *args,
        ]
    )
    err = capsys.readouterr().err
    assert code != 0 and message in err and err.startswith("error: ")
    assert "Traceback" not in err


def test_the_default_path_is_not_overwritten_without_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """calibrate() itself checks the default path once the device is known (on a GPU the
    command cannot: the path is named after the GPU)."""
    from gacost.calibration.request import default_out

    monkeypatch.chdir(tmp_path)
    req = replace(_request(tmp_path / "unused.json"), out=None)
    model = models.load_model_config(req.job.model)[0]
    name = default_out("CPU", model, req.job.workload(model).fingerprint())
    (tmp_path / name).write_text("notes\n")
    with pytest.raises(CalibrationError, match=r"\(the default --out\) exists and is not a "):
        calibrate(req)
    assert (tmp_path / name).read_text() == "notes\n"


def test_fp16_on_cpu_is_refused(tmp_path: Path) -> None:
    req = _request(tmp_path / "p.json")
    fp16 = replace(req, job=req.job.model_copy(update={"precision": "fp16"}))
    with pytest.raises(CalibrationError, match="fp16 mixed precision needs a CUDA GPU"):
        calibrate(fp16)


def test_one_process_per_split_fills_one_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--isolation process`` (the default on a GPU): every split in a fresh worker process,
    each adding its split to the same profile, as ``--resume`` would."""
    out = tmp_path / "p.json"
    argv = ["calibrate", "--job", str(JOB), "--out", str(out), "--device", "cpu",
            "--warmup", "1", "--max-updates", "4", "--max-seconds", "0.05", "--quiet",
            "--no-trace", "--isolation", "process", "--probe-seconds", "0.2"]
    assert main(argv) == 0
    profile = read_profile(out)
    assert {(s.micro_batch, s.grad_accum) for s in profile.splits} == {(1, 4), (2, 2), (4, 1)}
    assert profile.provenance.endswith("each split in its own process")
    # probed in the parent, recorded by the split processes from the request, and again in
    # the parent after them
    assert profile.host_probe_ms is not None and profile.host_probe_ms > 0
    assert profile.host_probes() is not None
    assert all(s.pass_seconds == () for s in profile.splits)  # one pass each
    assert "profile written to" in capsys.readouterr().out


def test_a_failing_split_process_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    import subprocess
    import sys

    from gacost.calibration.launch import _pump

    child = ("import sys; sys.stderr.write('\\rsplit 1x4:  50%\\rsplit 1x4: 100%\\n'); "
             "sys.stderr.write('error: split 1x4 failed: boom\\n'); sys.exit(1)")
    proc = subprocess.Popen([sys.executable, "-c", child], stderr=subprocess.PIPE)
    errors = _pump(proc)
    assert proc.wait() == 1 and errors == ["split 1x4 failed: boom"]
    err = capsys.readouterr().err
    assert "split 1x4: 100%" in err and "error:" not in err  # progress through, error kept
