"""The model against the user's own runs on the H200: workloads no reference profile holds.

Each user-script run (one split in its own process, TRL defaults; ``bench/user_script.py``) is
a held-out measurement. Two sets: ``bench/results/calibrate-vs-user/`` (2026-12-03, the
calibrate comparison's user runs) and ``bench/results/heldout-2026-12-03/`` (issue 19's
held-out benchmark: seven workloads, every split in its own process in one session,
``bench/heldout_h200.sh``). For each run: the prediction with its 90 % band from the shipped
model alone, and, where the set holds a same-session ``gacost calibrate`` profile of one
*other* workload (``other-workload-profile.json``), the prediction with that profile passed
as ``--profile`` (it informs the H200's host and device terms). Prints a table and the
summary per set and per group (host-bound / mixed / GPU-bound by the model's host share;
method; checkpointing), and the GPU-bound runs' signed error by GPU, method and where the
adapters sit (``gpu_bound_by_adapters``); writes ``bench/results/heldout_user_runs.json``.

    python bench/heldout_user_runs.py

Targets (issue 19): median |error| <= 8 %, worst <= 20 %, 90 % bands hold >= 85 % of the
held-out runs; with the other workload's profile: median <= 6 %. A session's targets take each
split's first process (``*-repeats.json`` holds the later processes of the same splits); the
splits run in several processes are compared with their geometric mean too, and
``noise_floor`` says what the targets would read for a model that predicted every split's
expected run exactly, given the spread between processes measured here: pooled over every
repeated split, and within one session (the ninth's planned repeats). ``position_in_call``
asks whether a device call's early processes run faster than its later ones.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from heldout_sets import FIRST_DAY, HELDOUT

from gacost.advisor import kernel_counts, predictor
from gacost.advisor.estimate import (
    PROBE_HOST_EXPONENT,
    REFERENCE_PROBE_MS,
    HostProbe,
    estimate_job,
)
from gacost.advisor.memory_model import CUDA_CONTEXT_GIB
from gacost.advisor.time_model import DEFAULT_PARAMS, TimeModelParams
from gacost.base import gpu_table
from gacost.base.gpu_names import canonical_gpu
from gacost.base.job import Job, load_job
from gacost.base.profile import Profile, read_profile
from gacost.base.split import Split

ROOT = Path(__file__).resolve().parent.parent
# every folder of held-out user runs, the day each was measured on (a split's runs in one day
# are repeats of one measurement), and the sessions of new workloads in which every split ran
# in its own process (the held-out targets): bench/heldout_sets.py
SETS = tuple(s.folder for s in HELDOUT)
DAY = {s.name: s.day for s in HELDOUT}
SESSIONS = tuple(s.name for s in HELDOUT if s.session)
# the session whose host-bound splits ran in three processes whatever their error
WITHIN_SESSION = "heldout-2026-12-05"
OUT = ROOT / "bench" / "results" / "heldout_user_runs.json"
GPU = "H200-SXM"


def host_group(job: Job, m: int, terms: TimeModelParams = DEFAULT_PARAMS,
               gpu: str = GPU) -> str:
    """host-bound / mixed / GPU-bound: the reference model's host share of a micro-step."""
    arch = predictor.arch_for(job.model)
    assert arch is not None
    setup = predictor.setup_for(job.workload(arch.name))
    share = predictor.reference_model(terms).host_share(arch, setup,
                                                        gpu_table.gpu_specs()[gpu], m)
    return "host-bound" if share > 0.8 else "GPU-bound" if share < 0.2 else "mixed"


# the MLP's linears (Phi-3 fuses gate and up into gate_up_proj, which stands for both)
MLP_LINEARS = frozenset({"gate_proj", "up_proj", "down_proj"})


def adapters(job: Job) -> str:
    """Where the job trains: "full" (every weight), "MLP" (LoRA adapters on MLP linears too:
    few frozen GEMMs) or "attention" (adapters on attention only: the MLP's GEMMs frozen)."""
    if job.method == "full":
        return "full"
    arch = predictor.arch_for(job.model)
    assert arch is not None
    wrapped = kernel_counts.wrapped_modules(arch, predictor.setup_for(job.workload(arch.name)))
    return "MLP" if any(MLP_LINEARS & set(parts) for _, parts in wrapped) else "attention"


