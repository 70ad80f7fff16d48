"""A TRL config as the job: ``trl sft`` YAML and saved TrainingArguments JSON onto the Job
schema, merged with a partial job file and flags; ``--trl-config`` through the CLI.

The fixtures in tests/fixtures/trl are a ``trl sft`` YAML modelled on TRL's documented
examples and two JSON files written by ``SFTConfig(...).to_json_string()`` and
``TrainingArguments(...).to_json_string()`` (TRL 1.16.0, transformers 5.24.0; see
tests/fixtures/trl/README.md). The tests marked slow check the mapping against TRL's own
parser and calibrate a TRL config for real; the rest import neither torch nor TRL.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gacost.base.errors import JobSpecError
from gacost.calibration.trl_config import (
    MODEL_DEFAULTS,
    TRAINER_DEFAULTS,
    TrlConfig,
    build_job,
    load_trl_config,
    parse_trl_config,
)
from gacost.commands.cli import main

TRL = Path(__file__).parent / "fixtures" / "trl"
QLORA_YAML = TRL / "sft_qlora.yaml"
SFT_JSON = TRL / "sft_args.json"
TA_JSON = TRL / "training_args.json"
TINY = Path(__file__).parent / "fixtures" / "calib" / "tiny-llama.json"


def gacost(*args: str) -> subprocess.CompletedProcess[str]:
    """``gacost ARGS`` through the real entry point, in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse usage errors
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(["gacost", *args], code, out.getvalue(), err.getvalue())


def trl(data: dict[str, Any], kind: str = "trl-yaml") -> TrlConfig:
    """Parse a config given as a dict (as the YAML or JSON loader would give it)."""
    return parse_trl_config(data, "sft.yaml" if kind == "trl-yaml" else "args.json",
                            kind)  # type: ignore[arg-type]


def base(**kw: Any) -> dict[str, Any]:
    """A minimal ``trl sft`` config on a shipped model, plus ``kw``."""
    return {"model_name_or_path": "Qwen/Qwen3-1.7B", "dataset_name": "trl-lib/Capybara", **kw}


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def error_of(data: dict[str, Any], extra: Any = None, **kw: Any) -> str:
    with pytest.raises(JobSpecError) as exc:
        build_job(trl(data), extra, "extra.yaml", **kw)
    return str(exc.value)


# -- the fixtures: every key gacost reads


def test_the_trl_sft_yaml_maps_every_key() -> None:
    built = build_job(load_trl_config(QLORA_YAML), {"runs": 3}, "extra.yaml", samples=20000)
    job = built.job
    assert job.model == "Qwen/Qwen3-1.7B"
    assert job.method == "qlora"  # use_peft + load_in_4bit
    assert (job.lora.r, job.lora.alpha, job.lora.dropout) == (32, 16.0, 0.05)
    assert job.lora.targets == ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                "up_proj", "down_proj")
    assert job.sequence_length == 1024  # max_length
    assert job.effective_batch == 16  # 2 x 8 x 1 GPU
    assert job.micro_batches is None  # every split is planned ...
    assert str(built.split) == "2x8"  # ... and the user's is kept
    assert job.precision == "bf16" and job.gradient_checkpointing is True
    assert (job.work.samples, job.work.epochs, job.work.updates) == (20000, 2.0, None)
    assert job.updates == 2 * 1250 and job.runs == 3
    assert built.summary()["split"] == "2x8" and built.summary()["gpus_per_run"] == 1


def test_a_saved_sft_config_json_needs_the_model_from_the_job_file() -> None:
    config = load_trl_config(SFT_JSON)
    assert config.kind == "training-args-json"
    with pytest.raises(JobSpecError, match=r"^model: .*sft_args.json is a saved "
                                           r"TrainingArguments and names no model"):
        build_job(config, None, samples=1000)
    built = build_job(config, {"model": "Qwen/Qwen3-1.7B"}, "extra.yaml", samples=1000)
    job = built.job
    assert (job.sequence_length, job.effective_batch, str(built.split)) == (2048, 16, "4x4")
    assert job.precision == "bf16" and job.gradient_checkpointing  # activation_checkpointing
    assert (job.work.samples, job.work.epochs) == (1000, 2.0)
    assert job.method == "lora"  # gacost's default, and said so:
    assert any("holds no PEFT settings" in n for n in built.notes)
    qlora = build_job(config, {"model": "Qwen/Qwen3-1.7B", "method": "qlora",
                               "lora": {"r": 8}}, "extra.yaml", samples=1000)
    assert qlora.job.method == "qlora" and qlora.job.lora.r == 8
    assert not any("PEFT" in n for n in qlora.notes)


