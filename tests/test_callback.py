"""``GacostCallback`` records real TRL ``SFTTrainer`` runs of a tiny model on the CPU."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gacost.base.errors import CalibrationError
from gacost.base.job import Job, load_job
from gacost.base.profile import read_profile, write_profile
from gacost.commands.cli import main

# Every test here trains for real (torch, transformers, TRL, PEFT on the CPU); the
# calibration modules are imported inside the tests so that collecting them is cheap.
pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parent / "fixtures" / "calib"
JOB = FIXTURES / "tiny-job.yaml"


def tiny_job(tmp_path: Path, model: str | None = None, **extra: Any) -> tuple[Path, Job]:
    """The tiny LoRA job as a YAML file in ``tmp_path`` (model: an absolute path)."""
    text = JOB.read_text().replace("./tiny-llama.json", model or str(FIXTURES / "tiny-llama.json"))
    text += "".join(f"{k}: {json.dumps(v)}\n" for k, v in extra.items())
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return path, load_job(path)


def lora_model(job: Job, weights: str | None = None) -> Any:
    """The job's tiny llama with its LoRA adapters (random weights, or saved ones)."""
    import torch

    from gacost.base import models
    from gacost.calibration import builder

    _, cfg = models.load_model_config(str(FIXTURES / "tiny-llama.json"))
    from peft import get_peft_model

    base = builder.build_model(cfg, job, torch.device("cpu"), weights)
    torch.manual_seed(0)
    return get_peft_model(base, builder.lora_config(job))


def train(
    model: Any, m: int, k: int, steps: int, callbacks: list[Any], seq: int = 32,
    ragged: bool = False,
) -> Any:
    """A real SFTTrainer run of ``steps`` updates at split m x k, fixed-length sequences
    (``ragged``: sequences of 8 to ``seq`` tokens, each batch padded to its longest)."""
    import tempfile

    from transformers.trainer_callback import PrinterCallback
    from trl import SFTConfig, SFTTrainer

    from gacost.calibration import builder

    tok = builder.placeholder_tokenizer()
    builder.align_special_tokens(model, tok)
    data = builder.synthetic_dataset(m * k * steps, seq, 256, seed=0)
    if ragged:
        from datasets import Dataset

        rows = data["input_ids"]
        data = Dataset.from_dict({"input_ids": [r[: 8 + (i * 7) % (seq - 7)]
                                                for i, r in enumerate(rows)]})
    with tempfile.TemporaryDirectory() as out:
        args = SFTConfig(
            output_dir=out,
            per_device_train_batch_size=m,
            gradient_accumulation_steps=k,
            max_steps=steps,
            max_length=seq,
            pad_to_multiple_of=None if ragged else seq,
            packing=False,
            activation_checkpointing=True,
            activation_checkpointing_kwargs={"use_reentrant": False},
            bf16=False,
            logging_strategy="no",
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
            use_cpu=True,
        )
        trainer = SFTTrainer(
            model=model, args=args, train_dataset=data, processing_class=tok, callbacks=callbacks
        )
        trainer.remove_callback(PrinterCallback)
        trainer.train()
        return trainer


def callback(path: Path, **kw: Any) -> Any:
    from gacost.calibration.callback import GacostCallback

    return GacostCallback(path, **kw)


def recorded_model(job: Job) -> str:
    from gacost.base import models

    return models.load_model_config(job.model)[0]


def test_writes_periodically_and_at_the_end(tmp_path: Path) -> None:
    from transformers import TrainerCallback

    out = tmp_path / "run.json"
    _, job = tiny_job(tmp_path)
    seen: list[int] = []

    class Watch(TrainerCallback):
        """Reads the file after each update, as another process would."""

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if out.exists():
                seen.append(len(read_profile(out).splits[0].update_times))

    cb = callback(out, every_n_updates=4, warmup=2, model_name=recorded_model(job),
                  write_budget=1.0, probe_seconds=0.1)
    model = lora_model(job)
    train(model, 2, 2, 10, [cb, Watch()])
    assert sorted(set(seen)) == [4, 8]  # rewritten at updates 4 and 8 while training
    profile = read_profile(out)
    assert profile.workload == job.workload(recorded_model(job))
    assert profile.source == "recorded run (GacostCallback)" and "on_step_end" in profile.provenance
    assert profile.gpu == "CPU" and profile.gpu_count == 1
    assert profile.software["torch_compile"] == "false" and profile.software["trl"]
    (split,) = profile.splits
    assert (split.micro_batch, split.grad_accum, split.status) == (2, 2, "ok")
    assert len(split.update_times) == 10 and split.warmup_updates == 2
    assert split.timed_updates == 8
    assert all(0 < t < 60 for t in split.update_times)
    assert split.ci_low_s is not None and split.ci_high_s is not None
    assert split.seconds_per_update is not None
    assert split.ci_low_s <= split.seconds_per_update <= split.ci_high_s
    assert split.tokens_per_s == pytest.approx(4 * 32 / split.seconds_per_update, rel=1e-3)
    assert split.peak_reserved_gib is None  # no CUDA: no device memory to report
    assert profile.gpu_seconds and profile.gpu_seconds >= sum(split.update_times[2:]) * 0.99
    assert "sequence length 32 from the first micro-batch" in split.note
    assert cb.profile == profile
    assert profile.host_probe_ms is not None and profile.host_probe_ms > 0  # asked for
    assert profile.host_probes() is not None  # before the first update and after the last

    # With no budget for periodic writes, only the first one (and the last) is made.
    seen.clear()
    out.unlink()
    cb = callback(out, every_n_updates=2, model_name=recorded_model(job), write_budget=0.0)
    train(model, 2, 2, 8, [cb, Watch()])
    assert sorted(set(seen)) == [4]
    assert len(read_profile(out).splits[0].update_times) == 8
    assert read_profile(out).host_probe_ms is None  # on the CPU no probe unless asked


