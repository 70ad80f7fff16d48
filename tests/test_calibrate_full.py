"""``gacost calibrate`` of a full fine-tune (``method: full``): TRL's ``SFTTrainer`` with no
``peft_config``, every weight trained, on the CPU with the tiny model."""

from __future__ import annotations

import gc
import json
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from gacost.base.job import Job, load_job
from gacost.base.profile import Profile, read_profile, write_profile
from gacost.commands.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "calib"
JOB = FIXTURES / "tiny-full-job.yaml"
FAST = {"warmup": 1, "max_timed": 6, "max_seconds": 0.05, "progress": False}


@dataclass
class Seen:
    """What the instrumented sweep saw: at the start of every measurement (after the
    restore) the weights, whether any weight held a gradient and how many optimizers of
    earlier measurements were still alive; and, per trainer, the optimizer's tensor count."""

    starts: list[dict[str, Any]] = field(default_factory=list)
    grads_at_start: list[bool] = field(default_factory=list)
    optimizers_alive: list[int] = field(default_factory=list)
    optimizers: list[weakref.ref[Any]] = field(default_factory=list)
    optimized: list[int] = field(default_factory=list)
    models: list[Any] = field(default_factory=list)


def instrument(monkeypatch: pytest.MonkeyPatch) -> Seen:
    """Record :class:`Seen` around every :func:`sweep.measure_split` and every optimizer the
    trainers create."""
    from transformers import Trainer

    from gacost.calibration import sweep

    seen = Seen()
    real_measure, real_create = sweep.measure_split, Trainer.create_optimizer

    def measure(ctx: Any, *args: Any, **kw: Any) -> Any:
        gc.collect()
        params = dict(ctx.model.named_parameters())
        seen.starts.append({n: p.detach().clone() for n, p in params.items()})
        seen.grads_at_start.append(any(p.grad is not None for p in params.values()))
        seen.optimizers_alive.append(sum(ref() is not None for ref in seen.optimizers))
        seen.models.append(ctx.model)
        return real_measure(ctx, *args, **kw)

    def create(self: Any, *args: Any, **kw: Any) -> Any:
        optimizer = real_create(self, *args, **kw)
        seen.optimizers.append(weakref.ref(optimizer))
        seen.optimized.append(sum(len(g["params"]) for g in optimizer.param_groups))
        return optimizer

    monkeypatch.setattr(sweep, "measure_split", measure)
    monkeypatch.setattr(Trainer, "create_optimizer", create)
    return seen


def request(out: Path, job: Job, **options: Any) -> Any:
    """A fast CPU request of ``job``'s splits 4x1 and 2x2 in one process."""
    from gacost.calibration.request import CalibrateRequest, SweepOptions

    opts = SweepOptions(splits=((4, 1), (2, 2)), **{**FAST, **options})
    return CalibrateRequest(job=job, out=out, options=opts, device="cpu")


@dataclass
class Run:
    """One calibration of the tiny full fine-tune, and what the sweep saw."""

    profile: Profile
    out: Path
    seen: Seen
    final: dict[str, Any]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """Two splits in one process, two passes and the trace of the fastest: up to five
    trainers on one model."""
    from gacost.calibration.run import calibrate

    out = tmp_path_factory.mktemp("full") / "p.json"
    with pytest.MonkeyPatch.context() as patch:
        seen = instrument(patch)
        profile, _ = calibrate(request(out, load_job(JOB), passes=2))
    final = {n: p.detach().clone() for n, p in seen.models[-1].named_parameters()}
    yield Run(profile, out, seen, final)


@pytest.mark.slow
def test_a_full_fine_tune_is_measured_and_its_profile_says_full(full_run: Run) -> None:
    job, profile = load_job(JOB), full_run.profile
    assert profile.workload.method == "full"
    assert (profile.workload.lora_r, profile.workload.target_modules) == (0, "")
    assert profile.fingerprint == job.workload(profile.workload.model).fingerprint()
    assert {(s.micro_batch, s.grad_accum) for s in profile.splits} == {(4, 1), (2, 2)}
    for s in profile.splits:
        assert s.status in ("ok", "dropped") and s.seconds_per_update, s
    assert read_profile(full_run.out) == profile
    # no adapters: the trainers got the plain model and AdamW updated every weight
    model = full_run.seen.models[0]
    assert type(model).__name__ == "LlamaForCausalLM"
    weights = sum(1 for _ in model.parameters())
    assert full_run.seen.optimized and set(full_run.seen.optimized) == {weights}
    # the trace ran on the fastest split (host operators only on the CPU)
    traced = [s for s in profile.splits if s.trace is not None and s.trace.profiled_updates]
    assert len(traced) == 1 and traced[0].trace is not None
    assert traced[0].trace.ops_per_microstep


