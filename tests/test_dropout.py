"""LoRA dropout (issue 19): counted operators and kernels, memory-bound bytes, the dropout
mask's memory, and the job -> workload -> profile path that carries ``lora.dropout``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from gacost.advisor import kernel_counts as kc
from gacost.advisor import memory_model, predictor, time_model
from gacost.advisor.time_model import TimeParams, TrainSetup
from gacost.base import gpu_table
from gacost.base.errors import DataError, JobSpecError
from gacost.base.job import Job
from gacost.base.models import load_model_config, model_arch
from gacost.base.profile import Workload, loads_profile, profile_to_dict
from gacost.base.records import ModelArch

ROOT = Path(__file__).resolve().parent.parent
ATTN = ("q_proj", "k_proj", "v_proj", "o_proj")
CPU_COUNTS = ROOT / "bench" / "results" / "kernel-counts-cpu.json"


def _arch(name: str) -> ModelArch:
    display, cfg = load_model_config(name)
    return model_arch(display, cfg)


def _setup(dropout: float = 0.05, gc: bool = True, targets: tuple[str, ...] = kc.LINEAR_NAMES,
           method: str = "lora") -> TrainSetup:
    return TrainSetup(method, 16, targets, 512, "bf16", gc, lora_dropout=dropout)


# ------------------------------------------------------------------ the CPU counts


def _cpu_rows() -> dict[tuple[Any, ...], float]:
    doc = json.loads(CPU_COUNTS.read_text())
    return {
        (r["model_type"], r["precision"], r["targets"], r["gradient_checkpointing"],
         r["layers"], r.get("lora_dropout", 0.0) > 0): r["launching_ops_per_microstep"]
        for r in doc["rows"] if r["micro_batch"] == 1 and r["grad_accum"] == 1
    }


@pytest.mark.parametrize(("model_type", "precision", "linears"), [
    ("qwen3", "bf16", 7), ("qwen3", "fp32", 7), ("llama", "bf16", 7), ("gemma2", "bf16", 7),
    ("phi3", "bf16", 4),
])
def test_cpu_counts_show_three_operators_per_forward_and_one_per_backward(
        model_type: str, precision: str, linears: int) -> None:
    """Per wrapped linear: 3 operators per forward pass (GC: forward + recompute) and one in
    the backward; per model, without GC, the first layer's q/k/v skip the backward."""
    rows = _cpu_rows()
    targets = ["all-linear"] + (["attention"] if model_type != "phi3" else [])
    for t in targets:
        n = linears if t == "all-linear" else 4
        first_readers = 1 if model_type == "phi3" else 3  # qkv_proj, or q, k, v
        for gc in (True, False):
            def added(layers: int, t: str = t, gc: bool = gc) -> float:
                key = (model_type, precision, t, gc, layers)
                return rows[(*key, True)] - rows[(*key, False)]

            per_linear = (added(4) - added(2)) / 2 / n
            forwards = 2 if gc else 1
            assert per_linear == (kc.DROPOUT_CPU_OPS_PER_FORWARD * forwards
                                  + kc.DROPOUT_CPU_OPS_PER_BACKWARD), (t, gc)
            per_model = added(2) - 2 * n * per_linear
            assert per_model == (0 if gc else -first_readers), (t, gc)


def test_structure_table_holds_the_counted_dropout_operators() -> None:
    for name in ("qwen3", "llama", "gemma2", "phi3"):
        for part in ("half", "fp32"):
            counts = getattr(kc.STRUCTURE[name], part)
            assert counts.dropout_gc == 7.0, (name, part)
            assert counts.dropout_nogc == 4.0, (name, part)
        assert kc.STRUCTURE[name].full.dropout_gc == 0.0


# ------------------------------------------------------------------ the kernels


def test_no_dropout_adds_nothing() -> None:
    arch = _arch("Qwen/Qwen3-1.7B")
    for gc in (True, False):
        off = kc.microstep_parts(arch, _setup(0.0, gc), 4)
        assert off["dropout"] == 0.0
        assert kc.dropout_operators_per_microstep(arch, _setup(0.0, gc)) == 0.0
        # dropout changes nothing but its own term
        on = kc.microstep_parts(arch, _setup(0.05, gc), 4)
        assert {k: v for k, v in on.items() if k != "dropout"} == \
            {k: v for k, v in off.items() if k != "dropout"}
    assert kc.microstep_parts(arch, _setup(0.1, method="full"), 4)["dropout"] == 0.0


