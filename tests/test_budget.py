"""Budget arithmetic against hand-computed figures, infeasibility advice, and the CLI."""

from __future__ import annotations

import csv
import io
import json
import math
from itertools import product
from pathlib import Path

import pytest

from gacost.advisor.budget import (
    best_by_pricing,
    collect,
    parse_hours,
    plan_budget,
    units_affordable,
)
from gacost.advisor.planner import (
    GroupRun,
    Limits,
    Plan,
    Pricing,
    RunGroup,
    fewest_instances,
    lpt_loads,
    makespan,
    run_blocks,
)
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.errors import InfeasibleError
from gacost.base.job import load_job, parse_job
from gacost.base.records import Offer
from gacost.commands.cli import main

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
          provider: str = "p") -> Plan:
    """A plan whose group i has ``runs`` runs of ``h`` hours: 3600 updates at h s/update."""
    groups = tuple(
        GroupRun(RunGroup(f"g{i}", n, 3600, 512, 4),
                 SplitEstimate("T4", 4, 1, h, "measured", 5.0, "measured", 14.0, True))
        for i, (n, h) in enumerate(hours))
    pricing: Pricing = "spot" if allowance else "on-demand"
    offer = Offer(provider, "r", "box", "T4", 1, 16, 4, 16, rate, rate, "test", "2026-01-01")
    return Plan(offer, pricing, rate, groups, allowance)


# --- pure arithmetic ------------------------------------------------------------------------


def test_lpt_by_hand() -> None:
    # 3,3 -> A,B; 2 -> A (5); 2 -> B (5); 2 -> A (7). The optimum is 6 (3+3 | 2+2+2):
    # LPT is a heuristic (within 4/3 of optimal), and that is what is documented.
    assert lpt_loads(run_blocks([2, 3, 2, 3, 2]), 2) == [7, 5]
    assert makespan(run_blocks([2, 3, 2, 3, 2]), 2) == 7
    assert makespan(run_blocks([2, 3, 2, 3, 2]), 3) == 5  # 3 | 3 | 2, 2 -> C (4), 2 -> A (5)
    assert makespan(run_blocks([2, 3, 2, 3, 2]), 5) == 3
    assert makespan(run_blocks([2, 3, 2, 3, 2]), 9) == 3  # idle instances change nothing
    assert makespan(run_blocks([]), 4) == 0


def test_lpt_stays_within_the_textbook_bounds() -> None:
    durations = [0.5, 1.25, 3.0, 2.2, 0.7, 0.7, 1.9, 2.6, 0.1]
    for p in range(1, 12):
        loads = lpt_loads(run_blocks(durations), p)
        assert sum(loads) == pytest.approx(sum(durations)) and len(loads) == p
        lower = max(max(durations), sum(durations) / p)  # no packing beats this
        span = makespan(run_blocks(durations), p)
        assert lower - 1e-12 <= span <= sum(durations) / p + max(durations)


def test_fewest_instances() -> None:
    d = [3.0, 3.0, 2.0, 2.0, 2.0]
    assert fewest_instances(run_blocks(d), 7.0, 8) == 2
    assert fewest_instances(run_blocks(d), 6.9, 8) == 3  # LPT: 5 on three instances
    assert fewest_instances(run_blocks(d), 4.0, 8) == 4  # 3 | 3 | 2+2 | 2
    assert fewest_instances(run_blocks(d), 3.0, 8) == 5
    assert fewest_instances(run_blocks(d), 3.0, 4) is None  # needs 5
    assert fewest_instances(run_blocks(d), 2.9, 99) is None  # one run outlasts the deadline


