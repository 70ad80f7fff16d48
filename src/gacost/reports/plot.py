"""``recommend --plot``: seconds per update and dollars per fine-tune against the split.

One line per GPU (the cheapest few), two panels: seconds per update (log scale) and dollars
per fine-tune at that GPU's cheapest offer. Measured splits are filled markers; predicted
ones are hollow markers over their uncertainty band where the model gives one. Splits that
do not fit are left out. matplotlib (Agg) is imported only when a plot is drawn; files are
written atomically (a temporary file, then ``os.replace``). ``.png``, ``.svg`` and ``.pdf``
are images; ``.html`` is a page with the PNG embedded and the text report under it.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gacost.advisor.recommend import Report, recommend
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.atomic import write_atomic
from gacost.base.errors import DataError, GacostError
from gacost.base.job import Job
from gacost.base.profile import Profile
from gacost.base.records import Offer

Metric = Literal["seconds", "dollars"]
Kind = Literal["measured", "predicted"]
SUFFIXES = (".png", ".svg", ".pdf", ".html")
_BAND_ATTRS = (("seconds_low", "seconds_high"), ("seconds_per_update_low",
                                                   "seconds_per_update_high"))


@dataclass(frozen=True)
class Series:
    """Points of one GPU, one metric and one time source; ``x`` indexes the job's splits."""

    gpu: str
    metric: Metric
    kind: Kind
    x: tuple[int, ...]
    values: tuple[float, ...]
    low: tuple[float, ...] | None
    high: tuple[float, ...] | None
    rate_hour: float

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


def plot_series(estimates: Sequence[SplitEstimate], rates: dict[str, float], updates: int,
                splits: Sequence[tuple[int, int]]) -> list[Series]:
    """Series for the GPUs in ``rates`` (in its order): seconds and dollars per fine-tune."""
    index = {s: i for i, s in enumerate(splits)}
    out: list[Series] = []
    for gpu, rate in rates.items():
        for kind in ("measured", "predicted"):
            points = sorted(
                (index[(e.micro_batch, e.grad_accum)], e) for e in estimates
                if e.gpu == gpu and e.time_source == kind and e.fits
                and e.seconds_per_update is not None and (e.micro_batch, e.grad_accum) in index
            )
            if not points:
                continue
            xs = tuple(i for i, _ in points)
            secs = [e.seconds_per_update or 0.0 for _, e in points]
            bands = [band_of(e) for _, e in points]
            low = tuple(b[0] for b in bands if b) if all(bands) else None
            high = tuple(b[1] for b in bands if b) if all(bands) else None
            to_usd = updates * rate / 3600.0
            out.append(Series(gpu, "seconds", kind, xs, tuple(secs), low, high, rate))
            out.append(Series(
                gpu, "dollars", kind, xs, tuple(s * to_usd for s in secs),
                None if low is None else tuple(v * to_usd for v in low),
                None if high is None else tuple(v * to_usd for v in high), rate,
            ))
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


