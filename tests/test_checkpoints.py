"""Checkpoints in a run's hours: how many TRL writes, what they hold (checked against real
``SFTTrainer`` checkpoints of a tiny model on the CPU), and the report's line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gacost.advisor import checkpoints
from gacost.advisor.predictor import setup_for
from gacost.base import models
from gacost.base.errors import JobSpecError
from gacost.base.job import load_job, parse_job
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


@pytest.mark.slow
@pytest.mark.parametrize("method", ["lora", "full"])
def test_what_trl_writes_is_what_is_counted(tmp_path: Path, method: str) -> None:
    import tempfile

    import torch
    from safetensors import safe_open
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
    peft_config = builder.lora_config(job) if method == "lora" else None
    tok = builder.placeholder_tokenizer()
    builder.align_special_tokens(model, tok)
    with tempfile.TemporaryDirectory() as out:
        args = SFTConfig(output_dir=out, per_device_train_batch_size=2, max_steps=3,
                         save_steps=2, max_length=32, bf16=False, report_to="none",
                         disable_tqdm=True, use_cpu=True)
        SFTTrainer(model=model, args=args, processing_class=tok, peft_config=peft_config,
                   train_dataset=builder.synthetic_dataset(6, 32, 256, seed=0)).train()
        saved = sorted(p.name for p in Path(out).glob("checkpoint-*"))
        # a save at update 2 and one at the end (3)
        assert saved == ["checkpoint-2", "checkpoint-3"]
        assert checkpoints.saves_per_run(3, checkpoints.save_interval(3, 2)) == 2
        folder = Path(out) / "checkpoint-3"
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
    from gacost.advisor.recommend import recommend
    from gacost.base.records import Offer

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