def by_adapters(rows: list[dict[str, Any]], host: str = "GPU-bound") -> dict[str, Any]:
    """Signed median error of ``host`` runs by GPU, method and adapter placement."""
    groups: dict[str, list[float]] = {}
    for r in rows:
        if r["host"] == host:
            name = f"{r['gpu']} {r['method']}" + (f" {r['adapters']}" if r["adapters"] != "full"
                                                   else "")
            groups.setdefault(name, []).append(r["error"])
    return {k: {"runs": len(v), "signed_median": round(statistics.median(v), 4),
                "errors": sorted(v)} for k, v in sorted(groups.items())}


def predictions(job: Job, profiles: Sequence[Profile],
                terms: TimeModelParams = DEFAULT_PARAMS,
                probe: HostProbe | None = None) -> dict[tuple[int, int], Any]:
    return {(e.micro_batch, e.grad_accum): e
            for e in estimate_job(job, [], profiles, terms, host_probe=probe).estimates}


def predict_before(out: Path, specs: Sequence[str], gpu: str = GPU) -> None:
    """``--predict OUT JOB.yaml:MxK,...``: the shipped model's predictions for the splits,
    written before they run (a machine nobody measured; no profile), so a session's errors
    are those of a model that never saw its workloads."""
    from gacost.advisor.predictor import MODEL_VERSION

    rows: dict[str, Any] = {}
    for spec in specs:
        path, _, splits = spec.rpartition(":")
        job = load_job(Path(path)).model_copy(update={"gpus": [gpu]})
        alone = predictions(job, [])
        for split in splits.split(","):
            m, k = Split.parse(split)
            e = alone[(m, k)]
            rows[f"{Path(path).stem}:{split}"] = {
                "predicted_s": round(e.seconds_per_update or 0.0, 4),
                "band": [round(e.seconds_low or 0.0, 4), round(e.seconds_high or 0.0, 4)],
                "peak_gib": round(e.peak_gib or 0.0, 3),
                "host": host_group(job, m, gpu=gpu)}
    out.write_text(json.dumps({
        "model_version": MODEL_VERSION, "gpu": gpu,
        "note": "predicted by bench/heldout_user_runs.py --predict before the runs (a machine "
                "nobody measured)", "predictions": rows}, indent=1) + "\n")
    print(f"{len(rows)} predictions written to {out}")


def _workloads(path: Path) -> list[dict[str, Any]]:
    """The workloads of a bench result: a JSON file's ``workloads`` (calibrate_vs_user.py), or
    a JSON-lines file of single user runs (``bench/user_script.py`` lines, grouped by job)."""
    if path.suffix == ".json":  # (a file of predictions made before a run holds none)
        return list(json.loads(path.read_text()).get("workloads", []))
    runs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    jobs = dict.fromkeys(r["job"] for r in runs)
    return [{"job": job, "user": [r for r in runs if r["job"] == job]} for job in jobs]


