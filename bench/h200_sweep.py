"""One workload, several m x k splits, in one process: plain TRL + PEFT, timed and profiled.

Plain TRL + PEFT in the timed path (torch, transformers, peft, trl, datasets; optional
bitsandbytes, liger-kernel, pynvml): no gacost code runs while it trains, so the numbers are what
a user's TRL script gets. What a measurement is, is the project's, defined once and imported
(the project installed on the device, ``PYTHONPATH=/tmp/site``): the trainer's configuration
(:func:`gacost.calibration.protocol.sft_config` with the settings of 2026-12-02), the placeholder
tokenizer and the synthetic rows (:mod:`gacost.calibration.builder`), the kernel classes and the
interval helpers of the trace analysis (:mod:`gacost.calibration.trace`). Written for the lent
H200 (bench/H200-SWEEP.md), also runs on the CPU with a tiny config for a smoke test.

For each split (largest micro-batch first) a new SFTTrainer is built on the same base model with a
fresh LoRA adapter (TRL builds the PeftModel from ``peft_config``) and optimizer:

* ``--warmup`` untimed updates, then timed updates (on_step_end -> on_step_end, synchronised) until
  ``--timed-seconds`` of timed updates and at least ``--min-timed`` updates, or ``--max-timed``;
  GPU utilisation is sampled through NVML meanwhile; peak allocated / reserved memory is read after
  the timed updates (reset before each split);
* then 1-2 updates under torch.profiler (CPU + CUDA, with_flops): kernels launched per micro-step
  (launch time inside ``Trainer.training_step``), in the optimizer step (between the
  on_pre_optimizer_step and on_optimizer_step callbacks) and elsewhere in the update (grad clipping,
  zero_grad, batch copies), GPU time per micro-step by kernel class, GPU busy fraction, GEMM
  TFLOP/s (profiler FLOPs of aten mm/addmm/bmm/baddbmm over GEMM kernel time), top kernels;
* OOM is a result: the split is recorded as ``oom`` and the next split runs.

The JSON is rewritten after every split, so a process killed at its deadline leaves what it had.

    python bench/h200_sweep.py --config data/models/Qwen--Qwen3-1.7B.json --method lora \\
        --rank 16 --targets all-linear --seq 512 --batch 4 --splits 1x4,2x2,4x1 --gc on \\
        --out /tmp/w1.json
    python bench/h200_sweep.py --summarize /tmp/w1.json ...
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from types import FrameType
from typing import Any, cast

PROCESS_START = time.perf_counter()

# the kernel classes, the "other" breakdown and the GEMM operators: gacost's trace analysis
# (torch-free at import; first match wins, case-insensitive; checked against the real H200
# names, bench/H200-SWEEP.md)
from gacost.calibration.trace import (  # noqa: E402
    GEMM_OPS,
    KERNEL_CLASSES,
    OTHER,
    OTHER_SUBCLASSES,
    REST,
    Windows,
    classify,
    subclassify,
    union_within,
)


def qtile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    s = sorted(xs)
    if len(s) == 1:
        return s[0]
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


# --------------------------------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--summarize", nargs="+", metavar="JSON", help="print tables of result files and exit"
    )
    p.add_argument("--config", help="architecture config (data/models/*.json)")
    p.add_argument("--name", default=None, help="workload label for the JSON")
    p.add_argument("--method", choices=("lora", "qlora"), default="lora")
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--alpha", type=float, default=None, help="default 2 x rank")
    p.add_argument("--targets", choices=("all-linear", "attention"), default="all-linear")
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--batch", type=int, default=4, help="effective batch m x k")
    p.add_argument("--splits", default="1x4,2x2,4x1", help="comma list of m x k")
    p.add_argument("--gc", choices=("on", "off"), default="on")
    p.add_argument("--precision", choices=("bf16",), default="bf16")
    p.add_argument("--compile", choices=("on", "off"), default="off")
    p.add_argument("--liger", choices=("on", "off"), default="off")
    p.add_argument("--prepare-kbit", choices=("on", "off"), default="off")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--min-timed", type=int, default=5)
    p.add_argument("--max-timed", type=int, default=15)
    p.add_argument("--timed-seconds", type=float, default=12.0)
    p.add_argument(
        "--profile-updates",
        type=int,
        default=0,
        help="updates under the profiler; 0 = 2 if k < 4 else 1",
    )
    p.add_argument("--no-profile", action="store_true")
    p.add_argument(
        "--deadline", type=float, default=0.0, help="epoch seconds: skip/stop work to end before it"
    )
    p.add_argument("--ckpt-dir", default=None, help="QLoRA: reuse/keep the random checkpoint here")
    p.add_argument("--out", default=None, help="JSON path")
    p.add_argument("--simulate-oom", default="", help="testing: split (e.g. 2x2) that raises OOM")
    a = p.parse_args(argv)
    if a.summarize:
        return a
    if not a.config:
        p.error("--config is required")
    if a.alpha is None:
        a.alpha = 2.0 * a.rank
    splits = []
    for s in a.splits.split(","):
        m, k = (int(x) for x in s.lower().split("x"))
        if m * k != a.batch:
            p.error(f"split {s} is not batch {a.batch}")
        splits.append((m, k))
    a.split_list = sorted(splits, key=lambda mk: -mk[0])  # largest m first
    return a


# --------------------------------------------------------------------------------------------
class NvmlSampler:
    def __init__(self, index: int = 0, period: float = 0.05):
        self.period = period
        self.samples: list[tuple[float, int, int, int]] = []
        self.err: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            import pynvml  # type: ignore[import-untyped]

            pynvml.nvmlInit()
            self.nv = pynvml
            self.h = pynvml.nvmlDeviceGetHandleByIndex(index)
        except Exception as e:  # noqa: BLE001
            self.nv = None
            self.err = repr(e)

    def _run(self) -> None:
        nv = self.nv
        while not self._stop.is_set():
            try:
                u = nv.nvmlDeviceGetUtilizationRates(self.h)
                clk = nv.nvmlDeviceGetClockInfo(self.h, nv.NVML_CLOCK_SM)
                self.samples.append((time.perf_counter(), u.gpu, u.memory, clk))
            except Exception as e:  # noqa: BLE001
                self.err = repr(e)
                return
            time.sleep(self.period)

    def start(self) -> None:
        self.samples = []
        if self.nv is None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=2)
            self._thread = None
        if not self.samples:
            return {"n": 0, "error": self.err}
        g = [s[1] for s in self.samples]
        mem = [s[2] for s in self.samples]
        clk = [s[3] for s in self.samples]
        return {
            "n": len(g),
            "period_s": self.period,
            "gpu_util_mean_pct": round(statistics.fmean(g), 1),
            "gpu_util_median_pct": statistics.median(g),
            "mem_util_mean_pct": round(statistics.fmean(mem), 1),
            "sm_clock_mean_mhz": round(statistics.fmean(clk), 0),
            "sm_clock_min_mhz": min(clk),
            "error": self.err,
        }


# --------------------------------------------------------------------------------------------
def environment(dev: str) -> dict[str, Any]:
    import importlib.metadata as md

    import torch

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "hostname_hash": None,
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    env["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    for pkg in ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "bitsandbytes",
                "liger-kernel", "triton", "nvidia-ml-py"):
        try:
            env[pkg] = md.version(pkg)
        except Exception:  # noqa: BLE001
            env[pkg] = None
    env["torch_cuda"] = torch.version.cuda
    if dev == "cuda":
        env["gpu"] = torch.cuda.get_device_name()
        env["gpu_capability"] = ".".join(map(str, torch.cuda.get_device_capability()))
        env["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 2)
        env["gpu_sm_count"] = torch.cuda.get_device_properties(0).multi_processor_count
        try:
            import pynvml

            pynvml.nvmlInit()
            d = pynvml.nvmlSystemGetDriverVersion()
            env["driver"] = d.decode() if isinstance(d, bytes) else d
        except Exception as e:  # noqa: BLE001
            env["driver"] = f"unknown ({e!r})"
    else:
        env["gpu"] = "cpu"
    return env


# --------------------------------------------------------------------------------------------
def analyse_profile(prof: Any, n_updates: int, k: int, top: int = 15) -> dict[str, Any]:
    """Kernel-level facts from one torch.profiler session (see module docstring)."""
    from torch.autograd import DeviceType  # type: ignore[attr-defined]

    t0 = time.perf_counter()
    evs = prof.profiler.kineto_results.events()
    ranges: dict[str, list[tuple[int, int]]] = {
        "gs_update": [],
        "gs_microstep": [],
        "gs_optimizer": [],
    }
    launch_t: dict[int, int] = {}  # CUPTI correlation id -> launch (runtime call) start
    op_t: dict[int, int] = {}  # CPU op id -> start
    gemm_ops: list[tuple[int, float, str]] = []
    gpu: list[tuple[str, int, int, int, int]] = []  # name, start, end, corr, linked
    act: collections.Counter[str] = collections.Counter()
    n_cpu_ops = 0
    for e in evs:
        dt = e.device_type()
        name = e.name()
        try:
            at = str(e.activity_type()).lower()
        except Exception:  # noqa: BLE001
            at = "?"
        act[at] += 1
        if dt == DeviceType.CPU:
            if e.is_user_annotation():
                if name in ranges:
                    ranges[name].append((e.start_ns(), e.end_ns()))
                continue
            if at in ("cuda_runtime", "cuda_driver") or name.startswith("cuda") or (
                name.startswith("cu") and name[2:3].isupper()
            ):
                launch_t[e.correlation_id()] = e.start_ns()
                continue
            n_cpu_ops += 1
            op_t[e.correlation_id()] = e.start_ns()
            if name in GEMM_OPS:
                f = e.flops()
                if f:
                    gemm_ops.append((e.start_ns(), float(f), name))
        elif dt in (DeviceType.CUDA,) or str(dt).endswith("CUDA"):
            if (
                e.is_user_annotation()
                or "annotation" in at
                or "sync" in at
                or "overhead" in at
                or name.startswith("gs_")
                or name.startswith("ProfilerStep")
            ):
                continue
            if at in ("gpu_memcpy", "gpu_memset") and not name.lower().startswith(
                ("memcpy", "memset")
            ):
                name = "Memcpy/Memset " + name
            gpu.append(
                (name, e.start_ns(), e.end_ns(), e.correlation_id(), e.linked_correlation_id())
            )
    micro = Windows(ranges["gs_microstep"])
    opt = Windows(ranges["gs_optimizer"])
    upd = Windows(ranges["gs_update"])
    n_micro = len(ranges["gs_microstep"])
    res: dict[str, Any] = {
        "profiled_updates": n_updates,
        "profiled_microsteps": n_micro,
        "expected_microsteps": n_updates * k,
        "activity_types": dict(act),
        "cpu_ops": n_cpu_ops,
        "gpu_events": len(gpu),
    }
    # attribute each GPU event to the phase in which it was launched
    phase_of: list[str] = []
    unattributed = 0
    late_launch = 0
    for _name, s, _e, corr, linked in gpu:
        t = launch_t.get(corr)
        if t is None:
            t = op_t.get(linked)
        if t is None:
            unattributed += 1
            t = s  # fall back on the execution start
        elif t > s:
            late_launch += 1
        if t in micro:
            ph = "microstep"
        elif t in opt:
            ph = "optimizer"
        elif t in upd:
            ph = "update_other"
        else:
            ph = "outside"
        phase_of.append(ph)
    res["unattributed_launch_time"] = unattributed
    res["launch_after_kernel_start"] = late_launch  # sanity: should be 0

    per: dict[str, collections.Counter[str]] = {
        ph: collections.Counter() for ph in ("microstep", "optimizer", "update_other", "outside")
    }
    time_cls: dict[str, collections.Counter[str]] = {ph: collections.Counter() for ph in per}
    time_sub: collections.Counter[str] = collections.Counter()
    by_name: dict[str, list[Any]] = {}
    for (name, s, e_, _c, _l), ph in zip(gpu, phase_of, strict=True):
        cls = classify(name)
        d = e_ - s
        per[ph][cls] += 1
        time_cls[ph][cls] += d
        if ph == "microstep" and cls == OTHER:
            time_sub[subclassify(name)] += d
        if ph != "outside":
            r = by_name.setdefault(name, [0, 0, cls])
            r[0] += 1
            r[1] += d

    def kernels(c: collections.Counter[str]) -> int:
        return sum(v for kk, v in c.items() if kk != "memcpy")

    nm = max(n_micro, 1)
    nu = max(n_updates, 1)
    res["kernels_per_microstep"] = round(kernels(per["microstep"]) / nm, 1)
    res["memcpy_memset_per_microstep"] = round(per["microstep"]["memcpy"] / nm, 1)
    res["kernels_optimizer_per_update"] = round(kernels(per["optimizer"]) / nu, 1)
    res["kernels_update_other_per_update"] = round(kernels(per["update_other"]) / nu, 1)
    res["memcpy_memset_update_other_per_update"] = round(per["update_other"]["memcpy"] / nu, 1)
    res["kernels_per_update_total"] = round(
        (
            sum(per["microstep"].values())
            + sum(per["optimizer"].values())
            + sum(per["update_other"].values())
        )
        / nu,
        1,
    )
    res["kernels_outside_updates"] = sum(per["outside"].values())
    res["kernel_count_per_microstep_by_class"] = {
        c: round(v / nm, 1) for c, v in per["microstep"].items()
    }
    res["gpu_ms_per_microstep"] = {
        c: round(v / nm / 1e6, 3) for c, v in time_cls["microstep"].items()
    }
    res["gpu_ms_per_microstep"]["total"] = round(sum(time_cls["microstep"].values()) / nm / 1e6, 3)
    res["gpu_ms_per_microstep_other_breakdown"] = {
        c: round(v / nm / 1e6, 3) for c, v in time_sub.items()
    }
    res["gpu_ms_optimizer_per_update"] = round(sum(time_cls["optimizer"].values()) / nu / 1e6, 3)
    res["gpu_ms_update_other_per_update"] = round(
        sum(time_cls["update_other"].values()) / nu / 1e6, 3
    )

    # wall and busy
    upd_iv = ranges["gs_update"]
    wall_ns = sum(e - s for s, e in upd_iv)
    busy_ns = union_within(((s, e) for _n, s, e, _c, _l in gpu), upd)
    res["profiled_wall_s"] = round(wall_ns / 1e9, 4)
    res["profiled_wall_per_update_s"] = round(wall_ns / 1e9 / nu, 4)
    res["gpu_busy_fraction"] = round(busy_ns / wall_ns, 4) if wall_ns else None
    ms_wall = sum(e - s for s, e in ranges["gs_microstep"])
    res["microstep_cpu_wall_ms"] = round(ms_wall / nm / 1e6, 3)
    launches_micro = sum(per["microstep"].values())
    res["host_us_per_launch_profiled_microstep"] = (
        round(ms_wall / launches_micro / 1e3, 2) if launches_micro else None
    )
    opt_wall = sum(e - s for s, e in ranges["gs_optimizer"])
    res["optimizer_cpu_wall_ms_per_update"] = round(opt_wall / nu / 1e6, 3)

    # GEMM FLOPs (profiler formulas for aten mm family; attention FLOPs not included)
    fl_micro = sum(f for t, f, _n in gemm_ops if t in micro)
    res["gemm_tflop_per_microstep"] = round(fl_micro / nm / 1e12, 4)
    gemm_ns = time_cls["microstep"]["gemm"]
    res["gemm_tflops_achieved"] = round(fl_micro / (gemm_ns / 1e9) / 1e12, 1) if gemm_ns else None
    res["gemm_op_counts"] = dict(collections.Counter(n for _t, _f, n in gemm_ops))

    tops = sorted(by_name.items(), key=lambda kv: -kv[1][1])[:top]
    res["top_kernels"] = [
        {"name": n[:200], "class": c, "count": cnt, "total_ms": round(d / 1e6, 3),
         "ms_per_microstep": round(d / nm / 1e6, 3), "count_per_microstep": round(cnt / nm, 2)}
        for n, (cnt, d, c) in tops
    ]
    res["analysis_s"] = round(time.perf_counter() - t0, 2)
    return res


# --------------------------------------------------------------------------------------------
def main(a: argparse.Namespace) -> dict[str, Any]:
    import torch

    dev = a.device
    if dev == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device; use --device cpu")
    CUDA = dev == "cuda"

    def sync() -> None:
        if CUDA:
            torch.cuda.synchronize()

    t_imp = time.perf_counter()
    from peft import LoraConfig, PeftModel
    from transformers import AutoConfig, AutoModelForCausalLM, TrainerCallback
    from trl import SFTTrainer

    from gacost.calibration import builder, protocol

    import_s = time.perf_counter() - t_imp

    out: dict[str, Any] = {
        "schema": "gacost-h200-sweep",
        "version": 1,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "workload": {
            "name": a.name,
            "config": a.config,
            "method": a.method,
            "lora_r": a.rank,
            "lora_alpha": a.alpha,
            "lora_dropout": 0.0,
            "targets": a.targets,
            "seq_len": a.seq,
            "effective_batch": a.batch,
            "splits": [f"{m}x{k}" for m, k in a.split_list],
            "gradient_checkpointing": a.gc == "on",
            "precision": a.precision,
            "torch_compile": a.compile == "on",
            "liger": a.liger == "on",
            "prepare_model_for_kbit_training": a.prepare_kbit == "on",
            "device": dev,
        },
        "protocol": {
            "warmup_updates": a.warmup,
            "timed": (
                f"until >= {a.timed_seconds} s and >= {a.min_timed} updates,"
                f" or {a.max_timed} updates"
            ),
            "timing": (
                "on_step_end -> on_step_end with synchronize;"
                " first timed update starts at the last warm-up's end"
            ),
            "profile": (
                "CPU+CUDA torch.profiler, with_flops;"
                " 2 updates if k < 4 else 1 (unless --profile-updates)"
            ),
            "kernel_classes": [*KERNEL_CLASSES, (OTHER, "")],
            "other_subclasses": [*OTHER_SUBCLASSES, (REST, "")],
            "gemm_flop_ops": sorted(GEMM_OPS),
            "trl_settings": "SFTTrainer(peft_config=LoraConfig), adamw_torch, lr 2e-4 constant, "
            "max_grad_norm 1.0 (default), logging/saving/eval off, dataloader_num_workers 0, "
            "fixed-length random token rows (no padding)",
        },
        "environment": environment(dev),
        "timings_s": {"imports": round(import_s, 2)},
        "splits": [],
        "status": "running",
    }

    def write() -> None:
        out["timings_s"]["process"] = round(time.perf_counter() - PROCESS_START, 2)
        if a.out:
            tmp = a.out + ".tmp"
            with open(tmp, "w") as f:
                json.dump(out, f, indent=1)
            os.replace(tmp, a.out)

    write()
    dtype = torch.bfloat16

    # ---- config
    raw = json.load(open(a.config))
    cfg = {kk: v for kk, v in raw.items() if not kk.startswith("_") and v is not None}
    model_type = cfg.pop("model_type")
    cfg.pop("torch_dtype", None)
    config = AutoConfig.for_model(model_type, **cfg)
    config.use_cache = False
    out["workload"]["model_type"] = model_type
    out["workload"]["num_hidden_layers"] = config.num_hidden_layers
    out["workload"]["hidden_size"] = config.hidden_size
    out["workload"]["vocab_size"] = config.vocab_size

    # ---- model
    torch.manual_seed(42)
    t_b = time.perf_counter()
    if a.method == "lora":
        with torch.device(dev):
            model = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
                config, dtype=dtype
            )
        out["timings_s"]["model_build"] = round(time.perf_counter() - t_b, 2)
    else:
        from transformers import BitsAndBytesConfig

        ckdir = a.ckpt_dir or tempfile.mkdtemp(prefix="gs-qlora-")
        marker = os.path.join(ckdir, "GS_DONE")
        if os.path.exists(marker):
            out["timings_s"]["checkpoint_save"] = 0.0
            out["checkpoint_reused"] = True
        else:
            with torch.device(dev):
                m0 = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
                    config, dtype=dtype
                )
            out["timings_s"]["random_model_build"] = round(time.perf_counter() - t_b, 2)
            t_s = time.perf_counter()
            m0.save_pretrained(ckdir, safe_serialization=True)
            del m0
            gc.collect()
            if CUDA:
                torch.cuda.empty_cache()
            open(marker, "w").write("ok")
            out["timings_s"]["checkpoint_save"] = round(time.perf_counter() - t_s, 2)
            out["checkpoint_reused"] = False
        t_l = time.perf_counter()
        bnb = BitsAndBytesConfig(  # type: ignore[no-untyped-call]
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16,
        )
        model = AutoModelForCausalLM.from_pretrained(
            ckdir, quantization_config=bnb, dtype=dtype, device_map={"": 0 if CUDA else "cpu"}
        )
        model.config.use_cache = False
        out["timings_s"]["quantized_load"] = round(time.perf_counter() - t_l, 2)
        if a.prepare_kbit == "on":
            from peft import prepare_model_for_kbit_training

            t_p = time.perf_counter()
            model = prepare_model_for_kbit_training(  # type: ignore[no-untyped-call]
                model,
                use_gradient_checkpointing=a.gc == "on",
                gradient_checkpointing_kwargs={"use_reentrant": False},
            )
            out["timings_s"]["prepare_kbit"] = round(time.perf_counter() - t_p, 2)
        out["timings_s"]["model_build"] = round(time.perf_counter() - t_b, 2)
        if CUDA:
            out["model_memory_after_load_gib"] = round(torch.cuda.memory_allocated() / 2**30, 3)
    out["attn_implementation"] = getattr(model.config, "_attn_implementation", None)
    out["param_count_base"] = sum(p.numel() for p in model.parameters())
    out["param_dtypes"] = dict(collections.Counter(str(p.dtype) for p in model.parameters()))
    sync()
    if CUDA:
        out["model_memory_gib"] = round(torch.cuda.memory_allocated() / 2**30, 3)
    write()

    # ---- tokenizer and data
    tok = builder.placeholder_tokenizer()
    builder.align_special_tokens(model, tok)
    prof_max = a.profile_updates or 2
    max_steps = a.warmup + a.max_timed + prof_max + 2
    data = builder.synthetic_dataset(a.batch * max_steps, a.seq, config.vocab_size, seed=0)

    if a.targets == "all-linear":
        targets: str | list[str] = "all-linear"
    else:
        targets = ["q_proj", "k_proj", "v_proj", "o_proj"]

    deadline = a.deadline or float("inf")
    from torch.profiler import ProfilerActivity, profile, record_function

    # ---- callback
    class Sweep(TrainerCallback):
        def __init__(self, k: int, n_prof: int, do_profile: bool):
            self.k = k
            self.n_prof = n_prof
            self.do_profile = do_profile
            self.phase = "warmup"
            self.warm: list[float] = []
            self.timed: list[float] = []
            self.prof_times: list[float] = []
            self.last = 0.0
            self.nvml: NvmlSampler | None = None
            self.prof: Any = None
            self.rf_update: Any = None
            self.rf_opt: Any = None
            self.peak_alloc: float | None = None
            self.peak_reserved: float | None = None
            self.stopped_by_deadline = False
            self.nvml_result: dict[str, Any] | None = None
            self.train_begin: float | None = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            sync()
            self.last = self.train_begin = time.perf_counter()

        def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.prof is not None:
                self.rf_opt = record_function("gs_optimizer")
                self.rf_opt.__enter__()

        def on_optimizer_step(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.rf_opt is not None:
                self.rf_opt.__exit__(None, None, None)
                self.rf_opt = None

        def _end_timed(self, control: Any) -> None:
            if self.nvml is not None:
                self.nvml_result = self.nvml.stop()
            if CUDA:
                self.peak_alloc = torch.cuda.max_memory_allocated() / 2**30
                self.peak_reserved = torch.cuda.max_memory_reserved() / 2**30
            left = deadline - time.time()
            med = statistics.median(self.timed) if self.timed else 0.0
            if self.do_profile and left > 3 * med * self.n_prof + 15:
                self.phase = "profile"
                self.prof = profile(
                    activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if CUDA else []),
                    with_flops=True,
                )
                self.prof.start()
                self.rf_update = record_function("gs_update")
                self.rf_update.__enter__()
            else:
                self.phase = "done"
                control.should_training_stop = True

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            sync()
            now = time.perf_counter()
            dt = now - self.last
            if self.phase == "warmup":
                self.warm.append(dt)
                if len(self.warm) >= a.warmup:
                    self.phase = "timed"
                    if CUDA:
                        self.nvml = cast(NvmlSampler, sampler)  # CUDA: never None
                        self.nvml.start()
            elif self.phase == "timed":
                self.timed.append(dt)
                n, tot = len(self.timed), sum(self.timed)
                late = time.time() > deadline - 4 * max(self.timed) - 10
                if late and n >= 2:
                    self.stopped_by_deadline = n < a.min_timed
                if (
                    n >= a.max_timed
                    or (tot >= a.timed_seconds and n >= a.min_timed)
                    or (late and n >= 2)
                ):
                    self._end_timed(control)
            elif self.phase == "profile":
                self.prof_times.append(dt)
                self.rf_update.__exit__(None, None, None)
                if len(self.prof_times) >= self.n_prof:
                    self.prof.stop()
                    self.phase = "done"
                    control.should_training_stop = True
                else:
                    self.rf_update = record_function("gs_update")
                    self.rf_update.__enter__()
            sync()
            self.last = time.perf_counter()

    sampler = NvmlSampler() if CUDA else None

    def lora_modules(mod: Any) -> int:
        return sum(1 for n, _ in mod.named_modules() if n.endswith("lora_A"))

    def mark_microsteps(orig_step: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap one trainer's own ``training_step`` in ``record_function("gs_microstep")``."""

        def training_step(*args_: Any, **kw_: Any) -> Any:
            with record_function("gs_microstep"):
                return orig_step(*args_, **kw_)

        return training_step

    base = model
    prev_wall: float | None = None
    for si, (m, k) in enumerate(a.split_list):
        split = f"{m}x{k}"
        rec: dict[str, Any] = {"split": split, "micro_batch": m, "grad_accum": k}
        out["splits"].append(rec)
        est = prev_wall if prev_wall else 25.0
        if a.compile == "on" and si == 0:
            est = max(est, 150.0)
        if time.time() + est > deadline:
            rec["status"] = "skipped_deadline"
            write()
            continue
        t_split = time.perf_counter()
        n_prof = a.profile_updates or (2 if k < 4 else 1)
        cb = Sweep(k, n_prof, not a.no_profile)
        trainer: Any = None
        if CUDA:
            gc.collect()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        try:
            peft_cfg = LoraConfig(
                r=a.rank,
                lora_alpha=a.alpha,
                lora_dropout=0.0,
                bias="none",
                task_type="CAUSAL_LM",
                target_modules=targets,
            )
            with tempfile.TemporaryDirectory() as odir:
                args = protocol.sft_config(
                    odir,
                    micro_batch=m,
                    grad_accum=k,
                    steps=max_steps,
                    seq_len=a.seq,
                    precision=a.precision,
                    checkpointing=a.gc == "on",
                    seed=42,
                    use_cpu=not CUDA,
                    torch_compile=a.compile == "on",
                    liger=a.liger == "on",
                    optimizer="2026-12-02",
                )
                t_t = time.perf_counter()
                trainer = SFTTrainer(
                    model=base,
                    args=args,
                    train_dataset=data,
                    processing_class=tok,
                    peft_config=peft_cfg,
                    callbacks=[cb],
                )
                rec["trainer_build_s"] = round(time.perf_counter() - t_t, 2)
                trainer.training_step = mark_microsteps(trainer.training_step)
                pm = trainer.model
                if hasattr(pm, "get_nb_trainable_parameters"):
                    tr, tot = pm.get_nb_trainable_parameters()
                    rec["params_trainable"], rec["params_total"] = tr, tot
                    out.setdefault("param_count_trainable", tr)
                    out.setdefault("param_count_total_peft", tot)
                rec["lora_modules"] = lora_modules(pm)
                if a.simulate_oom == split:
                    raise torch.OutOfMemoryError("simulated OOM for testing")
                t_tr = time.perf_counter()
                trainer.train()
                rec["train_s"] = round(time.perf_counter() - t_tr, 2)
            rec["status"] = "ok"
        except torch.OutOfMemoryError as e:
            rec["status"] = "oom"
            rec["error"] = str(e)[:400]
            if CUDA:
                rec["peak_allocated_gib_at_oom"] = round(
                    torch.cuda.max_memory_allocated() / 2**30, 3
                )
        except Exception as e:  # noqa: BLE001
            rec["status"] = "error"
            rec["error"] = repr(e)[:1000]
            rec["traceback"] = traceback.format_exc()[-4000:]
            print(rec["traceback"], file=sys.stderr, flush=True)
        finally:
            if cb.prof is not None and cb.phase != "done":
                try:
                    cb.prof.stop()
                except Exception:  # noqa: BLE001
                    pass
            if cb.nvml is not None and cb.nvml_result is None:
                cb.nvml_result = cb.nvml.stop()
        # ---- record
        rec["warmup_update_times_s"] = [round(t, 5) for t in cb.warm]
        rec["update_times_s"] = [round(t, 5) for t in cb.timed]
        rec["profiled_update_times_s"] = [round(t, 5) for t in cb.prof_times]
        rec["n_timed"] = len(cb.timed)
        if cb.timed:
            rec["median_s"] = round(statistics.median(cb.timed), 5)
            rec["lower_quartile_s"] = round(cast(float, qtile(cb.timed, 0.25)), 5)
            rec["upper_quartile_s"] = round(cast(float, qtile(cb.timed, 0.75)), 5)
            rec["min_s"] = round(min(cb.timed), 5)
            rec["mean_s"] = round(statistics.fmean(cb.timed), 5)
            rec["tokens_per_s_median"] = round(a.batch * a.seq / rec["median_s"], 1)
        if cb.warm:
            rec["first_update_s"] = round(cb.warm[0], 3)
        rec["stopped_by_deadline"] = cb.stopped_by_deadline
        if cb.peak_alloc is not None:
            rec["peak_allocated_gib"] = round(cb.peak_alloc, 3)
            rec["peak_reserved_gib"] = round(cast(float, cb.peak_reserved), 3)
        elif CUDA and rec.get("status") == "ok":
            rec["peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 3)
            rec["peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 3)
        rec["nvml"] = cb.nvml_result
        if cb.prof is not None and cb.phase == "done" and cb.prof_times:
            try:
                p = analyse_profile(cb.prof, len(cb.prof_times), k)
                if rec.get("median_s") and p.get("kernels_per_update_total"):
                    # unprofiled wall per launched GPU op (kernels + copies), all phases of an
                    # update
                    rec["host_us_per_launch_unprofiled"] = round(
                        rec["median_s"] / p["kernels_per_update_total"] * 1e6, 2
                    )
                rec["profile"] = p
            except Exception as e:  # noqa: BLE001
                rec["profile_error"] = repr(e)[:500]
                print(traceback.format_exc(), file=sys.stderr, flush=True)
        cb.prof = None
        # ---- reset the base model for the next split
        try:
            pm = trainer.model if trainer is not None else None
            while pm is not None and hasattr(pm, "_orig_mod"):
                pm = pm._orig_mod
            if trainer is not None:
                try:
                    trainer.accelerator.free_memory()
                except Exception:  # noqa: BLE001
                    pass
                trainer.optimizer = None
                trainer.lr_scheduler = None
            del trainer
            if isinstance(pm, PeftModel):
                base = pm.unload()
            del pm
            if lora_modules(base):
                raise RuntimeError("LoRA layers left in the base model after unload")
            if hasattr(base, "disable_input_require_grads"):
                try:
                    base.disable_input_require_grads()
                except Exception:  # noqa: BLE001
                    pass
            for p_ in base.parameters():
                p_.grad = None
            if a.compile == "on":
                torch._dynamo.reset()
        except Exception as e:  # noqa: BLE001
            rec["reset_error"] = repr(e)[:500]
            out["status"] = "aborted_after_reset_error"
            write()
            raise
        gc.collect()
        if CUDA:
            torch.cuda.empty_cache()
        rec["split_wall_s"] = round(time.perf_counter() - t_split, 2)
        prev_wall = (
            rec["split_wall_s"] if a.compile != "on" else max(60.0, rec["split_wall_s"] * 0.6)
        )
        print(
            f"[{a.name}] {split}: {rec.get('status')} median {rec.get('median_s')} s"
            f" n={rec.get('n_timed')}"
            f" kernels/micro {rec.get('profile', {}).get('kernels_per_microstep')}"
            f" wall {rec['split_wall_s']} s",
            flush=True,
        )
        write()
    out["status"] = "done"
    write()
    return out


# --------------------------------------------------------------------------------------------
def summarize(paths: list[str]) -> None:
    hdr = ("split", "status", "med s", "lq s", "n", "alloc", "resv", "k/micro", "opt k", "gemm",
           "attn", "other", "deq", "copy", "busy%", "TF/s", "nvml%", "us/k")
    for path in paths:
        try:
            d = json.load(open(path))
        except Exception as e:  # noqa: BLE001
            print(f"{path}: unreadable ({e!r})")
            continue
        w = d.get("workload", {})
        t = d.get("timings_s", {})
        print(f"\n== {w.get('name')} [{d.get('status')}] "
              f"{os.path.basename(w.get('config') or '')} {w.get('method')} "
              f"r{w.get('lora_r')} {w.get('targets')} seq{w.get('seq_len')} "
              f"B{w.get('effective_batch')} "
              f"gc={w.get('gradient_checkpointing')} compile={w.get('torch_compile')} "
              f"liger={w.get('liger')} "
              f"prep={w.get('prepare_model_for_kbit_training')} | "
              f"build {t.get('model_build')} s, process {t.get('process')} s")
        rows = []
        for s in d.get("splits", []):
            p = s.get("profile") or {}
            g = p.get("gpu_ms_per_microstep") or {}
            nv = s.get("nvml") or {}

            def f(x: Any, nd: int = 3) -> str:
                return "-" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))

            busy = p.get("gpu_busy_fraction")
            rows.append((
                s.get("split"), s.get("status"), f(s.get("median_s")),
                f(s.get("lower_quartile_s")), f(s.get("n_timed")),
                f(s.get("peak_allocated_gib"), 2), f(s.get("peak_reserved_gib"), 2),
                f(p.get("kernels_per_microstep"), 0), f(p.get("kernels_optimizer_per_update"), 0),
                f(g.get("gemm"), 1), f(g.get("attention"), 1), f(g.get("other"), 1),
                f(g.get("dequant"), 1),
                f(g.get("memcpy"), 1), "-" if busy is None else f"{100 * busy:.0f}",
                f(p.get("gemm_tflops_achieved"), 0), f(nv.get("gpu_util_mean_pct"), 0),
                f(s.get("host_us_per_launch_unprofiled"), 1),
            ))
        widths = [max(len(str(x)) for x in col) for col in zip(hdr, *rows, strict=True)]
        print("  ".join(str(h).ljust(wd) for h, wd in zip(hdr, widths, strict=True)))
        for r in rows:
            print("  ".join(str(x).ljust(wd) for x, wd in zip(r, widths, strict=True)))
        for s in d.get("splits", []):
            if s.get("error"):
                print(f"  {s.get('split')}: {s.get('error')[:300]}")


if __name__ == "__main__":
    A = parse_args()
    if A.summarize:
        summarize(A.summarize)
        sys.exit(0)

    def _term(signum: int, frame: FrameType | None) -> None:  # noqa: ARG001
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _term)
    try:
        main(A)
    except SystemExit as e:
        print(f"exit {e.code}", file=sys.stderr, flush=True)
        raise
