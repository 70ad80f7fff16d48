"""When a recommendation rests on predictions too uncertain to separate it from the runner-up.

The winner beats the runner-up (the best plan on another GPU, and the next split on the
winner's GPU) by a ratio of costs (or hours): ``rate ratio x time ratio``. The time ratio's
90 % band comes from the fitted model, where parameters both sides share cancel. If the band
of the ratio reaches 1 and either side's time is predicted, the model does not settle the
decision: calibrate on the GPU(s) whose time is predicted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from gacost.advisor.model_fit import Band
from gacost.advisor.objectives import Objective
from gacost.advisor.planner import Plan
from gacost.advisor.predictor import FittedModel, RatioSide, TrainSetup
from gacost.advisor.split_estimates import SplitEstimate
from gacost.base.records import GpuSpec, ModelArch

Ratio = Callable[[SplitEstimate, SplitEstimate], Band | None]


@dataclass(frozen=True)
class Advice:
    """GPUs worth calibrating before committing, and why."""

    gpus: tuple[str, ...]
    reasons: tuple[str, ...]


def independent_ratio(a: SplitEstimate, b: SplitEstimate) -> Band | None:
    """``t_a / t_b`` from the two bands taken as independent extremes (no model at hand)."""
    if a.seconds_band is None or b.seconds_band is None or not a.seconds_per_update \
            or not b.seconds_per_update:
        return None
    return Band(a.seconds_per_update / b.seconds_per_update,
                a.seconds_band[0] / b.seconds_band[1], a.seconds_band[1] / b.seconds_band[0])


def model_ratio(model: FittedModel, arch: ModelArch, setup: TrainSetup,
                specs: Mapping[str, GpuSpec]) -> Ratio:
    """A ratio function backed by the fitted model (correlations kept)."""
    def side(e: SplitEstimate) -> RatioSide:
        measured = e.seconds_per_update if e.time_source == "measured" else None
        return RatioSide(specs[e.gpu], e.micro_batch, e.grad_accum, measured)

    def ratio(a: SplitEstimate, b: SplitEstimate) -> Band | None:
        if a.gpu not in specs or b.gpu not in specs:
            return independent_ratio(a, b)
        return model.time_ratio(arch, setup, side(a), side(b))

    return ratio


def calibration_advice(
    plans: Sequence[Plan],
    estimates: Sequence[SplitEstimate],
    objective: Objective,
    ratio: Ratio = independent_ratio,
) -> Advice:
    """Which GPUs to calibrate because the decision depends on overlapping predicted bands."""
    if not plans:
        return Advice((), ())
    w = plans[0]
    ew = w.estimate
    gpus: list[str] = []
    reasons: list[str] = []
    rival = next((p for p in plans[1:] if p.gpu != w.gpu), None)
    er = None if rival is None else rival.estimate
    if rival is not None and er is not None:
        predicted = [p.gpu for p in (w, rival) if p.time_source == "predicted"]
        band = ratio(ew, er) if predicted else None
        if band is not None:
            rates = 1.0 if objective.ranks_by_time else w.rate_hour / rival.rate_hour
            what = "hours" if objective.ranks_by_time else "cost"
            if rates * band.high >= 1.0:
                gpus += predicted
                reasons.append(
                    f"{w.gpu} vs runner-up {rival.gpu}: {what} ratio {rates * band.value:.2f} "
                    f"(90% band {rates * band.low:.2f}-{rates * band.high:.2f}) reaches 1 on "
                    f"predicted times; calibrate on {' and '.join(predicted)} "
                    "(`gacost calibrate`) before committing"
                )
    fitting = sorted(
        (e for e in estimates if e.gpu == w.gpu and e.fits and e is not ew
         and e.seconds_per_update is not None),
        key=lambda e: e.seconds_per_update or 0.0,
    )
    if fitting and "predicted" in (ew.time_source, fitting[0].time_source):
        e2 = fitting[0]
        band = ratio(ew, e2)
        if band is not None and band.high >= 1.0:
            gpus.append(w.gpu)
            reasons.append(
                f"on {w.gpu}, split {w.split} vs {e2.split}: time ratio "
                f"{band.value:.2f} (90% band {band.low:.2f}-{band.high:.2f}) reaches 1; "
                f"calibrating {w.gpu} picks the split"
            )
    if ew.memory_tight:
        gpus.append(w.gpu)
        reasons.append(
            f"on {w.gpu}, split {w.split} may not fit: its predicted peak band reaches "
            f"{ew.peak_high_gib:.1f} GiB of {ew.usable_gib:.1f} usable"
        )
    return Advice(tuple(dict.fromkeys(gpus)), tuple(reasons))