def test_a_plain_training_arguments_json_has_no_sequence_length() -> None:
    config = load_trl_config(TA_JSON)
    with pytest.raises(JobSpecError, match=r"^sequence_length: .*training_args.json has no "
                                           r"max_length.*add sequence_length: N to extra.yaml"):
        build_job(config, {"model": "Qwen/Qwen3-1.7B"}, "extra.yaml")
    job = build_job(config, {"model": "Qwen/Qwen3-1.7B", "sequence_length": 512},
                    "extra.yaml").job
    assert job.precision == "fp16" and job.gradient_checkpointing
    assert (job.effective_batch, job.work.updates) == (16, 1000)  # max_steps


# -- each key


def test_absent_keys_take_trls_defaults_and_are_listed() -> None:
    config = trl(base())
    built = build_job(config, None, samples=800)
    job = built.job
    assert (str(built.split), job.effective_batch, job.sequence_length) == ("8x1", 8, 1024)
    assert job.method == "full"  # use_peft defaults to false
    assert job.precision == "bf16"  # SFTConfig: bf16 unless fp16
    assert job.gradient_checkpointing is True  # SFTConfig's default, not transformers'
    assert (job.work.samples, job.work.epochs) == (800, 3.0)
    listed = config.notes[0]
    for key in ("per_device_train_batch_size 8", "gradient_accumulation_steps 1",
                "max_length 1024", "bf16 true", "gradient_checkpointing true",
                "use_peft false", "num_train_epochs 3"):
        assert key in listed


def test_use_peft_without_targets_takes_pefts_default() -> None:
    built = build_job(trl(base(use_peft=True)), None, samples=10)
    lora = built.job.lora
    assert built.job.method == "lora"
    assert (lora.r, lora.alpha, lora.dropout, lora.targets) == (16, 32.0, 0.05,
                                                                 ("q_proj", "v_proj"))
    assert any("lora_target_modules not set" in n for n in built.notes)


@pytest.mark.parametrize(("targets", "label"), [
    ("all-linear", "all-linear"),
    (["all-linear"], "all-linear"),  # ModelConfig unwraps a one-item list
    (["q_proj"], "q_proj"),
    (["q_proj", "v_proj", "o_proj"], "q_proj,v_proj,o_proj"),
])
def test_lora_target_modules(targets: Any, label: str) -> None:
    job = build_job(trl(base(use_peft=True, lora_target_modules=targets)), None,
                    samples=10).job
    assert job.lora.targets_label == label


def test_qlora_needs_peft_and_8bit_is_refused() -> None:
    assert build_job(trl(base(use_peft=True, load_in_4bit=True)), None,
                     samples=10).job.method == "qlora"
    assert "load_in_4bit: a 4-bit model trains only through adapters; set use_peft: true" in (
        error_of(base(load_in_4bit=True)))
    assert "load_in_8bit: 8-bit training is not modelled" in error_of(
        base(use_peft=True, load_in_8bit=True))


@pytest.mark.parametrize(("keys", "precision"), [
    ({}, "bf16"),
    ({"bf16": True}, "bf16"),
    ({"fp16": True}, "fp16"),  # bf16 unset: true unless fp16
    ({"bf16": False, "fp16": True}, "fp16"),
    ({"bf16": False}, "fp32"),
    ({"bf16": False, "dtype": "bfloat16"}, "bf16"),  # no autocast, bf16 weights
    ({"bf16": False, "torch_dtype": "float16"}, "fp16"),  # the older ModelConfig name
    ({"bf16": False, "dtype": "float32"}, "fp32"),
])
def test_precision(keys: dict[str, Any], precision: str) -> None:
    assert build_job(trl(base(**keys)), None, samples=10).job.precision == precision