def test_dropout_kernels_per_lora_linear_and_pass() -> None:
    """One fused native_dropout per forward pass and one backward kernel per wrapped linear;
    GC adds the recompute's; without GC the first layer's q, k, v skip the backward."""
    arch = _arch("Qwen/Qwen3-1.7B")
    layers = arch.num_hidden_layers
    gc = kc.microstep_parts(arch, _setup(gc=True), 4)["dropout"]
    no_gc = kc.microstep_parts(arch, _setup(gc=False), 4)["dropout"]
    assert gc == layers * 7 * 3
    assert no_gc == layers * 7 * 2 - 3
    # the structure is the CPU count with each forward's three operators fused into one
    assert kc.dropout_operators_per_microstep(arch, _setup(gc=True)) == layers * 7 * 7
    assert kc.dropout_operators_per_microstep(arch, _setup(gc=False)) == layers * 7 * 4 - 3
    # not scaled by the probability: any p in (0, 1) runs the same kernels
    assert kc.microstep_parts(arch, _setup(0.3), 4)["dropout"] == gc


def test_dropout_kernels_scale_with_wrapped_linears_and_layers() -> None:
    arch = _arch("meta-llama/Llama-3.2-3B")
    every = kc.dropout_kernels_per_microstep(arch, _setup())
    attn = kc.dropout_kernels_per_microstep(arch, _setup(targets=ATTN))
    one = kc.dropout_kernels_per_microstep(arch, _setup(targets=("o_proj",)))
    assert every == pytest.approx(7 / 4 * attn) == pytest.approx(7 * one)
    deeper = dataclasses.replace(arch, num_hidden_layers=2 * arch.num_hidden_layers)
    assert kc.dropout_kernels_per_microstep(deeper, _setup()) == 2 * every
    # and the total launches grow by exactly that
    plain = kc.kernel_counts(arch, _setup(0.0), 2).per_microstep
    dropped = kc.kernel_counts(arch, _setup(), 2).per_microstep
    assert dropped - plain == pytest.approx(every)


def test_dropout_out_of_range_is_a_named_error() -> None:
    with pytest.raises(JobSpecError, match="lora.dropout"):
        kc.kernel_counts(_arch("Qwen/Qwen3-1.7B"), _setup(1.0), 1)


# ------------------------------------------------------------------ time and memory


H200_PARAMS = TimeParams(host_s_per_launch=28e-6, efficiency=0.77, gpu_s_per_launch=1.06e-6)


def _seconds(arch: ModelArch, setup: TrainSetup, m: int) -> tuple[float, float]:
    costs = time_model.work_costs(arch, setup)
    rates = time_model.gpu_rates(gpu_table.gpu_specs()["H200-SXM"], "bf16")
    assert rates is not None
    share = time_model.host_share(costs, rates, H200_PARAMS, m)
    return time_model.micro_step_seconds(costs, rates, H200_PARAMS, m), share


def test_time_grows_with_dropout_on_a_host_bound_split() -> None:
    arch = _arch("Qwen/Qwen3-1.7B")
    base, share = _seconds(arch, _setup(0.0), 1)
    dropped, _ = _seconds(arch, _setup(0.05), 1)
    assert share > 0.9  # host-bound: 1 x 512 tokens on an H200
    launches = time_model.work_costs(arch, _setup(0.0)).launches_at(1)
    # the host term grows with the launches it adds (588 on 28 layers x 7 linears x 3), each
    # costing dropout_host_launches average launches of host time
    extra = 28 * 7 * 3 * time_model.DEFAULT_PARAMS.dropout_host_launches
    assert dropped / base == pytest.approx(1 + extra / launches, rel=0.02)