def test_totals_spot_allowance_and_deadline_oracle() -> None:
    on_demand = _plan([(2, 3.0), (3, 2.0)], rate=0.5)
    spot = _plan([(2, 3.0), (3, 2.0)], rate=0.2, allowance=0.2, provider="s")
    assert on_demand.gpu_hours == 12.0 and on_demand.cost == 6.0
    assert [c for _, c in spot.run_blocks()] == [2, 3]
    assert [h for h, _ in spot.run_blocks()] == pytest.approx([3.6, 2.4])
    assert spot.gpu_hours == pytest.approx(14.4) and spot.cost == pytest.approx(2.88)
    for n in (1, 2, 5):  # billing is per busy hour: the instance count changes no dollar
        assert spot.on(n).cost == pytest.approx(2.88) and on_demand.on(n).cost == 6.0

    none = plan_budget([on_demand, spot], Limits(spot=True, parallel=2))
    assert none.best.plan.key == spot.key  # cheapest first
    assert [r.plan.instances for r in none.rows] == [2, 2]
    # LPT on 2: spot 3.6 | 3.6, then 2.4 to each (6.0 | 6.0), then 2.4 -> 8.4;
    # on-demand 3 | 3, 2 | 2, then 2 -> 7.
    assert [r.plan.wall_hours for r in none.rows] == pytest.approx([8.4, 7.0])

    # Deadline 8 h: on-demand meets it on 2 (makespan 7), spot (8.4 on 2) needs 3:
    # 3.6 | 3.6 | 2.4+2.4 ... loads 3.6+2.4, 3.6, 2.4+2.4 = 6.0.
    dl = plan_budget([on_demand, spot], Limits(spot=True), deadline_hours=8.0)
    by = {r.plan.provider: r.plan for r in dl.rows}
    assert (by["p"].instances, by["p"].wall_hours) == (2, 7.0)
    assert by["s"].instances == 3 and by["s"].wall_hours == pytest.approx(6.0)
    assert dl.best.plan.key == spot.key  # cheaper, and meets it on 3
    assert dl.deadline_hours == 8.0
    on_demand_row = best_by_pricing(dl, "on-demand")
    assert on_demand_row is not None and on_demand_row.plan == on_demand.on(2)
    # the same plans on at most 2 instances: spot cannot meet 8 h and is not listed at all
    capped = plan_budget([on_demand, spot], Limits(spot=True, max_instances=2),
                         deadline_hours=8.0)
    assert [r.plan.key for r in capped.rows] == [on_demand.key]
    assert best_by_pricing(capped, "spot") is None

    # With a $2.50 budget the spot plan ($2.88) no longer qualifies, nor does on-demand ($6),
    # and nothing is affordable at any deadline, so only the budget advice is given.
    with pytest.raises(InfeasibleError) as info:
        plan_budget([on_demand, spot], Limits(spot=True), deadline_hours=8.0, budget_usd=2.5)
    text = str(info.value)
    assert text.startswith("--budget: no offer finishes the 5 run(s) in 8 h for $2.5")
    assert "on 3 instance(s), costs $2.88: raise --budget to at least 2.88" in text
    assert "--deadline" not in text
    # With $3, spot qualifies within the budget on 3 instances; the note gives the total.
    ok = plan_budget([on_demand, spot], Limits(spot=True), deadline_hours=8.0, budget_usd=3.0)
    assert [r.plan.key for r in ok.rows] == [spot.key] and ok.best.plan.instances == 3
    assert ok.notes == ["the whole job costs $2.88 at the cheapest (T4 on s r (box, spot)); "
                        "the budget is $3"]


def test_budget_and_deadline_advice_offers_a_later_deadline() -> None:
    # Six one-hour runs: on-demand at $1/h costs $6, spot at $0.5/h with a 50 % allowance
    # runs 1.5 h each and costs 6 x 1.5 x 0.5 = $4.50. Deadline 1.2 h: on-demand meets it
    # on 6 instances; spot (1.5 h per run) never does. A $5 budget excludes on-demand.
    # Spot is affordable: on the 6 allowed instances each run runs alone, so the wall-clock
    # is 1.5 h, and a deadline of 1.5 h would do.
    on_demand = _plan([(6, 1.0)], rate=1.0)
    spot = _plan([(6, 1.0)], rate=0.5, allowance=0.5, provider="s")
    with pytest.raises(InfeasibleError) as info:
        plan_budget([on_demand, spot], Limits(spot=True, max_instances=6),
                    deadline_hours=1.2, budget_usd=5.0)
    text = str(info.value)
    assert ("the cheapest that does, T4 on p r (box, on-demand) on 6 instance(s), costs "
            "$6.00: raise --budget to at least 6.00") in text
    assert text.endswith("or give --deadline 1.5 or later (T4 on s r (box, spot), $4.50)")


