"""``compare``: one GPU at every offer cheapest first, the spread, the break-even matrix."""

from __future__ import annotations

import csv
import io
import json
import statistics
from pathlib import Path

import pytest

from gacost.advisor.compare import compare, spread
from gacost.advisor.recommend import recommend
from gacost.base.errors import InfeasibleError, UnknownNameError
from gacost.base.job import parse_job
from gacost.base.records import Offer
from gacost.commands.cli import main
from gacost.commands.compare import comparison_dict, row_dict

T4_4X1 = 2.3792  # the published T4 profile's fastest split
JOB = parse_job({"model": "Qwen/Qwen3-1.7B", "lora": {"r": 16, "alpha": 32},
                 "sequence_length": 512, "effective_batch": 4, "precision": "fp16",
                 "work": {"updates": 1000}, "gpus": ["T4", "L4", "A10G"], "runs": 2})
# both runs on a T4, each with TRL's two checkpoints of 209,190,912 bytes at 1 s per GB
# (tests/test_budget.py)
HOURS = 2 * (1000 * T4_4X1 + 2 * 0.209190912) / 3600


def _offer(provider: str, gpu: str, rate: float, spot: float | None = None,
           count: float = 1) -> Offer:
    return Offer(provider, "r1", f"{gpu.lower()}-box", gpu, count, 16, 4, 16, rate, spot,
                 "test", "2026-01-01")


OFFERS = [
    _offer("a", "T4", 0.526, 0.2), _offer("b", "T4", 0.35), _offer("c", "T4", 0.45),
    _offer("d", "T4", 2.0, count=4),  # a 4-GPU box: left out of a single-GPU job
    _offer("a", "L4", 0.80), _offer("b", "L4", 0.70), _offer("a", "A10G", 1.006),
]
HEADER = ("provider,region,instance_type,gpu,gpu_count,gpu_memory_gib,vcpus,ram_gib,"
          "price_hour,spot_hour,source,fetched_at")


def test_t4_at_every_offer_cheapest_first_with_spread() -> None:
    c = compare(JOB, OFFERS, gpu="t4", spot=True, spot_allowance=0.2)
    assert c.gpu == "T4"
    got = [(p.provider, p.pricing, p.rate_hour) for p in c.rows]
    assert got == [("a", "spot", 0.2), ("b", "on-demand", 0.35), ("c", "on-demand", 0.45),
                   ("a", "on-demand", 0.526)]
    costs = [HOURS * 1.2 * 0.2, HOURS * 0.35, HOURS * 0.45, HOURS * 0.526]
    assert [p.cost for p in c.rows] == pytest.approx(costs)
    assert all(p.split == "4x1" and p.time_source == "measured" for p in c.rows)
    assert all((g.estimate.micro_batch, g.estimate.grad_accum) == (4, 1) for p in c.rows
               for g in p.groups)
    assert [p.allowance for p in c.rows] == [0.2, 0.0, 0.0, 0.0]
    assert {p.offer.gpu_count for p in c.rows} == {1}  # the 4-GPU box is left out
    assert c.runs == 2 and all(p.runs == 2 for p in c.rows)
    assert (c.spread.low, c.spread.high) == pytest.approx((costs[0], costs[-1]))
    assert c.spread.median == pytest.approx((costs[1] + costs[2]) / 2)
    assert c.spread.ratio == pytest.approx(0.526 / 0.24)
    row = row_dict(c.rows[0], c.spread.low)
    assert row["cost_per_run"] == pytest.approx(costs[0] / 2)
    assert row["gpu_hours"] == pytest.approx(HOURS * 1.2) and row["vs_cheapest"] == 1.0


