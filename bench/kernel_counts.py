"""Check the structural kernel-count model against the counted H200 traces.

For every workload of the H200 sweep (``bench/results/h200-sweep/w*.json``) and each of its
splits: launches per micro-step (kernels + memcpy/memset) measured by torch.profiler vs
predicted by :func:`gacost.advisor.kernel_counts.kernel_counts`, with the GPU anchor
(operators -> kernels, shape extras) fitted **without that workload** (leave one workload
out), and the per-update launches. Then the shipped count against every traced run of the
user's script (:func:`user_trace_rows`), none of them in the sweep. Prints the tables and
writes ``bench/results/kernel_counts.json``.

Also derives, from the committed counts, the constants the module carries (the CPU
structure table, the anchor fitted on all workloads, the QLoRA / Liger differences, the
rest-of-update fit), so that ``tests/test_kernel_counts.py`` can check the module against
the data it says it came from.

    python bench/kernel_counts.py [--out bench/results/kernel_counts.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from gacost.advisor import kernel_counts as kc
from gacost.advisor.time_model import TrainSetup
from gacost.base.models import model_arch

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ROOT / "bench" / "results" / "h200-sweep"
CPU_COUNTS = ROOT / "bench" / "results" / "kernel-counts-cpu.json"
ATTENTION_ONLY = ("q_proj", "k_proj", "v_proj", "o_proj")

# Workloads whose special terms are identified only by themselves (a pair difference): their
# leave-one-out row refits the anchor without them, but the term stays in-sample.
PAIR_TERMS = {
    "w06": "QLoRA terms: w06 minus w08",
    "w07": "prepare_for_kbit term: w07 minus w06",
    "w10": "Liger term: w10 minus w01",
}


# ---------------------------------------------------------------- the counted data


def load_rows(sweep: Path = SWEEP) -> list[dict[str, Any]]:
    """One row per profiled split: the workload's arch and setup, measured launches."""
    rows = []
    for path in sorted(sweep.glob("w*.json")):
        doc = json.loads(path.read_text())
        w = doc["workload"]
        cfg = json.loads((ROOT / w["config"]).read_text())
        arch = model_arch(Path(w["config"]).stem, {k: v for k, v in cfg.items()
                                                   if not k.startswith("_")})
        setup = TrainSetup(
            method=w["method"], lora_r=w["lora_r"],
            lora_targets=kc.LINEAR_NAMES if w["targets"] == "all-linear" else ATTENTION_ONLY,
            sequence_length=w["seq_len"], precision=w["precision"],
            gradient_checkpointing=w["gradient_checkpointing"],
        )
        for s in doc["splits"]:
            p = s.get("profile")
            if not p:
                continue
            classes = p["kernel_count_per_microstep_by_class"]
            rows.append({
                "workload": path.stem[:3], "name": path.stem, "split": s["split"],
                "arch": arch, "setup": setup, "m": s["micro_batch"], "k": s["grad_accum"],
                "liger": bool(w["liger"]), "compile": bool(w["torch_compile"]),
                "prepare": bool(w["prepare_model_for_kbit_training"]),
                "lora_modules": s["lora_modules"],
                "per_microstep": p["kernels_per_microstep"] + p["memcpy_memset_per_microstep"],
                "kernels": p["kernels_per_microstep"],
                "copies": p["memcpy_memset_per_microstep"],
                "classes": classes,
                "per_update": (p["kernels_optimizer_per_update"]
                               + p["kernels_update_other_per_update"]
                               + p["memcpy_memset_update_other_per_update"]),
                "optimizer": p["kernels_optimizer_per_update"],
                "update_other": p["kernels_update_other_per_update"],
            })
    return rows


def plain(row: dict[str, Any]) -> bool:
    """bf16 LoRA without Liger or compile: the rows the anchor is fitted on."""
    return row["setup"].method == "lora" and not row["liger"] and not row["compile"]


# ---------------------------------------------------------------- derivations