def test_budget_buys_runs_or_sweeps() -> None:
    single = _plan([(10, 2.0)], rate=0.5)  # $1.00 per run
    spot = _plan([(10, 2.0)], rate=0.3, allowance=0.25, provider="s")  # 2.5 h x 0.3 = $0.75
    bp = plan_budget([single, spot], Limits(spot=True), budget_usd=7.5)
    assert bp.unit == "run" and bp.runs == 10
    assert [(r.plan.provider, r.units_bought) for r in bp.rows] == [("s", 10), ("p", 7)]
    assert [r.unit_cost for r in bp.rows] == pytest.approx([0.75, 1.0])
    assert bp.rows[0].within_budget and not bp.rows[1].within_budget  # 10 runs cost $10
    sweep = _plan([(2, 1.0), (1, 4.0)], rate=1.0)  # $6 per complete sweep
    bs = plan_budget([sweep], Limits(), budget_usd=20)
    assert (bs.unit, bs.best.unit_cost, bs.best.units_bought) == ("sweep", 6.0, 3)
    assert units_affordable(0.3, 0.1) == 3  # not 2 from 0.3 / 0.1 = 2.9999999999999996


def test_budget_too_small_says_what_it_takes() -> None:
    with pytest.raises(InfeasibleError) as info:
        plan_budget([_plan([(2, 1.0), (1, 4.0)], rate=1.0)], Limits(), budget_usd=5)
    assert "buys no complete sweep" in str(info.value)
    assert "raise --budget to at least 6.00" in str(info.value)


def test_deadline_advice_later_deadline_or_more_instances() -> None:
    p = _plan([(6, 1.0)], rate=1.0)  # six one-hour runs
    with pytest.raises(InfeasibleError) as info:  # on 4 instances: 1+1 | 1+1 | 1 | 1 = 2 h
        plan_budget([p], Limits(max_instances=4), deadline_hours=1.5)
    text = str(info.value)
    assert text.startswith("--deadline: no offer finishes the 6 run(s) in 1.5 h on at most 4 "
                           "instance(s)")
    assert "needs 2.00 h on 4: raise --deadline to at least 2," in text
    assert "or allow --max-instances 6 (T4 on p r (box, on-demand) then meets 1.5 h for " \
           "$6.00)" in text
    with pytest.raises(InfeasibleError) as info:
        plan_budget([p], Limits(max_instances=4), deadline_hours=0.5)
    assert "a single run takes at least 1.00 h, so more instances cannot help" in str(
        info.value)
    assert "in 30 min" in str(info.value)


@pytest.mark.parametrize(("text", "hours"), [
    ("12h", 12.0), ("90m", 1.5), ("1.5d", 36.0), ("3", 3.0), ("5400s", 1.5), (" 2H ", 2.0),
])
def test_parse_hours(text: str, hours: float) -> None:
    assert parse_hours(text) == pytest.approx(hours)


@pytest.mark.parametrize("text", ["", "h", "12x", "-1h", "0", "nan", "inf"])
def test_parse_hours_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_hours(text)


# --- end to end over the estimates with exact, measured T4 times -----------------------------


SPOT = Limits(spot=True, spot_allowance=0.2)