def draw(series: Sequence[Series], splits: Sequence[tuple[int, int]], path: str | Path,
         title: str, report_text: str = "") -> list[str]:
    """Draw and write the figure; returns ``metric:label`` for every series and band drawn."""
    p = check_path(path)
    plt = _pyplot()
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    fig, axes = plt.subplots(1, 2, figsize=(13, 5.2), constrained_layout=True)
    gpus = list(dict.fromkeys(s.gpu for s in series))
    colors = {g: plt.get_cmap("tab10")(i % 10) for i, g in enumerate(gpus)}
    width = 0.5 / max(1, len(gpus))  # dodge the GPUs so their bands do not overlap
    offset = {g: (i - (len(gpus) - 1) / 2) * width for i, g in enumerate(gpus)}
    drawn: list[str] = []
    panels = {"seconds": axes[0], "dollars": axes[1]}
    for s in series:
        ax, color = panels[s.metric], colors[s.gpu]
        xs = [x + offset[s.gpu] for x in s.x]
        if s.low is not None and s.high is not None:
            ax.errorbar(xs, s.values, yerr=[[v - lo for v, lo in zip(s.values, s.low,
                                                                        strict=True)],
                                            [hi - v for v, hi in zip(s.values, s.high,
                                                                        strict=True)]],
                        fmt="none", ecolor=color, alpha=0.55, capsize=3, linewidth=1.2,
                        gid=f"{s.metric}:{s.label} band")
            drawn.append(f"{s.metric}:{s.label} band")
        filled = s.kind == "measured"
        ax.plot(xs, s.values, color=color, linestyle="-" if filled else "--",
                marker="o" if filled else "D", markersize=7 if filled else 6,
                markerfacecolor=color if filled else "white", markeredgecolor=color,
                markeredgewidth=1.5, label=s.label, gid=f"{s.metric}:{s.label}")
        drawn.append(f"{s.metric}:{s.label}")
    labels = [f"{m}x{k}" for m, k in splits]
    plain = FuncFormatter(lambda v, _pos: f"{v:g}")
    sparse = FuncFormatter(lambda v, _pos: f"{v:g}" if f"{v:e}"[0] in "235" else "")
    for ax, ylabel in ((axes[0], "seconds per optimizer update (log scale)"),
                       (axes[1], "$ per fine-tune at the GPU's cheapest offer (log scale)")):
        ax.set_xticks(range(len(labels)), labels)
        ax.set_xlim(-0.5, len(labels) - 0.5)
        ax.set_xlabel("split: micro-batch m x accumulation steps k")
        ax.set_ylabel(ylabel)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(plain)
        low, high = ax.get_ylim()
        ax.yaxis.set_minor_formatter(plain if high < 10 * low else sparse)
        ax.tick_params(axis="y", which="minor", labelsize="x-small")
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", alpha=0.12)
    axes[0].set_title("time per update")
    axes[1].set_title("cost per fine-tune")
    rates = {s.gpu: s.rate_hour for s in series}
    handles: list[Any] = [Line2D([], [], color=colors[g], linewidth=2.5,
                                 label=f"{g} (${rates[g]:.3f}/h)") for g in gpus]
    handles += [
        Line2D([], [], color="gray", marker="o", linestyle="-", label="measured"),
        Line2D([], [], color="gray", marker="D", markerfacecolor="white", linestyle="--",
               label="predicted"),
        Line2D([], [], color="gray", marker="_", markersize=10, linestyle="-", alpha=0.55,
               label="90% band"),
    ]
    axes[1].legend(handles=handles, loc="center left", bbox_to_anchor=(1.02, 0.5),
                   fontsize="small", frameon=False)
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
                profiles: Sequence[Profile] = (), max_gpus: int = 6
                ) -> tuple[list[SplitEstimate], dict[str, float]]:
    """Estimates and cheapest rates: the recommended GPU, the next cheapest ones (up to
    ``max_gpus`` in all) and up to two more that have measured splits."""
    plain = job.model_copy(update={"sweep": None, "objective": "min_cost",
                                   "deadline_hours": None, "budget_usd": None})
    overview = recommend(plain, offers, profiles, top=2 * len(offers) + 1)
    rates: dict[str, float] = {}
    for plan in overview.plans:  # cheapest first
        rates[plan.gpu] = min(rates.get(plan.gpu, plan.rate_hour), plan.rate_hour)
    ranked = [report.recommended.gpu, *(g for g in rates if g != report.recommended.gpu)]
    estimates: list[SplitEstimate] | None = getattr(overview, "estimates", None) or None
    if estimates is None:  # a Report without the full table: one GPU at a time
        estimates = []
        for gpu in ranked:
            one = recommend(plain.model_copy(update={"gpus": [gpu]}), offers, profiles, top=1)
            estimates += one.splits_on_recommended
    measured = {e.gpu for e in estimates if e.time_source == "measured" and e.fits}
    chosen = ranked[:max_gpus]
    chosen += [g for g in ranked if g in measured and g not in chosen][:2]
    rates[report.recommended.gpu] = min(rates.get(report.recommended.gpu, float("inf")),
                                        report.recommended.rate_hour)
    return [e for e in estimates if e.gpu in chosen], {g: rates[g] for g in chosen}


def recommend_plot(job: Job, report: Report, offers: Sequence[Offer],
                   profiles: Sequence[Profile], path: str | Path,
                   report_text: str = "") -> list[str]:
    """The ``recommend --plot`` figure for ``report``; returns what :func:`draw` drew."""
    check_path(path)
    estimates, rates = plot_inputs(job, report, offers, profiles)
    series = plot_series(estimates, rates, job.updates, job.splits())
    title = (f"{report.model}: {job.updates} updates, effective batch {job.effective_batch}, "
             f"{job.sequence_length} tokens, {job.precision}")
    return draw(series, job.splits(), path, title, report_text)