def rows_of(folder: Path, terms: TimeModelParams = DEFAULT_PARAMS,
            kept_only: bool = False) -> list[dict[str, Any]]:
    """Every user run in ``folder`` with the model's prediction (time model: ``terms``, the
    shipped ones or a bench's variant); ``kept_only``: the other workload's profile with its
    fully timed splits alone (its splits dropped early left out)."""
    other = folder / "other-workload-profile.json"
    profiles = [read_profile(other)] if other.exists() else []
    if kept_only:
        profiles = [replace(p, splits=tuple(s for s in p.splits if s.status == "ok"))
                    for p in profiles]
    rows = []
    cache: dict[tuple[str, str], tuple[dict[tuple[int, int], Any], ...]] = {}
    for path in sorted([*folder.glob("*.json"), *folder.glob("*.jsonl")]):
        if path == other:
            continue
        for w in _workloads(path):
            loaded = load_job(ROOT / w["job"])
            arch = predictor.arch_for(loaded.model)
            assert arch is not None
            for u in w["user"]:
                # a run built as another architecture (user_script.py --model-type) is not
                # the job's model
                if not u.get("median_s") or u.get("model_type", arch.model_type) != arch.model_type:
                    continue
                # the run's torch device name (every run before 2026-12-06 an H200)
                gpu = canonical_gpu(u.get("gpu") or GPU) or GPU
                job = loaded.model_copy(update={"gpus": [gpu]})
                if (w["job"], gpu) not in cache:
                    cache[w["job"], gpu] = (predictions(job, [], terms), predictions(
                        job, profiles, terms) if profiles else {})
                alone, informed = cache[w["job"], gpu]
                split = (u["micro_batch"], u["grad_accum"])
                e = alone[split]
                lo, hi = e.seconds_low or 0.0, e.seconds_high or 0.0
                row = {
                    "set": folder.name, "run": path.stem, "job": Path(w["job"]).stem,
                    "gpu": gpu,
                    # a later process of a split the set ran before (a session's targets
                    # take the first; the repeats go into the geometric mean)
                    "repeat": path.stem.endswith("-repeats"),
                    "split": u["split"], "measured_s": round(u["median_s"], 4),
                    "predicted_s": round(e.seconds_per_update or 0.0, 4),
                    "band": [round(lo, 4), round(hi, 4)], "time": e.time_source,
                    "error": round((e.seconds_per_update or 0.0) / u["median_s"] - 1, 4),
                    "covered": lo <= u["median_s"] <= hi,
                    "host": host_group(job, split[0], terms, gpu), "method": job.method,
                    "adapters": adapters(job), "checkpointing": job.gradient_checkpointing,
                    # the QLoRA runs of 2026-12-03 kept the full-precision copy reserved
                    # (bench/user_script.py's quantized(), fixed since): not their peak
                    "measured_peak_gib": (None if job.method == "qlora"
                                          and folder.name == "heldout-2026-12-03"
                                          else u.get("peak_reserved_gib")),
                    # the estimate's peak holds the CUDA context, which the measured peak
                    # (torch.cuda.max_memory_reserved) does not: compare like with like
                    "predicted_peak_gib": (round(e.peak_gib - CUDA_CONTEXT_GIB, 3)
                                           if e.peak_gib else None),
                }
                if u.get("probe_before_ms"):
                    # the probe the user took on this instance just before the run: the
                    # host of a machine nobody measured from it (against the reference
                    # probe of the other machine starts: this one left out), and with the
                    # other workload's (probed) profile, that machine carried by it
                    ms = u["probe_before_ms"]
                    row["probe_before_ms"] = round(ms, 2)
                    for key, plain in (("with_probe", False), ("with_plain_probe", True)):
                        held_out = held_out_probe_ms(folder.name, ms, plain=plain)
                        _probed(row, key, u["median_s"],
                                predictions(job, [], terms, HostProbe(held_out, gpu))[split])
                    if (pm := profiles[0].host_probe_ms if profiles else None) and \
                            profiles[0].gpu == gpu:
                        carried = held_out_probe_ms(folder.name, ms, against=pm)
                        _probed(row, "with_profile_probe", u["median_s"],
                                predictions(job, profiles, terms, HostProbe(carried))[split])
                if split in informed:
                    f = informed[split]
                    row["with_profile_s"] = round(f.seconds_per_update or 0.0, 4)
                    row["with_profile_error"] = round(
                        (f.seconds_per_update or 0.0) / u["median_s"] - 1, 4)
                rows.append(row)
    return rows


# the machine start of each probed set in bench/host_speed.py's reference probe
PROBED_STARTS = {s.name: s.probed_start for s in HELDOUT if s.probed_start}


@functools.cache
def _left_out_fit(folder: str, plain: bool = False) -> tuple[float, float] | None:
    """The probe line (exponent, reference ms) of every probed machine start but the set's
    own (bench/results/host_speed.json, ``reference_probe``): the fitted line
    (``exponent.left_out_fits``), or with ``plain`` the probe's plain ratio (exponent 1, the
    others' geometric mean reference); None for a set with no probed start."""
    if folder not in PROBED_STARTS:
        return None
    saved = json.loads((ROOT / "bench" / "results" / "host_speed.json").read_text())
    start = PROBED_STARTS[folder]
    if plain:
        return 1.0, float(saved["reference_probe"]["left_out_reference_ms"][start])
    fit = saved["reference_probe"]["exponent"]["left_out_fits"][start]
    return float(fit["b"]), float(fit["p0_ms"])