def test_mixed_sweep_against_hand_computed_hours() -> None:
    found = collect(load_job(MIXED), OFFERS, limits=SPOT)
    assert [(g.name, g.runs, g.updates) for g in found.groups] == [
        ("lr-seed", 4, 1000), ("long", 2, 3000), ("epochs", 1, 1000)]
    plans = {(p.provider, p.pricing): p for p in found.plans}
    assert set(plans) == {("test", "on-demand"), ("test", "spot"), ("cheap", "on-demand")}
    for p in plans.values():
        assert [(g.estimate.micro_batch, g.estimate.grad_accum, g.estimate.time_source,
                 g.seconds_per_update) for g in p.groups] == [(4, 1, "measured", T4_4X1)] * 3
        assert p.groups[0].group is found.groups[0]
    # 4 x 1000 + 2 x 3000 + 1 x 1000 = 11000 updates = 11 U hours (checkpoints off)
    assert [g.saves for g in found.groups] == [0, 0, 0]
    assert plans["cheap", "on-demand"].gpu_hours == pytest.approx(11 * U)
    assert plans["cheap", "on-demand"].cost == pytest.approx(11 * U * 0.45)
    assert plans["test", "on-demand"].cost == pytest.approx(11 * U * 0.526)
    assert plans["test", "spot"].allowance == 0.2
    assert plans["test", "spot"].gpu_hours == pytest.approx(11 * U * 1.2)
    assert plans["test", "spot"].cost == pytest.approx(11 * U * 1.2 * 0.2)
    blocks = plans["test", "spot"].run_blocks()
    assert [c for _, c in blocks] == [2, 5]
    assert [h for h, _ in blocks] == pytest.approx([3.6 * U, 1.2 * U])

    # 3 h = 4.54 U. On-demand runs [3,3,1,1,1,1,1] U: 2 instances -> 6 U (3.97 h), too late;
    # 3 -> 3+1 | 3+1 | 1+1+1 = 4 U (2.64 h). Spot (x1.2): 3 -> 4.8 U (3.17 h), too late;
    # 4 -> 3.6 | 3.6 | 1.2+1.2+1.2 | 1.2+1.2 = 3.6 U. Spot is the cheapest: 4 instances.
    dl = plan_budget(found.plans, SPOT, deadline_hours=3.0)
    rows = {(r.plan.provider, r.plan.pricing): r.plan for r in dl.rows}
    assert set(rows) == set(plans)
    assert rows["cheap", "on-demand"].instances == 3
    assert rows["cheap", "on-demand"].wall_hours == pytest.approx(4 * U)
    assert rows["test", "on-demand"].instances == 3
    assert rows["test", "spot"].instances == 4
    assert rows["test", "spot"].wall_hours == pytest.approx(3.6 * U)
    assert [(r.plan.provider, r.plan.pricing) for r in dl.rows] == [
        ("test", "spot"), ("cheap", "on-demand"), ("test", "on-demand")]  # cheapest first
    assert dl.best.plan.cost == pytest.approx(11 * U * 1.2 * 0.2)

    # At most 3 instances: spot needs 4, so it is no longer listed; cheap on-demand wins.
    dl3 = plan_budget(found.plans, Limits(spot=True, max_instances=3), deadline_hours=3.0)
    assert [(r.plan.provider, r.plan.pricing, r.plan.instances) for r in dl3.rows] == [
        ("cheap", "on-demand", 3), ("test", "on-demand", 3)]

    with pytest.raises(InfeasibleError) as info:  # the 3000-update runs take 1.98 h each
        plan_budget(found.plans, SPOT, deadline_hours=1.5)
    # The fastest is on-demand (no allowance), the cheaper one: every run on its own
    # instance (7 <= 8) still takes 3 U = 1.983 h, rounded up to the cent 1.99.
    text = str(info.value)
    assert ("the fastest, T4 on cheap r2 (t4-cheap, on-demand), needs 1.98 h on 7: raise "
            "--deadline to at least 1.99") in text
    assert "a single run takes at least 1.98 h" in text

    bp = plan_budget(found.plans, SPOT, budget_usd=10)
    assert [(r.plan.provider, r.plan.pricing, r.units_bought) for r in bp.rows] == [
        ("test", "spot", math.floor(10 / (11 * U * 0.24))),  # 5 sweeps
        ("cheap", "on-demand", math.floor(10 / (11 * U * 0.45))),  # 3
        ("test", "on-demand", math.floor(10 / (11 * U * 0.526))),  # 2
    ]
    assert [r.units_bought for r in bp.rows] == [5, 3, 2]


