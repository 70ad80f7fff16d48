"""Break-even ratios: A wins iff price_A < price_B / r with r = t_A / t_B."""

from __future__ import annotations

import pytest

from gacost.advisor.breakeven import GpuBest, all_pairs, best_splits, break_even
from gacost.advisor.split_estimates import SplitEstimate


def _b(gpu: str, s: float) -> GpuBest:
    return GpuBest(gpu, 4, 1, s, "measured")


@pytest.mark.parametrize(("r", "needed_discount"), [(1.4, 0.29), (1.8, 0.44)])
def test_design_examples(r: float, needed_discount: float) -> None:
    be = break_even(_b("A", r * 10.0), _b("B", 10.0))
    assert be.time_ratio == pytest.approx(r)
    assert 1 - be.threshold == pytest.approx(needed_discount, abs=0.005)


def test_winner_flips_exactly_at_the_threshold() -> None:
    a, b = _b("T4", 2.3792), _b("L4", 1.3)
    threshold = 1.3 / 2.3792
    rate_b = 0.8
    assert break_even(a, b, rate_b * threshold * 0.999, rate_b).a_wins_now is True
    assert break_even(a, b, rate_b * threshold * 1.001, rate_b).a_wins_now is False
    assert break_even(a, b).a_wins_now is None


def test_sentence_names_both_gpus_and_the_ratio() -> None:
    text = break_even(_b("T4", 2.0), _b("L4", 1.12), 0.526, 0.7068).sentence()
    assert text.startswith("T4 is cheaper than L4 only if its hourly rate is below 0.56 x L4's")
    assert "so L4 is cheaper" in text


def test_pairs_are_reciprocal() -> None:
    best = {"T4": _b("T4", 2.4), "L4": _b("L4", 1.3), "H100-SXM": _b("H100-SXM", 0.3)}
    pairs = {(p.gpu_a, p.gpu_b): p for p in all_pairs(best, {})}
    assert len(pairs) == 6
    for (a, b), p in pairs.items():
        assert p.threshold * pairs[(b, a)].threshold == pytest.approx(1.0)


def test_best_split_is_the_fastest_that_fits() -> None:
    rows = [
        SplitEstimate("T4", 1, 4, 2.9, "measured", 5.0, "measured", 14.0, True),
        SplitEstimate("T4", 4, 1, 2.0, "predicted", 15.0, "predicted", 14.0, False),
        SplitEstimate("T4", 2, 2, 2.6, "measured", 5.0, "measured", 14.0, True),
    ]
    best = best_splits(rows)["T4"]
    assert (best.micro_batch, best.grad_accum, best.seconds_per_update) == (2, 2, 2.6)
