"""``recommend --plot``: the series drawn, the files written, matplotlib only when asked."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gacost.advisor.planner import GroupRun, Plan, RunGroup
from gacost.advisor.recommend import recommend
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.errors import DataError, GacostError
from gacost.base.job import load_job
from gacost.base.records import Offer
from gacost.base.split import Split
from gacost.commands.cli import main
from gacost.commands.plot import band_of, draw, plot_inputs, plot_series, ranking
from gacost.commands.recommend import plan_row, render_text

ROOT = Path(__file__).resolve().parent.parent
SPLITS = (Split(1, 4), Split(2, 2), Split(4, 1))
HEADER = ("provider,region,instance_type,gpu,gpu_count,gpu_memory_gib,vcpus,ram_gib,"
          "price_hour,spot_hour,source,fetched_at")
JOB = """model: Qwen/Qwen3-1.7B
lora: {r: 16, alpha: 32}
sequence_length: 512
effective_batch: 4
work: {updates: 1000}
precision: fp16
gpus: [T4, L4]
"""


def _est(gpu: str, m: int, s: float | None, source: str = "predicted", fits: bool = True,
         low: float | None = None, high: float | None = None) -> SplitEstimate:
    return SplitEstimate(gpu, m, 4 // m, s, source, 5.0, source, 14.0, fits,  # type: ignore[arg-type]
                         seconds_low=low, seconds_high=high)


ESTIMATES = [
    _est("T4", 1, 2.871, "measured"), _est("T4", 2, 2.585, "measured"),
    _est("T4", 4, 2.3792, "measured"),
    _est("L4", 1, 1.5, low=1.2, high=1.9), _est("L4", 2, 0.9, low=0.7, high=1.2),
    _est("L4", 4, None, fits=False),
    _est("A10G", 1, 1.1, low=0.9, high=1.4),
]


def test_series_values_and_bands() -> None:
    series = plot_series(ESTIMATES, ["L4", "T4"], SPLITS)
    assert [(s.gpu, s.kind) for s in series] == [("L4", "predicted"), ("T4", "measured")]
    l4_s, t4_s = series
    assert l4_s.x == (0, 1) and l4_s.values == (1.5, 0.9)  # 4x1 does not fit
    assert (l4_s.low, l4_s.high) == ((1.2, 0.7), (1.9, 1.2))
    assert t4_s.x == (0, 1, 2) and t4_s.low is None


def _plan(e: SplitEstimate, rate: float, allowance: float = 0.0) -> Plan:
    offer = Offer("x", "r", "box", e.gpu, 1, 16, 4, 16, rate, rate, "t", "2026-01-01")
    return Plan(offer, "spot" if allowance else "on-demand", rate,
                (GroupRun(RunGroup("job", 1, 3600, 512, 4), e),), allowance)


def test_ranking_is_each_plans_dollars_per_fine_tune_cheapest_first() -> None:
    l4, t4 = ESTIMATES[4], ESTIMATES[2]  # L4 2x2 (0.9 s, band), T4 4x1 (measured)
    ranked = ranking([_plan(t4, 0.5), _plan(l4, 0.8, allowance=0.2)])
    assert [(r.gpu, r.split, r.kind) for r in ranked] == [
        ("L4", (2, 2), "predicted"), ("T4", (4, 1), "measured")]
    # 0.9 s x 3600 updates x $0.8/h x 1.2 (spot allowance)
    assert ranked[0].dollars == pytest.approx(0.72 * 1.2)
    assert (ranked[0].low, ranked[0].high) == pytest.approx((0.56 * 1.2, 0.96 * 1.2))
    assert ranked[1].dollars == pytest.approx(2.3792 * 0.5) and ranked[1].low is None


def test_the_plot_shows_the_tables_dollars_spot_allowance_included() -> None:
    # Issue 18: the plot drew an L40S spot plan at rate x hours ($1.38) where the table
    # showed the same plan with the spot allowance ($1.66). One number now: the plan's.
    job = load_job(ROOT / "examples" / "llama-8b-qlora-deadline.yaml").model_copy(
        update={"providers": None, "gpus": ["L40S", "H100"]})
    offers = [Offer("x", "r", "l40s-box", "L40S", 1, 48, 8, 64, 1.0, 0.26, "t", "2026-01-01"),
              Offer("x", "r", "h100-box", "H100-SXM", 1, 80, 16, 128, 3.0, None, "t",
                    "2026-01-01")]
    report = recommend(job, offers)
    best = report.recommended
    assert (best.gpu, best.pricing) == ("L40S", "spot") and best.allowance > 0
    _, plans = plot_inputs(job, report, offers)
    bars = {r.gpu: r for r in ranking(list(plans.values()))}
    assert set(bars) == {"L40S", "H100-SXM"}
    shown = bars["L40S"].dollars
    assert shown == best.cost_per_run == plan_row(best)["cost_per_run"]
    assert shown == pytest.approx(best.groups[0].hours_per_run * 0.26 * (1 + best.allowance))
    assert f"${shown:.2f} per fine-tune" in " ".join(render_text(report).split())
    h100 = next(p for p in report.plans if p.gpu == "H100-SXM")
    assert bars["H100-SXM"].dollars == h100.cost_per_run


@dataclass(frozen=True)
class _OldEstimate:  # a SplitEstimate without band fields
    seconds_per_update: float


def test_band_is_optional() -> None:
    assert band_of(_OldEstimate(1.0)) is None  # type: ignore[arg-type]
    assert band_of(_est("L4", 1, 1.5, low=1.2, high=1.9)) == (1.2, 1.9)
    assert band_of(_est("L4", 1, 1.5, low=2.0, high=1.9)) is None  # not a band


@pytest.mark.slow  # renders with matplotlib
def test_draw_writes_a_png_with_the_expected_series(tmp_path: Path) -> None:
    from matplotlib.image import imread

    out = tmp_path / "plot.png"
    series = plot_series(ESTIMATES, ["T4", "L4"], SPLITS)
    ranked = ranking([_plan(ESTIMATES[2], 0.5), _plan(ESTIMATES[4], 0.8)])
    drawn = draw(series, ranked, SPLITS, out, "test", chosen="T4")
    assert drawn == [
        "rank:L4", "rank:L4 band", "rank:T4",  # cheapest first; T4 has no band
        "splits:T4 1x4", "splits:T4 2x2", "splits:T4 4x1",
    ]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    height, width = imread(out).shape[:2]
    assert width > 1000 and height > 400
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]  # no temp file left


def _files(tmp_path: Path) -> tuple[Path, Path]:
    prices = tmp_path / "prices.csv"
    prices.write_text(f"{HEADER}\nx,r,t4-box,T4,1,16,4,16,0.526,,t,2026-01-01\n"
                      "x,r,l4-box,L4,1,24,4,16,0.80,,t,2026-01-01\n")
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    return job, prices


@pytest.mark.slow  # renders with matplotlib
def test_recommend_plot_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import gacost.commands.recommend as command

    drawn: list[list[str]] = []
    original = command.recommend_plot

    def spy(*args: object, **kwargs: object) -> list[str]:
        result = original(*args, **kwargs)  # type: ignore[arg-type]
        drawn.append(result)
        return result

    monkeypatch.setattr(command, "recommend_plot", spy)
    job, prices = _files(tmp_path)
    png = tmp_path / "out.png"
    assert main(["recommend", "--job", str(job), "--prices", str(prices), "--plot",
                 str(png)]) == 0
    assert capsys.readouterr().out.rstrip().endswith(f"plot: {png}")
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert {"rank:T4", "rank:L4"} <= set(drawn[0])
    assert any(d.startswith("splits:") for d in drawn[0])
    html = tmp_path / "report.html"
    assert main(["recommend", "--job", str(job), "--prices", str(prices), "--format", "json",
                 "--plot", str(html)]) == 0
    assert capsys.readouterr().out.startswith("{")  # JSON stays clean
    page = html.read_text()
    assert "data:image/png;base64," in page and "Recommended:" in page


@pytest.mark.slow  # renders with matplotlib
def test_bad_plot_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job, prices = _files(tmp_path)
    assert main(["recommend", "--job", str(job), "--plot", str(tmp_path / "x.jpg")]) == 1
    assert "error: --plot: use a .png, .svg, .pdf, .html file name" in capsys.readouterr().err
    missing = tmp_path / "no" / "such" / "x.png"
    assert main(["recommend", "--job", str(job), "--prices", str(prices), "--plot",
                 str(missing)]) == 1
    assert f"error: --plot: cannot write {missing}" in capsys.readouterr().err
    with pytest.raises(DataError):
        draw([], [], SPLITS, missing, "t")


def test_missing_matplotlib_is_a_clear_error(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(GacostError, match=r"--plot needs matplotlib: pip install 'gacost\[plot\]'"):
        draw([], [], SPLITS, tmp_path / "x.png", "t")


def test_recommend_without_plot_does_not_import_matplotlib(tmp_path: Path) -> None:
    job, prices = _files(tmp_path)
    code = ("import sys; from gacost.commands.cli import main; "
            f"rc = main(['recommend', '--job', {str(job)!r}, '--prices', {str(prices)!r}]); "
            "assert rc == 0; assert 'matplotlib' not in sys.modules, 'imported'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
