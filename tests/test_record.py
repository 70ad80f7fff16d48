"""The pure half of ``GacostCallback``: model identity, LoRA labels, the split and merging."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gacost.base import models
from gacost.base.errors import CalibrationError
from gacost.base.job import LINEAR_MODULES, parse_job
from gacost.base.profile import Profile, Workload, write_profile
from gacost.calibration import record

QWEN = "Qwen/Qwen3-1.7B"


def _job(model: str, **extra: object) -> dict[str, object]:
    return {"model": model, "sequence_length": 512, "effective_batch": 4,
            "work": {"updates": 10}, **extra}


@pytest.mark.parametrize("name_or_path", [QWEN, "qwen/qwen3-1.7b", "Qwen3-1.7B"])
def test_a_shipped_name_is_recorded_as_the_jobs_model(name_or_path: str) -> None:
    _, cfg = models.load_model_config(QWEN)
    name, how = record.model_identity(name_or_path, cfg)
    job = parse_job(_job("Qwen3-1.7B"))
    assert name == models.load_model_config(job.model)[0] == QWEN
    assert "shipped config" in how


def test_a_shipped_architecture_is_found_without_its_name(tmp_path: Path) -> None:
    _, cfg = models.load_model_config("meta-llama/Llama-3.2-1B")
    for name_or_path in ("", "/models/my-llama-1b-finetune", "someone/llama-1b-chat"):
        name, how = record.model_identity(name_or_path, {**cfg, "torch_dtype": "bfloat16"})
        assert name == "meta-llama/Llama-3.2-1B" and "same architecture" in how
    changed = {**cfg, "num_hidden_layers": cfg["num_hidden_layers"] + 1}
    assert record.shipped_by_architecture(changed) is None


def test_other_models_keep_their_hub_id_or_local_folder(tmp_path: Path) -> None:
    tiny = json.loads((Path(__file__).parent / "fixtures/calib/tiny-llama.json").read_text())
    assert record.model_identity("org/tiny", tiny) == ("org/tiny", "name_or_path")
    (tmp_path / "config.json").write_text(json.dumps(tiny))
    name, _ = record.model_identity(str(tmp_path), tiny)
    job = parse_job(_job(str(tmp_path)))
    assert name == models.load_model_config(job.model)[0] == str(tmp_path / "config.json")
    label, how = record.model_identity("", tiny)
    assert label == "unnamed-llama-h64-l2" and "pass model_name" in how
    given = record.model_identity("", tiny, "my/job-model")
    assert given == ("my/job-model", "given as model_name")


def test_target_labels_match_the_jobs() -> None:
    every = [f"model.layers.{i}.self_attn.{n}" for i in range(2) for n in LINEAR_MODULES]
    assert record.targets_label(every) == "all-linear"
    assert record.targets_label(set(LINEAR_MODULES)) == "all-linear"
    assert record.targets_label("all-linear") == "all-linear"
    picked = record.targets_label({"v_proj", "q_proj", "model.layers.0.mlp.fc1"})
    job = parse_job(_job(QWEN, lora={"target_modules": ["q_proj", "v_proj", "fc1"]}))
    assert picked == job.lora.targets_label == "q_proj,v_proj,fc1"


def test_precision_from_flags_then_weights() -> None:
    assert record.precision_label(True, False, "torch.float32") == "bf16"
    assert record.precision_label(False, True, "torch.float32") == "fp16"
    assert record.precision_label(False, False, "torch.bfloat16") == "bf16"
    assert record.precision_label(False, False, "torch.float32") == "fp32"


def test_run_split_uses_the_timed_updates() -> None:
    times = [5.0, 3.0, 1.0, 1.2, 0.9, 1.1, 1.0]
    s = record.run_split(times, 2, 2, 2, 1, 512, (None, None), 12.0, "n")
    assert s is not None and s.status == "ok" and s.seconds_per_update == 1.0
    assert s.timed_updates == 5 and s.warmup_updates == 2 and s.update_times == tuple(times)
    assert s.tokens_per_s == pytest.approx(4 * 512 / 1.0)
    assert s.ci_low_s is not None and s.ci_high_s is not None
    assert s.ci_low_s <= 1.0 <= s.ci_high_s
    assert record.run_split(times[:2], 2, 2, 2, 1, 512, (None, None), 1.0, "") is None


def _profile(seq: int = 512, gpu: str = "H200-SXM") -> Profile:
    workload = parse_job(_job(QWEN, sequence_length=seq)).workload(QWEN)
    return Profile(gpu=gpu, gpu_memory_gib=140.0, workload=workload, splits=(),
                   source=record.SOURCE, provenance="p", gpu_seconds=0.0)


def test_merging_into_a_file(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    assert record.read_existing(path) is None
    split = record.run_split([1.0, 1.0, 1.0], 1, 4, 1, 1, 512, (None, None), 3.0, "")
    assert split is not None
    calibrated = replace(_profile(), source="measured by gacost calibrate", gpu_seconds=10.0)
    write_profile(path, calibrated)
    base = record.merge_base(record.read_existing(path), _profile(), path)
    assert base.source == "measured by gacost calibrate; recorded run (GacostCallback)"
    merged = record.with_run(base, split, 3.0)
    assert merged.gpu_seconds == 13.0 and merged.split(4, 1) == split
    for other, words in ((_profile(seq=1024), "sequence_length 512 vs this run's 1024"),
                         (_profile(gpu="H100-SXM"), "measured on H200-SXM, this run is on H100")):
        with pytest.raises(CalibrationError, match=words):
            record.merge_base(calibrated, other, path)


def test_workload_fields_are_the_ones_the_callback_fills() -> None:
    # If Workload grows a field, the callback (which builds one field by field) must too.
    assert [f for f in Workload.__dataclass_fields__] == [
        "model", "method", "lora_r", "lora_alpha", "target_modules", "sequence_length",
        "precision", "gradient_checkpointing", "effective_batch", "torch_compile", "liger",
        "prepare_for_kbit", "lora_dropout",
    ]
