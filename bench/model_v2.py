"""Performance model v2 (issue 12): derive its GPU terms from the H200 traces, then check it on
workloads and a GPU it was not fitted to. Prints tables and writes bench/results/model_v2.json.

1. **GPU terms from traces** (bench/results/h200-sweep/, 11 workloads, 30 profiled splits;
   and the traced user runs of bench/results/calibrate-vs-user/ whose workloads are not held
   out): the memory-bound GPU time per micro-step ("other" + copies) fitted as a GPU floor
   per launched kernel plus bytes per token (a layer's counted forward bytes by tensor width
   x layer x pass, a backward weighed ``backward_bytes_per_forward`` forwards, times one
   scale; per LoRA input element x layer x pass; per vocabulary
   entry, left out) at the H200's stream bandwidth; the GEMM
   shape constant ``W0`` from the achieved GEMM rate against ``T x hidden``. These are the
   trace terms of ``time_model.DEFAULT_PARAMS`` (the floor per launch: the centre of the
   fitted ``gpu_launch``'s prior, ``model_fit.TIME_PRIORS``).
2. **Leave one workload out** over every H200 measurement (the sweep, calibrate runs, the
   reference profile): the model (with the step-1 terms re-derived without the held-out
   workload: a variant of the shipped terms) fitted to every other H200 workload,
   predicting the held-out one; errors and 90 % band coverage.
3. **The published T4 table from H200 data only**: the model fitted to every H200 workload,
   the T4's sustained matmul rate and stream bandwidth from the sourced GPU table, its host at
   the prior; nothing fitted to a T4 row.

    python bench/model_v2.py

The sweep's workloads reach data/profiles/ through the same conversion, as data:
``python -m gacost.advisor.build_sweep_profiles --from bench/results/h200-sweep``.
"""

from __future__ import annotations

import functools
import json
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from tabulate import tabulate

from gacost.advisor import build_sweep_profiles, predictor, time_model
from gacost.advisor.kernel_counts import kernel_counts
from gacost.base import gpu_table, models
from gacost.base.gpu_names import canonical_gpu
from gacost.base.profile import Profile, read_profile
from gacost.base.records import ModelArch

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ROOT / "bench" / "results" / "h200-sweep"
OUT = ROOT / "bench" / "results" / "model_v2.json"
H200 = "H200-SXM"


# --- data ------------------------------------------------------------------------------------


def sweep_profiles() -> list[tuple[Profile, dict[str, Any]]]:
    """Each sweep workload as a profile (plain TRL medians), with its raw JSON: the conversion
    that writes the shipped copies (:mod:`gacost.advisor.build_sweep_profiles`)."""
    return build_sweep_profiles.sweep_profiles(SWEEP)


def h200_profiles() -> list[Profile]:
    """Every H200 measurement in the repository, grouped later by workload."""
    found = [p for p, _ in sweep_profiles()]
    paths = [*(ROOT / "data" / "profiles").glob("*.json"),
             *(ROOT / "bench" / "results").glob("h200-*.json"),
             *(ROOT / "bench" / "results" / "repeatability" / "rep-c").glob("calibrate-*.json")]
    for path in sorted(paths):
        try:
            p = read_profile(path)
        except Exception:  # noqa: BLE001 - the results folder also holds non-profile JSON
            continue
        if p.source.startswith("bench/h200_sweep.py"):  # shipped copies of the sweep
            continue
        if p.gpu == H200 and p.gpu_count == 1 and p.vram_limit_gib is None:
            found.append(p)
    unique = {repr(predictor._key(p)): p for p in found}  # the shipped copy of a bench file
    return list(unique.values())


def t4_profile() -> Profile:
    (path,) = (ROOT / "data" / "profiles").glob("T4--*published.json")
    return read_profile(path)


