"""Data-parallel planning: the gpus_per_run key, the all-reduce term, multi-GPU offers."""

from __future__ import annotations

from typing import Any

import pytest

from gacost.advisor import predictor, time_model
from gacost.advisor.planner import Limits, RunGroup, candidate_plans
from gacost.advisor.recommend import recommend
from gacost.advisor.split_estimates import SplitEstimate
from gacost.advisor.time_model import Link, TrainSetup
from gacost.base import gpu_table, models
from gacost.base.errors import JobSpecError
from gacost.base.job import parse_job
from gacost.base.profile import Profile, SplitResult
from gacost.base.records import Offer

BASE: dict[str, Any] = {
    "model": "Qwen3-1.7B",
    "sequence_length": 1024,
    "effective_batch": 32,
    "work": {"updates": 100},
    "gpus": ["H100-SXM", "L4"],
}
LINK = Link("test", 100e9, 1e-5)


def _offer(gpu: str, count: float, price: float, name: str = "") -> Offer:
    return Offer("test", "r1", name or f"{count:g}x-{gpu}", gpu, count, 80.0, 8, 64.0, price,
                 None, "test", "2026-01-01")


OFFERS = [
    _offer("H100-SXM", 1, 3.0),
    _offer("H100-SXM", 8, 24.0),
    _offer("H100-SXM", 2, 6.0),
    _offer("L4", 1, 0.7),
    _offer("L4", 0.5, 0.4),
]


def test_default_world_is_one_and_splits_are_unchanged() -> None:
    job = parse_job(BASE)
    assert job.gpus_per_run == 1 and job.world_sizes() == (1,)
    assert job.splits() == job.splits(1) == tuple((m, 32 // m) for m in (1, 2, 4, 8, 16, 32))


def test_splits_multiply_to_the_effective_batch_with_the_world_size() -> None:
    job = parse_job({**BASE, "gpus_per_run": 8})
    assert job.splits() == ((1, 4), (2, 2), (4, 1))
    assert all(m * k * 8 == 32 for m, k in job.splits())
    choose = parse_job({**BASE, "effective_batch": 12, "gpus_per_run": "choose"})
    assert choose.world_sizes() == (1, 2, 4)
    assert choose.splits(4) == ((1, 3), (3, 1))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"gpus_per_run": 3}, "gpus_per_run: effective_batch 32 is not divisible by 3 GPUs"),
        ({"gpus_per_run": 0}, "gpus_per_run: must be a GPU count from 1 to 64, or 'choose'"),
        ({"gpus_per_run": "all"}, "gpus_per_run: must be a GPU count from 1 to 64"),
        ({"gpus_per_run": True}, "gpus_per_run: must be a GPU count"),
        ({"gpus_per_run": 8, "micro_batches": [8]}, "micro_batches: 8 does not divide the "
         "per-GPU batch 4"),
        ({"gpus_per_run": 4, "sweep": [{"name": "a", "runs": 1, "effective_batch": 6}]},
         "gpus_per_run: effective_batch 6 is not divisible by 4 GPUs"),
    ],
)
def test_bad_world_sizes_are_one_line_errors(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(JobSpecError) as info:
        parse_job({**BASE, **extra})
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_ring_allreduce_known_numbers() -> None:
    assert time_model.allreduce_seconds(1e9, 1, LINK) == 0.0
    # 2(N-1)/N * bytes / bw + 2(N-1) * latency
    assert time_model.allreduce_seconds(1e9, 2, LINK) == pytest.approx(0.01 + 2e-5)
    assert time_model.allreduce_seconds(1e9, 8, LINK) == pytest.approx(1.75 * 0.01 + 14e-5)
    assert time_model.allreduce_seconds(0.0, 4, LINK) == pytest.approx(6e-5)


def test_interconnect_defaults() -> None:
    for gpu in ("H100-SXM", "H200-SXM", "A100-80GB-SXM", "V100-SXM2-16GB", "MI300X", "B200"):
        assert time_model.interconnect_for(gpu).kind == "nvlink"
    for gpu in ("L4", "T4", "A100-80GB-PCIe", "H100-PCIe", "H100-NVL", "RTX-4090", "RTX-5090"):
        assert time_model.interconnect_for(gpu).kind == "pcie"
    assert time_model.LINKS["nvlink"].bandwidth > 10 * time_model.LINKS["pcie"].bandwidth


def _setup(method: str) -> TrainSetup:
    return TrainSetup(method, 16, ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                   "up_proj", "down_proj"), 1024, "bf16", True)


