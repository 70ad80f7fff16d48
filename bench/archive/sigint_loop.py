# ARCHIVED 2026-12-03 (issue 21), not maintained: a one-off on the 2-core VM on 2026-12-03
# (issue 18 item 4). It produced bench/results/sigint-before.json and
# bench/results/sigint-after.json; the numbers are in bench/RESULTS.md, "Ctrl-C while
# `gacost calibrate` starts".
"""Ctrl-C while ``gacost calibrate`` starts: SIGINT at random delays, counted by outcome.

    python bench/archive/sigint_loop.py [--runs 30] [--max-delay 3] [--seed 0] [--json FILE]

Each run starts ``python -m gacost calibrate --device cpu`` on the example job (bf16, so
the CPU accepts it) in a fresh process, as a user would, sends one SIGINT after a random
delay in [0, --max-delay] s (most land while torch, transformers, PEFT and TRL import) and
records the exit status and the last stderr line. The wanted outcome is exit 130 with the
one line ``error: interrupted`` and no traceback; anything else (a death by signal, an
abort from C++ ``terminate called ...``, a traceback, a process still running 60 s after
the SIGINT, which is then killed) is counted as a failure and printed.
Touches no network and writes only a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "qwen3-1.7b-lora.yaml"
STOP_WITHIN = 60.0  # seconds after the SIGINT; the imports take 8-13 s on a 2-core VM


def default_sigint() -> None:
    """SIGINT as in a terminal's foreground process: a job started in the background by a
    non-interactive shell inherits it ignored, and Python keeps it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def one_run(job: Path, out: Path, delay: float) -> dict[str, object]:
    """Start calibrate, SIGINT it after ``delay`` s; its exit status and stderr's last line."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gacost", "calibrate", "--job", str(job), "--device", "cpu",
         "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=STOP_WITHIN)
    except subprocess.TimeoutExpired:  # the interrupt was lost: it kept on calibrating
        proc.kill()
        _, err = proc.communicate()
        err += f"\n(still running {STOP_WITHIN:.0f} s after the SIGINT: killed)"
    lines = err.strip().splitlines()
    ok = (proc.returncode == 130 and "Traceback" not in err and "terminate called" not in err
          and bool(lines) and lines[-1].startswith("error: interrupted"))
    return {"delay_s": round(delay, 3), "code": proc.returncode, "ok": ok,
            "last_line": lines[-1][:200] if lines else "",
            "exit_s": round(time.perf_counter() - started - delay, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--max-delay", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.yaml"
        job.write_text(EXAMPLE.read_text().replace("precision: fp16", "precision: bf16"))
        for i in range(args.runs):
            r = one_run(job, Path(tmp) / f"p{i}.json", rng.uniform(0, args.max_delay))
            results.append(r)
            print(f"{i + 1:3d} delay {r['delay_s']:.3f} s: exit {r['code']} "
                  f"{'ok' if r['ok'] else 'FAIL'} ({r['exit_s']} s to exit) {r['last_line']}",
                  flush=True)
    good = sum(bool(r["ok"]) for r in results)
    print(f"{good} of {len(results)} exited 130 with one 'error: interrupted' line")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0 if good == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
