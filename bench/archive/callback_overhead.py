# ARCHIVED 2026-12-03 (issue 21), not maintained: a one-off on the 2-core CPU VM on 2026-12-02
# (issue 11). It produced bench/results/callback-overhead-cpu.json; the numbers are in
# bench/RESULTS.md, "`GacostCallback` overhead". The `--device cuda` run it offers was not made.
# It no longer runs as it is: it calls `apply_lora` of the calibration builder, which is gone.
"""What ``GacostCallback`` costs a training run, on the CPU with a tiny model.

Two measurements:

1. End to end: the same TRL ``SFTTrainer`` run (tiny llama of ``tests/fixtures/calib``,
   LoRA, fixed-length sequences) without the callback, with it at its defaults
   (``every_n_updates=20``), with a write due after every update (held to the default
   write budget), and with a write after every update and no budget (the worst case). The
   arms run in a rotating order in every repeat so that drift of the machine hits them
   alike; each is compared with the run without the callback of the same repeat. The
   figure is the wall-clock of ``trainer.train()`` per update.
2. The callback's own parts, timed directly: ``on_step_end`` (one append, no device sync on
   the CPU), the forward pre-hook per micro-batch, and one profile write with a given number
   of update times (JSON plus fsync'ed atomic replace).

Prints a table and writes ``callback-overhead-cpu.json`` (``--device cuda``:
``callback-overhead-<GPU>.json``) into ``--out``.

    python bench/archive/callback_overhead.py --repeats 16 --updates 40 --out bench/results
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from tabulate import tabulate

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "tests" / "fixtures" / "calib" / "tiny-job.yaml"
# arm -> GacostCallback options (None: no callback)
ARMS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "callback, defaults (every 20)": {"every_n_updates": 20},
    "callback, every 1": {"every_n_updates": 1},
    "callback, every 1, no write budget": {"every_n_updates": 1, "write_budget": 1.0},
}


DEVICE = "cpu"  # --device


def build() -> tuple[Any, Any, Any, str]:
    """The tiny job's model with LoRA, the placeholder tokenizer, the job, the model name."""
    import torch

    from gacost.base import models
    from gacost.base.job import load_job
    from gacost.calibration import builder

    job = load_job(JOB)
    name, cfg = models.load_model_config(job.model)
    model = builder.apply_lora(builder.build_model(cfg, job, torch.device(DEVICE)), job)
    tok = builder.placeholder_tokenizer()
    builder.align_special_tokens(model, tok)
    return model, tok, job, name


def one_run(model: Any, tok: Any, updates: int, m: int, k: int, callbacks: list[Any]) -> float:
    """Seconds per update of ``trainer.train()`` for ``updates`` updates at m x k."""
    from transformers.trainer_callback import PrinterCallback
    from trl import SFTConfig, SFTTrainer

    from gacost.calibration import builder

    data = builder.synthetic_dataset(m * k * updates, 32, 256, seed=0)
    with tempfile.TemporaryDirectory() as out:
        args = SFTConfig(
            output_dir=out, per_device_train_batch_size=m, gradient_accumulation_steps=k,
            max_steps=updates, max_length=32, pad_to_multiple_of=32, packing=False,
            activation_checkpointing=True,
            activation_checkpointing_kwargs={"use_reentrant": False}, bf16=False,
            logging_strategy="no", save_strategy="no", report_to="none", disable_tqdm=True,
            use_cpu=DEVICE == "cpu", seed=0, data_seed=0,
        )
        trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tok,
                             callbacks=callbacks)
        trainer.remove_callback(PrinterCallback)
        start = time.perf_counter()
        trainer.train()
        return (time.perf_counter() - start) / updates


def end_to_end(repeats: int, updates: int, m: int, k: int, folder: Path) -> dict[str, Any]:
    """Seconds per update of each arm; the arms run in a rotating order in every repeat, and
    each arm is compared with the run without the callback of the same repeat."""
    from gacost.calibration.callback import GacostCallback

    model, tok, _, name = build()
    one_run(model, tok, 5, m, k, [])  # warm the process (first-run allocations, imports)
    arms = list(ARMS)
    per: dict[str, list[float]] = {arm: [] for arm in arms}
    for r in range(repeats):
        for arm in arms[r % len(arms):] + arms[: r % len(arms)]:
            options = ARMS[arm]
            cbs = []
            if options is not None:
                path = folder / f"run-{arms.index(arm)}-{r}.json"
                cbs = [GacostCallback(path, model_name=name, **options)]
            per[arm].append(one_run(model, tok, updates, m, k, cbs))
    rows = {}
    for arm, xs in per.items():
        ratios = [100 * (x / b - 1) for x, b in zip(xs, per["none"], strict=True)]
        rows[arm] = {
            "seconds_per_update": xs,
            "median_s": statistics.median(xs),
            "min_s": min(xs),
            "paired_pct": ratios,
            "paired_median_pct": statistics.median(ratios),
            "min_vs_min_pct": 100 * (min(xs) / min(per["none"]) - 1),
        }
    return rows


