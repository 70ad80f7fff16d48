"""``recommend --plot``: the ranking at a glance, and the splits of the chosen GPU.

Two panels on linear axes. Left: one horizontal bar per GPU (the cheapest few), the dollars
per fine-tune of its plan (the recommended plan for the recommended GPU, else the GPU's
cheapest plan), sorted cheapest on top, with the 90% band as an error bar and the split
written at the bar's end; the recommended GPU is highlighted. The dollars are the plan's
:attr:`~gacost.advisor.planner.Plan.cost_per_run`, the number the table and JSON show
(spot allowance included). Right: seconds per update of every split that fits on the
recommended GPU, with its band. Measured values are solid bars, predicted ones hatched.
matplotlib (Agg) is imported only when a plot is drawn; files are written atomically (a
temporary file, then ``os.replace``). ``.png``, ``.svg`` and ``.pdf`` are images;
``.html`` is a page with the PNG embedded and the text report under it.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gacost.advisor.estimate import HostProbe
from gacost.advisor.planner import Plan
from gacost.advisor.recommend import Report, recommend
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.atomic import write_atomic
from gacost.base.errors import DataError, GacostError
from gacost.base.job import Job
from gacost.base.profile import Profile
from gacost.base.records import Offer
from gacost.base.split import Split

Kind = Literal["measured", "predicted"]
SUFFIXES = (".png", ".svg", ".pdf", ".html")
_BAND_ATTRS = (("seconds_low", "seconds_high"), ("seconds_per_update_low",
                                                   "seconds_per_update_high"))


@dataclass(frozen=True)
class Series:
    """Seconds per update of one GPU and one time source; ``x`` indexes the job's splits."""

    gpu: str
    kind: Kind
    x: tuple[int, ...]
    values: tuple[float, ...]
    low: tuple[float, ...] | None
    high: tuple[float, ...] | None

    @property
    def label(self) -> str:
        """``GPU kind``, e.g. ``L4 predicted``."""
        return f"{self.gpu} {self.kind}"


def band_of(e: SplitEstimate) -> tuple[float, float] | None:
    """The estimate's (low, high) seconds per update, when the model provides them."""
    for lo_name, hi_name in _BAND_ATTRS:
        lo, hi = getattr(e, lo_name, None), getattr(e, hi_name, None)
        if isinstance(lo, int | float) and isinstance(hi, int | float) and hi >= lo > 0:
            return float(lo), float(hi)
    return None