def test_bf16_and_fp16_together_are_an_error() -> None:
    assert error_of(base(bf16=True, fp16=True)) == (
        "sft.yaml: bf16, fp16: both true; set one of them to false")


@pytest.mark.parametrize(("keys", "checkpointing"), [
    ({"gradient_checkpointing": False}, False),
    ({"gradient_checkpointing": None}, False),  # transformers' default
    ({"activation_checkpointing": True, "gradient_checkpointing": False}, True),  # new wins
    ({"activation_checkpointing": False}, False),
])
def test_gradient_checkpointing(keys: dict[str, Any], checkpointing: bool) -> None:
    job = build_job(trl(base(**keys)), None, samples=10).job
    assert job.gradient_checkpointing is checkpointing


def test_sequence_length_from_max_length_or_the_older_max_seq_length() -> None:
    assert build_job(trl(base(max_seq_length=256)), None,
                     samples=10).job.sequence_length == 256
    assert build_job(trl(base(max_length=300, max_seq_length=300)), None,
                     samples=10).job.sequence_length == 300
    assert "max_seq_length: 256 differs from max_length 300" in error_of(
        base(max_length=300, max_seq_length=256))
    # max_length: null (no truncation) leaves the length to the job file
    assert "sequence_length: sft.yaml has no max_length" in error_of(base(max_length=None),
                                                                     samples=10)
    assert build_job(trl(base(max_length=None)), {"sequence_length": 4096}, "extra.yaml",
                     samples=10).job.sequence_length == 4096


def test_work_from_max_steps_or_epochs_times_samples() -> None:
    job = build_job(trl(base(max_steps=500, num_train_epochs=7)), None).job
    assert (job.work.updates, job.updates) == (500, 500)
    job = build_job(trl(base(num_train_epochs=1.5)), None, samples=1000).job
    assert job.updates == 188  # ceil(1000 * 1.5 / 8)
    job = build_job(trl(base()), {"work": {"samples": 1600}}, "extra.yaml").job
    assert job.updates == 3 * 200


@pytest.mark.parametrize(("keys", "save_steps", "only"), [
    ({}, 500, False),  # TRL's: every 500 updates and at the end
    ({"save_steps": 100, "save_only_model": True}, 100, True),
    ({"save_strategy": "steps", "save_steps": 0.1}, 0.1, False),  # a share of the run
    ({"save_strategy": "no", "save_steps": 100}, 0, False),
    ({"save_strategy": "epoch", "num_train_epochs": 4}, 0.25, False),  # one per epoch
    ({"save_strategy": "best"}, 500, False),  # at most as often as steps
])
def test_checkpoints_from_the_save_keys(keys: dict[str, Any], save_steps: float,
                                        only: bool) -> None:
    job = build_job(trl(base(**keys)), None, samples=1000).job
    assert (job.save_steps, job.save_only_model) == (save_steps, only)


def test_a_bad_save_strategy_is_one_error_naming_the_choices() -> None:
    for value in (5, "sometimes", None):
        text = error_of(base(save_strategy=value), samples=10)
        assert text.count("save_strategy") == 1
        assert "save_strategy: must be one of no, steps, epoch, best" in text


def test_missing_samples_is_an_error_with_the_fix() -> None:
    message = error_of(base(num_train_epochs=2))
    assert message.startswith("work.samples: sft.yaml trains 2 epoch(s) (num_train_epochs 2, "
                              "max_steps -1 (TRL's default)) over a dataset whose size a TRL "
                              "config does not hold")
    assert "--samples N" in message and "work: {samples: N} in --job" in message
    assert "\n" not in message
    # calibrate does not need the amount of work
    assert build_job(trl(base()), None, need_work=False).job.updates == 1


def test_samples_with_max_steps_is_an_error() -> None:
    assert "work.samples: sft.yaml sets max_steps 500, which overrides the epochs" in error_of(
        base(max_steps=500), samples=10)
    assert "work.samples in extra.yaml" in error_of(base(max_steps=500),
                                                    {"work": {"samples": 10}})