def group(p: Profile) -> str:
    w = p.workload
    opts = "".join(f"-{k}" for k in ("liger", "torch_compile", "prepare_for_kbit")
                   if getattr(w, k))
    return (f"{w.model.split('/')[-1]} {w.method} r{w.lora_r} {w.target_modules[:10]} "
            f"s{w.sequence_length} {'gc' if w.gradient_checkpointing else 'nogc'}{opts}")


# --- step 1: GPU terms from the traces -------------------------------------------------------


@dataclass(frozen=True)
class TraceRow:
    workload: str
    m: int
    tokens: int
    launches: float
    other_ms: float
    gemm_ms: float
    gemm_tflops: float
    x: tuple[float, ...]  # regressors of other_ms
    hidden: int
    plain: bool  # LoRA or full, bf16, no Liger/QLoRA: the rows the memory-bound terms are fitted on
    lora_gemm_ms: float  # the LoRA GEMMs' counted bytes at the stream rate (in gemm_ms)


# H200 traces of the user's own runs (bench/user_script.py --trace) beside the sweep's: full
# fine-tunes and LoRA twins of three models, Phi-3-mini with LoRA off its fused projections and
# the same sizes unfused (bench/RESULTS.md, run 7). The held-out workloads' traces (h01-h07,
# bench/jobs/heldout/) are left out of the fit: their measurements test it.
HELD_OUT = ("h01-", "h02-", "h03-", "h04-", "h05-", "h06-", "h07-")


@functools.cache
def _h200_rates() -> time_model.GpuRates:
    rates = time_model.gpu_rates(gpu_table.gpu_specs()[H200], "bf16")
    assert rates is not None
    return rates


def _row(workload: str, arch: ModelArch, setup: time_model.TrainSetup, m: int,
         launches: float, other_ms: float, gemm_ms: float, gemm_tflops: float,
         plain: bool) -> TraceRow:
    """One traced split's memory-bound time and its regressors: bytes by tensor shape, each
    at the share of stream time it costs on the H200 once the reads that hit its L2 are taken
    out (time_model.dram_share); and the LoRA GEMMs' counted bytes, which the GEMM class's
    time holds."""
    rates = _h200_rates()
    stream = rates.stream_bandwidth
    tokens = m * setup.sequence_length
    layer_tok = tokens * arch.num_hidden_layers * time_model.layer_passes(
        setup, time_model.DEFAULT_PARAMS)
    counted = sum(b * time_model.dram_share(rates, time_model.BF16_KERNEL_BYTES * w * tokens)
                  for b, w in time_model.layer_kernel_bytes(arch))
    # the LoRA path with its scale at 1 and without its GEMMs, then the GEMMs alone
    unit = replace(time_model.DEFAULT_PARAMS, act_bytes_lora_scale=1.0)
    gemms = replace(time_model.DEFAULT_PARAMS, act_bytes_lora_scale=0.0)
    layer_parts = len(time_model.layer_kernel_bytes(arch))

    def lora_bytes(terms: time_model.TimeModelParams) -> float:
        parts = time_model.activation_parts(arch, setup, terms)[layer_parts:]
        return sum(b * time_model.dram_share(rates, f * tokens) for b, f in parts)

    lora_gemm = lora_bytes(gemms)
    x = (launches * 1e-6 * 1e3,  # ms per us of floor
         layer_tok * counted / stream * 1e3,
         tokens * (lora_bytes(unit) - lora_gemm) / stream * 1e3,
         tokens * arch.vocab_size / stream * 1e3)
    return TraceRow(workload, m, tokens, launches, other_ms, gemm_ms, gemm_tflops, x,
                    arch.hidden_size, plain, tokens * lora_gemm / stream * 1e3)