def test_checkpoints_add_their_saves_to_every_run() -> None:
    # TRL's default, a save every 500 updates and one at the end: 4 x 2 + 2 x 6 + 1 x 2 = 22
    # saves; each of Qwen3-1.7B's LoRA r16 on every linear: 28 layers x 16 x (4096 + 3072 +
    # 3072 + 4096 + 3 x 8192) = 17,432,576 fp32 adapter parameters, their two Adam moments
    # beside them: 209,190,912 bytes, at 1 s per GB
    job = load_job(MIXED).model_copy(update={"save_steps": 500})
    found = collect(job, OFFERS, limits=SPOT)
    assert [(g.save_every, g.saves) for g in found.groups] == [(500, 2), (500, 6), (500, 2)]
    assert [g.save_bytes for g in found.groups] == [209_190_912] * 3
    hours = 11 * U + 22 * 0.209190912 / 3600
    cheap = next(p for p in found.plans if p.provider == "cheap")
    assert cheap.gpu_hours == pytest.approx(hours)
    assert cheap.cost == pytest.approx(hours * 0.45)
    # weights only (save_only_model): a third of the bytes
    weights = collect(job.model_copy(update={"save_only_model": True}), OFFERS, limits=SPOT)
    assert weights.groups[0].save_bytes == 209_190_912 / 3
    w_cheap = next(p for p in weights.plans if p.provider == "cheap")
    assert w_cheap.groups[0].checkpoint_seconds == pytest.approx(2 * 0.209190912 / 3)


def test_single_group_runs_and_spot_off() -> None:
    job = parse_job({"model": "Qwen/Qwen3-1.7B", "lora": {"r": 16, "alpha": 32},
                     "sequence_length": 512, "effective_batch": 4, "precision": "fp16",
                     "work": {"updates": 1000}, "gpus": ["T4"], "runs": 3,
                     "save_steps": 0})
    found = collect(job, OFFERS, limits=Limits(spot=False))
    assert {p.pricing for p in found.plans} == {"on-demand"}
    bp = plan_budget(found.plans, Limits(), budget_usd=1.0)
    assert bp.unit == "run" and bp.best.plan.provider == "cheap"
    assert bp.best.unit_cost == pytest.approx(U * 0.45)
    assert bp.best.units_bought == 3  # $1 / $0.297
    with pytest.raises(InfeasibleError, match=r"raise --budget to at least 0\.30"):
        plan_budget(found.plans, Limits(), budget_usd=0.2)


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


