"""Why one host-bound run is one draw: runs 13 and 14 on a lent GPU's shared VM, analysed.

Run 13 (``bash bench/calibrate_rounds_h200.sh spread``): the sustain workload at 4x1 in six
rounds of three conditions (as a user runs it; memory layout fixed; pinned to four CPUs).
Runs 14 and 15 (``... probe``, two machine starts): six user runs of 30 timed updates
pinned to CPUs 4-7 while ``bench/host_probe.py`` times a fixed Python task on CPUs 0 and
12; each update's end and each task's end on one wall clock. Run 11's 350-update run gives
the spread of windows of a long run. bench/MODEL.md, "Why one run is one draw: the host's
CPU speed moves".

    python bench/host_speed.py

Prints the tables and writes ``bench/results/host_speed.json``.
"""

from __future__ import annotations

import bisect
import json
import math
import statistics
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import geometric_mean
from typing import Any

from heldout_sets import HELDOUT, RESULTS, RUNS

ROOT = Path(__file__).resolve().parent.parent
MACHINE_RUNS = ("run14", "run15", "run16")  # one machine start each


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def spread_by_condition() -> dict[str, Any]:
    """Run 13: each condition's processes, geometric mean, log sd and range of medians."""
    rows = lines(RUNS / "run13" / "spread.jsonl")
    out: dict[str, Any] = {}
    for condition in dict.fromkeys(r["condition"] for r in rows):
        medians = [r["median_s"] for r in rows if r["condition"] == condition]
        logs = [math.log(m) for m in medians]
        out[condition] = {
            "processes": len(medians), "geometric_mean_s": math.exp(statistics.fmean(logs)),
            "log_sd": statistics.stdev(logs), "range_s": [min(medians), max(medians)],
            "main_cpus": sorted({r["host"].get("main_cpu") for r in rows
                                 if r["condition"] == condition}),
            "steal_ticks_max": max(r["host"].get("steal_ticks_in_training") or 0 for r in rows
                                   if r["condition"] == condition),
        }
    return out


def _window_mean(ends: list[float], values: list[float], a: float, b: float) -> float | None:
    i, j = bisect.bisect_left(ends, a), bisect.bisect_right(ends, b)
    part = values[i:j]
    return statistics.fmean(part) if part else None