def user_trace_rows(held_out: bool = False) -> list[TraceRow]:
    """The traced user runs (``crossgpu_traces.TRACES``) of workloads not held out;
    ``held_out``: those of the held-out workloads instead (to test the fit on)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from crossgpu_traces import job_arch, user_run_lines

    rows = []
    for _, run in user_run_lines():
        trace, name = run.get("trace"), Path(run["job"]).name
        if (not trace or name.startswith(HELD_OUT) != held_out
                or canonical_gpu(run.get("gpu") or "") != H200):  # run 19: the H100's
            continue
        arch, setup = job_arch(run["job"], run.get("model_type", ""))  # --model-type
        ms = trace["gpu_ms_per_microstep_by_class"]
        rows.append(_row(f"{name} {arch.model_type}", arch, setup, run["micro_batch"],
                         trace["kernels_per_microstep"] + trace["copies_per_microstep"],
                         ms["other"] + ms["memcpy"], ms["gemm"], trace["gemm_tflops"], True))
    return rows


def trace_rows() -> list[TraceRow]:
    rows = []
    for p, d in sweep_profiles():
        name, cfg = models.load_model_config(p.workload.model)
        arch = models.model_arch(name, cfg)
        setup = predictor.setup_for(p.workload, p.software)
        for s in d["splits"]:
            prof = s.get("profile")
            if not prof:
                continue
            ms = prof["gpu_ms_per_microstep"]
            rows.append(_row(d["workload"]["name"], arch, setup, s["micro_batch"],
                             prof["kernels_per_microstep"] + prof["memcpy_memset_per_microstep"],
                             ms.get("other", 0.0) + ms.get("memcpy", 0.0), ms["gemm"],
                             prof["gemm_tflops_achieved"],
                             p.workload.method == "lora" and not p.workload.liger))
    return rows + user_trace_rows()


def fit_gpu_terms(rows: list[TraceRow]) -> dict[str, float]:
    """Least squares of the memory-bound time, and a grid search of the GEMM shape constant
    on the frozen GEMMs' rate: the GEMM class's time less the LoRA GEMMs' counted bytes at
    the stream rate (time_model.LORA_GEMM_BYTES), the profiler's FLOPs over the rest."""
    plain = [r for r in rows if r.plain]
    a = np.array([r.x for r in plain])
    y = np.array([r.other_ms for r in plain])
    w = 1.0 / y  # relative errors
    a = a[:, :3]  # the vocabulary term came out negative (collinear with the others): left out
    coef, *_ = np.linalg.lstsq(a * w[:, None], y * w, rcond=None)
    coef = np.append(coef, 0.0)
    peak = gpu_table.gpu_specs()[H200].sustained_tflops
    assert peak is not None

    def sse(w0: float) -> tuple[float, float]:
        shape = np.array([r.tokens * r.hidden for r in rows])
        eff = np.array([r.gemm_tflops * r.gemm_ms / (r.gemm_ms - r.lora_gemm_ms) / peak
                        for r in rows])
        g = shape / (shape + w0)
        best = float(np.exp(np.mean(np.log(eff / g))))
        return float(np.sum(np.log(eff / (best * g)) ** 2)), best

    grid = np.exp(np.linspace(np.log(1e5), np.log(1e7), 400))
    w0 = float(min(grid, key=lambda g: sse(g)[0]))
    return {"gpu_s_per_launch": float(coef[0]) * 1e-6, "act_bytes_scale": float(coef[1]),
            "act_bytes_lora_scale": float(coef[2]), "act_bytes_vocab": float(coef[3]),
            "gemm_shape_w0": w0, "gemm_best_efficiency": sse(w0)[1]}


def model_terms(terms: dict[str, float],
                base: time_model.TimeModelParams = time_model.DEFAULT_PARAMS,
                ) -> time_model.TimeModelParams:
    """``base`` (the shipped time-model terms) with these trace terms (for leave-one-out).
    The GPU floor per launch is a fitted parameter whose prior's centre is the traces' value:
    the held-out fits keep the shipped prior."""
    return replace(base, act_bytes_scale=terms["act_bytes_scale"],
                   act_bytes_lora_scale=terms["act_bytes_lora_scale"],
                   gemm_shape_w0=terms["gemm_shape_w0"])


# --- steps 2 and 3 ---------------------------------------------------------------------------