def test_a_second_run_with_another_split_merges(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    _, job = tiny_job(tmp_path)
    name = recorded_model(job)
    model = lora_model(job)
    train(model, 2, 2, 4, [callback(out, every_n_updates=0, model_name=name)])
    first = read_profile(out)
    train(model, 4, 1, 4, [callback(out, every_n_updates=0, model_name=name)])
    both = read_profile(out)
    assert [(s.micro_batch, s.grad_accum) for s in both.splits] == [(2, 2), (4, 1)]
    assert both.split(2, 2) == first.split(2, 2)
    assert both.created_at == first.created_at
    assert (both.gpu_seconds or 0) > (first.gpu_seconds or 0)
    train(model, 4, 1, 5, [callback(out, every_n_updates=0, model_name=name)])
    again = read_profile(out)
    assert len(again.splits) == 2  # the same split is replaced by the latest run
    latest = again.split(4, 1)
    assert latest is not None and len(latest.update_times) == 5


def test_a_profile_of_another_workload_is_not_clobbered(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    _, job = tiny_job(tmp_path)
    model = lora_model(job)
    train(model, 4, 1, 3, [callback(out, every_n_updates=0, model_name=recorded_model(job))])
    before = out.read_bytes()
    from gacost.calibration.callback import _unwrap

    hooks = dict(_unwrap(model)._forward_pre_hooks)
    cb = callback(out, model_name=recorded_model(job))
    with pytest.raises(CalibrationError, match="another workload or GPU .*sequence_length 32 vs "
                       "this run's 16.*left as it was: pass another path"):
        train(model, 4, 1, 3, [cb], seq=16)
    assert out.read_bytes() == before
    assert cb.times == []  # stopped at the first forward pass, before any update
    assert dict(_unwrap(model)._forward_pre_hooks) == hooks  # and took its hook away

    out.write_text('{"not": "a profile"}')
    with pytest.raises(CalibrationError, match="not a readable gacost profile"):
        callback(out)
    with pytest.raises(CalibrationError, match="every_n_updates"):
        callback(tmp_path / "x.json", every_n_updates=-1)
    with pytest.raises(CalibrationError, match="probe_seconds: give 0"):
        callback(tmp_path / "x.json", probe_seconds=-1.0)


def test_a_local_checkpoint_is_recorded_as_the_jobs_folder(tmp_path: Path) -> None:
    _, job = tiny_job(tmp_path)
    folder = tmp_path / "ckpt"
    lora_model(job).get_base_model().save_pretrained(folder)
    job_path, job = tiny_job(tmp_path, model=str(folder))
    out = tmp_path / "run.json"
    train(lora_model(job, weights=str(folder)), 4, 1, 4, [callback(out, every_n_updates=0)])
    profile = read_profile(out)
    assert profile.workload.model == str(folder / "config.json")
    assert profile.fingerprint == job.workload(recorded_model(job)).fingerprint()
    assert "local folder" in profile.splits[0].note


def _recommend(job_path: Path, profile: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()  # drop what the training printed
    code = main(["recommend", "--job", str(job_path), "--profile", str(profile),
                 "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def test_recommend_uses_the_recorded_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job_path, job = tiny_job(tmp_path, gpus=["L4"])
    out = tmp_path / "run.json"
    train(lora_model(job), 2, 2, 6, [callback(out, model_name=recorded_model(job))])
    profile = read_profile(out)
    # The run is on the CPU, which is not a GPU to rent: recommend matches the workload and
    # says the profile's GPU is not among the job's, instead of "another workload".
    report = json.loads(_recommend(job_path, out, capsys))
    notes = " ".join(report["notes"])
    assert "profile for CPU unused: CPU is not among the job's gpus" in notes
    assert "another workload" not in notes
    # The same record labelled as an L4 run is used as that GPU's measured time.
    as_l4 = tmp_path / "run-l4.json"
    write_profile(as_l4, replace(profile, gpu="L4"))
    report = json.loads(_recommend(job_path, as_l4, capsys))
    (est,) = [e for e in report["splits_on_recommended"] if e["micro_batch"] == 2]
    assert est["gpu"] == "L4"
    recorded = profile.split(2, 2)
    assert recorded is not None
    assert est["time_source"] == "measured"
    assert est["seconds_per_update"] == pytest.approx(recorded.seconds_per_update)
    assert "recorded run" in est["basis"]



def test_sequence_length_given_unnamed_models_and_dynamic_padding(tmp_path: Path) -> None:
    _, job = tiny_job(tmp_path)
    model = lora_model(job)
    out = tmp_path / "run.json"
    # A model built from a config that is not shipped: recorded under a label, with a warning.
    with pytest.warns(UserWarning, match="pass GacostCallback.*model_name"):
        train(model, 4, 1, 3, [callback(out, every_n_updates=0, warmup=1)])
    assert read_profile(out).workload.model == "unnamed-llama-h64-l2"
    # sequence_length= is checked against the file at the start of training.
    cb = callback(out, every_n_updates=0, sequence_length=64)
    with pytest.raises(CalibrationError, match="sequence_length 32 vs this run's 64"):
        train(model, 4, 1, 3, [cb])
    # Dynamic padding: the first micro-batch's length is recorded and the range noted.
    ragged = tmp_path / "ragged.json"
    train(model, 2, 1, 6, [callback(ragged, every_n_updates=0, model_name="m")], ragged=True)
    (split,) = read_profile(ragged).splits
    assert "dynamic padding" in split.note and "pass sequence_length=" in split.note
    assert read_profile(ragged).workload.sequence_length < 32