def probe(folder: Path, warmup: int = 3) -> dict[str, Any]:
    """A probe run (14, 15): the probe's modes, its autocorrelation, the two CPUs' shared
    part, and the training's time per update against the probes in the same windows."""
    probes = {cpu: json.loads((folder / f"probe-cpu{cpu}.json").read_text()) for cpu in (0, 12)}
    logs = {cpu: [math.log(t) for t in p["task_s"]] for cpu, p in probes.items()}
    histogram = Counter(int(t * 1000) // 2 * 2 for p in probes.values() for t in p["task_s"])
    x = logs[12]
    mean, var = statistics.fmean(x), statistics.pvariance(x)
    period = (probes[12]["ends_unix"][-1] - probes[12]["ends_unix"][0]) / len(x)
    acf = {}
    for lag in (10, 50):
        c = sum((x[i] - mean) * (x[i + lag] - mean) for i in range(len(x) - lag))
        acf[f"{lag * period:.1f} s"] = c / (len(x) - lag) / var
    t0 = probes[0]["ends_unix"][0]
    shared = {}
    for width in (2, 10, 20, 40):
        bins: dict[int, dict[int, list[float]]] = {0: {}, 12: {}}
        for cpu, p in probes.items():
            for end, value in zip(p["ends_unix"], logs[cpu], strict=True):
                bins[cpu].setdefault(int((end - t0) // width), []).append(value)
        keys = [k for k in set(bins[0]) & set(bins[12])
                if len(bins[0][k]) > 3 and len(bins[12][k]) > 3]
        shared[f"{width} s"] = statistics.correlation(
            [statistics.fmean(bins[0][k]) for k in keys],
            [statistics.fmean(bins[12][k]) for k in keys])
    users = [u for u in lines(folder / "probe-user.jsonl") if u["split"] == "4x1"]
    per_update: tuple[list[float], list[float]] = ([], [])
    processes = []
    for u in users:
        ends, times = u["update_ends_unix"], u["update_times"]
        window = []
        for i in range(warmup, len(times)):
            level = [_window_mean(probes[c]["ends_unix"], logs[c], ends[i] - times[i], ends[i])
                     for c in (0, 12)]
            if None in level:
                continue
            per_update[0].append(math.log(times[i]))
            per_update[1].append(statistics.fmean(v for v in level if v is not None))
            window.append(per_update[1][-1])
        processes.append((math.log(u["median_s"]), statistics.fmean(window)))
    t_log, p_log = zip(*processes, strict=True)
    smi = folder / "probe-gpu.csv"
    gpu_clocks = Counter(line.split(", ")[1] for line in
                         (smi.read_text().splitlines() if smi.exists() else [])
                         if line.count(", ") >= 4 and line.split(", ")[4] not in ("0 %",))
    return {
        "tasks": sum(len(p["task_s"]) for p in probes.values()),
        "task_ms_histogram": dict(sorted(histogram.items())),
        "autocorrelation": acf, "two_cpus_correlation_by_window": shared,
        "process_medians_s": [round(math.exp(v), 4) for v in t_log],
        "process_probe_ms": [round(1000 * math.exp(v), 2) for v in p_log],
        "process_correlation": statistics.correlation(t_log, p_log),
        "process_correlation_without_first": statistics.correlation(t_log[1:], p_log[1:]),
        "process_slope_without_first": statistics.linear_regression(p_log[1:],
                                                                    t_log[1:]).slope,
        "update_correlation": statistics.correlation(*per_update),
        "gpu_sm_clock_busy": dict(gpu_clocks),
    }


JOB = Path(__file__).resolve().parent / "jobs" / "qwen3-1.7b-lora-bf16-dropout.yaml"


def machine(folder: Path) -> dict[str, Any]:
    """One machine start: the probe's mean ms over the training (CPUs 0 and 12) and idle
    before and after (``probe2``), and each split's median of its processes' medians."""
    tasks = [t for cpu in (0, 12)
             for t in json.loads((folder / f"probe-cpu{cpu}.json").read_text())["task_s"]]
    idle = [t for f in sorted(folder.glob("idle-*.json"))
            for t in json.loads(f.read_text())["task_s"]]
    splits: dict[str, list[float]] = {}
    for u in lines(folder / "probe-user.jsonl"):
        splits.setdefault(u["split"], []).append(u["median_s"])
    gpu = (folder / "machine-probe.txt" if (folder / "machine-probe.txt").exists()
           else folder / "machine-probe2.txt").read_text().split(",")[0]
    return {
        "gpu": gpu, "probe_ms": 1000 * statistics.fmean(tasks),
        "idle_probe_ms": 1000 * statistics.fmean(idle) if idle else None,
        "splits": {k: {"median_s": statistics.median(v), "processes": len(v)}
                   for k, v in splits.items()},
    }


def _model_on(job: Path, gpu: str, scale: float) -> Any:
    """The shipped model, ``job``'s work, ``gpu``'s spec, an unmeasured machine's host x
    ``scale`` (a :class:`HostScale` without error)."""
    from gacost.advisor import predictor
    from gacost.advisor.model_fit import HostScale
    from gacost.base import gpu_table, models
    from gacost.base.job import load_job

    loaded = load_job(str(job))
    name, cfg = models.load_model_config(loaded.model)
    arch = models.model_arch(name, cfg)
    setup = predictor.setup_for(loaded.workload(name))
    model = predictor.reference_model().with_host(gpu, HostScale(scale, 0.0))
    return model, arch, setup, gpu_table.gpu_specs()[gpu]


def host_factor(split: str, scale: float, job: Path = JOB, gpu: str = "H100-SXM") -> float:
    """The advisor's factor for a split of ``job`` on ``gpu`` whose host is ``scale`` times
    the unmeasured machine's (``FittedModel.host_factor``)."""
    model, arch, setup, spec = _model_on(job, gpu, scale)
    m, k = (int(v) for v in split.split("x"))
    return float(model.host_factor(arch, setup, spec, m, k))


def host_scale(split: str, seconds: float, job: Path = JOB, gpu: str = "H100-SXM"
               ) -> tuple[float, float]:
    """The host scale at which the shipped model predicts ``seconds`` for ``split`` of ``job``
    on an unmeasured machine of ``gpu`` (bisection in log space), and the split's host share
    there."""
    from gacost.advisor import time_model

    m, k = (int(v) for v in split.split("x"))
    model, arch, setup, spec = _model_on(job, gpu, 1.0)
    costs = time_model.work_costs(arch, setup, model.terms)
    rates = time_model.gpu_rates(spec, costs.compute_precision, model.terms)
    assert rates is not None, gpu
    plain = model.params(gpu)
    lo, hi = 0.02, 50.0
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        params = replace(plain, host_s_per_launch=plain.host_s_per_launch * mid)
        if time_model.update_seconds(costs, rates, params, m, k) < seconds:
            lo = mid
        else:
            hi = mid
    scaled = replace(plain, host_s_per_launch=plain.host_s_per_launch * lo)
    return lo, time_model.host_share(costs, rates, scaled, m)


def transfers(machines: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each split of each machine carried to every other machine of the same GPU: as
    measured, times the probe ratio, and times the advisor's host factor for that ratio;
    the log errors against what the other machine measured (the advisor's factor for the
    raw ratio, and for the ratio to the shipped exponent, ``PROBE_HOST_EXPONENT``)."""
    from gacost.advisor.estimate import probe_host_factor

    rows = []
    for a, ma in machines.items():
        for b, mb in machines.items():
            if a == b or ma["gpu"] != mb["gpu"]:
                continue
            for split in set(ma["splits"]) & set(mb["splits"]):
                ta, tb = ma["splits"][split]["median_s"], mb["splits"][split]["median_s"]
                ratio = mb["probe_ms"] / ma["probe_ms"]
                rows.append({
                    "from": a, "to": b, "split": split, "measured_s": tb,
                    "as_is": math.log(ta / tb), "proportional": math.log(ta * ratio / tb),
                    "model": math.log(ta * host_factor(split, ratio) / tb),
                    "model_exponent": math.log(
                        ta * host_factor(split, probe_host_factor(ratio)) / tb),
                })
    rms = {way: math.sqrt(statistics.fmean(r[way] ** 2 for r in rows)) if rows else None
           for way in ("as_is", "proportional", "model", "model_exponent")}
    return {"pairs": rows, "rms_log_error": rms}


# machine starts whose calibration of JOB recorded a host probe (gacost calibrate), beside
# MACHINE_RUNS: start name, profile (bench/calibrate_rounds_h200.sh e2e)
CALIBRATED_STARTS = {"e2e": RESULTS / "calibrate-vs-user" / "run17" / "e2e-profile.json"}
# machine starts of held-out user runs, each after a host probe (calibrate_vs_user.py
# --probe-before): start name, folder (bench/heldout_sets.py; bench/heldout_h200.sh L and M,
# one H200 start; N and O, P and Q, R-T2, U-W2, X and Y, AB, one start each on a lent H100)
HELDOUT_STARTS = {s.probed_start: s.folder for s in HELDOUT if s.probed_start}
# machine starts of user runs with idle probes between and after them (`gacost probe`, 10 s,
# nothing else running): start name, (folder of the runs' JSON lines, folder of the probes'
# outputs); each run takes the geometric mean of the start's idle probes (run 21, the fp16
# twins: bench/calibrate_rounds_h200.sh fp16twins1|fp16twins2, one H100 start)
IDLE_PROBED_STARTS = {"run21": (RUNS / "run21" / "fp16", RUNS / "run21")}
HOST_BOUND = 0.8  # a split's host share at its fitted scale, to tell the host's speed


def probed_starts(machines: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every machine start with probes and host-bound runs: MACHINE_RUNS (JOB's splits, the
    probe beside the training), CALIBRATED_STARTS (JOB's splits, the probe calibrate recorded
    before them), HELDOUT_STARTS (each held-out run with the probe just before it) and
    IDLE_PROBED_STARTS (the start's idle probes). Each run: (job, split, seconds, probe ms)."""
    from gacost.base.profile import TIMED, read_profile

    starts = {run: {"gpu": _gpu(m["gpu"]),
                    "runs": [(JOB, k, v["median_s"], m["probe_ms"])
                             for k, v in m["splits"].items()]}
              for run, m in machines.items()}
    for name, path in CALIBRATED_STARTS.items():
        if path.exists():
            prof = read_profile(path)
            probe_ms = prof.host_probe_ms
            after = path.with_name("e2e-probe-profile.txt")
            if prof.host_probes() is None and after.exists() and probe_ms is not None:
                # run 17 predates calibrate's probe after the splits: `gacost probe
                # --profile`, run right after it, is that probe; the mean of the two, as
                # calibrate records it now
                ms = probe_output_ms(after)
                probe_ms = prof.with_host_probes(probe_ms, ms).host_probe_ms
            starts[name] = {"gpu": prof.gpu, "runs": [
                (JOB, str(x.split), x.seconds_per_update, probe_ms)
                for x in prof.splits if x.status in TIMED and x.seconds_per_update]}
    for name, folder in HELDOUT_STARTS.items():
        runs = [(ROOT / w["job"], u["split"], u["median_s"], u["probe_before_ms"], u["gpu"])
                for path in sorted(folder.glob("heldout-*.json"))
                for w in json.loads(path.read_text()).get("workloads", [])
                for u in w["user"] if u.get("median_s") and u.get("probe_before_ms")]
        if runs:
            starts[name] = {"gpu": _gpu(runs[0][4]), "runs": [r[:4] for r in runs]}
    for name, (folder, probes) in IDLE_PROBED_STARTS.items():
        idle = idle_probe_ms(probes)
        user = [u for path in sorted(folder.glob("*-twins-*.jsonl")) for u in lines(path)]
        if idle and user:
            starts[name] = {"gpu": _gpu(user[0]["gpu"]), "runs": [
                (ROOT / u["job"], u["split"], u["median_s"], idle) for u in user]}
    return starts


def reference_probe(starts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The probe of a host at the model's ``host_base`` (advisor/estimate.py
    ``REFERENCE_PROBE_MS``): per start, its probe over the host scale at which the shipped
    model matches each host-bound split on an unmeasured machine of its GPU; the geometric
    mean over starts (each start the geometric mean of its host-bound splits), its log sd,
    and each start's value left out."""
    from gacost.advisor import predictor

    per_start: dict[str, Any] = {}
    for name, st in starts.items():
        rows = []
        for job, split, seconds, probe_ms in st["runs"]:
            scale, share = host_scale(split, seconds, job=job, gpu=st["gpu"])
            rows.append({"job": Path(job).stem, "split": split, "seconds": seconds,
                         "probe_ms": probe_ms, "host_scale": scale, "host_share": share,
                         "reference_ms": probe_ms / scale})
        used = [r for r in rows if r["host_share"] >= HOST_BOUND]
        per_start[name] = {"gpu": st["gpu"], "runs": rows,
                           "probe_ms": geometric_mean([r["probe_ms"] for r in rows]),
                           "host_bound_runs": len(used),
                           "reference_ms": (geometric_mean([r["reference_ms"] for r in used])
                                            if used else None)}
        if used:  # the probe of the host-bound runs alone, beside their reference
            per_start[name]["host_bound_probe_ms"] = geometric_mean(
                [r["probe_ms"] for r in used])
    values = {k: v["reference_ms"] for k, v in per_start.items() if v["reference_ms"]}
    logs = [math.log(v) for v in values.values()]
    left_out = {k: geometric_mean([v for j, v in values.items() if j != k]) for k in values}
    return {"starts": per_start, "reference_ms": geometric_mean(list(values.values())),
            # the host the scales are relative to: a machine nobody measured, host_base x this
            "unmeasured_host": predictor.reference_model().time.unmeasured_host,
            "log_sd": statistics.stdev(logs) if len(logs) > 1 else None,
            "left_out_reference_ms": left_out,
            "left_out_log_error": {k: math.log(values[k] / left_out[k]) for k in values},
            "exponent": probe_exponent({k: (per_start[k]["host_bound_probe_ms"], v)
                                        for k, v in values.items()})}


@dataclass(frozen=True)
class ProbeLine:
    """``log scale = b * log probe + a``: a host's scale from its probe, ``(probe / P0) ** b``."""

    b: float
    a: float

    @property
    def p0_ms(self) -> float:
        return math.exp(-self.a / self.b)

    def log_scale(self, log_probe: float) -> float:
        return self.b * log_probe + self.a


def fit_probe_line(points: list[tuple[float, float]]) -> ProbeLine:
    """Least squares of log scale on log probe over ``points`` (log probe, log scale)."""
    b, a = statistics.linear_regression([x for x, _ in points], [y for _, y in points])
    return ProbeLine(b, a)


def probe_exponent(starts: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """How a start's host scale follows its probe: ``scale = (probe / P0) ** b``, least
    squares in logs over ``starts`` (name: the probe of its host-bound runs, its reference;
    each start one point, its host scale the probe over its reference). ``b`` below 1 is what
    a probe that reads its host with noise calls for (the best linear predictor shrinks a
    noisy ratio toward 1), whatever part of it is the host's own elasticity. Each start
    predicted from the others' fit (``left_out_fits``: the held-out sets' probes use them),
    against ``b = 1`` with ``P0`` the others' geometric mean reference: rms log error of its
    host scale."""
    points = {k: (math.log(p), math.log(p / ref)) for k, (p, ref) in starts.items()}
    line = fit_probe_line(list(points.values()))
    log_probes = [x for x, _ in points.values()]
    residuals = [y - line.log_scale(x) for x, y in points.values()]
    residual_sd = math.sqrt(sum(r * r for r in residuals) / (len(points) - 2))
    spread = math.sqrt(sum((x - statistics.fmean(log_probes)) ** 2 for x in log_probes))
    left_out = {n: fit_probe_line([v for o, v in points.items() if o != n]) for n in points}
    fitted_errors = {n: y - left_out[n].log_scale(x) for n, (x, y) in points.items()}
    unit_errors = {}
    for n, (x, y) in points.items():
        log_p0 = statistics.fmean(px - py for o, (px, py) in points.items() if o != n)
        unit_errors[n] = y - (x - log_p0)

    def rms(errors: dict[str, float]) -> float:
        return math.sqrt(statistics.fmean(e * e for e in errors.values()))

    return {"b": line.b, "b_se": residual_sd / spread, "p0_ms": line.p0_ms,
            "residual_log_sd": residual_sd,
            "left_out_rms": {"fitted": rms(fitted_errors), "b=1": rms(unit_errors)},
            "left_out_log_error": fitted_errors,
            "left_out_fits": {n: {"b": f.b, "p0_ms": f.p0_ms} for n, f in left_out.items()}}


def _gpu(device_name: str) -> str:
    """The GPU table's name of a torch or nvidia-smi device name."""
    from gacost.base.gpu_names import canonical_gpu

    name = canonical_gpu(device_name)
    assert name is not None, device_name
    return name


def probe_output_ms(path: Path) -> float:
    """The ms per task of a saved ``gacost probe`` output ("host probe: 38.4 ms per task ...")."""
    return float(path.read_text().split()[2])


def idle_probe_ms(folder: Path) -> float | None:
    """A start's idle probes (the saved ``gacost probe`` outputs ``probe-*.txt`` in
    ``folder``), geometric mean; None without any."""
    idle = [probe_output_ms(p) for p in sorted(folder.glob("probe-*.txt"))]
    return geometric_mean(idle) if idle else None


def long_run_windows() -> dict[str, Any]:
    """Run 11's 350-update run: log sd of window means against independent updates."""
    run = lines(RUNS / "run11" / "sustain-long.jsonl")[0]
    x = [math.log(t) for t in run["update_times"][3:]]
    sd = statistics.stdev(x)
    out = {}
    for width in (10, 25, 50):
        means = [statistics.fmean(x[i:i + width]) for i in range(0, len(x) - width + 1, width)]
        out[str(width)] = {"log_sd": statistics.stdev(means),
                           "if_independent": sd / math.sqrt(width)}
    return out


def main() -> None:
    spread, windows = spread_by_condition(), long_run_windows()
    probes = {run: probe(RUNS / run) for run in ("run14", "run15")}
    print("Run 13: the same split, one process each, six rounds of three conditions")
    print(f"{'condition':10s} {'runs':>4s} {'geo mean':>9s} {'log sd':>7s}  range        "
          "main thread's CPUs")
    for name, c in spread.items():
        lo, hi = c["range_s"]
        print(f"{name:10s} {c['processes']:4d} {c['geometric_mean_s']:8.3f}s "
              f"{c['log_sd']:7.3f}  {lo:.3f}-{hi:.3f}  {c['main_cpus']}")
    print()
    for run, probed in probes.items():
        print(f"Run {run[3:]}: a fixed Python task timed {probed['tasks']} times on CPUs 0 "
              "and 12")
        modes = probed["task_ms_histogram"]
        print("  task ms (2-ms bins, count): " + " ".join(f"{k}:{v}" for k, v in modes.items()
                                                          if v >= 100))
        print("  autocorrelation: " + ", ".join(f"{k} {v:.2f}" for k, v in
                                               probed["autocorrelation"].items()))
        print("  the two CPUs' window means correlate: " + ", ".join(
            f"{k} {v:.2f}" for k, v in probed["two_cpus_correlation_by_window"].items()))
        print(f"  training medians {probed['process_medians_s']} s against the probes' "
              f"{probed['process_probe_ms']} ms:")
        print(f"  correlation {probed['process_correlation']:.2f} "
              f"({probed['process_correlation_without_first']:.2f} without the first, slope "
              f"{probed['process_slope_without_first']:.2f}); update by update "
              f"{probed['update_correlation']:.2f}")
        print(f"  GPU SM clock while busy: {probed['gpu_sm_clock_busy']}")
        print()
    print("Run 11's 350-update run: windows of consecutive updates")
    for width, w in windows.items():
        print(f"  {width:>3s} updates: log sd {w['log_sd']:.3f} "
              f"(independent updates: {w['if_independent']:.3f})")
    machines = {run: machine(RUNS / run) for run in MACHINE_RUNS}
    carried = transfers(machines)
    print()
    print("Machine starts: the probe (mean ms per task) and the same job's splits")
    print(f"{'run':6s} {'GPU':22s} {'probe ms':>8s} {'idle ms':>8s}  splits (median s, processes)")
    for run, mc in machines.items():
        idle = "" if mc["idle_probe_ms"] is None else f"{mc['idle_probe_ms']:.1f}"
        parts = ", ".join(f"{k} {v['median_s']:.3f} ({v['processes']})"
                          for k, v in sorted(mc["splits"].items()))
        print(f"{run:6s} {mc['gpu']:22s} {mc['probe_ms']:8.1f} {idle:>8s}  {parts}")
    print()
    print("A split carried from one start to another (log error against the measured):")
    print(f"{'from':6s} {'to':6s} {'split':5s} {'measured':>8s} {'as is':>7s} {'x probe':>8s} "
          f"{'x model':>8s} {'x model^b':>9s}")
    for r in carried["pairs"]:
        print(f"{r['from']:6s} {r['to']:6s} {r['split']:5s} {r['measured_s']:8.3f} "
              f"{r['as_is']:+7.3f} {r['proportional']:+8.3f} {r['model']:+8.3f} "
              f"{r['model_exponent']:+9.3f}")
    rms = carried["rms_log_error"]
    print(f"rms log error: as is {rms['as_is']:.3f}, x probe ratio {rms['proportional']:.3f}, "
          f"x the advisor's host factor {rms['model']:.3f}, with the ratio to the shipped "
          f"exponent {rms['model_exponent']:.3f}")
    reference = reference_probe(probed_starts(machines))
    print()
    print("The probe of a host at the model's host_base: each start's probe over the host "
          "scale that matches its host-bound splits (an unmeasured machine of its GPU)")
    print(f"{'start':10s} {'GPU':9s} {'probe ms':>8s} {'runs':>4s} {'host-bound':>10s} "
          f"{'reference ms':>12s}  (each run: probe over the host scale that matches it)")
    for name, st in reference["starts"].items():
        ref = "" if st["reference_ms"] is None else f"{st['reference_ms']:.1f}"
        print(f"{name:10s} {st['gpu']:9s} {st['probe_ms']:8.1f} {len(st['runs']):4d} "
              f"{st['host_bound_runs']:10d} {ref:>12s}")
    print(f"geometric mean {reference['reference_ms']:.1f} ms, log sd {reference['log_sd']:.3f}"
          "; each start against the others': " + ", ".join(
              f"{k} {v:+.3f}" for k, v in reference["left_out_log_error"].items()))
    fit = reference["exponent"]
    print(f"the host scale as (probe / P0) ** b, least squares over the starts: b "
          f"{fit['b']:.2f} +- {fit['b_se']:.2f}, P0 {fit['p0_ms']:.1f} ms, residual log sd "
          f"{fit['residual_log_sd']:.3f}; each start predicted from the others: rms log error "
          f"{fit['left_out_rms']['fitted']:.3f} (b = 1: {fit['left_out_rms']['b=1']:.3f})")
    from gacost.advisor.estimate import (
        PROBE_HOST_EXPONENT,
        PROBE_LOG_SD,
        REFERENCE_PROBE_LOG_SD,
        REFERENCE_PROBE_MS,
    )

    quadrature = math.hypot(PROBE_LOG_SD, fit["residual_log_sd"])
    print(f"shipped (advisor/estimate.py): REFERENCE_PROBE_MS {REFERENCE_PROBE_MS:g}, "
          f"PROBE_HOST_EXPONENT {PROBE_HOST_EXPONENT:g}, REFERENCE_PROBE_LOG_SD "
          f"{REFERENCE_PROBE_LOG_SD:g} (the carry error {PROBE_LOG_SD:g} and the fit's "
          f"residual log sd in quadrature: {quadrature:.3f})")
    out = RESULTS / "host_speed.json"
    out.write_text(json.dumps({"spread": spread, "probes": probes, "long_run_windows": windows,
                               "machines": machines, "transfers": carried,
                               "reference_probe": reference}, indent=1) + "\n")
    print(f"wrote {out.relative_to(RESULTS.parent.parent)}")


if __name__ == "__main__":
    main()
