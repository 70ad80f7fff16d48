"""Budget arithmetic against hand-computed figures, infeasibility advice, and the CLI."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys
from itertools import product
from pathlib import Path

import pytest

from gacost.advisor.budget import (
    GroupRun,
    OfferPlan,
    best_by_pricing,
    collect,
    fewest_instances,
    lpt_loads,
    makespan,
    parse_hours,
    plan_budget,
    units_affordable,
)
from gacost.base.errors import InfeasibleError
from gacost.base.job import load_job, parse_job
from gacost.base.records import Offer
from gacost.cli import main

ROOT = Path(__file__).resolve().parent.parent
JOBS = Path(__file__).parent / "fixtures" / "jobs"
MIXED = JOBS / "valid" / "sweep-mixed.yaml"
T4_4X1 = 2.3792  # published T4 profile, Qwen3-1.7B LoRA fp16 B=4, split 4x1 (its fastest)
U = 1000 * T4_4X1 / 3600  # hours of one 1000-update run on a T4: 0.66089 h
OFFERS = [
    Offer("test", "r1", "t4-box", "T4", 1, 16, 4, 16, 0.526, 0.2, "test", "2026-01-01"),
    Offer("cheap", "r2", "t4-cheap", "T4", 1, 16, 4, 16, 0.45, None, "test", "2026-01-01"),
]
HEADER = ("provider,region,instance_type,gpu,gpu_count,gpu_memory_gib,vcpus,ram_gib,"
          "price_hour,spot_hour,source,fetched_at")


def _plan(hours: list[tuple[int, float]], rate: float, allowance: float = 0.0,
          provider: str = "p") -> OfferPlan:
    groups = tuple(GroupRun(f"g{i}", n, 100, 512, 4, 4, 1, 1.0, "measured", h)
                   for i, (n, h) in enumerate(hours))
    pricing = "spot" if allowance else "on-demand"
    return OfferPlan("T4", provider, "r", "box", pricing, rate, allowance, groups)


# --- pure arithmetic ------------------------------------------------------------------------


def test_lpt_by_hand() -> None:
    # 3,3 -> A,B; 2 -> A (5); 2 -> B (5); 2 -> A (7). The optimum is 6 (3+3 | 2+2+2):
    # LPT is a heuristic (within 4/3 of optimal), and that is what is documented.
    assert lpt_loads([2, 3, 2, 3, 2], 2) == [7, 5]
    assert makespan([2, 3, 2, 3, 2], 2) == 7
    assert makespan([2, 3, 2, 3, 2], 3) == 5  # 3 | 3 | 2, then 2 -> C (4), 2 -> A (5)
    assert makespan([2, 3, 2, 3, 2], 5) == 3
    assert makespan([2, 3, 2, 3, 2], 9) == 3  # idle instances change nothing
    assert makespan([], 4) == 0


def test_lpt_stays_within_the_textbook_bounds() -> None:
    durations = [0.5, 1.25, 3.0, 2.2, 0.7, 0.7, 1.9, 2.6, 0.1]
    for p in range(1, 12):
        loads = lpt_loads(durations, p)
        assert sum(loads) == pytest.approx(sum(durations)) and len(loads) == p
        lower = max(max(durations), sum(durations) / p)  # no packing beats this
        assert lower - 1e-12 <= makespan(durations, p) <= sum(durations) / p + max(durations)


def test_fewest_instances() -> None:
    d = [3.0, 3.0, 2.0, 2.0, 2.0]
    assert fewest_instances(d, 7.0, 8) == 2
    assert fewest_instances(d, 6.9, 8) == 3  # LPT: 5 on three instances
    assert fewest_instances(d, 4.0, 8) == 4  # 3 | 3 | 2+2 | 2
    assert fewest_instances(d, 3.0, 8) == 5
    assert fewest_instances(d, 3.0, 4) is None  # needs 5
    assert fewest_instances(d, 2.9, 99) is None  # one run is longer than the deadline


def test_totals_spot_allowance_and_deadline_oracle() -> None:
    on_demand = _plan([(2, 3.0), (3, 2.0)], rate=0.5)
    spot = _plan([(2, 3.0), (3, 2.0)], rate=0.2, allowance=0.2, provider="s")
    assert on_demand.gpu_hours == 12.0 and on_demand.cost == 6.0
    assert spot.run_hours() == pytest.approx([3.6, 3.6, 2.4, 2.4, 2.4])
    assert spot.gpu_hours == pytest.approx(14.4) and spot.cost == pytest.approx(2.88)

    none = plan_budget([on_demand, spot], parallel=2)
    assert none.best.plan is spot  # cheapest first
    assert [r.wall_hours for r in none.rows] == pytest.approx([8.4, 7.0])  # LPT on 2

    # Deadline 8 h: on-demand meets it on 2 (makespan 7), spot (8.4 on 2) needs 3:
    # 3.6 | 3.6 | 2.4+2.4 ... loads 3.6+2.4, 3.6, 2.4+2.4 = 6.0.
    dl = plan_budget([on_demand, spot], deadline_hours=8.0, max_instances=8)
    by = {r.plan.provider: r for r in dl.rows}
    assert (by["p"].instances, by["p"].deadline_wall_hours) == (2, 7.0)
    assert by["s"].instances == 3 and by["s"].deadline_wall_hours == pytest.approx(6.0)
    assert dl.best.plan is spot and dl.best.meets_deadline  # cheaper, and meets it on 3
    on_demand_row = best_by_pricing(dl, "on-demand")
    assert on_demand_row is not None and on_demand_row.plan is on_demand

    # With a $2.50 budget the spot plan ($2.88) no longer qualifies, nor does on-demand.
    with pytest.raises(InfeasibleError, match=r"raise --budget to at least 2\.88"):
        plan_budget([on_demand, spot], deadline_hours=8.0, budget_usd=2.5)


def test_budget_buys_runs_or_sweeps() -> None:
    single = _plan([(10, 2.0)], rate=0.5)  # $1.00 per run
    spot = _plan([(10, 2.0)], rate=0.3, allowance=0.25, provider="s")  # 2.5 h x 0.3 = $0.75
    bp = plan_budget([single, spot], budget_usd=7.5)
    assert bp.unit == "run"
    assert [(r.plan.provider, r.units_bought) for r in bp.rows] == [("s", 10), ("p", 7)]
    assert bp.rows[0].within_budget and not bp.rows[1].within_budget  # 10 runs cost $10
    sweep = _plan([(2, 1.0), (1, 4.0)], rate=1.0)  # $6 per complete sweep
    bs = plan_budget([sweep], budget_usd=20)
    assert (bs.unit, bs.best.unit_cost, bs.best.units_bought) == ("sweep", 6.0, 3)
    assert units_affordable(0.3, 0.1) == 3  # not 2 from 0.3 / 0.1 = 2.9999999999999996


def test_budget_too_small_says_what_it_takes() -> None:
    with pytest.raises(InfeasibleError) as info:
        plan_budget([_plan([(2, 1.0), (1, 4.0)], rate=1.0)], budget_usd=5)
    assert "buys no complete sweep" in str(info.value)
    assert "raise --budget to at least 6.00" in str(info.value)


def test_deadline_advice_later_deadline_or_more_instances() -> None:
    p = _plan([(6, 1.0)], rate=1.0)  # six one-hour runs
    with pytest.raises(InfeasibleError) as info:
        plan_budget([p], deadline_hours=1.5, max_instances=4)
    text = str(info.value)
    assert "needs 2.00 h on 4" in text and "--deadline 2h or later" in text
    assert "--max-instances 6" in text
    with pytest.raises(InfeasibleError) as info:
        plan_budget([p], deadline_hours=0.5, max_instances=4)
    assert "a single run takes at least 1.00 h, so more instances cannot help" in str(
        info.value)


@pytest.mark.parametrize(("text", "hours"), [
    ("12h", 12.0), ("90m", 1.5), ("1.5d", 36.0), ("3", 3.0), ("5400s", 1.5), (" 2H ", 2.0),
])
def test_parse_hours(text: str, hours: float) -> None:
    assert parse_hours(text) == pytest.approx(hours)


@pytest.mark.parametrize("text", ["", "h", "12x", "-1h", "0", "nan", "inf"])
def test_parse_hours_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_hours(text)


# --- end to end over recommend() with exact, measured T4 times --------------------------------


def test_mixed_sweep_against_hand_computed_hours() -> None:
    found = collect(load_job(MIXED), OFFERS, spot=True, spot_allowance=0.2)
    assert [(g.name, g.runs, g.updates) for g in found.groups] == [
        ("lr-seed", 4, 1000), ("long", 2, 3000), ("epochs", 1, 1000)]
    plans = {(p.provider, p.pricing): p for p in found.plans}
    assert set(plans) == {("test", "on-demand"), ("test", "spot"), ("cheap", "on-demand")}
    for p in plans.values():
        assert [(g.split, g.time_source, g.seconds_per_update) for g in p.groups] == [
            ("4x1", "measured", T4_4X1)] * 3
    # 4 x 1000 + 2 x 3000 + 1 x 1000 = 11000 updates = 11 U hours
    assert plans["cheap", "on-demand"].gpu_hours == pytest.approx(11 * U)
    assert plans["cheap", "on-demand"].cost == pytest.approx(11 * U * 0.45)
    assert plans["test", "on-demand"].cost == pytest.approx(11 * U * 0.526)
    assert plans["test", "spot"].gpu_hours == pytest.approx(11 * U * 1.2)
    assert plans["test", "spot"].cost == pytest.approx(11 * U * 1.2 * 0.2)
    assert sorted(plans["test", "spot"].run_hours()) == pytest.approx(
        sorted([1.2 * U] * 5 + [3.6 * U] * 2))

    # 3 h = 4.54 U. On-demand runs [3,3,1,1,1,1,1] U: 2 instances -> 6 U (3.97 h), too late;
    # 3 -> 3+1 | 3+1 | 1+1+1 = 4 U (2.64 h). Spot (x1.2): 3 -> 4.8 U (3.17 h), too late;
    # 4 -> 3.6 | 3.6 | 1.2+1.2+1.2 | 1.2+1.2 = 3.6 U. Spot is the cheapest: 4 instances.
    dl = plan_budget(found.plans, deadline_hours=3.0)
    rows = {(r.plan.provider, r.plan.pricing): r for r in dl.rows}
    assert rows["cheap", "on-demand"].instances == 3
    assert rows["cheap", "on-demand"].deadline_wall_hours == pytest.approx(4 * U)
    assert rows["test", "spot"].instances == 4
    assert rows["test", "spot"].deadline_wall_hours == pytest.approx(3.6 * U)
    assert (dl.best.plan.provider, dl.best.plan.pricing) == ("test", "spot")
    assert dl.best.plan.cost == pytest.approx(11 * U * 1.2 * 0.2)

    with pytest.raises(InfeasibleError) as info:  # the 3000-update runs take 1.98 h each
        plan_budget(found.plans, deadline_hours=1.5)
    assert "--deadline 1.99h or later" in str(info.value)
    assert "a single run takes at least 1.98 h" in str(info.value)

    bp = plan_budget(found.plans, budget_usd=10)
    assert [(r.plan.provider, r.plan.pricing, r.units_bought) for r in bp.rows] == [
        ("test", "spot", math.floor(10 / (11 * U * 0.24))),  # 5 sweeps
        ("cheap", "on-demand", math.floor(10 / (11 * U * 0.45))),  # 3
        ("test", "on-demand", math.floor(10 / (11 * U * 0.526))),  # 2
    ]


def test_single_group_runs_and_spot_off() -> None:
    job = parse_job({"model": "Qwen/Qwen3-1.7B", "lora": {"r": 16, "alpha": 32},
                     "sequence_length": 512, "effective_batch": 4, "precision": "fp16",
                     "work": {"updates": 1000}, "gpus": ["T4"], "runs": 3})
    found = collect(job, OFFERS, spot=False)
    assert {p.pricing for p in found.plans} == {"on-demand"}
    bp = plan_budget(found.plans, budget_usd=1.0)
    assert bp.unit == "run" and bp.best.plan.provider == "cheap"
    assert bp.best.unit_cost == pytest.approx(U * 0.45)
    assert bp.best.units_bought == 3  # $1 / $0.297
    with pytest.raises(InfeasibleError, match=r"raise --budget to at least 0\.30"):
        plan_budget(found.plans, budget_usd=0.2)


def test_group_that_fits_nowhere_is_named() -> None:
    job = load_job(MIXED)
    huge = job.model_copy(update={"sweep": [
        *(job.sweep or []), job.sweep[0].model_copy(update={  # type: ignore[index]
            "name": "huge", "sequence_length": 262_144})]})
    with pytest.raises(InfeasibleError, match=r"sweep group 'huge': no split"):
        collect(huge, OFFERS)


# --- the command ------------------------------------------------------------------------------


def _prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.csv"
    rows = ["test,r1,t4-box,T4,1,16,4,16,0.526,0.2,test,2026-01-01",
            "cheap,r2,t4-cheap,T4,1,16,4,16,0.45,,test,2026-01-01"]
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def gacost(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gacost.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)


def test_cli_formats_carry_the_same_fields(tmp_path: Path) -> None:
    args = ("budget", "--job", str(MIXED), "--prices", str(_prices(tmp_path)),
            "--deadline", "180m", "--budget", "10")
    as_json = json.loads(gacost(*args, "--format", "json").stdout)
    assert (as_json["best"]["provider"], as_json["best"]["pricing"]) == ("test", "spot")
    assert as_json["best"]["instances"] == 4 and as_json["deadline_hours"] == 3.0
    assert as_json["best"]["cost"] == pytest.approx(11 * U * 0.24)
    assert [g["runs"] for g in as_json["groups"]] == [4, 2, 1]
    rows = list(csv.DictReader(io.StringIO(gacost(*args, "--format", "csv").stdout)))
    assert len(rows) == len(as_json["rows"]) == 3
    for row, full in zip(rows, as_json["rows"], strict=True):
        assert set(row) == set(full) - {"groups"}
        assert float(row["cost"]) == pytest.approx(full["cost"])
        assert row["splits"] == "lr-seed=4x1 long=4x1 epochs=4x1"
    table = gacost(*args)
    assert table.returncode == 0, table.stderr
    for header in ("GPU-h", "$ total", "instances", "meets deadline", "sweeps bought", "m x k"):
        assert header in table.stdout
    assert "cheapest is T4 on test r1 (t4-box, spot) on 4 instance(s)" in table.stdout
    assert "spot hours +20% for interruptions" in table.stdout


def test_cli_infeasible_deadline_exits_3(tmp_path: Path) -> None:
    late = gacost("budget", "--job", str(MIXED), "--prices", str(_prices(tmp_path)),
                  "--deadline", "1.5h")
    assert late.returncode == 3 and late.stderr.startswith("error: --deadline: ")
    assert "1.99h or later" in late.stderr and "Traceback" not in late.stderr


@pytest.mark.parametrize(("flag", "value", "code", "message"), [
    ("--budget", "0.5", 3, "error: --budget: $0.5 buys no complete sweep"),
    ("--deadline", "soon", 2, "error: --deadline: expected a duration like 12h"),
    ("--budget", "lots", 2, "error: --budget: expected a number, got 'lots'"),
    ("--max-instances", "0", 2, "error: --max-instances: must be > 0"),
    ("--parallel", "1.5", 2, "error: --parallel: expected an integer, got '1.5'"),
    ("--spot-allowance", "-0.1", 2, "error: --spot-allowance: must be >= 0"),
])
def test_cli_bad_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str,
                       value: str, code: int, message: str) -> None:
    args = ["budget", "--job", str(MIXED), "--prices", str(_prices(tmp_path)), flag, value]
    assert main(args) == code
    err = capsys.readouterr().err
    assert err.startswith(message) and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("allowance", "parallel"), list(product([0.0, 0.5], [1, 3])))
def test_cli_allowance_and_parallel(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    allowance: float, parallel: int) -> None:
    assert main(["budget", "--job", str(MIXED), "--prices", str(_prices(tmp_path)),
                 "--spot-allowance", str(allowance), "--parallel", str(parallel),
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    spot = next(r for r in out["rows"] if r["pricing"] == "spot")
    assert spot["gpu_hours"] == pytest.approx(11 * U * (1 + allowance))
    durations = [U * (1 + allowance)] * 5 + [3 * U * (1 + allowance)] * 2
    assert spot["wall_hours"] == pytest.approx(makespan(durations, parallel))