def derive_structure(path: Path = CPU_COUNTS) -> dict[str, kc.FamilyStructure]:
    """The CPU structure table from the committed CPU counts (see the module's comment)."""
    doc = json.loads(path.read_text())
    table: dict[tuple[str, str, str, bool, int], float] = {}
    dropped: dict[tuple[str, str, str, bool, int], float] = {}  # LoRA dropout > 0
    for r in doc["rows"]:
        if r["micro_batch"] == 1 and r["grad_accum"] == 1:
            key = (r["model_type"], r["precision"], r["targets"], r["gradient_checkpointing"],
                   r["layers"])
            into = dropped if r.get("lora_dropout", 0.0) > 0 else table
            into[key] = r["launching_ops_per_microstep"]

    def per_layer(mt: str, prec: str, t: str, gc: bool) -> float:
        return (table[(mt, prec, t, gc, 4)] - table[(mt, prec, t, gc, 2)]) / 2

    def per_model(mt: str, prec: str, t: str, gc: bool) -> float:
        return table[(mt, prec, t, gc, 2)] - 2 * per_layer(mt, prec, t, gc)

    def dropout_per_linear(mt: str, prec: str, gc: bool, linears: int) -> float:
        """What dropout adds per wrapped linear: the all-linear per-layer difference."""
        if (mt, prec, "all-linear", gc, 4) not in dropped:  # not counted: Qwen3's
            mt, linears = "qwen3", len(kc.LINEAR_NAMES)
            if (mt, prec, "all-linear", gc, 4) not in dropped:
                return 0.0
        with_dropout = (dropped[(mt, prec, "all-linear", gc, 4)]
                        - dropped[(mt, prec, "all-linear", gc, 2)]) / 2
        return (with_dropout - per_layer(mt, prec, "all-linear", gc)) / linears

    def lora_counts(mt: str, prec: str, linears: int) -> kc.OperatorCounts:
        vals = []
        for gc in (True, False):
            full = per_layer(mt, prec, "all-linear", gc)
            if (mt, prec, "attention", gc, 2) in table:
                lora = (full - per_layer(mt, prec, "attention", gc)) / (linears - 4)
            else:  # counted all-linear only: the adapter cost of the Llama family
                lora = (per_layer("llama", prec, "all-linear", gc)
                        - per_layer("llama", prec, "attention", gc)) / 3
            vals.append((full - linears * lora, lora, per_model(mt, prec, "all-linear", gc)))
        (lg, dg, mg), (ln, dn, mn) = vals
        return kc.OperatorCounts(lg, ln, dg, dn, mg, mn,
                                 dropout_per_linear(mt, prec, True, linears),
                                 dropout_per_linear(mt, prec, False, linears))

    out = {}
    for fam in ("llama", "qwen3", "gemma2", "phi3"):
        old = kc.STRUCTURE[fam]
        n = len(old.linears)
        full = kc.OperatorCounts(
            per_layer(fam, "bf16", "full", True), per_layer(fam, "bf16", "full", False),
            0.0, 0.0,
            per_model(fam, "bf16", "full", True), per_model(fam, "bf16", "full", False),
        )
        out[fam] = kc.FamilyStructure(
            linears=old.linears, norms=old.norms, half=lora_counts(fam, "bf16", n),
            fp32=lora_counts(fam, "fp32", n), full=full, fused=old.fused,
        )
    return out


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (a small dense system)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


def _least_squares(xs: list[list[float]], ys: list[float], ws: list[float]) -> list[float]:
    k = len(xs[0])
    ata = [[sum(w * x[i] * x[j] for x, w in zip(xs, ws, strict=True)) for j in range(k)]
           for i in range(k)]
    aty = [sum(w * x[i] * y for x, y, w in zip(xs, ys, ws, strict=True)) for i in range(k)]
    return _solve(ata, aty)


def fit_anchor(rows: list[dict[str, Any]]) -> kc.GpuAnchor:
    """The GPU anchor from the rows given: the per-micro-step part from the plain rows, in
    two stages, and the rest-of-update line from every workload.

    1. ``ops_to_kernels``: the mean over rows of (counted `other` + attention kernels +
       the structural GEMM operators) / the CPU operator count: what one counted operator
       launches, split-K reductions and copies aside.
    2. The extras per GEMM operator, ``a + b * x``: least squares, in relative error, of
       (launches - ops_to_kernels * operators) on (GEMM operators, GEMM operators * x).
    """
    plain_rows = [r for r in rows if plain(r)]
    ratios = []
    for r in plain_rows:
        ops = kc.operators_per_microstep(r["arch"], r["setup"], r["k"])
        gemm = kc.gemm_operators_per_microstep(r["arch"], r["setup"])
        ratios.append((r["classes"]["other"] + r["classes"]["attention"] + gemm) / ops)
    rho = statistics.fmean(ratios)
    xs, ys, ws = [], [], []
    for r in plain_rows:
        ops = kc.operators_per_microstep(r["arch"], r["setup"], r["k"])
        gemm = kc.gemm_operators_per_microstep(r["arch"], r["setup"])
        x = kc.shape_x(r["arch"], r["setup"], r["m"])
        xs.append([gemm, gemm * x])
        ys.append(r["per_microstep"] - rho * ops)
        ws.append(1.0 / r["per_microstep"] ** 2)
    a, b = _least_squares(xs, ys, ws)
    base, per_tensor = fit_update_other(rows)
    return kc.GpuAnchor(ops_to_kernels=rho, extra_a=a, extra_b=b, update_other_base=base,
                        update_other_per_tensor=per_tensor, source="fit")