def held_out_probe_ms(folder: str, ms: float, against: float | None = None,
                      plain: bool = False) -> float:
    """The probe that gives the shipped advisor, for a run of ``folder`` probed at ``ms``,
    the host the line fitted without the set's own start gives (its runs held out of
    ``PROBE_HOST_EXPONENT`` and ``REFERENCE_PROBE_MS``; ``plain``: the plain ratio's line,
    the comparison): against the reference probe for a machine nobody measured, or against a
    profile's probe ``against`` when carrying it."""
    fit = _left_out_fit(folder, plain)
    if fit is None:
        return ms
    b, p0 = fit
    base, there = (REFERENCE_PROBE_MS, p0) if against is None else (against, against)
    return float(base * (ms / there) ** (b / PROBE_HOST_EXPONENT))


def _probed(row: dict[str, Any], key: str, measured: float, e: Any) -> None:
    """``row``'s ``key``_s, ``key``_error and ``key``_covered from the estimate ``e``."""
    row[f"{key}_s"] = round(e.seconds_per_update or 0.0, 4)
    row[f"{key}_error"] = round((e.seconds_per_update or 0.0) / measured - 1, 4)
    row[f"{key}_covered"] = (e.seconds_low or 0.0) <= measured <= (e.seconds_high or 0.0)


def summary(rows: list[dict[str, Any]], key: str = "error") -> dict[str, Any]:
    errs = [abs(r[key]) for r in rows if key in r]
    if not errs:
        return {}
    covered = key.replace("error", "covered") if key.endswith("probe_error") else "covered"
    return {"runs": len(errs), "median_abs_error": round(statistics.median(errs), 4),
            "max_abs_error": round(max(errs), 4),
            "covered_90": sum(r[covered] for r in rows if key in r)}


