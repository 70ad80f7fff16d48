"""The user's own fine-tune, as a plain TRL script: the reference calibrate is checked against.

One split per process, TRL's defaults for everything the job does not set (AdamW fused, a
linear schedule, a log every 10 updates, TRL's progress bar), the model built from the job's
architecture config with random weights in the job's precision and handed to
``SFTTrainer(model=..., peft_config=LoraConfig(...))`` as a user's script does (``method:
full``: no ``peft_config``; ``method: qlora``: the weights saved and read back in NF4 with
double quantisation, and ``prepare_model_for_kbit_training`` only where the job's
``qlora.prepare_for_kbit`` asks, since TRL's SFTTrainer does not call it). No gacost
code configures or runs the trainer: only the placeholder tokenizer and the synthetic rows,
built before training, are the project's (:mod:`gacost.calibration.builder`, what calibrate
and the other bench scripts train on; on the device the project is installed,
``PYTHONPATH=/tmp/site``). Every update is timed between ``on_step_end`` callbacks with a
device synchronisation; after ``--warmup`` updates the median of ``--updates`` timed ones is
the split's time. Checkpoints are TRL's (every 500 updates and one at the end, or
``--save-steps N``); each save is timed apart from the updates (``save_seconds``). Prints one
JSON line.

    python bench/user_script.py bench/jobs/qwen3-1.7b-lora-bf16.yaml --micro-batch 2 \
        --grad-accum 2 --warmup 5 --updates 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

START = time.perf_counter()

import torch  # noqa: E402
import yaml  # noqa: E402
from peft import LoraConfig, prepare_model_for_kbit_training  # noqa: E402
from transformers import AutoConfig, AutoModelForCausalLM, TrainerCallback  # noqa: E402
from trl import SFTConfig, SFTTrainer  # noqa: E402

from gacost.calibration import builder  # noqa: E402

CUDA = torch.cuda.is_available()
MODELS = Path(__file__).resolve().parent.parent / "data" / "models"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def sync() -> None:
    if CUDA:
        torch.cuda.synchronize()


class Timer(TrainerCallback):
    """Seconds per optimizer update, on_step_end to on_step_end, synchronised.

    Also where each update's host time goes, read at the Trainer's own callbacks with no
    synchronisation added: ``fetch`` (the previous update's logging, then reading the k
    micro-batches), ``train`` (the k forward/backward micro-steps and gradient clipping),
    ``optimizer`` (``optimizer.step()``), ``tail`` (scheduler, ``zero_grad`` and the wait for
    the device at this callback's synchronisation)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.ends: list[float] = []  # wall clock (Unix seconds) at each update's end
        self.phases: list[dict[str, float]] = []
        self.saves: list[float] = []
        self.last = 0.0
        self.marks: dict[str, float] = {}

    def on_train_begin(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
        sync()
        self.last = time.perf_counter()

    def on_step_begin(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
        self.marks = {"begin": time.perf_counter()}

    def on_pre_optimizer_step(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
        self.marks["pre"] = time.perf_counter()

    def on_optimizer_step(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
        self.marks["opt"] = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
        sync()
        now = time.perf_counter()
        self.times.append(now - self.last)
        self.ends.append(time.time())
        m = self.marks
        if {"begin", "pre", "opt"} <= m.keys():
            self.phases.append({"fetch": m["begin"] - self.last, "train": m["pre"] - m["begin"],
                                "optimizer": m["opt"] - m["pre"], "tail": now - m["opt"]})
        self.last = now

    def on_save(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
        """A checkpoint's seconds: the Trainer saves after an update's ``on_step_end`` and
        calls this when the checkpoint is written; the next update's time starts here."""
        now = time.perf_counter()
        self.saves.append(now - self.last)
        self.last = now


class OpTable(TrainerCallback):
    """``--op-table N``: N more updates under torch.profiler after the timed ones; the 40 ops
    and CUDA runtime calls that take the most host time and the 40 that take the most device
    time (self CPU and self device microseconds per update, calls per update), to see where
    an update's time goes. ``shapes``: ops grouped by their input shapes as well (a LoRA
    GEMM apart from its base layer's; the profiler records shapes, so 120 rows by device
    time)."""

    def __init__(self, after: int, updates: int, shapes: bool = False) -> None:
        self.after, self.updates, self.shapes = after, updates, shapes
        self.prof: Any = None
        self.rows: list[dict[str, Any]] = []

    def on_step_end(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
        from torch.profiler import ProfilerActivity, profile

        if state.global_step == self.after:
            sync()
            acts = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if CUDA else [])]
            self.prof = profile(activities=acts, record_shapes=self.shapes)
            self.prof.start()
        elif self.prof is not None and state.global_step >= self.after + self.updates:
            sync()
            self.prof.stop()
            events = list(self.prof.key_averages(group_by_input_shape=self.shapes))

            def row(e: Any) -> dict[str, Any]:
                r = {"op": e.key, "self_cpu_us": round(e.self_cpu_time_total / self.updates),
                     "device_us": round(getattr(e, "self_device_time_total", 0.0)
                                        / self.updates),
                     "calls": round(e.count / self.updates, 1)}
                if self.shapes:
                    r["shapes"] = str(e.input_shapes)
                return r

            by_cpu = sorted(events, key=lambda e: -e.self_cpu_time_total)[:40]
            by_device = sorted(events, key=lambda e: -getattr(e, "self_device_time_total",
                                                                0.0))[:120 if self.shapes else 40]
            self.rows = [row(e) for e in dict.fromkeys([*by_cpu, *by_device])]
            self.prof = None
            control.should_training_stop = True


class Traced(TrainerCallback):
    """``--trace N``: N more updates under torch.profiler after the timed ones, analysed by
    gacost's own trace (``gacost.calibration.trace``; the project installed beside TRL)."""

    def __init__(self, after: int, updates: int, grad_accum: int) -> None:
        from gacost.calibration.trace import Capture

        self.after = after
        self.capture = Capture(sync, CUDA, updates, grad_accum)

    def on_step_end(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
        if state.global_step == self.after:
            self.capture.begin(state.global_step)
        elif self.capture.step_end(state.global_step):
            control.should_training_stop = True

    def on_pre_optimizer_step(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
        self.capture.pre_optimizer()

    def on_optimizer_step(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
        self.capture.post_optimizer()


# frames that name who asked for memory: the first of these, innermost first, keys a census row
_OWNERS = ("transformers/", "peft/", "trl/", "accelerate/", "bitsandbytes/", "torch/optim/",
           "torch/utils/checkpoint", "torch/nn/functional", "torch/autograd/")


class PeakCensus(TrainerCallback):
    """``--memory-peak``: one more update after the timed ones with the caching allocator's
    history recorded (``torch.cuda.memory._record_memory_history``, Python stacks), then what
    was live at that update's highest allocated point: the bytes held from before the update
    (weights, optimizer state) and the update's own allocations still live, grouped by the
    innermost frame of transformers, PEFT, TRL, accelerate, bitsandbytes or torch's
    optimizer, checkpoint, functional or autograd code that made them."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.base = 0
        self.result: dict[str, Any] | None = None

    def on_step_end(self, args, state, control, **kw):  # type: ignore[no-untyped-def]
        if state.global_step == self.after:
            sync()
            self.base = torch.cuda.memory_allocated()
            torch.cuda.memory._record_memory_history(max_entries=2_000_000, stacks="python")
        elif state.global_step == self.after + 1:
            sync()
            snap = torch.cuda.memory._snapshot()
            torch.cuda.memory._record_memory_history(enabled=None)
            self.result = census(snap["device_traces"][0], self.base)
            control.should_training_stop = True


def _owner(frames: list[dict[str, Any]]) -> str:
    for i, f in enumerate(frames):
        name = f.get("filename", "")
        if any(o in name for o in _OWNERS):
            short = name.split("site-packages/")[-1]
            caller = next((g for g in frames[i + 1:]
                           if not any(o in g.get("filename", "") for o in ("torch/",))), None)
            where = f"{short}:{f.get('line')} {f.get('name')}"
            if caller is not None:
                where += f" <- {caller.get('filename', '').split('site-packages/')[-1]}:" \
                         f"{caller.get('line')} {caller.get('name')}"
            return where
    return "(no owner frame)"


def census(trace: list[dict[str, Any]], base: int) -> dict[str, Any]:
    """Replay the allocator's trace from ``base`` allocated bytes: the highest point and the
    live allocations there, grouped by :func:`_owner`."""
    def replay(stop: int | None) -> tuple[int, int, dict[int, dict[str, Any]]]:
        current, top, at = base, base, -1
        live: dict[int, dict[str, Any]] = {}
        for i, e in enumerate(trace):
            if stop is not None and i > stop:
                break
            if e["action"] == "alloc":
                current += e["size"]
                live[e["addr"]] = e
            elif e["action"] == "free_requested":
                current -= e["size"]
                live.pop(e["addr"], None)
            if current > top:
                top, at = current, i
        return top, at, live

    top, at, _ = replay(None)
    _, _, live = replay(at)
    groups: dict[str, list[int]] = {}
    for e in live.values():
        g = groups.setdefault(_owner(e.get("frames", [])), [0, 0])
        g[0] += e["size"]
        g[1] += 1
    rows = sorted(groups.items(), key=lambda kv: -kv[1][0])
    return {"base_gib": base / 2**30, "peak_allocated_gib": top / 2**30,
            "new_live_gib": sum(g[0] for g in groups.values()) / 2**30,
            "rows": [{"owner": k, "gib": round(v[0] / 2**30, 4), "tensors": v[1]}
                     for k, v in rows[:40]]}


def _proc_fields(path: str, keys: tuple[str, ...]) -> dict[str, int]:
    """Integer fields ``keys`` of a /proc file of ``Key: value`` lines (kB units dropped)."""
    out: dict[str, int] = {}
    try:
        for line in Path(path).read_text().splitlines():
            key, _, value = line.partition(":")
            if key in keys:
                out[key] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return out


def _steal_ticks() -> int | None:
    """The machine's CPU ticks stolen by the hypervisor so far (/proc/stat, all CPUs)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
        return int(fields[8])
    except (OSError, ValueError, IndexError):
        return None


def host_facts() -> dict[str, Any]:
    """Where this process ran and what it shared (Linux; empty elsewhere): the CPU each of its
    threads last ran on, the CPUs it may use, its context switches, its transparent huge
    pages, ASLR's setting for it and the hash seed (a diagnostic of why one process's host
    runs 10-30 % apart from another's: bench/MODEL.md, "One run is one draw")."""
    import os

    facts: dict[str, Any] = {"hash_seed": os.environ.get("PYTHONHASHSEED")}
    try:
        facts["affinity"] = sorted(os.sched_getaffinity(0))
        threads = {}
        for task in Path("/proc/self/task").iterdir():
            stat = (task / "stat").read_text()
            threads[task.name] = int(stat.rsplit(")", 1)[1].split()[36])
        facts["thread_cpus"] = threads
        facts["main_cpu"] = threads.get(str(os.getpid()))
        personality = Path("/proc/self/personality").read_text().strip()
        facts["aslr_off"] = bool(int(personality, 16) & 0x0040000)
    except (OSError, ValueError, IndexError):
        pass
    facts.update(_proc_fields("/proc/self/status", ("voluntary_ctxt_switches",
                                                    "nonvoluntary_ctxt_switches", "Threads")))
    facts.update(_proc_fields("/proc/self/smaps_rollup", ("Rss", "AnonHugePages")))
    return facts


def model_config(name: str, model_type: str | None = None, folder: Path = Path(".")
                 ) -> Any:
    """The model's architecture config from the project's model table, or a ``config.json``
    the job names (a path ending in ``.json``, relative to the job's ``folder``);
    ``model_type`` builds the same dimensions as another architecture (``--model-type``)."""
    path = (folder / name if name.endswith(".json")
            else MODELS / (name.replace("/", "--") + ".json"))
    raw = json.loads(path.read_text())
    cfg = {k: v for k, v in raw.items() if not k.startswith("_") and v is not None}
    own_type = cfg.pop("model_type")
    for key in ("torch_dtype", "dtype"):
        cfg.pop(key, None)
    config = AutoConfig.for_model(model_type or own_type, **cfg)
    config.use_cache = False
    return config


def quantized(config: Any, folder: str, dtype: torch.dtype) -> Any:
    """QLoRA's base as a user loads it: random weights saved, then read back in NF4 with
    double quantisation and ``dtype`` compute, as ``from_pretrained`` does for a Hub
    checkpoint. The full-precision copy is built and freed here, so the caching allocator
    holds none of it when training starts (the 2026-12-03 held-out run of h05 kept it:
    its peak reserved memory there is not the run's)."""
    from transformers import BitsAndBytesConfig

    with torch.device("cuda" if CUDA else "cpu"):
        full = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
            config, dtype=dtype)
    full.save_pretrained(folder, safe_serialization=True)
    del full
    if CUDA:
        torch.cuda.empty_cache()
    bnb = BitsAndBytesConfig(  # type: ignore[no-untyped-call]
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=dtype)
    return AutoModelForCausalLM.from_pretrained(folder, quantization_config=bnb, dtype=dtype,
                                                device_map={"": 0})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("job")
    p.add_argument("--micro-batch", type=int, required=True)
    p.add_argument("--grad-accum", type=int, required=True)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--updates", type=int, default=20)
    p.add_argument("--trace", type=int, default=0,
                   help="profile this many more updates after the timed ones (not timed)")
    p.add_argument("--op-table", type=int, default=0,
                   help="profile this many more updates for a table of the ops' host time")
    p.add_argument("--op-shapes", action="store_true",
                   help="the op table grouped by input shapes too (LoRA GEMMs apart)")
    p.add_argument("--memory-peak", action="store_true",
                   help="one more update with the allocator's history: what is live at its "
                        "peak, by the code that allocated it")
    p.add_argument("--save-steps", type=int, default=None,
                   help="save a checkpoint every N updates (default: TRL's, 500, and one "
                        "at the end); each save's seconds are reported (save_seconds)")
    p.add_argument("--model-type", default=None,
                   help="build the model's dimensions as this architecture (e.g. llama: "
                        "Phi-3-mini's sizes with unfused projections)")
    a = p.parse_args()
    job = yaml.safe_load(Path(a.job).read_text())
    lora = job.get("lora", {})
    precision = job.get("precision", "bf16")
    seq = int(job["sequence_length"])
    checkpointing = bool(job.get("gradient_checkpointing", True))
    method = job.get("method", "lora")
    config = model_config(job["model"], a.model_type, Path(a.job).parent)
    torch.manual_seed(42)
    weights = tempfile.TemporaryDirectory()
    model: Any
    if method == "qlora":
        model = quantized(config, weights.name, DTYPES[precision])
    else:
        with torch.device("cuda" if CUDA else "cpu"):
            model = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
                config, dtype=DTYPES[precision])
        if job.get("qlora", {}).get("prepare_for_kbit", False):
            model = prepare_model_for_kbit_training(  # type: ignore[no-untyped-call]
                model, use_gradient_checkpointing=checkpointing)
    tok = builder.placeholder_tokenizer()
    builder.align_special_tokens(model, tok)
    extra = a.trace + a.op_table + int(a.memory_peak)
    n = a.micro_batch * a.grad_accum * (a.warmup + a.updates + extra)
    data = builder.synthetic_dataset(n, seq, config.vocab_size, seed=0)
    r = int(lora.get("r", 16))
    peft_config = None if method == "full" else LoraConfig(
        r=r, lora_alpha=lora.get("alpha", 2 * r), lora_dropout=float(lora.get("dropout", 0.0)),
        target_modules=lora.get("target_modules", "all-linear"), task_type="CAUSAL_LM",
    )
    timer = Timer()
    with tempfile.TemporaryDirectory() as out:
        args = SFTConfig(
            output_dir=out,
            per_device_train_batch_size=a.micro_batch,
            gradient_accumulation_steps=a.grad_accum,
            max_steps=a.warmup + a.updates + extra,
            max_length=seq,
            gradient_checkpointing=checkpointing,
            bf16=precision == "bf16",
            fp16=precision == "fp16",
            report_to="none",
            use_cpu=not CUDA,
            **({"save_steps": a.save_steps} if a.save_steps else {}),
        )
        traced = Traced(a.warmup + a.updates, a.trace, a.grad_accum) if a.trace else None
        ops = (OpTable(a.warmup + a.updates, a.op_table, a.op_shapes)
               if a.op_table and not a.trace else None)
        peak = PeakCensus(a.warmup + a.updates) if a.memory_peak and CUDA else None
        trainer = SFTTrainer(model=model, args=args, train_dataset=data,
                             processing_class=tok, peft_config=peft_config,
                             callbacks=[timer, *([traced] if traced else []),
                                        *([ops] if ops else []), *([peak] if peak else [])])
        if traced:
            traced.capture.install(trainer)
        if CUDA:
            torch.cuda.reset_peak_memory_stats()
        steal0 = _steal_ticks()
        t0 = time.perf_counter()
        trainer.train()
        train_s = time.perf_counter() - t0
        steal1 = _steal_ticks()
    weights.cleanup()
    timed = timer.times[a.warmup : a.warmup + a.updates]
    trace = None
    if traced:
        from dataclasses import asdict

        trace = asdict(traced.capture.result(statistics.median(timed), None))
    print(json.dumps({
        "job": a.job, "split": f"{a.micro_batch}x{a.grad_accum}",
        "model_type": config.model_type,
        "micro_batch": a.micro_batch, "grad_accum": a.grad_accum,
        "warmup": a.warmup, "timed": len(timed),
        "median_s": statistics.median(timed), "mean_s": statistics.fmean(timed),
        "train_seconds": train_s, "process_seconds": time.perf_counter() - START,
        "save_seconds": [round(t, 4) for t in timer.saves],
        "peak_reserved_gib": torch.cuda.max_memory_reserved() / 2**30 if CUDA else None,
        "peak_allocated_gib": torch.cuda.max_memory_allocated() / 2**30 if CUDA else None,
        "gpu": torch.cuda.get_device_name() if CUDA else "cpu",
        "update_times": [round(t, 5) for t in timer.times],
        "update_ends_unix": [round(t, 4) for t in timer.ends],
        "trace": trace,
        "phases_median_s": {key: round(statistics.median(
            ph[key] for ph in timer.phases[a.warmup : a.warmup + a.updates]), 5)
            for key in ("fetch", "train", "optimizer", "tail")} if timer.phases else None,
        "op_table": ops.rows if ops else None,
        "memory_peak": peak.result if peak else None,
        "host": {**host_facts(), "steal_ticks_in_training": (
            steal1 - steal0 if steal0 is not None and steal1 is not None else None)},
    }))


if __name__ == "__main__":
    main()
