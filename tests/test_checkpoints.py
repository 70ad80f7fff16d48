"""Checkpoints in a run's hours: how many TRL writes, what they hold (checked against real
``SFTTrainer`` checkpoints of a tiny model on the CPU), and the report's line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gacost.advisor import checkpoints
from gacost.advisor.predictor import reference_profiles, setup_for
from gacost.advisor.recommend import recommend
from gacost.base import models
from gacost.base.errors import DataError, JobSpecError
from gacost.base.job import load_job, parse_job
from gacost.base.profile import (
    Profile,
    profile_from_dict,
    profile_to_dict,
    read_profile,
    write_profile,
)
from gacost.base.records import Offer
from gacost.commands.cli import main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "calib"


@pytest.mark.parametrize(("updates", "save_steps", "interval", "saves"), [
    (5000, 500, 500, 10),  # TRL's default: every 500, the last one at the end
    (5001, 500, 500, 11),  # and one more at the end when the run stops between saves
    (499, 500, 500, 1),  # a short run saves once, at its end
    (1000, 0.25, 250, 4),  # below 1: a share of the run
    (10, 0.15, 2, 5),  # rounded up, as transformers does
    (1000, 0, 0, 0),  # no checkpoints
])
def test_saves_follow_the_trainer(updates: int, save_steps: float, interval: int,
                                  saves: int) -> None:
    assert checkpoints.save_interval(updates, save_steps) == interval
    assert checkpoints.saves_per_run(updates, interval) == saves


def test_a_full_fine_tune_writes_its_weights_and_both_moments() -> None:
    job = parse_job({"model": "Qwen/Qwen3-1.7B", "method": "full", "sequence_length": 512,
                     "effective_batch": 8, "work": {"updates": 10}})
    arch = models.model_arch(*models.load_model_config(job.model))
    setup = setup_for(job.workload())
    # bf16 weights, and AdamW's moments in the parameters' dtype: 3 x 2 bytes per parameter
    assert checkpoints.checkpoint_bytes(arch, setup) == 6 * arch.total_params
    assert checkpoints.checkpoint_bytes(arch, setup, weights_only=True) == 2 * arch.total_params
    assert checkpoints.save_seconds(12e9) == pytest.approx(12.0)


@pytest.mark.parametrize(("value", "message"), [
    (2.5, "save_steps: 2.5 is neither a whole number of updates nor a share of the run"),
    (-1, "save_steps"),
    ("often", "save_steps"),
])
def test_bad_save_steps_name_the_key(value: Any, message: str) -> None:
    with pytest.raises(JobSpecError, match=message):
        parse_job({"model": "Qwen/Qwen3-1.7B", "sequence_length": 512, "effective_batch": 4,
                   "work": {"updates": 10}, "save_steps": value})


def _recommend(tmp_path: Path, capsys: pytest.CaptureFixture[str], **job: Any) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(json.dumps({"sequence_length": 512, "effective_batch": 8,
                                "gpus": ["H100-80GB"], **job}))
    assert main(["recommend", "--job", str(path)]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_the_report_names_checkpoints_where_they_count(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    full = {"model": "Qwen/Qwen3-1.7B", "method": "full", "work": {"updates": 5000}}
    text = _recommend(tmp_path, capsys, **full)
    assert "includes 10 checkpoint(s) of 10.3 GB, one every 500 updates:" in text
    assert "103 GB of disk unless" in text
    assert "includes" not in _recommend(tmp_path, capsys, **full, save_steps=0)
    # a LoRA adapter's checkpoints are a fraction of a percent: no line
    lora = {"model": "Qwen/Qwen3-1.7B", "work": {"updates": 5000}}
    assert "checkpoint" not in _recommend(tmp_path, capsys, **lora)


def _train_tiny(tmp_path: Path, method: str, steps: int, callbacks: list[Any]) -> Any:
    """The tiny job (``method``: lora or full) trained for real by TRL's SFTTrainer on the
    CPU for ``steps`` updates, a checkpoint every 2 and at the end, into ``tmp_path/out``."""
    import torch
    from trl import SFTConfig, SFTTrainer

    from gacost.calibration import builder

    lines = (FIXTURES / "tiny-job.yaml").read_text().replace(
        "./tiny-llama.json", str(FIXTURES / "tiny-llama.json")).splitlines()
    if method == "full":  # the tiny job as a full fine-tune
        lines = [line.replace("method: lora", "method: full") for line in lines
                 if not line.startswith("lora:")]
    path = tmp_path / "job.yaml"
    path.write_text("\n".join(lines) + "\n")
    job = load_job(path)
    _, cfg = models.load_model_config(str(FIXTURES / "tiny-llama.json"))
    model = builder.build_model(cfg, job, torch.device("cpu"), None)
    tok = builder.placeholder_tokenizer()
    builder.align_special_tokens(model, tok)
    args = SFTConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2,
                     max_steps=steps, save_steps=2, max_length=32, bf16=False,
                     report_to="none", disable_tqdm=True, use_cpu=True)
    SFTTrainer(model=model, args=args, processing_class=tok, callbacks=callbacks,
               peft_config=builder.lora_config(job) if method == "lora" else None,
               train_dataset=builder.synthetic_dataset(2 * steps, 32, 256, seed=0)).train()
    return job


@pytest.mark.slow
@pytest.mark.parametrize("method", ["lora", "full"])
def test_what_trl_writes_is_what_is_counted(tmp_path: Path, method: str) -> None:
    import torch
    from safetensors import safe_open

    job = _train_tiny(tmp_path, method, 3, [])
    out = tmp_path / "out"
    saved = sorted(p.name for p in out.glob("checkpoint-*"))
    # a save at update 2 and one at the end (3)
    assert saved == ["checkpoint-2", "checkpoint-3"]
    assert checkpoints.saves_per_run(3, checkpoints.save_interval(3, 2)) == 2
    folder = out / "checkpoint-3"
    weights = folder / ("adapter_model.safetensors" if method == "lora"
                        else "model.safetensors")
    with safe_open(str(weights), "pt") as f:
        written = sum(f.get_tensor(k).nbytes for k in f.keys())  # noqa: SIM118
    state = torch.load(folder / "optimizer.pt", weights_only=True)["state"]
    written += sum(t.nbytes for s in state.values() for t in s.values() if t.dim() > 0)
    arch = models.model_arch(*models.load_model_config(str(FIXTURES / "tiny-llama.json")))
    counted = checkpoints.checkpoint_bytes(arch, setup_for(job.workload()))
    # the count leaves out the RMS norms' weights (0.4 % of this tiny model's parameters)
    assert counted == pytest.approx(written, rel=0.01)


def test_the_hours_band_carries_the_machines_save_rate() -> None:
    job = parse_job({"model": "Qwen/Qwen3-1.7B", "method": "full", "sequence_length": 512,
                     "effective_batch": 8, "work": {"updates": 5000}, "gpus": ["H100-SXM"]})
    offer = Offer("test", "r1", "h100-box", "H100-SXM", 1, 80, 16, 128, 2.0, None, "test",
                  "2026-01-01")
    best = recommend(job, [offer]).recommended
    e, group = best.estimate, best.groups[0].group
    assert e.seconds_low is not None and e.seconds_high is not None
    # 28 layers x 50,331,648 linear weights + 151,936 x 2,048 tied embeddings, 6 B each
    assert 28 * 50_331_648 + 151_936 * 2_048 == 1_720_451_072
    assert (group.saves, group.save_bytes) == (10, 6 * 1_720_451_072)
    low, high = best.hours_band or (0.0, 0.0)
    # ten saves of 10.3 GB at 0.65 and at 2.35 s per GB beside the band of an update
    assert low == pytest.approx((e.seconds_low * 5000 + 10 * 10.322706432 * 0.65) / 3600)
    assert high == pytest.approx((e.seconds_high * 5000 + 10 * 10.322706432 * 2.35) / 3600)
    assert low < best.hours_per_run < high


def _t4_published() -> Profile:
    return next(p for p in reference_profiles() if p.gpu == "T4")


def test_a_profile_keeps_its_saves_and_names_a_bad_one(tmp_path: Path) -> None:
    profile = replace(_t4_published(), checkpoint_saves=((3.0, 1.5e9), (5.0, 2e9)))
    write_profile(tmp_path / "p.json", profile)
    again = read_profile(tmp_path / "p.json")
    assert again.checkpoint_saves == ((3.0, 1.5e9), (5.0, 2e9))
    assert again.save_seconds_per_gb == pytest.approx(2.25)  # median of 2.0 and 2.5
    assert _t4_published().save_seconds_per_gb is None
    data = profile_to_dict(profile)
    for bad, field in (([{"seconds": -1, "bytes": 5}], "checkpoint_saves[0].seconds"),
                       ([{"seconds": 1}], "checkpoint_saves[0].bytes"),
                       ([{"seconds": 1, "bytes": 2, "when": 3}], "checkpoint_saves[0]"),
                       ("often", "checkpoint_saves")):
        with pytest.raises(DataError, match=field.replace("[", r"\[").replace("]", r"\]")):
            profile_from_dict({**data, "checkpoint_saves": bad}, "p.json")


def test_a_recorded_save_rate_is_that_machines_only() -> None:
    # the published T4 workload, with its recorded run's saves at 2.0 s per GB
    mine = replace(_t4_published(), checkpoint_saves=((20.0, 10e9),))
    job = load_job(ROOT / "examples" / "qwen3-1.7b-lora.yaml").model_copy(
        update={"gpus": ["T4", "L4"], "objective": "min_time"})
    offers = [Offer("test", "r1", f"{g.lower()}-box", g, 1, 24, 8, 32, 0.5, None, "test",
                    "2026-01-01") for g in ("T4", "L4")]
    report = recommend(job, offers, [mine])
    by_gpu = {p.gpu: p.groups[0] for p in report.plans}
    assert by_gpu["T4"].save_rate == 2.0 and by_gpu["L4"].save_rate == 1.0
    assert by_gpu["T4"].checkpoint_seconds == pytest.approx(10 * 0.209190912 * 2.0)
    low, high = by_gpu["T4"].hours_band or (0.0, 0.0)
    e = by_gpu["T4"].estimate
    assert e.seconds_low is not None
    assert low == pytest.approx((e.seconds_low * 5000 + 10 * 0.209190912 * 2.0) / 3600)


@pytest.mark.slow
def test_the_callback_records_each_save_of_a_real_run(tmp_path: Path) -> None:
    from gacost.calibration.callback import GacostCallback

    recorder = GacostCallback(tmp_path / "run.json", warmup=1, model_name=str(
        FIXTURES / "tiny-llama.json"))
    _train_tiny(tmp_path, "lora", 5, [recorder])
    saved = read_profile(tmp_path / "run.json").checkpoint_saves
    # saves at updates 2 and 4 and at the end (5), each the size of its folder
    folders = [tmp_path / "out" / f"checkpoint-{n}" for n in (2, 4, 5)]
    assert [nbytes for _, nbytes in saved] == [
        sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) for folder in folders]
    assert all(seconds > 0 for seconds, _ in saved)