def test_the_world_size_multiplies_the_effective_batch() -> None:
    cfg = base(per_device_train_batch_size=2, gradient_accumulation_steps=4)
    built = build_job(trl(cfg), None, samples=640, gpus_per_run=4)
    assert (built.job.effective_batch, built.job.gpus_per_run, built.world) == (32, 4, 4)
    assert built.job.splits() == ((1, 8), (2, 4), (4, 2), (8, 1))  # per GPU
    assert built.job.updates == 20 * 3  # ceil(640 / 32) per epoch, 3 epochs
    from_file = build_job(trl(cfg), {"gpus_per_run": 2}, "extra.yaml", samples=8)
    assert from_file.job.effective_batch == 16
    assert "gpus_per_run: 'choose' does not apply with --trl-config" in error_of(
        cfg, {"gpus_per_run": "choose"}, samples=8)


def test_compile_and_liger_map_and_other_keys_are_ignored_or_noted() -> None:
    built = build_job(trl(base(torch_compile=True, use_liger_kernel=True, packing=True,
                               use_peft=True, use_dora=True, learning_rate=1e-4,
                               lr_scheduler_type="cosine", report_to=["none"],
                               output_dir="out", env={"CUDA_VISIBLE_DEVICES": "0"})),
                      None, samples=10)
    assert built.job.torch_compile is True and built.job.liger is True
    text = " ".join(built.notes)
    assert "packing: true packs rows" in text
    assert "use_dora: true trains DoRA adapters" in text
    plain = build_job(trl(base()), None, samples=10).job
    assert plain.torch_compile is False and plain.liger is False
    assert "torch_compile: extra.yaml says 'auto' but sft.yaml gives False" in error_of(
        base(), {"torch_compile": "auto"}, samples=10)


def test_qlora_from_trl_sft_is_prepared_by_the_trainer() -> None:
    job = build_job(trl(base(use_peft=True, load_in_4bit=True)), None, samples=10).job
    assert job.method == "qlora" and job.qlora.prepare_for_kbit is False
    assert error_of(base(use_peft=True, load_in_4bit=True),
                    {"qlora": {"prepare_for_kbit": True}}, samples=10).startswith(
        "qlora.prepare_for_kbit: extra.yaml says True but sft.yaml gives False (trl sft")


# -- wrong types


def test_wrong_types_name_the_file_and_the_key() -> None:
    with pytest.raises(JobSpecError) as exc:
        trl(base(per_device_train_batch_size="4", bf16="yes", use_peft=True, lora_r=0,
                 lora_dropout=1.5, num_train_epochs=True, gradient_accumulation_steps=2.5,
                 lora_target_modules="q_proj|v_proj", torch_compile="no"))
    lines = str(exc.value).split("\nerror: ")
    assert "sft.yaml: per_device_train_batch_size: must be an integer >= 1, got '4'" in lines
    assert "sft.yaml: gradient_accumulation_steps: must be an integer >= 1, got 2.5" in lines
    assert "sft.yaml: bf16: must be true or false (or null), got 'yes'" in lines
    assert "sft.yaml: lora_r: must be an integer >= 1, got 0" in lines
    assert "sft.yaml: lora_dropout: must be a number >= 0 and < 1, got 1.5" in lines
    assert "sft.yaml: num_train_epochs: must be a number > 0, got True" in lines
    assert "sft.yaml: torch_compile: must be true or false, got 'no'" in lines
    assert any(line.startswith("sft.yaml: lora_target_modules: 'q_proj|v_proj' is a PEFT "
                               "pattern") for line in lines)
    assert len(lines) == 8


def test_a_config_that_is_not_a_mapping_or_not_parseable(tmp_path: Path) -> None:
    bad = tmp_path / "sft.yaml"
    bad.write_text("- just\n- a list\n")
    with pytest.raises(JobSpecError, match="must be a YAML mapping of keys"):
        load_trl_config(bad)
    broken = tmp_path / "args.json"
    broken.write_text('{"per_device_train_batch_size": 4,,}')
    with pytest.raises(JobSpecError,
                       match=r"args.json: not valid JSON \(line 1, column 35: .*fix the JSON"):
        load_trl_config(broken)
    with pytest.raises(JobSpecError, match=r"^--trl-config: cannot read .*missing.yaml"):
        load_trl_config(tmp_path / "missing.yaml")


# -- the job file and flags: one place per key


