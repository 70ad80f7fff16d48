"""Performance model v2 against held-out measurements (bench/model_v2.py) and the saved
reference fit that ``recommend`` loads instead of fitting."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from bench_loader import load_bench

from gacost.advisor import model_fit, predictor, time_model
from gacost.base import gpu_table, models
from gacost.base.job import LINEAR_MODULES

ROOT = Path(__file__).resolve().parent.parent


def test_saved_reference_fit_matches_the_profiles_and_the_model() -> None:
    profiles = predictor.reference_profiles()
    saved = json.loads((ROOT / "data" / predictor.REFERENCE_FIT).read_text())
    assert saved["key"] == predictor.reference_fit_key(profiles), (
        "data/reference_fit.json is stale: run python -m gacost.advisor.build_reference_fit")


def test_a_saved_fit_served_for_other_terms_predicts_with_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The saved fit is served wherever its key matches; the model it gives predicts with the
    terms it was asked for, not the defaults (a bench's variant once read the defaults'
    numbers from a saved fit whose key matched the variant)."""
    saved = json.loads((ROOT / "data" / predictor.REFERENCE_FIT).read_text())
    monkeypatch.setattr(predictor, "reference_fit_key", lambda *_: saved["key"])
    monkeypatch.setattr(predictor, "_CACHE", {})
    other = dataclasses.replace(time_model.DEFAULT_PARAMS, dropout_host_launches=7.0)
    model = predictor.reference_model(other)
    default = predictor.reference_model()
    assert model.terms == other and default.terms == time_model.DEFAULT_PARAMS
    name, cfg = models.load_model_config("Qwen/Qwen3-0.6B")
    arch = models.model_arch(name, cfg)
    setup = time_model.TrainSetup("lora", 16, LINEAR_MODULES, 512, "bf16", True,
                                  lora_dropout=0.05)
    spec = gpu_table.gpu_specs()["H100-SXM"]
    with_other, with_default = (m.seconds(arch, setup, spec, 1, 8) for m in (model, default))
    assert with_other is not None and with_default is not None
    assert with_other.value > 1.2 * with_default.value  # 7 launches per dropout kernel, not 2


@pytest.mark.slow
def test_saved_reference_fit_predicts_like_a_new_fit() -> None:

    predictor._CACHE.clear()
    loaded = predictor.reference_model()
    predictor._CACHE.clear()
    fresh = predictor.fitted_model(predictor.reference_profiles())
    name, cfg = models.load_model_config("Qwen/Qwen3-8B")
    arch = models.model_arch(name, cfg)
    setup = time_model.TrainSetup("qlora", 16, ("q_proj", "v_proj"), 2048, "bf16", True)
    # the H100: no profile of its own, its GEMM efficiency and memory slack the H200's
    for gpu in ("L4", "A100-80GB-SXM", "H200-SXM", "H100-SXM"):
        spec = gpu_table.gpu_specs()[gpu]
        a, b = loaded.seconds(arch, setup, spec, 2, 4), fresh.seconds(arch, setup, spec, 2, 4)
        assert a is not None and b is not None
        # rel 1e-6: the fit's last digits depend on the CPU's BLAS (7e-9 apart between two
        # machines), a stale saved fit on far more
        assert a.value == pytest.approx(b.value, rel=1e-6) and a.high == pytest.approx(b.high)
        pa, pb = loaded.peak_gib(arch, setup, gpu, 2), fresh.peak_gib(arch, setup, gpu, 2)
        assert pa.value == pytest.approx(pb.value)


