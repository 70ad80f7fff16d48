"""Validate the time and memory model (advisor/time_model.py, memory_model.py, model_fit.py)
on every measurement in the repository; print tables and write
``bench/results/model_validation.json``.

* fits: the reference fit (data/profiles only, what ``gacost recommend`` uses) and the fit
  to every measurement, with each parameter's 90 % band and the data that informed it;
* time leave-one-out per split: fitted to the other splits of the same profile alone, and
  to every other measured split;
* the published T4 table predicted from specs and a fitted host overhead only;
* transfer: Qwen3-8B (H200) and the 100-update protocol runs from the reference fit;
* memory: predicted vs measured peak reserved on every profile (reference fit, and
  leave-one-out), and the OOM boundary of the ``--vram-limit`` runs.

    python bench/model_validation.py [--out bench/results/model_validation.json]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tabulate import tabulate

from gacost.advisor import memory_model, model_fit, predictor
from gacost.advisor.model_fit import MemObservation, Prior, TimeObservation
from gacost.base import gpu_table
from gacost.base.profile import Profile, SplitResult, read_profile

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
LOO_TARGET = 0.05
MEM_TARGET = 0.10


@dataclass(frozen=True)
class Dataset:
    """One profile (or protocol run) with its observations."""

    name: str
    profile: Profile
    reference: bool
    times: list[TimeObservation]
    mems: list[MemObservation]


def _observe(name: str, p: Profile, reference: bool) -> Dataset:
    arch = predictor.arch_for(p.workload.model)
    assert arch is not None, p.workload.model
    t, m = predictor.profile_observations(p, arch, gpu_table.gpu_specs()[p.gpu])
    t = [replace(o, label=f"{name} {o.m}x{o.k}") for o in t]
    m = [replace(o, label=f"{name} {o.m}x{o.k}") for o in m]
    return Dataset(name, p, reference, t, m)


def _protocol(path: Path, base: Profile, name: str) -> Profile:
    """A pseudo-profile of the 100-update protocol medians of one bench run."""
    d = json.loads(path.read_text())
    rows = d.get("protocol") or {}
    splits = []
    for r in rows.values():
        times = r.get("update_times", [])[r.get("warmup", 0):]
        sd = statistics.stdev(times) if len(times) > 2 else r["stdev_s"]
        se = 1.2533 * sd / math.sqrt(r["timed"])
        med = r["median_s"]
        splits.append(SplitResult(r["micro_batch"], r["grad_accum"], "ok", med,
                                  ci_low_s=med - 1.96 * se, ci_high_s=med + 1.96 * se,
                                  peak_reserved_gib=r["peak_reserved_gib"]))
    splits.sort(key=lambda s: s.micro_batch)
    return replace(base, splits=tuple(splits), source=name)


def datasets() -> list[Dataset]:
    """Every measurement: the reference profiles of the GPUs that fit the global terms
    (``predictor.GLOBAL_FIT_GPUS``; the published L4 row is checked by
    bench/leave_one_gpu_out.py) first, then the bench results."""
    out = []
    for p in predictor.reference_profiles():
        if p.gpu not in predictor.GLOBAL_FIT_GPUS:
            continue
        size = re.search(r"(\d+(?:\.\d+)?)[bB]\b", p.workload.model)
        kind = ("published" if "published" in p.source
                else p.source.split()[-1][:3] + " sweep" if "h200_sweep" in p.source
                else f"{p.workload.method} calibrate")
        name = f"{p.gpu} {size.group(1) if size else '?'}B s{p.workload.sequence_length} {kind}"
        out.append(_observe(name.replace("lora calibrate", "calibrate"), p, True))
    h200 = next(p for p in predictor.reference_profiles()
                if p.gpu == "H200-SXM" and p.source == "measured by gacost calibrate"
                and p.workload.method == "lora")
    run2 = RESULTS / "h200-run2-calibration_vs_protocol.json"
    out.append(_observe("H200-SXM 1.7B s512 protocol run2", _protocol(run2, h200, "run2"), False))
    for i in (1, 2):
        p = read_profile(RESULTS / f"h200-run2-calibrate-profile-{i}.json")
        out.append(_observe(f"H200-SXM 1.7B s512 calibrate run2.{i}", p, False))
    for seq in (1024, 2048):
        for cap in ("uncapped", "cap24", "cap16"):
            p = read_profile(RESULTS / f"h200-qwen3-8b-seq{seq}-{cap}.json")
            out.append(_observe(f"H200-SXM 8B s{seq} {cap}", p, False))
    return out


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def fit_table(f: predictor.FittedModel) -> list[dict[str, Any]]:
    """Each parameter: value, 90 % band, prior, and the datasets that informed it."""
    rows = []
    for r in f.reports():
        sources = sorted({lab.rsplit(" ", 1)[0] for lab in r.fitted_on})
        rows.append({"param": r.name, "value": r.value, "low": r.low, "high": r.high,
                     "prior": r.prior, "fitted_on": sources})
    return rows


def _loo_rows(name: str, rows: list[model_fit.LooRow]) -> list[dict[str, Any]]:
    return [{"dataset": name, "split": r.label.rsplit(" ", 1)[1], "measured": r.measured,
             "predicted": r.predicted, "low": r.low, "high": r.high, "error": r.rel_error,
             "covered": r.covered} for r in rows]


def _same_split(a: TimeObservation, b: TimeObservation) -> bool:
    """Repeat measurements of one split (same GPU, costs and m x k), e.g. capped/uncapped."""
    return (a.gpu, a.costs, a.m, a.k) == (b.gpu, b.costs, b.m, b.k)


def time_loo(data: list[Dataset]) -> dict[str, list[dict[str, Any]]]:
    """Leave-one-out per split: fitted to the profile alone, and to every other measured
    split (repeat measurements of the held-out split, in other runs, left out too)."""
    alone: list[dict[str, Any]] = []
    for d in data:
        if len(d.times) >= 2:
            alone += _loo_rows(d.name, model_fit.loo_time(d.times))
    everything = [o for d in data for o in d.times]
    pooled: list[dict[str, Any]] = []
    for d in data:
        rows = []
        for o in d.times:
            rest = [x for x in everything if not _same_split(x, o)]
            b = model_fit.fit_time(rest).predict(o.gpu, o.costs, o.rates, o.m, o.k, o.machine)
            rows.append(model_fit.LooRow(o.label, o.seconds, b.value, b.low, b.high))
        pooled += _loo_rows(d.name, rows)
    return {"profile_alone": alone, "all_other_data": pooled}


def memory_loo(data: list[Dataset]) -> list[dict[str, Any]]:
    """Leave-one-out per measured peak, fitted to the rest of the same profile."""
    rows: list[dict[str, Any]] = []
    for d in data:
        if len(d.mems) >= 2:
            rows += _loo_rows(d.name, model_fit.loo_memory(d.mems))
    return rows


def t4_from_specs(data: list[Dataset]) -> dict[str, list[dict[str, Any]]]:
    """The T4 table predicted with every GPU-side term from specs; only the host fitted.

    ``h200_transfer``: stack efficiency and the GPU floor from the H200 measurements (no T4 data);
    ``priors``: from the documented priors alone.
    """
    t4 = next(d for d in data if d.profile.gpu == "T4")
    h200 = [o for d in data if d.profile.gpu == "H200-SXM" and d.name.find("cap") < 0
            for o in d.times]
    fh = model_fit.fit_time(h200)
    idx = fh.fit.index()
    cov, scale = fh.fit.result.cov, fh.fit.result.scale
    js = [idx["stack_eff"], idx["gpu_eff:H200-SXM"]]
    x = sum(fh.fit.result.x[j] for j in js)
    sd = math.sqrt(scale * sum(cov[a][b] for a in js for b in js))
    floor = fh.fit.result.x[idx["gpu_launch"]]
    floor_sd = math.sqrt(scale * cov[idx["gpu_launch"]][idx["gpu_launch"]])
    transfer = {
        "stack_eff": Prior(math.exp(x), sd),
        "gpu_launch": Prior(math.exp(floor), floor_sd),
    }
    out: dict[str, list[dict[str, Any]]] = {}
    for label, priors in (("h200_transfer", transfer), ("priors", None)):
        f = model_fit.fit_time(t4.times, priors=priors,
                               fixed=("stack_eff", "gpu_launch", "gpu_eff:T4"))
        host = f.params("T4", t4.times[0].machine).host_s_per_launch
        rows = []
        for o in t4.times:
            b = f.predict(o.gpu, o.costs, o.rates, o.m, o.k, o.machine)
            rows.append({"split": f"{o.m}x{o.k}", "measured": o.seconds, "predicted": b.value,
                         "low": b.low, "high": b.high, "error": b.value / o.seconds - 1,
                         "host_s_per_launch": host})
        out[label] = rows
    return out


def transfer(model: predictor.FittedModel, data: list[Dataset]) -> list[dict[str, Any]]:
    """Bench measurements predicted by the reference fit (never fitted to them)."""
    rows = []
    for d in data:
        if d.reference:
            continue
        for o in d.times:
            b = model.time.predict(o.gpu, o.costs, o.rates, o.m, o.k, o.machine)
            rows.append({"dataset": d.name, "split": f"{o.m}x{o.k}", "measured": o.seconds,
                         "predicted": b.value, "low": b.low, "high": b.high,
                         "error": b.value / o.seconds - 1,
                         "covered": b.low <= o.seconds <= b.high})
    return rows


def memory(model: predictor.FittedModel, data: list[Dataset]) -> list[dict[str, Any]]:
    """Predicted vs measured peak reserved on every profile, from the reference model_fit."""
    rows = []
    for d in data:
        for o in d.mems:
            b = model.memory.predict(o.gpu, o.costs, o.m, o.k)
            rows.append({"dataset": d.name, "split": _mem_split(o),
                         "measured": o.reserved_gib, "predicted": b.value, "low": b.low,
                         "high": b.high, "error": b.value / o.reserved_gib - 1,
                         "in_sample": d.reference})
    return rows


def oom_boundary(model: predictor.FittedModel, data: list[Dataset]) -> list[dict[str, Any]]:
    """Each split of the ``--vram-limit`` runs: predicted peak reserved vs the cap."""
    rows = []
    for d in data:
        cap = d.profile.vram_limit_gib
        if cap is None:
            continue
        arch = predictor.arch_for(d.profile.workload.model)
        assert arch is not None
        setup = predictor.setup_for(d.profile.workload, d.profile.software)
        costs = memory_model.memory_costs(arch, setup)
        for s in d.profile.splits:
            b = model.memory.predict(d.profile.gpu, costs, s.micro_batch, s.grad_accum)
            predicted = "fits" if b.value <= cap else "oom"
            measured = "oom" if s.status == "oom" else "fits"
            rows.append({
                "dataset": d.name, "cap_gib": cap, "split": f"{s.micro_batch}x{s.grad_accum}",
                "predicted_gib": b.value, "low": b.low, "high": b.high,
                "measured_peak_gib": s.peak_reserved_gib, "measured": measured,
                "predicted": predicted, "correct": predicted == measured,
                "band_straddles_cap": b.low <= cap <= b.high,
            })
    return rows


def _mem_split(o: MemObservation) -> str:
    return o.label.rsplit(" ", 1)[1]


def validate() -> dict[str, Any]:
    """Every validation number, as data."""
    data = datasets()
    ref_model = predictor.reference_model()
    all_profiles = [d.profile for d in data]
    everything = predictor.fitted_model(all_profiles)
    mem_rows = memory(ref_model, data)
    loo = time_loo(data)
    mloo = memory_loo(data)
    oom = oom_boundary(ref_model, data)
    return {
        "reference_fit": fit_table(ref_model),
        "reference_fit_used": list(ref_model.used),
        "all_data_fit": fit_table(everything),
        "derived": _derived(ref_model, everything, data),
        "time_loo": loo,
        "t4_from_specs": t4_from_specs(data),
        "transfer_from_reference_fit": transfer(ref_model, data),
        "memory_from_reference_fit": mem_rows,
        "memory_loo": mloo,
        "oom_boundary": oom,
        "summary": _summary(loo, mloo, mem_rows, oom),
    }


def _derived(ref: predictor.FittedModel, allfit: predictor.FittedModel,
             data: list[Dataset]) -> list[dict[str, Any]]:
    """Per GPU: host seconds per launch and GEMM efficiency (fraction of the sustained rate)."""
    rows = []
    for label, model in (("reference", ref), ("all data", allfit)):
        for gpu in ("T4", "H200-SXM"):
            p = model.time.params(gpu)
            rows.append({"fit": label, "gpu": gpu, "host_us_per_launch": 1e6 * p.host_s_per_launch,
                         "efficiency": p.efficiency, "gpu_us_per_launch": 1e6 * p.gpu_s_per_launch})
    return rows


def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    errs = [abs(r["error"]) for r in rows]
    if not errs:
        return {"n": 0}
    within = sum(e <= LOO_TARGET for e in errs)
    return {"n": len(errs), "max_abs": max(errs), "mean_abs": sum(errs) / len(errs),
            "within_5pct": within,
            "covered_90": sum(bool(r.get("covered", True)) for r in rows)}


def _summary(loo: dict[str, list[dict[str, Any]]], mloo: list[dict[str, Any]],
             mem: list[dict[str, Any]], oom: list[dict[str, Any]]) -> dict[str, Any]:
    ref = ("T4 1.7B s512 published", "H200-SXM 1.7B s512 calibrate")
    return {
        "time_loo_profile_alone": _stats(loo["profile_alone"]),
        "time_loo_all_other_data": _stats(loo["all_other_data"]),
        "time_loo_reference_profiles_alone": _stats(
            [r for r in loo["profile_alone"] if r["dataset"] in ref]),
        "memory_all": {"n": len(mem), "max_abs": max(abs(r["error"]) for r in mem)},
        "memory_loo": {"n": len(mloo), "max_abs": max(abs(r["error"]) for r in mloo)},
        "oom_boundary": {"n": len(oom), "correct": sum(r["correct"] for r in oom)},
        "targets": {"loo": LOO_TARGET, "memory": MEM_TARGET},
    }


def _print(result: dict[str, Any]) -> None:
    def table(rows: list[dict[str, Any]], cols: list[str], fmt: dict[str, str]) -> str:
        body = [[format(r[c], fmt.get(c, "")) if not isinstance(r[c], list) else
                 ", ".join(r[c]) for c in cols] for r in rows]
        return tabulate(body, headers=cols, disable_numparse=True)

    num = {"value": ".4g", "low": ".4g", "high": ".4g", "prior": ".4g"}
    print("Reference fit (data/profiles; what `gacost recommend` uses):")
    print(table(result["reference_fit"], ["param", "value", "low", "high", "prior", "fitted_on"],
                num))
    print("\nFit to every measurement:")
    print(table(result["all_data_fit"], ["param", "value", "low", "high", "prior", "fitted_on"],
                num))
    print("\nPer GPU (derived):")
    print(table(result["derived"], ["fit", "gpu", "host_us_per_launch", "efficiency",
                                    "gpu_us_per_launch"],
                {"host_us_per_launch": ".1f", "efficiency": ".3f", "gpu_us_per_launch": ".3f"}))
    t = {"measured": ".3f", "predicted": ".3f", "low": ".3f", "high": ".3f", "error": "+.1%"}
    for key in ("profile_alone", "all_other_data"):
        print(f"\nTime leave-one-out ({key.replace('_', ' ')}), s/update:")
        print(table(result["time_loo"][key],
                    ["dataset", "split", "measured", "predicted", "low", "high", "error",
                     "covered"], t))
    for key, rows in result["t4_from_specs"].items():
        print(f"\nPublished T4 table from specs + fitted host ({key}):")
        print(table(rows, ["split", "measured", "predicted", "low", "high", "error",
                           "host_s_per_launch"], {**t, "host_s_per_launch": ".4f"}))
    print("\nBench measurements predicted by the reference fit:")
    print(table(result["transfer_from_reference_fit"],
                ["dataset", "split", "measured", "predicted", "low", "high", "error", "covered"],
                t))
    g = {"measured": ".2f", "predicted": ".2f", "low": ".2f", "high": ".2f", "error": "+.1%"}
    print("\nPeak reserved GiB, reference fit (in_sample: the fit saw it):")
    print(table(result["memory_from_reference_fit"],
                ["dataset", "split", "measured", "predicted", "low", "high", "error",
                 "in_sample"], g))
    print("\nPeak reserved GiB, leave-one-out within each profile:")
    print(table(result["memory_loo"], ["dataset", "split", "measured", "predicted", "error"], g))
    print("\nOOM boundary under --vram-limit (reference fit):")
    print(table(result["oom_boundary"],
                ["dataset", "cap_gib", "split", "predicted_gib", "low", "high",
                 "measured_peak_gib", "measured", "predicted", "correct"],
                {"predicted_gib": ".2f", "low": ".2f", "high": ".2f", "cap_gib": "g"}))
    print("\nSummary:", json.dumps(result["summary"], indent=1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", type=Path, default=RESULTS / "model_validation.json")
    a = p.parse_args()
    result = validate()
    _print(result)
    a.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwrote {a.out.relative_to(ROOT) if a.out.is_relative_to(ROOT) else a.out}")


if __name__ == "__main__":
    main()