def test_spot_allowance_comes_from_the_job_unless_given() -> None:
    # spot: true and spot_allowance: 1.0 in the job: the spot T4 at $0.2 runs 2 x HOURS and
    # costs HOURS x 0.4, now dearer than b's on-demand $0.35; an explicit 0.5 -> HOURS x 0.3.
    job = JOB.model_copy(update={"spot": True, "spot_allowance": 1.0})
    c = compare(job, OFFERS, gpu="T4")
    assert [(p.provider, p.pricing) for p in c.rows] == [
        ("b", "on-demand"), ("a", "spot"), ("c", "on-demand"), ("a", "on-demand")]
    spot = c.rows[1]
    assert spot.allowance == 1.0 and spot.cost == pytest.approx(HOURS * 2.0 * 0.2)
    assert spot.gpu_hours == pytest.approx(2 * HOURS)
    given = compare(job, OFFERS, gpu="T4", spot_allowance=0.5)
    assert [(p.provider, p.pricing) for p in given.rows][:2] == [("a", "spot"), ("b", "on-demand")]
    assert given.rows[0].cost == pytest.approx(HOURS * 1.5 * 0.2)


def test_break_even_matrix_is_the_inverse_time_ratio() -> None:
    c = compare(JOB, OFFERS, gpu="T4")
    best = recommend(JOB, OFFERS).best
    assert best["T4"].seconds_per_update == T4_4X1
    for a in best:
        for b in best:
            if a != b:
                expect = best[b].seconds_per_update / best[a].seconds_per_update
                ab, ba = c.threshold(a, b), c.threshold(b, a)
                assert ab is not None and ba is not None
                assert ab == pytest.approx(expect) and ab * ba == pytest.approx(1.0)
    assert c.threshold("T4", "T4") is None
    matrix = comparison_dict(c)["break_even"]["matrix"]
    assert set(matrix) == set(best) and matrix["T4"]["L4"] == c.threshold("T4", "L4")


def test_default_gpu_is_the_recommended_one_and_matrix_is_limited() -> None:
    c = compare(JOB, OFFERS, matrix_size=2)
    assert c.gpu == recommend(JOB, OFFERS).recommended.gpu
    cheapest = [p.gpu for p in recommend(JOB, OFFERS, top=99).plans]
    assert c.gpus_by_cost == list(dict.fromkeys(cheapest))  # every GPU, cheapest first
    assert c.matrix_gpus == c.gpus_by_cost[:2]
    assert len(comparison_dict(c)["break_even"]["gpus"]) == 3  # JSON carries every GPU
    forced = compare(JOB, OFFERS, gpu=c.gpus_by_cost[-1], matrix_size=2)
    assert forced.matrix_gpus == [c.gpus_by_cost[0], c.gpus_by_cost[-1]]  # chosen kept


def test_a_family_compares_its_member_the_job_runs_cheapest_on() -> None:
    """``--gpu A100`` works as ``prices --gpu A100`` does: the family's cheapest member for
    this job, said in a note; a family with no offer is one error naming the family."""
    job = JOB.model_copy(update={"gpus": ["T4", "A100-40GB-SXM", "A100-80GB-SXM"]})
    offers = [*OFFERS, _offer("a", "A100-80GB-SXM", 1.9), _offer("b", "A100-40GB-SXM", 1.2)]
    c = compare(job, offers, gpu="A100")
    assert c.gpu == "A100-40GB-SXM" and {p.gpu for p in c.rows} == {"A100-40GB-SXM"}
    assert any("--gpu A100 is a family" in n and "comparing A100-40GB-SXM" in n
               for n in c.notes)
    with pytest.raises(InfeasibleError, match=r"no offer in the price data runs the job on "
                                              r"the A100 family"):
        compare(JOB, OFFERS, gpu="A100")


def test_unknown_and_unpriced_gpus() -> None:
    with pytest.raises(UnknownNameError, match=r"--gpu: unknown GPU 'T9'"):
        compare(JOB, OFFERS, gpu="T9")
    with pytest.raises(InfeasibleError, match=r"no single-GPU offer for H100-SXM"):
        compare(JOB, OFFERS, gpu="H100-SXM")


def test_spread_of_one_and_many() -> None:
    assert spread([3.0]).ratio == 1.0
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    s = spread(values)
    assert (s.low, s.median, s.high) == (1.0, statistics.median(values), 5.0)