def test_lora_gradients_are_small_and_full_fine_tunes_large() -> None:
    name, cfg = models.load_model_config("Qwen3-1.7B")
    arch = models.model_arch(name, cfg)
    lora = time_model.work_costs(arch, _setup("lora"))
    full = time_model.work_costs(arch, _setup("full"))
    assert time_model.gradient_bytes(lora, "lora", "bf16") == 4 * lora.trainable_params
    assert time_model.gradient_bytes(full, "full", "bf16") == 2 * arch.total_params
    link = time_model.LINKS["pcie"]
    t_lora = time_model.comm_seconds(lora, "lora", "bf16", 8, link)
    t_full = time_model.comm_seconds(full, "full", "bf16", 8, link)
    assert t_lora < 0.05 < 0.2 < t_full and t_full > 20 * t_lora
    assert predictor.comm_seconds(arch, _setup("lora"), "H100-SXM", 8) < t_lora  # NVLink is faster


def test_predicted_multi_gpu_time_adds_the_allreduce() -> None:
    name, cfg = models.load_model_config("Qwen3-1.7B")
    arch = models.model_arch(name, cfg)
    gpu = gpu_table.gpu_specs()["H100-SXM"]
    model = predictor.reference_model()
    one = model.seconds(arch, _setup("lora"), gpu, 4, 1)
    eight = model.seconds(arch, _setup("lora"), gpu, 4, 1, world=8)
    assert one is not None and eight is not None
    c = predictor.comm_seconds(arch, _setup("lora"), "H100-SXM", 8)
    assert c > 0 and eight.value == pytest.approx(one.value + c)
    assert eight.low == pytest.approx(one.low + c)


def _est(gpu: str, m: int, k: int, s: float, world: int = 1) -> SplitEstimate:
    return SplitEstimate(gpu, m, k, s, "predicted", 5.0, "predicted", 70.0, True,
                         world_size=world)


def test_planner_pairs_world_sizes_with_gpu_counts_priced_per_instance() -> None:
    group = RunGroup("job", 1, 3600, 1024, 32)
    estimates = [_est("H100-SXM", 4, 8, 2.0), _est("H100-SXM", 4, 1, 0.3, world=8)]
    plans, missing = candidate_plans([(group, estimates)], OFFERS, Limits())
    got = {(p.instance_type, p.split, p.estimate.world_size) for p in plans}
    # no 2-GPU estimate: the 2x box is left out; the L4 offers have no estimate at all
    assert got == {("1x-H100-SXM", "4x8", 1), ("8x-H100-SXM", "4x1 x 8 GPUs", 8)}
    assert missing == {}
    eight = next(p for p in plans if p.estimate.world_size == 8)
    # 3600 updates x 0.3 s = 1 h on the whole 8-GPU instance at its $24/h
    assert eight.rate_hour == 24.0 and eight.cost_per_run == pytest.approx(0.3 * 24.0)
    assert eight.cost == pytest.approx(0.3 * 24.0) and eight.instance_hours == pytest.approx(0.3)
    assert eight.gpu_hours == pytest.approx(8 * 0.3)  # eight GPUs busy for those 0.3 h
    assert eight.offer.gpu_count == 8
    one = next(p for p in plans if p.estimate.world_size == 1)
    assert one.cost == pytest.approx(2.0 * 3.0)  # 2 h on the $3/h single H100