def parts(sizes: list[int], folder: Path) -> dict[str, Any]:
    """Microseconds per call of the callback's own work, timed directly."""
    import torch

    from gacost.calibration.callback import GacostCallback

    model, tok, job, name = build()
    cb = GacostCallback(folder / "parts.json", every_n_updates=0, model_name=name)

    class Args:
        device = torch.device(DEVICE)
        per_device_train_batch_size, gradient_accumulation_steps, world_size = 2, 2, 1
        bf16 = fp16 = torch_compile = use_liger_kernel = False
        activation_checkpointing, max_length = True, 32

    class State:
        is_world_process_zero = True

    cb.on_train_begin(Args(), State(), None, model=model)
    ids = torch.zeros((2, 32), dtype=torch.long, device=DEVICE)
    model.train()  # the hook looks at training forwards only
    n = 200_000
    start = time.perf_counter()
    for _ in range(n):
        cb.on_step_end(Args, State, None)
    step_us = (time.perf_counter() - start) / n * 1e6
    hook = cb._on_forward
    start = time.perf_counter()
    for _ in range(n):
        hook(model, (), {"input_ids": ids})
    hook_us = (time.perf_counter() - start) / n * 1e6
    writes = {}
    for size in sizes:
        cb.times = [0.1 + 1e-6 * i for i in range(size)]
        reps = max(5, 20_000 // size)
        start = time.perf_counter()
        for _ in range(reps):
            cb._write()
        writes[str(size)] = {
            "ms": (time.perf_counter() - start) / reps * 1e3,
            "bytes": (folder / "parts.json").stat().st_size,
        }
    cb.on_train_end(Args, State, None)
    return {"on_step_end_us": step_us, "forward_hook_us": hook_us, "write": writes}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--updates", type=int, default=60)
    p.add_argument("--split", default="2x2", help="m x k of the runs (default 2x2)")
    p.add_argument("--file-updates", default="100,1000,10000",
                   help="update times in the profile for the write timings")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (1: steady on a shared box; more threads than free "
                        "cores make each update vary several-fold)")
    p.add_argument("--device", default="cpu", help="cpu, or cuda to time the device sync too")
    p.add_argument("--date", default=time.strftime("%Y-%m-%d"), help="recorded in the JSON")
    a = p.parse_args()
    m, k = (int(x) for x in a.split.split("x"))
    global DEVICE
    DEVICE = a.device
    import torch
    import transformers

    torch.set_num_threads(a.threads)
    transformers.logging.set_verbosity_error()
    import datasets

    datasets.disable_progress_bars()
    with tempfile.TemporaryDirectory() as tmp:
        rows = end_to_end(a.repeats, a.updates, m, k, Path(tmp))
        own = parts([int(x) for x in a.file_updates.split(",")], Path(tmp))
    table = [
        [arm, f"{r['median_s'] * 1e3:.1f}", f"{r['min_s'] * 1e3:.1f}",
         f"{r['paired_median_pct']:+.1f}%",
         f"{min(r['paired_pct']):+.1f}% .. {max(r['paired_pct']):+.1f}%",
         f"{r['min_vs_min_pct']:+.1f}%"]
        for arm, r in rows.items()
    ]
    print(f"tiny llama LoRA, split {a.split}, seq 32, fp32, {a.threads} thread(s), "
          f"{a.updates} updates per run, "
          f"{a.repeats} repeats (arms in rotating order)")
    print(tabulate(table, headers=["arm", "median ms/update", "min ms/update",
                                   "paired median vs none", "paired range", "min vs min"]))
    print(f"\non_step_end: {own['on_step_end_us']:.2f} us per update (no device sync on the CPU); "
          f"forward hook: {own['forward_hook_us']:.2f} us per micro-batch")
    for size, w in own["write"].items():
        print(f"one write with {size} update times ({w['bytes'] / 1024:.0f} KiB): "
              f"{w['ms']:.2f} ms")
    from gacost.calibration.env import describe

    env = describe(torch.device(DEVICE))
    host = env.host
    result = {
        "what": "GacostCallback overhead, CPU, tiny llama (tests/fixtures/calib/tiny-llama.json)",
        "split": a.split, "sequence_length": 32, "precision": "fp32", "threads": a.threads,
        "date": a.date, "updates_per_run": a.updates, "repeats": a.repeats,
        "end_to_end": rows, "parts": own,
        "device": DEVICE, "gpu": env.gpu,
        "machine": {"cpu": host["cpu"], "cpu_count": host["cpu_count"],
                    "python": platform.python_version(), "torch": torch.__version__,
                    "transformers": metadata.version("transformers"),
                    "trl": metadata.version("trl"), "peft": metadata.version("peft")},
    }
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / f"callback-overhead-{'cpu' if DEVICE == 'cpu' else env.gpu}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {path}")


if __name__ == "__main__":
    main()