def gacost(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``gacost ARGS`` in process: exit code, stdout, stderr."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_formats_carry_the_same_fields(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    args = ("budget", "--job", str(MIXED), "--prices", str(_prices(tmp_path)),
            "--deadline", "180m", "--budget", "10")
    code, out, err = gacost(capsys, *args, "--format", "json")
    assert code == 0, err
    as_json = json.loads(out)
    assert (as_json["best"]["provider"], as_json["best"]["pricing"]) == ("test", "spot")
    assert as_json["best"]["instances"] == 4 and as_json["deadline_hours"] == 3.0
    assert as_json["best"]["wall_hours"] == pytest.approx(3.6 * U)
    assert as_json["best"]["cost"] == pytest.approx(11 * U * 0.24)
    assert as_json["max_instances"] == 8 and as_json["budget_usd"] == 10
    assert [g["runs"] for g in as_json["groups"]] == [4, 2, 1]
    assert [g["wall_hours_per_run"] for g in as_json["best"]["groups"]] == pytest.approx(
        [1.2 * U, 3.6 * U, 1.2 * U])
    assert as_json["best_by_pricing"]["on-demand"]["provider"] == "cheap"
    code, out, _ = gacost(capsys, *args, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == len(as_json["rows"]) == 3
    for row, full in zip(rows, as_json["rows"], strict=True):
        assert set(row) == set(full) - {"groups"}
        assert float(row["cost"]) == pytest.approx(full["cost"])
        assert row["splits"] == "lr-seed=4x1 long=4x1 epochs=4x1"
    code, table, err = gacost(capsys, *args)
    assert code == 0, err
    for header in ("inst-h", "$ total", "inst.", "in time", "buys", "m x k"):
        assert header in table
    assert "GPU-h" not in table  # the hours billed are instance-hours (one GPU here)
    assert max(map(len, table.splitlines())) <= 120
    words = " ".join(table.split())  # prose is wrapped to the width
    assert "cheapest is T4 on test r1 (t4-box, spot) on 4 instance(s)" in words
    assert "spot hours +20% for interruptions" in words
    code, wide, err = gacost(capsys, *args, "--wide")
    assert code == 0, err
    for header in ("instances", "meets deadline", "sweeps bought", "all in budget", "instance",
                   "inst-h", "GPU-h"):
        assert header in wide


def test_cli_max_instances_from_the_job_and_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The job's max_instances: 3 leaves out spot (it needs 4 instances for 3 h, see
    # test_mixed_sweep_against_hand_computed_hours); --max-instances 4 brings it back.
    job = tmp_path / "job.yaml"
    job.write_text(MIXED.read_text() + "max_instances: 3\n")
    args = ("budget", "--job", str(job), "--prices", str(_prices(tmp_path)),
            "--deadline", "3h", "--format", "json")
    code, out, err = gacost(capsys, *args)
    assert code == 0, err
    capped = json.loads(out)
    assert capped["max_instances"] == 3
    assert [(r["provider"], r["pricing"], r["instances"]) for r in capped["rows"]] == [
        ("cheap", "on-demand", 3), ("test", "on-demand", 3)]
    assert capped["best_by_pricing"]["spot"] is None
    code, out, err = gacost(capsys, *args, "--max-instances", "4")
    assert code == 0, err
    assert (json.loads(out)["best"]["pricing"], json.loads(out)["best"]["instances"]) == (
        "spot", 4)


def test_cli_infeasible_deadline_exits_3(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = gacost(capsys, "budget", "--job", str(MIXED), "--prices",
                          str(_prices(tmp_path)), "--deadline", "1.5h")
    assert code == 3 and err.startswith("error: --deadline: ")
    assert "raise --deadline to at least 1.99" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


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


# Spot runs of U' = U x (1 + allowance): five of 1 U' and two of 3 U' (11 U' in all).
# One instance: 11 U'. Three, LPT: 3 | 3 | 1, then 1 -> C (2), 1 -> C (3), then all three
# at 3: 1 -> A (4), 1 -> B (4): 4 U' (no packing of 11 on 3 beats ceil(11 / 3) = 4 U').
WALL_UNITS = {1: 11, 3: 4}


@pytest.mark.parametrize(("allowance", "parallel"), list(product([0.0, 0.5], [1, 3])))
def test_cli_allowance_and_parallel(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    allowance: float, parallel: int) -> None:
    assert main(["budget", "--job", str(MIXED), "--prices", str(_prices(tmp_path)),
                 "--spot-allowance", str(allowance), "--parallel", str(parallel),
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    spot = next(r for r in out["rows"] if r["pricing"] == "spot")
    assert spot["spot_allowance"] == allowance and spot["instances"] == parallel
    assert spot["gpu_hours"] == pytest.approx(11 * U * (1 + allowance))
    assert spot["cost"] == pytest.approx(11 * U * (1 + allowance) * 0.2)
    assert spot["wall_hours"] == pytest.approx(WALL_UNITS[parallel] * U * (1 + allowance))


def test_fewest_instances_uses_one_tolerance() -> None:
    # runs a hair (within the tolerance) over the deadline: four instances meet it
    d = [1.0 + 5e-10] * 4
    assert makespan(run_blocks(d), 4) <= 1.0 * (1 + 1e-9)
    assert fewest_instances(run_blocks(d), 1.0, 8) == 4