def _predict(model: predictor.FittedModel, p: Profile) -> list[dict[str, Any]]:
    spec = gpu_table.gpu_specs()[p.gpu]
    name, cfg = models.load_model_config(p.workload.model)
    arch = models.model_arch(name, cfg)
    setup = predictor.setup_for(p.workload, p.software)
    costs = time_model.work_costs(arch, setup, model.terms)
    rates = time_model.gpu_rates(spec, costs.compute_precision, model.terms)
    out = []
    for s in p.splits:
        if s.status not in ("ok", "dropped") or not s.seconds_per_update or rates is None:
            continue
        # predicted as it was measured (in one process with other splits, or alone)
        seen = predictor.as_measured(costs, p, s.micro_batch)
        # on the machine it ran on (measured by the other workloads): the workload is what
        # is held out, not the host
        band = model.time.predict(p.gpu, seen, rates, s.micro_batch, s.grad_accum, p.machine)
        share = time_model.host_share(seen, rates, model.time.params(p.gpu, p.machine),
                                      s.micro_batch)
        out.append({"split": f"{s.micro_batch}x{s.grad_accum}", "status": s.status,
                    "host": "host-bound" if share > 0.8 else "GPU-bound" if share < 0.2
                    else "mixed",
                    "measured_s": s.seconds_per_update, "predicted_s": band.value,
                    "low_s": band.low, "high_s": band.high,
                    "error": band.value / s.seconds_per_update - 1,
                    "inside": band.low <= s.seconds_per_update <= band.high})
    return out


def leave_one_workload_out(
    profiles: list[Profile], base: time_model.TimeModelParams = time_model.DEFAULT_PARAMS,
) -> list[dict[str, Any]]:
    """Each workload predicted by the model fitted to the others, its trace terms re-derived
    without it (the rest of the terms: ``base``)."""
    groups: dict[str, list[Profile]] = {}
    for p in profiles:
        groups.setdefault(group(p), []).append(p)
    sweep_names = {p.source.split()[-1]: group(p) for p, _ in sweep_profiles()}
    rows = []
    all_trace = trace_rows()
    for g, held in sorted(groups.items()):
        held_sweep = {n for n, gg in sweep_names.items() if gg == g}
        terms = fit_gpu_terms([r for r in all_trace if r.workload not in held_sweep])
        train = [p for gg, ps in groups.items() if gg != g for p in ps]
        model = predictor.fitted_model(train, terms=model_terms(terms, base))
        for p in held:
            for r in _predict(model, p):
                rows.append({"workload": g, "source": p.source[:40], **r})
    return rows


def t4_from_h200(profiles: list[Profile]) -> list[dict[str, Any]]:
    model = predictor.fitted_model(profiles)
    return _predict(model, t4_profile())


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    errs = [abs(r["error"]) for r in rows]
    return {"splits": len(rows), "median_abs_error": statistics.median(errs),
            "worst_abs_error": max(errs), "inside_90pct_band": sum(r["inside"] for r in rows)}