def test_cli_json_csv_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = tmp_path / "prices.csv"
    prices.write_text("\n".join([HEADER, *(
        f"{o.provider},{o.region},{o.instance_type},{o.gpu},{o.gpu_count},16,4,16,"
        f"{o.price_hour},{o.spot_hour or ''},test,2026-01-01" for o in OFFERS)]) + "\n")
    job = tmp_path / "job.yaml"
    job.write_text(json.dumps(JOB.model_dump(exclude_unset=True)))
    base = ["compare", "--job", str(job), "--prices", str(prices), "--gpu", "T4"]
    assert main([*base, "--format", "json"]) == 0
    as_json = json.loads(capsys.readouterr().out)
    assert [r["provider"] for r in as_json["rows"]] == ["b", "c", "a"]
    assert as_json["spread"]["min"] == pytest.approx(HOURS * 0.35)
    assert main([*base, "--spot", "--spot-allowance", "0.5", "--format", "json"]) == 0
    spot = json.loads(capsys.readouterr().out)["rows"][0]  # 1.5 x $0.2 beats b's $0.35
    assert (spot["provider"], spot["pricing"], spot["spot_allowance"]) == ("a", "spot", 0.5)
    assert spot["cost"] == pytest.approx(HOURS * 1.5 * 0.2)
    assert main([*base, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [set(r) for r in rows] == [set(r) - {"groups"} for r in as_json["rows"]]
    assert [float(r["vs_cheapest"]) for r in rows] == pytest.approx([1, 0.45 / 0.35,
                                                                    0.526 / 0.35])
    assert main(base) == 0
    text = capsys.readouterr().out
    assert text.startswith("T4 at every provider and region")
    assert "Spread over 3 offer(s)" in text and "Break-even" in text and "A \\ B" in text
    for header in ("provider", "$/h", "m x k", "inst-h", "$/run", "$ all runs", "x min"):
        assert header in text
    assert "more offer(s)" not in text  # 3 offers, under the default --top 10
    assert main([*base, "--wide"]) == 0
    wide = capsys.readouterr().out.splitlines()[2]
    assert "x cheapest" in wide and "time" in wide and "instance" in wide


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.usefixtures("snapshot_day")
@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_cli_top_and_120_columns_on_the_snapshot(
    example: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default table shows the --top cheapest offers, says how many more there are (the
    JSON has them all), and fits 120 columns; --wide shows every column."""
    base = ["compare", "--job", str(EXAMPLES / example)]
    assert main([*base, "--format", "json"]) == 0
    every = json.loads(capsys.readouterr().out)["rows"]
    assert len(every) > 10
    assert main(base) == 0
    text = capsys.readouterr().out
    assert max(map(len, text.splitlines())) <= 120
    table = text.split("\n\n")[1].splitlines()
    assert len(table) == 2 + 10 + 1  # header, rule, 10 rows, the "more" line
    assert table[-1].startswith(f"({len(every) - 10} more offer(s); --top N shows more")
    assert [r.split()[0] for r in table[2:-1]] == [r["provider"] for r in every[:10]]
    assert main([*base, "--top", "3"]) == 0
    table = capsys.readouterr().out.split("\n\n")[1].splitlines()
    assert len(table) == 6 and table[-1].startswith(f"({len(every) - 3} more offer(s)")
    assert main([*base, "--top", str(len(every))]) == 0
    assert "more offer(s)" not in capsys.readouterr().out
    assert main([*base, "--wide"]) == 0
    assert max(map(len, capsys.readouterr().out.splitlines())) > 120


@pytest.mark.parametrize("value", ["0", "x", "-2"])
def test_cli_bad_top_is_one_line(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    job = EXAMPLES / "qwen3-1.7b-lora.yaml"
    assert main(["compare", "--job", str(job), "--top", value]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --top: ") and len(err.strip().splitlines()) == 1