@pytest.mark.slow
def test_every_split_in_one_process_starts_from_the_same_weights(full_run: Run) -> None:
    seen, splits = full_run.seen, full_run.profile.splits
    # every split, the second pass of those kept (a dropped one has none), the trace
    assert len(seen.starts) == len(splits) + sum(bool(s.pass_seconds) for s in splits) + 1
    first = seen.starts[0]
    for start in seen.starts[1:]:
        assert start.keys() == first.keys()
        assert all(start[n].equal(first[n]) for n in first)
    # the training did change the weights, so the restore is what made them equal
    assert any(not full_run.final[n].equal(first[n]) for n in first)
    # and nothing of an earlier split's training is left when the next one starts
    assert not any(seen.grads_at_start)
    assert seen.optimizers_alive == [0] * len(seen.starts)


@pytest.mark.slow
def test_recommend_uses_the_measured_full_fine_tune(
    full_run: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The calibrated workload is the job's: labelled as an L4, ``recommend --job
    --profile`` takes the split's time as measured (and a LoRA job of the same model
    does not)."""
    as_l4 = tmp_path / "l4.json"
    write_profile(as_l4, replace(full_run.profile, gpu="L4"))
    measured = {(s.micro_batch, s.grad_accum): s for s in full_run.profile.splits}
    report = recommend(job_file(tmp_path, JOB), as_l4, capsys)
    splits = {(e["micro_batch"], e["grad_accum"]): e for e in report["splits_on_recommended"]}
    for key, split in measured.items():
        est = splits[key]
        assert est["gpu"] == "L4" and est["time_source"] == "measured", est
        assert est["seconds_per_update"] == pytest.approx(split.seconds_per_update)
    lora = recommend(job_file(tmp_path, FIXTURES / "tiny-job.yaml"), as_l4, capsys)
    assert all(e["time_source"] != "measured" for e in lora["splits_on_recommended"])


def job_file(tmp_path: Path, source: Path) -> Path:
    """``source`` with an absolute model path and ``gpus: [L4]``, in ``tmp_path``."""
    text = source.read_text().replace("./tiny-llama.json", str(FIXTURES / "tiny-llama.json"))
    path = tmp_path / source.name
    path.write_text(text + "gpus: [L4]\n")
    return path


def recommend(job: Path, profile: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """``gacost recommend --job JOB --profile PROFILE --format json``, parsed."""
    capsys.readouterr()
    code = main(["recommend", "--job", str(job), "--profile", str(profile), "--no-profile-folder",
                 "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


@pytest.mark.slow
def test_out_of_memory_mid_backward_is_a_result_and_the_next_split_starts_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full fine-tune's OOM comes with gradients of every weight half built: the split is
    recorded as not fitting, and the next one starts from the same weights, no gradient."""
    import torch

    from gacost.calibration.run import calibrate

    seen = instrument(monkeypatch)
    batch = {"size": 0}

    def note_batch(_mod: Any, args: Any, kwargs: dict[str, Any]) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        batch["size"] = int(ids.shape[0]) if ids is not None else 0

    def oom_in_backward(grad: torch.Tensor) -> None:
        if batch["size"] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (injected in the backward)")

    from gacost.calibration import builder

    real_build = builder.model_as_trl_builds_it

    def build(*args: Any, **kw: Any) -> Any:
        model = real_build(*args, **kw)
        model.register_forward_pre_hook(note_batch, with_kwargs=True)
        model.model.layers[0].self_attn.q_proj.weight.register_hook(oom_in_backward)
        return model

    monkeypatch.setattr(builder, "model_as_trl_builds_it", build)
    profile, _ = calibrate(request(tmp_path / "p.json", load_job(JOB), trace=False))
    oom, fits = profile.split(4, 1), profile.split(2, 2)
    assert oom is not None and oom.status == "oom" and "out of memory" in oom.note
    assert fits is not None and fits.status == "ok"
    assert len(seen.starts) == 2
    assert all(seen.starts[1][n].equal(seen.starts[0][n]) for n in seen.starts[0])
    assert seen.grads_at_start == [False, False]


def test_qlora_keys_with_a_full_fine_tune_are_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(job_file(tmp_path, JOB).read_text() + "qlora: {prepare_for_kbit: true}\n")
    code = main(["calibrate", "--job", str(path), "--out", str(tmp_path / "p.json"),
                 "--device", "cpu", "--quiet"])
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("error: ") and "Traceback" not in err
    assert "qlora: only applies with method: qlora" in err
    assert not (tmp_path / "p.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "precision", "dtype"),
    [("full", "fp16", "float32"), ("full", "bf16", "bfloat16"), ("full", "fp32", "float32"),
     ("lora", "fp16", "float16")],
)
def test_a_full_fine_tune_in_fp16_keeps_fp32_weights(
    method: str, precision: str, dtype: str
) -> None:
    """fp16 mixed precision cannot unscale fp16 gradients: a full fine-tune's weights (its
    master weights) are built fp32; the frozen base of a LoRA job stays fp16."""
    import torch

    from gacost.base import models
    from gacost.calibration import builder

    job = load_job(JOB).model_copy(update={"method": method, "precision": precision})
    _, cfg = models.load_model_config(str(FIXTURES / "tiny-llama.json"))
    model = builder.build_model(cfg, job, torch.device("cpu"))
    assert {str(p.dtype) for p in model.parameters()} == {f"torch.{dtype}"}