def repeated_splits(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The splits run in two or more processes in one day: the spread between those processes
    (pooled log sd by host group: what a single run of the user's own varies by) and the
    model against their geometric mean (what it predicts: the expected run, not one draw)."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        key = (DAY.get(r["set"], FIRST_DAY), r["job"], r["split"])
        groups.setdefault(key, []).append(r)
    repeated = {k: v for k, v in groups.items() if len(v) > 1}
    spread: dict[str, list[float]] = {}
    errors, out = [], []
    for (day, job, split), runs in sorted(repeated.items()):
        logs = [math.log(r["measured_s"]) for r in runs]
        mean = statistics.fmean(logs)
        ss_df = spread.setdefault(runs[0]["host"], [0.0, 0.0])
        ss_df[0] += sum((x - mean) ** 2 for x in logs)
        ss_df[1] += len(logs) - 1
        error = runs[0]["predicted_s"] / math.exp(mean) - 1
        errors.append(abs(error))
        out.append({"day": day, "job": job, "split": split, "runs": len(runs),
                    "host": runs[0]["host"], "geomean_s": round(math.exp(mean), 4),
                    "spread": round(max(logs) - min(logs), 4),
                    "predicted_s": runs[0]["predicted_s"], "error": round(error, 4)})
    return {"splits": out,
            "process_log_sd": {h: {"sd": round(math.sqrt(ss / df), 4), "df": int(df)}
                               for h, (ss, df) in sorted(spread.items())},
            "median_abs_error": round(statistics.median(errors), 4) if errors else None,
            "max_abs_error": round(max(errors), 4) if errors else None}


def noise_floor(first: list[dict[str, Any]], process_log_sd: dict[str, dict[str, float]],
                draws: int = 20000, seed: int = 19) -> dict[str, Any]:
    """What each held-out session's targets would read for a model that predicted every
    split's expected run (its geometric mean over processes) exactly: each split's error one
    draw of the spread between processes of its host group (``process_log_sd``: pooled from
    the splits run in several processes in one day, or one session's), over ``draws``
    simulated sessions of that session's splits. A floor: a model cannot know a day's host
    either."""
    import random

    rng = random.Random(seed)
    out: dict[str, Any] = {}
    for name in SESSIONS:
        sds = [process_log_sd[r["host"]]["sd"] for r in first
               if r["set"] == name and r["host"] in process_log_sd]
        if not sds:
            continue
        medians, worsts = [], []
        for _ in range(draws):
            errors = [abs(math.exp(rng.gauss(0.0, sd)) - 1.0) for sd in sds]
            medians.append(statistics.median(errors))
            worsts.append(max(errors))
        out[name] = {"splits": len(sds),
                     "median_of_median": round(statistics.median(medians), 4),
                     "p_median_le_8": round(sum(v <= 0.08 for v in medians) / draws, 3),
                     "median_of_worst": round(statistics.median(worsts), 4),
                     "p_worst_le_20": round(sum(v <= 0.20 for v in worsts) / draws, 3)}
    return out


def position_in_call(rows: list[dict[str, Any]], least: int = 4) -> dict[str, Any]:
    """Do a call's early processes run faster? Within each result file of ``least`` or more
    runs (one device call's processes, in the order they ran), each host-bound or mixed run's
    log(measured / predicted) less the file's mean (which takes out the day's host and the
    workloads' mix), against its place in the call (0 first, 1 last): the least-squares slope
    with its standard error, and the mean of each third."""
    points: list[tuple[float, float]] = []
    calls: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        calls.setdefault((r["set"], r["run"]), []).append(r)
    for runs in calls.values():
        if len(runs) < least:
            continue
        placed = [(i / (len(runs) - 1), math.log(r["measured_s"] / r["predicted_s"]))
                  for i, r in enumerate(runs) if r["host"] != "GPU-bound"]
        if len(placed) < 3:
            continue
        mean = statistics.fmean(e for _, e in placed)
        points += [(x, e - mean) for x, e in placed]
    xs = [x for x, _ in points]
    mx = statistics.fmean(xs)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * e for x, e in points) / sxx
    resid = [e - slope * (x - mx) for x, e in points]
    se = math.sqrt(sum(v * v for v in resid) / (len(points) - 2) / sxx)
    thirds = [[e for x, e in points if lo <= x < hi] for lo, hi in
              ((0.0, 1 / 3), (1 / 3, 2 / 3), (2 / 3, 1.01))]
    return {"processes": len(points), "slope_log_per_call": round(slope, 4),
            "slope_se": round(se, 4),
            "thirds_mean_log": [round(statistics.fmean(t), 4) for t in thirds]}


def kept_only_comparison() -> None:
    """``--kept-only``: each session's median and worst error with the other workload's
    profile as calibrate wrote it, and with its fully timed split alone (a split dropped after
    a few updates samples a shorter stretch of the host); prints one line per session."""
    for folder in SETS:
        if not (folder / "other-workload-profile.json").exists():
            continue
        line = []
        for kept in (False, True):
            part = [r for r in rows_of(folder, kept_only=kept) if r["time"] == "predicted"
                    and not r["repeat"]]
            s = summary(part, "with_profile_error")
            line.append(f"{s['median_abs_error']:5.1%} worst {s['max_abs_error']:5.1%}")
        print(f"{folder.name:22s} every split: {line[0]}   kept split alone: {line[1]}")


def term_scan(name: str, values: Sequence[float]) -> None:
    """``--scan TERM V ...`` (``--overlap P ...`` is ``--scan overlap P ...``): the model
    refitted with each value of one fixed term of :class:`TimeModelParams` (the reference
    profiles' fit moves with it), against every held-out user run; prints one line per value
    (nothing written)."""
    if name not in TimeModelParams.__dataclass_fields__:
        raise SystemExit(f"--scan: no time-model term {name!r}; one of "
                         + ", ".join(TimeModelParams.__dataclass_fields__))
    for value in values:
        terms = replace(DEFAULT_PARAMS, **{name: value})  # type: ignore[arg-type]
        held = [r for folder in SETS if folder.exists() for r in rows_of(folder, terms)
                if r["time"] == "predicted"]
        session = [r for r in held if r["set"] in SESSIONS and not r["repeat"]]
        parts = [("all", held, "error"), ("held-out sessions", session, "error"),
                 ("+ other profile", session, "with_profile_error"),
                 ("LoRA", [r for r in held if r["method"] == "lora"], "error"),
                 ("QLoRA", [r for r in held if r["method"] == "qlora"], "error"),
                 ("full", [r for r in held if r["method"] == "full"], "error")]
        print(f"{name} {value:g}: " + "; ".join(
            f"{label} median {s['median_abs_error']:.1%} worst {s['max_abs_error']:.1%} "
            f"bias {statistics.median(r[key] for r in part if key in r):+.1%}"
            for label, part, key in parts if (s := summary(part, key))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scan", nargs="+", metavar=("TERM", "VALUE"),
                        help="scan one time-model term (a TimeModelParams field) instead: the "
                             "model refitted at each value (no file written)")
    parser.add_argument("--overlap", type=float, nargs="+", metavar="P",
                        help="the same as --scan overlap P ...")
    parser.add_argument("--gpu", default=GPU,
                        help=f"the GPU --predict predicts for (default {GPU})")
    parser.add_argument("--predict", nargs="+", metavar=("OUT", "JOB:SPLITS"),
                        help="write the predictions of JOB.yaml:MxK,... to OUT before they run")
    parser.add_argument("--kept-only", action="store_true",
                        help="compare each session's other-workload profile with its fully "
                             "timed split alone (no file written)")
    args = parser.parse_args()
    if args.kept_only:
        kept_only_comparison()
        return
    if args.predict:
        predict_before(Path(args.predict[0]).resolve(), args.predict[1:], args.gpu)
        return
    if args.scan or args.overlap:
        name, *values = args.scan or ["overlap", *map(str, args.overlap)]
        term_scan(name, [float(v) for v in values])
        return
    rows = [r for folder in SETS if folder.exists() for r in rows_of(folder)]
    held = [r for r in rows if r["time"] == "predicted"]
    first = [r for r in held if not r["repeat"]]
    for r in held:
        extra = (f" | with the other profile {r['with_profile_s']:.3f} "
                 f"{r['with_profile_error']:+.1%}" if "with_profile_s" in r else "")
        if "with_probe_s" in r:
            extra += (f" | probe {r['probe_before_ms']:.1f} ms: {r['with_probe_s']:.3f} "
                      f"{r['with_probe_error']:+.1%}")
        print(f"{r['job']:34s} {r['split']:>5s} {r['host']:10s} measured {r['measured_s']:.3f} "
              f"predicted {r['predicted_s']:.3f} ({r['band'][0]:.3f}-{r['band'][1]:.3f}) "
              f"{r['error']:+.1%} {'in band' if r['covered'] else 'OUTSIDE'}{extra}")
    report: dict[str, Any] = {"all": summary(held), "sets": {}, "groups": {}, "rows": rows}
    for name in sorted({r["set"] for r in first}):
        part = [r for r in first if r["set"] == name]
        report["sets"][name] = {
            "model": summary(part), "with_other_profile": summary(part, "with_profile_error"),
            # a host probe taken just before each run (from 2026-12-06): alone (a machine
            # nobody measured), and carrying the other workload's probed profile
            "with_probe": summary(part, "with_probe_error"),
            # the probe's plain ratio (exponent 1) in its place, likewise held out: the
            # comparison that decides PROBE_HOST_EXPONENT (bench/MODEL.md)
            "with_plain_probe": summary(part, "with_plain_probe_error"),
            "with_other_profile_and_probe": summary(part, "with_profile_probe_error")}
    for field in ("host", "method", "checkpointing"):
        for value in sorted({str(r[field]) for r in held}):
            part = [r for r in held if str(r[field]) == value]
            report["groups"][f"{field}={value}"] = summary(part)
    # every run with a probe before it, each set held out of its own start's probe line
    probed = [r for r in held if "with_probe_error" in r]
    report["probed_runs"] = {key: summary(probed, key) for key in (
        "error", "with_probe_error", "with_plain_probe_error")}
    print()
    for name, s in [("all", report["all"]),
                    *((f"probed runs ({key.removesuffix('_error').replace('_', ' ')})", v)
                      for key, v in report["probed_runs"].items()),
                    *((f"set {k} (model)", v["model"]) for k, v in report["sets"].items()),
                    *((f"set {k} (+ other workload's profile)", v["with_other_profile"])
                      for k, v in report["sets"].items()),
                    *((f"set {k} (+ the probe before each run)", v["with_probe"])
                      for k, v in report["sets"].items()),
                    *((f"set {k} (+ the probe, its plain ratio)", v["with_plain_probe"])
                      for k, v in report["sets"].items()),
                    *((f"set {k} (+ the other profile and the probe)",
                       v["with_other_profile_and_probe"]) for k, v in report["sets"].items()),
                    *((f"group {k}", v) for k, v in report["groups"].items())]:
        if s:
            print(f"{name:58s} {s['runs']:3d} runs: median |error| {s['median_abs_error']:.1%}, "
                  f"worst {s['max_abs_error']:.1%}, in the 90% band {s['covered_90']}/{s['runs']}")
    # GPU-bound runs by how much of their GPU time is frozen or full GEMMs (bench/MODEL.md,
    # "Held-out session 11")
    report["gpu_bound_by_adapters"] = adapt = by_adapters(held)
    print("\nGPU-bound runs by GPU, method and adapters (signed median error):")
    for name, g in adapt.items():
        print(f"  {name:32s} {g['runs']:3d} runs: {g['signed_median']:+.1%}")
    report["repeated_splits"] = rep = repeated_splits(held)
    # the ninth session ran each host-bound split in three processes whatever its error (the
    # earlier repeats were partly chosen for their errors, and span hours): its spread is the
    # within-session one, the pooled one an upper side
    within = repeated_splits([r for r in held if r["set"] == WITHIN_SESSION])["process_log_sd"]
    report["within_session_log_sd"] = within
    report["noise_floor"] = {
        "pooled": noise_floor(first, rep["process_log_sd"]),
        "within_session": noise_floor(first, {**rep["process_log_sd"], **within})}
    for label, floor in report["noise_floor"].items():
        print(f"\na model that predicted each split's expected run exactly, against one process "
              f"per split ({label.replace('_', ' ')} spread between processes):")
        for name, f in floor.items():
            print(f"  {name:24s} {f['splits']:2d} splits: median |error| "
                  f"{f['median_of_median']:.1%} (<= 8 % in {f['p_median_le_8']:.0%} of sessions),"
                  f" worst {f['median_of_worst']:.1%} (<= 20 % in {f['p_worst_le_20']:.0%})")
    print("within-session spread (" + WITHIN_SESSION + "): " + ", ".join(
        f"{h} {v['sd']:.3f} ({v['df']} df)" for h, v in within.items()))
    print(f"\nsplits run in several processes in one day ({len(rep['splits'])}): the model "
          f"against their geometric mean, median |error| {rep['median_abs_error']:.1%}, worst "
          f"{rep['max_abs_error']:.1%}; the spread between processes (pooled log sd): "
          + ", ".join(f"{h} {v['sd']:.3f} ({v['df']} df)"
                      for h, v in rep["process_log_sd"].items()))
    report["position_in_call"] = pos = position_in_call(held)
    print(f"place in the call ({pos['processes']} host-bound or mixed processes, each against "
          f"its call's mean): slope {pos['slope_log_per_call']:+.3f} +- {pos['slope_se']:.3f} "
          f"log per call, thirds " + " / ".join(f"{v:+.3f}" for v in pos["thirds_mean_log"]))
    peaks = [r["predicted_peak_gib"] / r["measured_peak_gib"] - 1 for r in held
             if r.get("measured_peak_gib") and r.get("predicted_peak_gib")]
    if peaks:
        report["memory"] = {"runs": len(peaks),
                            "median_abs_error": round(statistics.median(map(abs, peaks)), 4),
                            "most_low": round(min(peaks), 4), "most_high": round(max(peaks), 4)}
        print(f"{'peak reserved memory':58s} {len(peaks):3d} runs: median |error| "
              f"{report['memory']['median_abs_error']:.1%}, most low {min(peaks):+.1%}, "
              f"most high {max(peaks):+.1%}")
    OUT.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