def test_a_world_size_pairs_only_with_its_gpu_count() -> None:
    # Only a 2-GPU estimate: the 1-, 8-GPU and the fractional offers are all left out.
    group = RunGroup("job", 3, 100, 1024, 32)
    plans, _ = candidate_plans([(group, [_est("H100-SXM", 4, 4, 1.0, world=2)])], OFFERS,
                               Limits())
    assert [(p.instance_type, p.rate_hour, p.split) for p in plans] == [
        ("2x-H100-SXM", 6.0, "4x4 x 2 GPUs")]
    assert plans[0].cost == pytest.approx(3 * 100 * 1.0 / 3600 * 6.0)


def test_recommend_fixed_world_uses_only_matching_offers() -> None:
    report = recommend(parse_job({**BASE, "gpus_per_run": 8}), OFFERS)
    assert {p.instance_type for p in report.plans} == {"8x-H100-SXM"}
    assert all(p.estimate.world_size == 8
               and p.estimate.micro_batch * p.estimate.grad_accum * 8 == 32
               for p in report.plans)
    assert any("GPU count not 8" in n for n in report.notes)
    assert any("no 8-GPU offer" in n and "L4" in n for n in report.notes)


def test_recommend_choose_compares_single_and_multi_gpu_offers() -> None:
    report = recommend(parse_job({**BASE, "gpus_per_run": "choose"}), OFFERS, top=20)
    kinds = {(p.instance_type, p.estimate.world_size) for p in report.plans}
    assert kinds == {("1x-H100-SXM", 1), ("2x-H100-SXM", 2), ("8x-H100-SXM", 8), ("1x-L4", 1)}
    assert any("offers left out" in n for n in report.notes)  # the half L4
    fast = recommend(parse_job({**BASE, "gpus_per_run": "choose", "objective": "min_time"}),
                     OFFERS)
    assert fast.recommended.estimate.world_size == 8


def test_single_gpu_behaviour_is_unchanged() -> None:
    report = recommend(parse_job(BASE), OFFERS, top=20)
    assert {p.estimate.world_size for p in report.plans} == {1}
    assert any("multi-GPU or fractional-GPU offers left out (single-GPU job)" in n
               for n in report.notes)


def _eight_gpu_profile() -> Profile:
    job = parse_job({**BASE, "gpus_per_run": 8})
    name, _ = models.load_model_config(job.model)
    splits = tuple(SplitResult(m, k, "ok", 0.25 * k, peak_reserved_gib=20.0)
                   for m, k in job.splits())
    return Profile("H100-SXM", 80.0, job.workload(name), splits, "test 8-GPU", gpu_count=8,
                   host={"interconnect": "nvlink (NV18)"})


def test_a_multi_gpu_profile_is_measured_only_at_its_world_size() -> None:
    prof = _eight_gpu_profile()
    eight = recommend(parse_job({**BASE, "gpus_per_run": 8}), OFFERS, [prof])
    assert eight.recommended.time_source == "measured"
    assert eight.recommended.estimate.seconds_per_update == pytest.approx(0.25)
    one = recommend(parse_job(BASE), OFFERS, [prof], top=20)
    assert {p.time_source for p in one.plans} == {"predicted"}
    name, cfg = models.load_model_config(BASE["model"])
    times, mems = predictor.profile_observations(
        prof, models.model_arch(name, cfg), gpu_table.gpu_specs()["H100-SXM"]
    )
    assert times == [] and len(mems) == 3  # its times include the all-reduce: not fitted


def test_ddp_buckets_add_the_gradient_bytes_to_the_predicted_peak() -> None:
    name, cfg = models.load_model_config("Qwen3-1.7B")
    arch = models.model_arch(name, cfg)
    model = predictor.reference_model()
    for method in ("lora", "full"):
        one = model.peak_gib(arch, _setup(method), "H100-SXM", 2)
        eight = model.peak_gib(arch, _setup(method), "H100-SXM", 2, world=8)
        extra = predictor.ddp_bucket_gib(arch, _setup(method))
        assert eight.value == pytest.approx(one.value + extra)
    assert predictor.ddp_bucket_gib(arch, _setup("lora")) < 0.2 < 2.0 < predictor.ddp_bucket_gib(
        arch, _setup("full"))