def test_the_job_file_adds_keys_and_may_repeat_equal_values() -> None:
    extra = {"runs": 4, "gpus": ["L4", "A100"], "objective": "min_time", "spot": True,
             "sequence_length": 1024, "precision": "bf16", "lora": {"r": 16},
             "method": "lora", "work": {"samples": 100, "epochs": 3}}
    job = build_job(trl(base(use_peft=True)), extra, "extra.yaml").job
    assert (job.runs, job.objective, job.spot, job.gpus) == (4, "min_time", True,
                                                             ["L4", "A100"])
    assert (job.work.samples, job.work.epochs, job.lora.r) == (100, 3.0, 16)


@pytest.mark.parametrize(("extra", "expected"), [
    ({"sequence_length": 2048},
     "sequence_length: extra.yaml says 2048 but sft.yaml gives 1024 (max_length 1024 "
     "(TRL's default)); remove sequence_length from extra.yaml or change sft.yaml"),
    ({"method": "lora"}, "method: extra.yaml says 'lora' but sft.yaml gives 'full' "
                         "(use_peft false (TRL's default))"),
    ({"effective_batch": 32}, "effective_batch: extra.yaml says 32 but sft.yaml gives 8 "
                              "(per_device_train_batch_size 8 x gradient_accumulation_steps "
                              "1 x 1 GPU(s))"),
    ({"gradient_checkpointing": False}, "gradient_checkpointing: extra.yaml says False but "
                                        "sft.yaml gives True"),
    ({"model": "Qwen/Qwen3-8B"}, "model: extra.yaml says 'Qwen/Qwen3-8B' but sft.yaml gives "
                                 "'Qwen/Qwen3-1.7B'"),
    ({"lora": {"r": 4}}, "lora: set in extra.yaml, but sft.yaml trains the full model"),
    ({"work": {"updates": 100}}, "work.updates: sft.yaml trains by epochs"),
    ({"work": {"samples": 10, "epochs": 2}}, "work.epochs: extra.yaml says 2 but sft.yaml "
                                             "gives 3.0"),
    ({"runs": 2, "work": {"samples": 5}}, "runs: --runs 3 but extra.yaml says 2; give it in "
                                          "one place"),
])
def test_conflicts_with_the_job_file_are_errors(extra: dict[str, Any], expected: str) -> None:
    message = error_of(base(), extra, samples=None if "work" in extra else 10,
                       runs=3 if "runs" in extra else None)
    assert expected in message and "\n" not in message


def test_conflicts_inside_lora_and_with_the_samples_flag() -> None:
    cfg = base(use_peft=True, lora_r=32)
    assert error_of(cfg, {"lora": {"r": 8}}, samples=1).startswith(
        "lora.r: extra.yaml says 8 but sft.yaml gives 32")
    assert error_of(cfg, {"work": {"samples": 5}}, samples=6).startswith(
        "work.samples: --samples 6 but extra.yaml says 5")
    assert build_job(trl(cfg), {"work": {"samples": 6}}, "extra.yaml",
                     samples=6).job.work.samples == 6


def test_the_job_file_is_still_strict() -> None:
    assert error_of(base(), {"objectiv": "min_time"}, samples=1) == (
        "objectiv: unknown key (did you mean 'objective'?)")
    assert error_of(base(), ["runs", 3]).startswith("extra.yaml: the job must be a YAML mapping")


# -- the command line


@pytest.fixture
def extra(tmp_path: Path) -> Path:
    return write(tmp_path / "extra.yaml", {"runs": 3, "objective": "min_cost"})


