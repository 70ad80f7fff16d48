"""What a fine-tune pays beyond hours x rate: billing granularity and minimum charge, start-up
time, and the expected restarts of an interruptible (spot) instance.

Pure functions over an :class:`~gacost.base.records.Offer`'s provider and a run's hours.
Terms are listed only where a public source states them (:data:`BILLING_TERMS`, each with its
source); any other provider is billed as the hours it runs (per second, no minimum), and
its start-up time is not charged, so unknown terms never invent a cost.

The risk-adjusted spot time charges the expected restarts: with ``rate`` interruptions per
instance-hour (Poisson) and a checkpoint every ``checkpoint_hours``, each interruption
loses half a checkpoint interval of work on average plus a restart (the start-up time), so
a run of ``T`` hours takes ``T / (1 - rate x (checkpoint_hours / 2 + restart_hours))``
(each hour of progress needs ``1 / (1 - loss per hour)`` hours of wall-clock; infinite when
the expected loss reaches one hour per hour).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class BillingTerms:
    """How one provider bills an instance, with the source of each figure."""

    granularity_s: float = 1.0  # time is billed in whole steps of this many seconds
    minimum_s: float = 0.0  # the least billed per instance start
    startup_s: float = 0.0  # billed seconds from start to the first training step
    source: str = "unknown: billed as the hours it runs"


#: provider -> terms, from the providers' pricing pages (read 2026-12).
BILLING_TERMS: dict[str, BillingTerms] = {
    "aws": BillingTerms(
        granularity_s=1.0,
        minimum_s=60.0,
        source="aws.amazon.com/ec2/pricing: Linux on-demand and spot per second, 60 s minimum",
    ),
    "gcp": BillingTerms(
        granularity_s=1.0,
        minimum_s=60.0,
        source="cloud.google.com/compute/vm-instance-pricing: per second, 1 minute minimum",
    ),
}

def terms_for(provider: str) -> BillingTerms:
    """The billing terms of ``provider`` (the default terms when none are sourced)."""
    return BILLING_TERMS.get(provider.lower(), BillingTerms())


def billed_hours(run_hours: float, terms: BillingTerms) -> float:
    """Hours billed for one instance running ``run_hours`` (plus its start-up time):
    rounded up to the granularity, at least the minimum."""
    seconds = max(run_hours, 0.0) * 3600.0 + terms.startup_s
    if terms.startup_s == 0 and terms.granularity_s <= 1.0 and seconds >= terms.minimum_s:
        return max(run_hours, 0.0)  # billed as it runs
    if terms.granularity_s > 1.0:
        seconds = math.ceil(seconds / terms.granularity_s - 1e-9) * terms.granularity_s
    return max(seconds, terms.minimum_s) / 3600.0


def spot_time_factor(rate_per_hour: float, checkpoint_hours: float, restart_hours: float) -> float:
    """Wall-clock per hour of progress on spot: ``1 / (1 - rate x (ckpt / 2 + restart))``."""
    loss = max(rate_per_hour, 0.0) * (max(checkpoint_hours, 0.0) / 2 + max(restart_hours, 0.0))
    return math.inf if loss >= 1.0 else 1.0 / (1.0 - loss)


def checkpoint_hours(seconds_per_update: float, save_steps: int) -> float:
    """Hours between checkpoints of a run saving every ``save_steps`` updates (a run that
    saves nothing: its updates)."""
    return max(seconds_per_update, 0.0) * save_steps / 3600.0


def spot_allowance(
    rate_per_hour: float | None,
    *,
    checkpoint_hours: float,
    restart_hours: float,
    default: float,
) -> float:
    """The extra share of time (and cost) a spot run takes: risk-adjusted where the
    interruption rate is published, else the job's ``default`` (e.g. 0.2)."""
    if rate_per_hour is None:
        return default
    factor = spot_time_factor(rate_per_hour, checkpoint_hours, restart_hours)
    return factor - 1.0 if math.isfinite(factor) else 10.0  # the planner's upper bound