def main() -> None:
    if "--write-reference-profiles" in sys.argv:  # moved beside the other data builders
        sys.exit("the sweep's reference profiles are written by python -m "
                 "gacost.advisor.build_sweep_profiles --from bench/results/h200-sweep")
    rows = trace_rows()
    terms = fit_gpu_terms(rows)
    print("GPU terms from the H200 traces (the sweep's 11 workloads, the user runs not held "
          "out):")
    print(tabulate([[k, f"{v:.4g}"] for k, v in terms.items()], disable_numparse=True))
    fitted = np.array([
        r.x[0] * terms["gpu_s_per_launch"] * 1e6 + r.x[1] * terms["act_bytes_scale"]
        + r.x[2] * terms["act_bytes_lora_scale"]
        for r in rows])
    other_err = [f / r.other_ms - 1 for f, r in zip(fitted, rows, strict=True)]
    plain_err = [abs(e) for e, r in zip(other_err, rows, strict=True) if r.plain]
    print(f"memory-bound GPU time per micro-step, the fitted rows: median |error| "
          f"{statistics.median(plain_err):.1%}, worst {max(plain_err):.1%} ({len(plain_err)} rows)")
    held = user_trace_rows(held_out=True)
    held_err = [abs(r.x[0] * terms["gpu_s_per_launch"] * 1e6 + r.x[1] * terms["act_bytes_scale"]
                    + r.x[2] * terms["act_bytes_lora_scale"] - r.other_ms) / r.other_ms
                for r in held]
    print(f"... the held-out workloads' traces (not fitted): median |error| "
          f"{statistics.median(held_err):.1%}, worst {max(held_err):.1%} ({len(held_err)} rows)")
    count_err = []
    for p, d in sweep_profiles():
        name, cfg = models.load_model_config(p.workload.model)
        arch = models.model_arch(name, cfg)
        setup = predictor.setup_for(p.workload, p.software)
        for s in d["splits"]:
            if s.get("profile"):
                got = kernel_counts(arch, setup, s["micro_batch"], grad_accum=s["grad_accum"],
                                    liger=setup.liger, prepare_for_kbit=setup.prepare_for_kbit)
                want = (s["profile"]["kernels_per_microstep"]
                        + s["profile"]["memcpy_memset_per_microstep"])
                count_err.append(abs(got.per_microstep / want - 1))
    print(f"launches per micro-step (kernel_counts vs traces): median |error| "
          f"{statistics.median(count_err):.1%}, worst {max(count_err):.1%}")

    h200 = h200_profiles()
    loo = leave_one_workload_out(h200)
    print("\nLeave one workload out (H200):")
    print(tabulate([[r["workload"], r["source"][:28], r["split"], r["status"],
                     f"{r['measured_s']:.3f}", f"{r['predicted_s']:.3f}",
                     f"{r['low_s']:.3f}-{r['high_s']:.3f}", f"{r['error']:+.1%}",
                     "yes" if r["inside"] else "NO"] for r in loo],
                   headers=["workload", "source", "split", "status", "measured", "predicted",
                            "90% band", "error", "in band"], disable_numparse=True))
    ok = [r for r in loo if r["status"] == "ok"]
    s_all, s_ok = _summary(loo), _summary(ok)
    print(f"{s_all['splits']} splits: median |error| {s_all['median_abs_error']:.1%}, worst "
          f"{s_all['worst_abs_error']:.1%}, inside the 90% band {s_all['inside_90pct_band']}/"
          f"{s_all['splits']}; fully timed only: median {s_ok['median_abs_error']:.1%}, worst "
          f"{s_ok['worst_abs_error']:.1%}, band {s_ok['inside_90pct_band']}/{s_ok['splits']}")

    t4 = t4_from_h200(h200)
    print("\nPublished T4 table from H200 data and public GPU data only:")
    print(tabulate([[r["split"], f"{r['measured_s']:.3f}", f"{r['predicted_s']:.3f}",
                     f"{r['low_s']:.3f}-{r['high_s']:.3f}", f"{r['error']:+.1%}"] for r in t4],
                   headers=["split", "published", "predicted", "90% band", "error"],
                   disable_numparse=True))
    fastest = (min(t4, key=lambda r: r["measured_s"])["split"],
               min(t4, key=lambda r: r["predicted_s"])["split"])
    print(f"fastest split: published {fastest[0]}, predicted {fastest[1]}")
    OUT.write_text(json.dumps({
        "gpu_terms": terms, "memory_bound_fit": {"median": statistics.median(plain_err),
                                                  "worst": max(plain_err)},
        "memory_bound_held_out_traces": {"median": statistics.median(held_err),
                                         "worst": max(held_err), "rows": len(held_err)},
        "launch_counts": {"median": statistics.median(count_err), "worst": max(count_err)},
        "leave_one_workload_out": {"summary_all": s_all, "summary_ok": s_ok, "rows": loo},
        "t4_from_h200": {"rows": t4, "fastest_published": fastest[0],
                         "fastest_predicted": fastest[1], "summary": _summary(t4)},
    }, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