def fit_update_other(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """Rest-of-update kernels at k = 1 against the trainable tensors (one point per
    workload): base + per_tensor * tensors."""
    pts = {}
    for r in rows:
        if r["k"] == 1:
            pts[r["workload"]] = (2.0 * r["lora_modules"], float(r["update_other"]))
    xs = [[1.0, t] for t, _ in pts.values()]
    ys = [y for _, y in pts.values()]
    base, per = _least_squares(xs, ys, [1.0] * len(ys))
    return base, per


def pair_terms(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The QLoRA / prepare / Liger differences, from the pairs of workloads that share
    everything else (same model, targets, GC; the other split shapes differ only in m)."""
    by = {(r["workload"], r["k"]): r for r in rows}
    w06, w08 = by[("w06", 1)], by[("w08", 1)]
    layers = w06["arch"].num_hidden_layers
    linears = layers * 7
    return {
        "qlora_dequant_per_linear": w06["classes"]["dequant"] / linears,
        "qlora_other_per_linear": (w06["classes"]["other"] - w08["classes"]["other"]) / linears,
        "qlora_copies_per_linear": (w06["copies"] - w08["copies"]) / linears,
        "prepare_per_layer": (by[("w07", 1)]["classes"]["other"]
                              - w06["classes"]["other"]) / layers,
        "liger_per_layer": (by[("w10", 1)]["per_microstep"] - by[("w01", 1)]["per_microstep"])
        / by[("w10", 1)]["arch"].num_hidden_layers,
    }


# ---------------------------------------------------------------- validation


def predict(r: dict[str, Any], anchor: kc.GpuAnchor) -> kc.KernelCounts:
    return kc.kernel_counts(
        r["arch"], r["setup"], r["m"], grad_accum=r["k"], liger=r["liger"],
        torch_compile=r["compile"], prepare_for_kbit=r["prepare"], anchor=anchor,
    )


def leave_one_out(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for w in sorted({r["workload"] for r in rows}):
        anchor = fit_anchor([r for r in rows if r["workload"] != w])
        for r in (r for r in rows if r["workload"] == w):
            pred = predict(r, anchor)
            out.append({
                "workload": r["name"], "split": r["split"],
                "measured_per_microstep": r["per_microstep"],
                "predicted_per_microstep": round(pred.per_microstep, 1),
                "error_pct": round(100 * (pred.per_microstep / r["per_microstep"] - 1), 2),
                "measured_per_update": r["per_update"],
                "predicted_per_update": round(pred.per_update, 1),
                "update_error_pct": round(100 * (pred.per_update / r["per_update"] - 1), 2),
                "anchor_held_out": {k: round(v, 5) for k, v in asdict(anchor).items()
                                    if k != "source"},
                "in_sample_term": PAIR_TERMS.get(w, ""),
            })
    return out


def summary(loo: list[dict[str, Any]]) -> dict[str, Any]:
    def stats(sel: list[dict[str, Any]]) -> dict[str, Any]:
        errs = [abs(r["error_pct"]) for r in sel]
        worst = max(sel, key=lambda r: abs(r["error_pct"]))
        return {
            "rows": len(sel), "median_abs_error_pct": round(statistics.median(errs), 2),
            "worst_abs_error_pct": round(max(errs), 2),
            "worst": f"{worst['workload']} {worst['split']}",
            "within_5pct": sum(e <= 5 for e in errs),
        }

    out_of_sample = [r for r in loo if not r["in_sample_term"]]
    upd = [abs(r["update_error_pct"]) for r in loo]
    return {"all": stats(loo), "out_of_sample": stats(out_of_sample),
            "per_update": {"median_abs_error_pct": round(statistics.median(upd), 2),
                           "worst_abs_error_pct": round(max(upd), 2)}}


def user_trace_rows() -> list[dict[str, Any]]:
    """The shipped count (:func:`gacost.advisor.kernel_counts.kernel_counts`, the anchor
    fitted on the whole sweep) against every traced user run (``bench/user_script.py
    --trace``: runs 5-7, 9, 18-21 on the H200 and lent H100s), none of them in the sweep the
    anchor was fitted to: launches (kernels + copies) per micro-step, the update's own
    launches spread over its k micro-steps."""
    from gacost.base.gpu_names import canonical_gpu

    sys.path.insert(0, str(ROOT / "bench"))
    from crossgpu_traces import TRACES, job_arch, user_run_lines

    out = []
    for path, run in user_run_lines(nested=True):
        trace = run.get("trace")
        if not trace:
            continue
        arch, setup = job_arch(run["job"], run.get("model_type") or "")  # --model-type
        m, k = run["micro_batch"], run["grad_accum"]
        counts = kc.kernel_counts(arch, setup, m, grad_accum=k, liger=setup.liger,
                                  torch_compile=setup.torch_compile,
                                  prepare_for_kbit=setup.prepare_for_kbit)
        measured = trace["kernels_per_microstep"] + trace["copies_per_microstep"]
        predicted = counts.per_microstep + counts.per_update / k
        out.append({"file": str(path.relative_to(TRACES)),
                    "gpu": canonical_gpu(run.get("gpu") or ""), "job": Path(run["job"]).stem,
                    "build": arch.model_type, "split": f"{m}x{k}", "method": setup.method,
                    "measured_per_microstep": measured,
                    "predicted_per_microstep": round(predicted, 1),
                    "error_pct": round(100 * (predicted / measured - 1), 2)})
    return out


def user_trace_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and range of the errors, by k = 1 or k > 1 and by GPU."""
    groups: dict[str, list[float]] = {}
    for r in rows:
        k_group = "k=1" if r["split"].endswith("x1") else "k>1"
        for key in (k_group, str(r["gpu"]), "all"):
            groups.setdefault(key, []).append(r["error_pct"])
    return {key: {"rows": len(v), "median_error_pct": round(statistics.median(v), 2),
                  "range_pct": [min(v), max(v)]} for key, v in sorted(groups.items())}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "kernel_counts.json"))
    a = p.parse_args(argv)
    rows = load_rows()
    full = fit_anchor(rows)
    loo = leave_one_out(rows)
    summ = summary(loo)
    print(f"{'workload':40s} {'split':6s} {'measured':>9s} {'LOO pred':>9s} {'err %':>7s}"
          f" {'upd meas':>8s} {'upd pred':>8s}")
    for r in loo:
        flag = " *" if r["in_sample_term"] else ""
        print(f"{r['workload']:40s} {r['split']:6s} {r['measured_per_microstep']:9.0f}"
              f" {r['predicted_per_microstep']:9.0f} {r['error_pct']:+7.2f}"
              f" {r['measured_per_update']:8.0f} {r['predicted_per_update']:8.0f}{flag}")
    print("* the workload's own special term (QLoRA, prepare_for_kbit or Liger) is a pair "
          "difference that only it identifies: anchor left out, that term in-sample")
    for k, v in summ.items():
        print(f"{k}: {v}")
    print(f"anchor fitted on all rows: rho={full.ops_to_kernels:.5f} "
          f"a={full.extra_a:.5f} b={full.extra_b:.5f}; rest of update "
          f"{full.update_other_base:.3f} + {full.update_other_per_tensor:.5f} x tensors")
    print(f"pair terms: {pair_terms(rows)}")
    traced = user_trace_rows()
    traced_summary = user_trace_summary(traced)
    print("\nThe shipped count against every traced user run (out of the sweep): launches per "
          "micro-step")
    for r in traced:
        print(f"  {str(r['gpu']):9s} {r['job'][:40]:40s} {r['build']:7s} {r['split']:5s} "
              f"{r['measured_per_microstep']:7.0f} {r['predicted_per_microstep']:7.0f} "
              f"{r['error_pct']:+6.1f}%")
    for key, v in traced_summary.items():
        print(f"  {key}: {v['rows']} runs, median {v['median_error_pct']:+.1f}%, "
              f"{v['range_pct'][0]:+.1f} to {v['range_pct'][1]:+.1f}%")
    doc = {
        "schema": "gacost-kernel-counts-validation", "version": 1,
        "source": "bench/results/h200-sweep (H200, torch 2.11+cu130, transformers 5.17, "
                  "TRL 1.16, PEFT 0.21), bench/results/kernel-counts-cpu.json",
        "method": "leave one workload out: the GPU anchor (operators -> kernels, shape "
                  "extras) refitted on the other workloads' plain bf16 LoRA rows",
        "anchor_all": {k: v for k, v in asdict(full).items() if k != "source"},
        "pair_terms": pair_terms(rows),
        "summary": summ,
        "rows": loo,
        "user_traces": {"summary": traced_summary, "rows": traced},
    }
    tmp = a.out + ".tmp"
    Path(tmp).write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