def plot_series(estimates: Sequence[SplitEstimate], gpus: Sequence[str],
                splits: Sequence[Split]) -> list[Series]:
    """Seconds-per-update series for ``gpus`` (in that order)."""
    index = {s: i for i, s in enumerate(splits)}
    out: list[Series] = []
    for gpu in gpus:
        for kind in ("measured", "predicted"):
            points = sorted(
                (index[e.split], e) for e in estimates
                if e.gpu == gpu and e.time_source == kind and e.fits
                and e.seconds_per_update is not None and e.split in index
            )
            if not points:
                continue
            xs = tuple(i for i, _ in points)
            secs = [e.seconds_per_update or 0.0 for _, e in points]
            bands = [band_of(e) for _, e in points]
            low = tuple(b[0] for b in bands if b) if all(bands) else None
            high = tuple(b[1] for b in bands if b) if all(bands) else None
            out.append(Series(gpu, kind, xs, tuple(secs), low, high))
    return out


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise GacostError("--plot needs matplotlib: pip install 'gacost[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def check_path(path: str | Path) -> Path:
    """The output path, if its suffix is one we can write."""
    p = Path(path)
    if p.suffix.lower() not in SUFFIXES:
        raise DataError(f"--plot: use a {', '.join(SUFFIXES)} file name, got {p.name!r}")
    return p


@dataclass(frozen=True)
class Ranked:
    """One GPU's bar: its plan's split and dollars per fine-tune, with the 90% band."""

    gpu: str
    split: Split
    kind: Kind
    dollars: float
    low: float | None
    high: float | None
    rate_hour: float


def ranking(plans: Sequence[Plan]) -> list[Ranked]:
    """One bar per plan (one plan per GPU), cheapest first: the plan's own dollars per
    fine-tune (:attr:`Plan.cost_per_run`), its band scaled from the seconds band."""
    bars = []
    for p in plans:
        e, dollars = p.estimate, p.cost_per_run
        band = band_of(e)
        scale = None if band is None or not e.seconds_per_update else (
            band[0] / e.seconds_per_update, band[1] / e.seconds_per_update)
        bars.append(Ranked(p.gpu, e.split, e.time_source, dollars,
                           None if scale is None else dollars * scale[0],
                           None if scale is None else dollars * scale[1], p.rate_hour))
    return sorted(bars, key=lambda r: (r.dollars, r.gpu))


def draw(series: Sequence[Series], ranked: Sequence[Ranked],
         splits: Sequence[Split], path: str | Path, title: str,
         report_text: str = "", chosen: str | None = None) -> list[str]:
    """Draw and write the figure (``chosen``: the GPU whose splits the right panel shows,
    default the cheapest); returns ``rank:GPU``, ``rank:GPU band`` and ``splits:GPU mxk``
    for every bar and band drawn."""
    p = check_path(path)
    plt = _pyplot()
    from matplotlib.patches import Patch

    chosen = chosen if chosen in {r.gpu for r in ranked} else (
        ranked[0].gpu if ranked else None)
    fig, axes = plt.subplots(1, 2, figsize=(13, max(4.5, 1.2 + 0.45 * len(ranked))),
                             constrained_layout=True, width_ratios=(3, 2))
    drawn: list[str] = []
    ax = axes[0]
    top = max([r.high or r.dollars for r in ranked] or [1.0])
    for row, r in enumerate(ranked):
        y = len(ranked) - 1 - row  # cheapest on top
        color = "tab:orange" if r.gpu == chosen else "tab:blue"
        ax.barh(y, r.dollars, color=color, alpha=0.9 if r.kind == "measured" else 0.55,
                hatch="" if r.kind == "measured" else "//", edgecolor=color,
                gid=f"rank:{r.gpu}")
        drawn.append(f"rank:{r.gpu}")
        if r.low is not None and r.high is not None:
            ax.errorbar(r.dollars, y, xerr=[[r.dollars - r.low], [r.high - r.dollars]],
                        fmt="none", ecolor="black", capsize=4, linewidth=1.2,
                        gid=f"rank:{r.gpu} band")
            drawn.append(f"rank:{r.gpu} band")
        ax.text((r.high or r.dollars) + 0.01 * top, y,
                f" \\${r.dollars:.2f}  {r.split}  (\\${r.rate_hour:.3f}/h, {r.kind})",
                va="center", fontsize="small")
    ax.set_yticks(range(len(ranked)), [r.gpu for r in reversed(ranked)])
    ax.set_xlim(0, top * 1.6)
    ax.set_xlabel("\\$ per fine-tune of the GPU's plan (as in the table: spot allowance "
                  "included)")
    ax.set_title("ranking (cheapest on top; bar = best split, line = 90% band)")
    ax.grid(True, axis="x", alpha=0.3)
    ax = axes[1]
    mine = [s for s in series if s.gpu == chosen]
    labels = [str(split) for split in splits]
    for s in mine:
        for i, (x, value) in enumerate(zip(s.x, s.values, strict=True)):
            ax.bar(x, value, color="tab:orange", alpha=0.9 if s.kind == "measured" else 0.55,
                   hatch="" if s.kind == "measured" else "//", edgecolor="tab:orange",
                   gid=f"splits:{s.gpu} {labels[x]}")
            drawn.append(f"splits:{s.gpu} {labels[x]}")
            if s.low is not None and s.high is not None:
                ax.errorbar(x, value, yerr=[[value - s.low[i]], [s.high[i] - value]],
                            fmt="none", ecolor="black", capsize=4, linewidth=1.2)
            ax.text(x + 0.05, value, f"{value:.3g} s", ha="left", va="bottom",
                    fontsize="small")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_xlabel("split m x k (a split that does not fit is left out)")
    ax.set_ylabel("seconds per optimizer update")
    ax.set_title(f"splits on {chosen}" if chosen else "no split fits")
    ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend(handles=[
        Patch(facecolor="tab:orange", label="recommended GPU"),
        Patch(facecolor="tab:blue", label="other GPUs"),
        Patch(facecolor="white", edgecolor="gray", label="measured (solid)"),
        Patch(facecolor="white", edgecolor="gray", hatch="//", label="predicted (hatched)"),
    ], loc="upper right", fontsize="small")
    fig.suptitle(title)
    try:
        if p.suffix.lower() == ".html":
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=110)
            _write_atomic(p, _html_page(title, buf.getvalue(), report_text).encode("utf-8"))
        else:
            buf = io.BytesIO()
            fig.savefig(buf, format=p.suffix.lower().lstrip("."), dpi=110)
            _write_atomic(p, buf.getvalue())
    finally:
        plt.close(fig)
    return drawn