def test_dropout_bytes_are_counted_per_lora_input_element_and_pass() -> None:
    arch = _arch("Qwen/Qwen3-1.7B")
    widths = time_model.lora_input_widths(arch, _setup())
    forward, backward = time_model.DROPOUT_BYTES_PER_INPUT
    scale = time_model.DEFAULT_PARAMS.act_bytes_lora_scale
    for gc, forwards in ((True, 2), (False, 1)):  # the recompute is a second forward
        plain = time_model.activation_bytes_per_token(arch, _setup(0.0, gc))
        dropped = time_model.activation_bytes_per_token(arch, _setup(0.05, gc))
        assert dropped - plain == pytest.approx(
            arch.num_hidden_layers * scale * (forwards * forward + backward) * widths)
    # a GPU-bound split (many tokens) slows down by those bytes too
    big = dataclasses.replace(_setup(0.0), sequence_length=4096)
    base, share = _seconds(arch, big, 8)
    dropped, _ = _seconds(arch, dataclasses.replace(big, lora_dropout=0.05), 8)
    assert share < 0.5 and dropped > base


def test_dropout_mask_is_kept_for_the_backward() -> None:
    arch = _arch("Qwen/Qwen3-1.7B")
    widths = time_model.lora_input_widths(arch, _setup())
    for gc in (True, False):
        plain, dropped = (memory_model.memory_costs(arch, _setup(p, gc))
                          for p in (0.0, 0.05))
        plain_bytes = plain.activation_bytes_per_token + plain.recompute_bytes_per_token
        dropped_bytes = dropped.activation_bytes_per_token + dropped.recompute_bytes_per_token
        # GC: the recomputed layer, its multiple of a layer's saved tensors
        layers_held = (memory_model.recompute_factor(_setup(0.05, gc)) if gc
                       else arch.num_hidden_layers)
        assert dropped_bytes - plain_bytes == pytest.approx(
            layers_held * memory_model.DROPOUT_MASK_BYTES * widths)


# ------------------------------------------------------------------ job, workload, profile


def _job(dropout: float, method: str = "lora") -> Job:
    return Job.model_validate({
        "model": "Qwen/Qwen3-1.7B", "method": method, "sequence_length": 512,
        "effective_batch": 4, "work": {"updates": 10}, "lora": {"dropout": dropout},
    })


def test_job_dropout_reaches_the_workload_and_the_setup() -> None:
    wl = _job(0.05).workload()
    assert wl.lora_dropout == 0.05
    assert predictor.setup_for(wl).lora_dropout == 0.05
    assert _job(0.05, method="full").workload().lora_dropout == 0.0
    # dropout 0 keeps the fingerprint a workload had before the field existed
    assert _job(0.0).workload().fingerprint() == \
        dataclasses.replace(_job(0.05).workload(), lora_dropout=0.0).fingerprint()
    assert _job(0.05).workload().fingerprint() != _job(0.0).workload().fingerprint()


def _shipped() -> list[tuple[str, dict[str, Any]]]:
    return [(p.name, json.loads(p.read_text()))
            for p in sorted((ROOT / "data" / "profiles").glob("*.json"))]


def test_shipped_profiles_load_as_dropout_0_with_their_fingerprints() -> None:
    shipped = _shipped()
    assert len(shipped) >= 14
    for name, d in shipped:
        assert d["workload"].get("lora_dropout", 0.0) == 0.0, name
        # a file written before the field existed loads as dropout 0, same fingerprint
        d["workload"].pop("lora_dropout", None)
        p = loads_profile(json.dumps(d), name)
        assert p.workload.lora_dropout == 0.0
        assert p.fingerprint == d["fingerprint"], name


def test_a_profile_with_dropout_round_trips_and_bad_values_are_refused() -> None:
    name, d = _shipped()[0]
    d["workload"]["lora_dropout"] = 0.1
    p = loads_profile(json.dumps(d), name)
    assert p.workload.lora_dropout == 0.1
    assert p.fingerprint != d["fingerprint"]
    assert loads_profile(json.dumps(profile_to_dict(p)), name) == p
    for bad in (1.0, -0.1, "0.1", True):
        d["workload"]["lora_dropout"] = bad
        with pytest.raises(DataError, match="workload.lora_dropout"):
            loads_profile(json.dumps(d), name)


def test_workload_defaults_to_no_dropout() -> None:
    wl = Workload("Qwen/Qwen3-1.7B", "lora", 16, 32.0, "all-linear", 512, "bf16", True, 4)
    assert wl.lora_dropout == 0.0
