"""``python -m gacost.calibration.wire``: a user's unchanged TRL script, run through it,
writes a profile (real training of a tiny model on the CPU, in a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gacost.base.errors import GacostError
from gacost.base.profile import read_profile
from gacost.calibration import wire

# A training script as a user writes it: TRL and PEFT, no gacost import.
SCRIPT = '''
import sys, tempfile
from datasets import Dataset
from peft import LoraConfig
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import SFTConfig, SFTTrainer

steps = int(sys.argv[1])
config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
                     max_position_embeddings=64)
model = LlamaForCausalLM(config)
tok = PreTrainedTokenizerFast(
    tokenizer_object=Tokenizer(WordLevel({"<pad>": 0, "<eos>": 1, "<unk>": 2},
                                         unk_token="<unk>")),
    pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")
model.config.pad_token_id, model.config.eos_token_id = 0, 1
rows = [[3 + (i * 7 + j) % 250 for j in range(16)] for i in range(2 * steps)]
with tempfile.TemporaryDirectory() as out:
    args = SFTConfig(output_dir=out, per_device_train_batch_size=1,
                     gradient_accumulation_steps=2, max_steps=steps, max_length=16,
                     report_to="none", use_cpu=True, save_strategy="no",
                     logging_strategy="no", disable_tqdm=True)
    SFTTrainer(model=model, args=args, train_dataset=Dataset.from_dict({"input_ids": rows}),
               processing_class=tok,
               peft_config=LoraConfig(r=4, target_modules="all-linear",
                                      task_type="CAUSAL_LM")).train()
print("script done", sys.argv[1:])
'''


@pytest.mark.slow
def test_an_unchanged_script_writes_its_profile(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    profile = tmp_path / "gacost-profiles" / "run-0.json"
    env = {**os.environ, "GACOST_PROFILE": str(profile), "GACOST_MICRO_BATCH": "2",
           "GACOST_GRAD_ACCUM": "1", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-m", "gacost.calibration.wire", str(script), "4"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "script done ['4']" in done.stdout  # the script saw its own argv
    # the script's split is 1x2, the plan's 2x1: said once, and the profile records 1x2
    assert done.stderr.count("this run's split is 1x2, the plan's 2x1") == 1
    recorded = read_profile(profile)
    assert [(s.micro_batch, s.grad_accum) for s in recorded.splits] == [(1, 2)]
    assert recorded.splits[0].update_times and len(recorded.splits[0].update_times) == 4
    assert recorded.workload.method == "lora" and recorded.workload.lora_r == 4


def test_the_split_warning_only_when_the_split_differs() -> None:
    args = SimpleNamespace(per_device_train_batch_size=4, gradient_accumulation_steps=2)
    same = {"GACOST_MICRO_BATCH": "4", "GACOST_GRAD_ACCUM": "2"}
    assert wire.split_mismatch(args, same) is None
    assert wire.split_mismatch(args, {}) is None  # no plan: nothing to compare
    other = wire.split_mismatch(args, {"GACOST_MICRO_BATCH": "8", "GACOST_GRAD_ACCUM": "1"})
    assert other is not None and "4x2, the plan's 8x1" in other


def test_bad_invocations_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(GacostError, match=r"\$GACOST_PROFILE is not set"):
        wire.run(["train.py"], env={})
    env = {"GACOST_PROFILE": str(tmp_path / "p.json")}
    with pytest.raises(GacostError, match="usage"):
        wire.run([], env=env)
    with pytest.raises(GacostError, match="usage"):
        wire.run(["-m"], env=env)
    with pytest.raises(GacostError, match="no script 'missing.py'"):
        wire.run(["missing.py"], env=env)