def test_recommend_with_a_trl_config_end_to_end(extra: Path) -> None:
    result = gacost("recommend", "--trl-config", str(QLORA_YAML), "--job", str(extra),
                    "--samples", "20000", "--top", "3")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("Job: Qwen/Qwen3-1.7B, 2500 updates x 3 run(s), effective batch 16")
    assert f"Your split ({QLORA_YAML}): 2x8 on " in out
    assert f"note: job from {QLORA_YAML}: your split 2x8 per GPU" in out
    as_json = gacost("recommend", "--trl-config", str(QLORA_YAML), "--job", str(extra),
                     "--samples", "20000", "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    mine = data["trl_config"]["your_split"]
    assert data["trl_config"]["split"] == "2x8" and mine["split"] == "2x8"
    assert mine["status"] in ("slower", "recommended", "faster", "does not fit")
    split = {(e["micro_batch"], e["grad_accum"]): e for e in data["splits_on_recommended"]}
    assert mine["seconds_per_update"] == split[(2, 8)]["seconds_per_update"]
    if mine["status"] == "slower":  # same offer: cost scales with the seconds per update
        ratio = mine["seconds_per_update"] / data["recommended"]["seconds_per_update"]
        assert mine["cost_per_run"] == pytest.approx(
            data["recommended"]["cost_per_run"] * ratio)


def test_recommend_with_a_saved_json_and_flags_only(tmp_path: Path) -> None:
    model = write(tmp_path / "model.yaml", {"model": "Qwen/Qwen3-1.7B"})
    result = gacost("recommend", "--trl-config", str(SFT_JSON), "--job", str(model),
                    "--samples", "5000", "--runs", "2", "--gpus-per-run", "2", "--top", "2")
    assert result.returncode == 0, result.stderr
    assert "effective batch 32" in result.stdout and "x 2 run(s)" in result.stdout
    assert "your split 4x4 per GPU (per_device_train_batch_size x " \
           "gradient_accumulation_steps) x 2 GPUs = effective batch 32" in result.stdout


def test_budget_and_compare_take_a_trl_config(extra: Path) -> None:
    for command in ("budget", "compare"):
        result = gacost(command, "--trl-config", str(QLORA_YAML), "--job", str(extra),
                        "--samples", "20000")
        assert result.returncode == 0, (command, result.stderr)
        assert "note: job from" in result.stdout
        as_json = gacost(command, "--trl-config", str(QLORA_YAML), "--samples", "20000",
                         "--format", "json")
        assert json.loads(as_json.stdout)["trl_config"]["split"] == "2x8"


def test_cli_errors_are_one_line_with_exit_code_2(tmp_path: Path, extra: Path) -> None:
    bad = write(tmp_path / "sft.yaml", base(per_device_train_batch_size="4"))
    cases = [
        (["--trl-config", str(QLORA_YAML)], "error: work.samples: "),
        (["--trl-config", str(bad), "--samples", "10"],
         f"error: {bad}: per_device_train_batch_size: must be an integer >= 1, got '4'"),
        (["--trl-config", str(QLORA_YAML), "--samples", "ten"],
         "error: --samples: expected an integer, got 'ten'"),
        (["--trl-config", str(QLORA_YAML), "--samples", "10", "--gpus-per-run", "65"],
         "error: --gpus-per-run: must be > 0 and <= 64, got 65"),
        (["--job", str(extra), "--samples", "10"],
         f"error: --samples: only with --trl-config; put the value in the job file {extra}"),
        ([], "error: --job: give the job file (YAML), or --trl-config F"),
    ]
    for args, expected in cases:
        result = gacost("recommend", *args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.strip().splitlines() == [expected] or result.stderr.startswith(
            expected), (args, result.stderr)


def test_recommend_with_a_trl_config_imports_neither_torch_nor_trl(tmp_path: Path) -> None:
    code = (
        "import sys, io, contextlib\n"
        "from gacost.commands.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main(['recommend', '--trl-config', {str(QLORA_YAML)!r}, '--samples', '99'])\n"
        "mods = ('torch', 'httpx', 'transformers', 'trl', 'peft')\n"
        "print(rc, [m for m in mods if m in sys.modules])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120)
    assert result.stdout.strip() == "0 []", result.stderr


# -- against the real TRL (slow: imports TRL and torch)


def _trl_parse(path: Path) -> tuple[Any, Any]:
    """``trl sft --config path`` as TRL 1.16 parses it (on the CPU: use_cpu)."""
    from trl.scripts.sft import make_parser

    _, training, model, _ = make_parser().parse_args_and_config(
        ["--config", str(path), "--use_cpu", "true", "--output_dir", "unused"])
    return training, model


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("config", [
    pytest.param(lambda p: QLORA_YAML, id="fixture"),
    pytest.param(lambda p: write(p / "minimal.yaml", base()), id="defaults"),
    pytest.param(lambda p: write(p / "lora.yaml", base(
        use_peft=True, lora_target_modules=["all-linear"], fp16=True,
        per_device_train_batch_size=3, gradient_accumulation_steps=5, max_steps=7,
        max_length=640, gradient_checkpointing=False, save_steps=0.25,
        save_only_model=True)), id="lora"),
])
def test_the_mapping_agrees_with_trls_own_parser(tmp_path: Path, config: Any) -> None:
    path = config(tmp_path)
    training, model = _trl_parse(path)
    built = build_job(load_trl_config(path), None,
                      samples=None if training.max_steps > 0 else 1000)
    job = built.job
    assert str(built.split) == (f"{training.per_device_train_batch_size}x"
                                f"{training.gradient_accumulation_steps}")
    assert job.sequence_length == training.max_length
    assert job.precision == ("bf16" if training.bf16 else "fp16" if training.fp16 else "fp32")
    assert job.gradient_checkpointing == training.gradient_checkpointing
    assert (job.torch_compile, job.liger) == (training.torch_compile, training.use_liger_kernel)
    if training.max_steps > 0:
        assert job.work.updates == training.max_steps
    else:
        assert job.work.epochs == training.num_train_epochs
    saves = 0 if training.save_strategy == "no" else training.save_steps
    assert (job.save_steps, job.save_only_model) == (saves, training.save_only_model)
    assert job.model == model.model_name_or_path
    assert job.method == ("full" if not model.use_peft else
                          "qlora" if model.load_in_4bit else "lora")
    if model.use_peft:
        assert (job.lora.r, job.lora.alpha, job.lora.dropout) == (
            model.lora_r, model.lora_alpha, model.lora_dropout)
        targets = model.lora_target_modules
        expected = targets if isinstance(targets, str) else ",".join(targets)
        assert job.lora.targets_label == expected


@pytest.mark.slow
def test_every_key_gacost_reads_is_a_trl_key_with_that_default() -> None:
    import dataclasses

    from transformers import TrainingArguments
    from trl import ModelConfig, SFTConfig

    sft = {f.name: f.default for f in dataclasses.fields(SFTConfig)}
    model = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
    args = {f.name for f in dataclasses.fields(TrainingArguments)}
    for key, default in TRAINER_DEFAULTS.items():
        assert sft[key] == default, key
    assert "activation_checkpointing" in args and "max_length" not in args
    for key, default in MODEL_DEFAULTS.items():
        if key != "dtype":  # read only as a fallback when bf16 and fp16 are false
            assert model[key] == default, key
    assert "dtype" in model and "torch_dtype" not in model  # gacost reads the older name too


@pytest.mark.slow
def test_calibrate_a_trl_config_on_the_cpu(tmp_path: Path) -> None:
    from gacost.base.profile import read_profile

    sft = write(tmp_path / "sft.yaml", {
        "model_name_or_path": str(TINY), "use_peft": True, "lora_r": 4, "lora_alpha": 8,
        "lora_target_modules": "all-linear", "per_device_train_batch_size": 2,
        "gradient_accumulation_steps": 2, "max_length": 32, "bf16": False,
        "num_train_epochs": 1, "learning_rate": 2e-4, "output_dir": "unused"})
    out = tmp_path / "p.json"
    code = main(["calibrate", "--trl-config", str(sft), "--out", str(out), "--device", "cpu",
                 "--warmup", "1", "--max-updates", "4", "--max-seconds", "0.05", "--quiet"])
    assert code == 0
    profile = read_profile(out)
    w = profile.workload
    assert (w.method, w.lora_r, w.lora_alpha, w.sequence_length, w.precision,
            w.effective_batch) == ("lora", 4, 8.0, 32, "fp32", 4)
    assert {(s.micro_batch, s.grad_accum) for s in profile.splits} == {(1, 4), (2, 2), (4, 1)}


def test_the_readme_example_runs() -> None:
    root = Path(__file__).resolve().parent.parent / "examples" / "trl"
    result = gacost("recommend", "--trl-config", str(root / "sft-lora.yaml"), "--job",
                    str(root / "extra.yaml"), "--samples", "16000", "--top", "3")
    assert result.returncode == 0, result.stderr
    assert "Job: Qwen/Qwen2.5-0.5B, 1000 updates x 3 run(s), effective batch 16" in result.stdout
    assert "Your split (" in result.stdout