def _html_page(title: str, png: bytes, report_text: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (
        "<!doctype html>\n<html><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title></head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n"
        f"<img alt=\"seconds per update and dollars per fine-tune against the split\" "
        f"src=\"data:image/png;base64,{data}\">\n"
        f"<pre>{html.escape(report_text)}</pre>\n</body></html>\n"
    )


def _write_atomic(path: Path, data: bytes) -> None:
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise DataError(f"--plot: cannot write {path} ({exc.strerror or exc})") from None


def plot_inputs(job: Job, report: Report, offers: Sequence[Offer],
                profiles: Sequence[Profile] = (), max_gpus: int = 6,
                host_probe: HostProbe | None = None,
                ) -> tuple[list[SplitEstimate], dict[str, Plan]]:
    """Estimates and one plan per GPU: the recommended plan, then the cheapest plan of each
    next cheapest GPU (up to ``max_gpus`` in all) and of up to two more that have measured
    splits; ``host_probe`` as the report had it."""
    plain = job.model_copy(update={"sweep": None, "objective": "min_cost",
                                   "deadline_hours": None, "budget_usd": None})
    overview = recommend(plain, offers, profiles, top=2 * len(offers) + 1,
                         host_probe=host_probe)
    plans: dict[str, Plan] = {report.recommended.gpu: report.recommended}
    for plan in overview.plans:  # cheapest first
        plans.setdefault(plan.gpu, plan)
    ranked = list(plans)
    estimates: list[SplitEstimate] | None = getattr(overview, "estimates", None) or None
    if estimates is None:  # a Report without the full table: one GPU at a time
        estimates = []
        for gpu in ranked:
            one = recommend(plain.model_copy(update={"gpus": [gpu]}), offers, profiles, top=1,
                            host_probe=host_probe)
            estimates += one.splits_on_recommended
    measured = {e.gpu for e in estimates if e.time_source == "measured" and e.fits}
    chosen = ranked[:max_gpus]
    chosen += [g for g in ranked if g in measured and g not in chosen][:2]
    return [e for e in estimates if e.gpu in chosen], {g: plans[g] for g in chosen}


def recommend_plot(job: Job, report: Report, offers: Sequence[Offer],
                   profiles: Sequence[Profile], path: str | Path,
                   report_text: str = "", host_probe: HostProbe | None = None) -> list[str]:
    """The ``recommend --plot`` figure for ``report``; returns what :func:`draw` drew."""
    check_path(path)
    estimates, plans = plot_inputs(job, report, offers, profiles,
                                   host_probe=host_probe)
    series = plot_series(estimates, list(plans), job.splits())
    title = (f"{report.model}: {job.updates} updates, effective batch {job.effective_batch}, "
             f"{job.sequence_length} tokens, {job.precision}")
    return draw(series, ranking(list(plans.values())), job.splits(), path, title, report_text,
                chosen=report.recommended.gpu)
