"""Rebuild the embedded reference profiles of the plain-TRL H200 sweep from its raw results.

    python -m gacost.advisor.build_sweep_profiles --from bench/results/h200-sweep \
        [--out data/profiles]

``DIR`` (required; the raw results of 2026-12-02 are the checkout's
``bench/results/h200-sweep``, one JSON per workload written by ``bench/h200_sweep.py``) is read
workload by workload: each becomes one ``gacost-profile``,
``OUT/H200-SXM--<workload>--h200-sweep.json``, holding every split that ran to the end (the
median of its timed updates, the lower and upper quartile as its interval, the peak reserved
memory), the workload as the sweep configured it, and the machine and software the sweep
recorded. The files are what the model is fitted to (with the other reference profiles;
:mod:`gacost.advisor.build_reference_fit` saves that fit next), and ``bench/model_v2.py``
reads the same conversion through :func:`sweep_profiles`. The default ``--out`` is the
``data/profiles`` folder of the checkout this module lives in.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gacost.base.profile import Profile, SplitResult, Workload, write_profile

H200 = "H200-SXM"
H200_MEMORY_GIB = 139.8
SWEEP_RESULTS = "bench/results/h200-sweep"  # where the raw files are kept (the provenance)
DEFAULT_OUT = Path(__file__).resolve().parents[1] / "data" / "profiles"


def _targets(targets: Any) -> str:
    """The sweep's ``--targets`` as a profile's ``target_modules``."""
    if targets == "attention":  # bench/h200_sweep.py --targets attention
        return "q_proj,k_proj,v_proj,o_proj"
    if isinstance(targets, str):
        return targets
    return ",".join(targets)


def sweep_profile(path: Path) -> tuple[Profile, dict[str, Any]]:
    """One sweep workload's raw JSON as a profile (plain TRL medians), with the raw JSON."""
    d: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    w = d["workload"]
    workload = Workload(
        model=Path(w["config"]).stem.replace("--", "/"), method=w["method"],
        lora_r=w["lora_r"], lora_alpha=w["lora_alpha"], target_modules=_targets(w["targets"]),
        sequence_length=w["seq_len"], precision=w["precision"],
        gradient_checkpointing=w["gradient_checkpointing"],
        effective_batch=w["effective_batch"], torch_compile=bool(w.get("torch_compile")),
        liger=bool(w.get("liger")),
        prepare_for_kbit=bool(w.get("prepare_model_for_kbit_training")),
    )
    splits = tuple(
        SplitResult(s["micro_batch"], s["grad_accum"], "ok",
                    seconds_per_update=s["median_s"], ci_low_s=s["lower_quartile_s"],
                    ci_high_s=s["upper_quartile_s"],
                    peak_reserved_gib=s.get("peak_reserved_gib"))
        for s in d["splits"] if s.get("status") == "ok" and s.get("median_s")
    )
    env = d.get("environment", {})
    profile = Profile(
        gpu=H200, gpu_memory_gib=H200_MEMORY_GIB, workload=workload, splits=splits,
        source=f"bench/h200_sweep.py {w['name']}",
        provenance=("plain TRL SFTTrainer + PEFT, all splits in one process, largest "
                    "micro-batch first; median of 5-15 timed updates after 2 warm-up "
                    f"updates; bench/H200-SWEEP.md, {SWEEP_RESULTS}/{path.name}"),
        software={"trl": "1.16.0", **{k: str(v) for k, v in env.items()
                                     if k in ("torch", "transformers", "peft")}},
        # the machine, as gacost calibrate records it (Profile.machine keys the host)
        host={k: str(env[e]) for k, e in (("cpu", "cpu_model"), ("cpu_count", "cpu_count"),
                                          ("driver", "driver"), ("platform", "platform"))
              if env.get(e)},
        created_at=str(d.get("created_at", "")),
    )
    return profile, d


def sweep_profiles(folder: Path) -> list[tuple[Profile, dict[str, Any]]]:
    """Every workload of the sweep in ``folder`` (``*.json``, by name), as :func:`sweep_profile`."""
    return [sweep_profile(path) for path in sorted(folder.glob("*.json"))]


def profile_name(raw: dict[str, Any]) -> str:
    """The file name of a sweep workload's reference profile."""
    return f"{H200}--{raw['workload']['name']}--h200-sweep.json"


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gacost.advisor.build_sweep_profiles",
        description=(__doc__ or "").splitlines()[0],
    )
    parser.add_argument("--from", dest="source", type=Path, required=True, metavar="DIR",
                        help=f"the sweep's raw results (the committed ones: {SWEEP_RESULTS})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="the reference profile folder (default: the checkout's data/profiles)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Write one reference profile per sweep workload; 1 when ``--from`` holds none."""
    args = _parse_args(argv)
    found = sweep_profiles(args.source)
    if not found:
        print(f"error: no sweep results (*.json) in {args.source}")
        return 1
    for profile, raw in found:
        write_profile(args.out / profile_name(raw), profile)
    print(f"wrote {len(found)} reference profiles to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