@pytest.mark.slow
def test_held_out_workloads_and_the_t4_table() -> None:
    bench = load_bench("model_v2")
    h200 = bench.h200_profiles()
    loo = bench.leave_one_workload_out(h200)
    ok = [r for r in loo if r["status"] == "ok"]
    errs = sorted(abs(r["error"]) for r in ok)
    assert len(ok) >= 40
    assert errs[len(errs) // 2] <= 0.08  # issue 12: median <= 8 % (today 5.9 %)
    # bands: today 38 of 42 fully timed held-out splits (target 85 %)
    assert sum(r["inside"] for r in ok) >= 0.85 * len(ok)
    t4 = bench.t4_from_h200(h200)
    # today 17.4 / 15.4 / 11.1 % low: past issue 19's 15 % since the H200's stream rate is
    # gpu-benches' 3534 GB/s (13.0 / 9.4 / 4.0 % at 4150; bench/MODEL.md, "Memory-bound work
    # on two Hopper GPUs"), a miss reported there, not hidden here
    assert len(t4) == 3 and max(abs(r["error"]) for r in t4) <= 0.19
    fastest = (min(t4, key=lambda r: r["measured_s"])["split"],
               min(t4, key=lambda r: r["predicted_s"])["split"])
    assert fastest[0] == fastest[1] == "4x1"


def test_committed_v2_results_are_current() -> None:
    committed: dict[str, Any] = json.loads(
        (ROOT / "bench" / "results" / "model_v2.json").read_text())
    bench = load_bench("model_v2")
    terms = bench.fit_gpu_terms(bench.trace_rows())
    for name, value in terms.items():
        assert committed["gpu_terms"][name] == pytest.approx(value, rel=1e-6), name
    # the time model's terms are these (rounded to 3 significant figures); the floor per
    # launch is the centre of the fitted gpu_launch's prior
    shipped = time_model.DEFAULT_PARAMS
    gpu_launch = model_fit.TIME_PRIORS["gpu_launch"].center
    assert gpu_launch == pytest.approx(terms["gpu_s_per_launch"], rel=0.06)
    assert shipped.act_bytes_scale == pytest.approx(terms["act_bytes_scale"], rel=0.01)
    assert shipped.act_bytes_lora_scale == pytest.approx(terms["act_bytes_lora_scale"], rel=0.01)
    assert shipped.gemm_shape_w0 == pytest.approx(terms["gemm_shape_w0"], rel=0.01)


def _trace_rms(bench: Any, weight: float, monkeypatch: pytest.MonkeyPatch) -> float:
    """Relative rms of the traced splits' memory-bound time, the trace terms refitted with a
    layer's backward at ``weight`` forwards."""
    monkeypatch.setattr(time_model, "DEFAULT_PARAMS", dataclasses.replace(
        time_model.DEFAULT_PARAMS, backward_bytes_per_forward=weight))
    rows = [r for r in bench.trace_rows() if r.plain]
    terms = bench.fit_gpu_terms(rows)
    errors = [(r.x[0] * terms["gpu_s_per_launch"] * 1e6 + r.x[1] * terms["act_bytes_scale"]
               + r.x[2] * terms["act_bytes_lora_scale"]) / r.other_ms - 1 for r in rows]
    return float(sum(e * e for e in errors) / len(errors)) ** 0.5


def test_the_backward_weight_is_the_traces_least_squares_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``backward_bytes_per_forward`` sits at the minimum of the traced splits' error, against
    a backward charged like a forward (the model until 2026-12-07) and the weights around it."""
    bench = load_bench("model_v2")
    shipped = time_model.DEFAULT_PARAMS.backward_bytes_per_forward
    at = {w: _trace_rms(bench, w, monkeypatch) for w in (1.0, shipped - 0.25, shipped,
                                                         shipped + 0.25)}
    assert at[shipped] == min(at.values()) and at[shipped] < at[1.0]
    # a layer's checkpointed micro-step moves one forward more than one without it
    arch = predictor.arch_for("Qwen/Qwen3-1.7B")
    assert arch is not None
    layer_parts = len(time_model.layer_kernel_bytes(arch))

    def layer_bytes(gc: bool) -> float:
        setup = time_model.TrainSetup(method="full", lora_r=0, lora_targets=(),
                                      sequence_length=512, precision="bf16",
                                      gradient_checkpointing=gc)
        return sum(b for b, _ in time_model.activation_parts(arch, setup)[:layer_parts])

    assert layer_bytes(True) / layer_bytes(False) == pytest.approx(
        (2 + shipped) / (1 + shipped))


def test_the_saved_fit_is_keyed_on_constants_not_source_text(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A docstring or comment edit keeps the saved fit; a term of the model does not."""
    profiles = predictor.reference_profiles()
    key = predictor.reference_fit_key(profiles)
    assert "time_model.TimeModelParams.act_bytes_scale=2.08" in predictor.model_constants()
    shipped = time_model.DEFAULT_PARAMS
    assert predictor.reference_fit_key(profiles, shipped) == key
    assert predictor.reference_fit_key(profiles, time_model.TimeModelParams()) == key
    for field in dataclasses.fields(shipped):
        other = dataclasses.replace(shipped, **{field.name: getattr(shipped, field.name) * 1.01})
        assert predictor.reference_fit_key(profiles, other) != key, field.name
    monkeypatch.setattr(time_model, "__doc__", "another docstring")
    monkeypatch.setattr(time_model.TimeModelParams, "__doc__", "another docstring")
    assert predictor.reference_fit_key(profiles) == key


def test_a_variant_of_the_terms_is_fitted_and_cached_apart() -> None:
    """A bench's variant of the fixed terms (dataclasses.replace) prices the costs, the fit
    and its predictions; the shipped terms' cache entries stay as they were."""
    shipped = time_model.DEFAULT_PARAMS
    variant = dataclasses.replace(shipped, act_bytes_scale=shipped.act_bytes_scale * 2)
    assert hash(variant) != hash(shipped) and variant != shipped
    name, cfg = models.load_model_config("Qwen/Qwen3-1.7B")
    arch = models.model_arch(name, cfg)
    setup = time_model.TrainSetup("lora", 16, ("q_proj", "v_proj"), 512, "bf16", True)
    base = time_model.work_costs(arch, setup)
    more = time_model.work_costs(arch, setup, variant)
    assert more.terms is variant and base.terms == shipped
    assert more.act_bytes_per_token > base.act_bytes_per_token
    assert time_model.work_costs(arch, setup) is base  # still cached, unchanged
    h200 = [p for p in predictor.reference_profiles() if p.gpu == "H200-SXM"][:2]
    a, b = predictor.fitted_model(h200), predictor.fitted_model(h200, terms=variant)
    assert a is not b and a.terms == shipped and b.terms is variant
    assert predictor.fitted_model(h200, terms=variant) is b
    spec = gpu_table.gpu_specs()["H200-SXM"]
    sa, sb = a.seconds(arch, setup, spec, 8, 1), b.seconds(arch, setup, spec, 8, 1)
    assert sa is not None and sb is not None and sa.value != sb.value


def test_the_held_out_workloads_traces_are_not_in_the_gpu_fit() -> None:
    """The memory-bound terms are fitted on the sweep and on user runs of other workloads;
    the held-out workloads' traces (bench/jobs/heldout/) only test them."""
    bench = load_bench("model_v2")
    fitted = bench.trace_rows()
    held = bench.user_trace_rows(held_out=True)
    assert held and all(r.workload.startswith(bench.HELD_OUT) for r in held)
    assert not any(r.workload.startswith(bench.HELD_OUT) for r in fitted)
    # full fine-tunes (no adapters) are among the fitted rows: they pin the layer's own bytes
    assert any(r.plain and r.x[2] == 0 for r in fitted)
