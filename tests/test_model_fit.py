"""Fits on hand-made data with known parameters, and the fitted model inside estimate/recommend."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gacost.advisor import memory_model, model_fit, predictor, time_model
from gacost.advisor.recommend import recommend
from gacost.advisor.split_estimates import estimate_splits
from gacost.advisor.time_model import TimeParams, TrainSetup
from gacost.base import gpu_table, models
from gacost.base.job import LINEAR_MODULES, load_job
from gacost.base.records import ModelArch, Offer
from gacost.commands.recommend import render_text, report_dict

SPECS = gpu_table.gpu_specs()
TRUTH = {  # host s per launch, GEMM efficiency (fraction of the sustained rate); GPU floor shared
    "T4": (25e-6, 0.80),
    "H200-SXM": (32e-6, 0.90),
}
TAU = 1.2e-6  # GPU seconds per launch


def _arch(name: str) -> ModelArch:
    model, cfg = models.load_model_config(name)
    return models.model_arch(model, cfg)


def _setup(seq: int, precision: str = "fp16") -> TrainSetup:
    return TrainSetup("lora", 16, LINEAR_MODULES, seq, precision, True)


def _obs(gpu: str, model: str, seq: int, batch: int, host: float | None = None,
         eff: float | None = None) -> list[model_fit.TimeObservation]:
    h, e = TRUTH[gpu]
    params = TimeParams(host if host is not None else h, eff if eff is not None else e, TAU)
    costs = time_model.work_costs(_arch(model), _setup(seq))
    rates = time_model.gpu_rates(SPECS[gpu], "fp16")
    assert rates is not None
    out = []
    m = 1
    while m <= batch:
        t = time_model.update_seconds(costs, rates, params, m, batch // m)
        out.append(model_fit.TimeObservation(gpu, costs, rates, m, batch // m, t, 0.02,
                                       f"{gpu} {model} s{seq} {m}x{batch // m}"))
        m *= 2
    return out


def _synthetic() -> list[model_fit.TimeObservation]:
    return [
        *_obs("T4", "Qwen/Qwen3-1.7B", 512, 4), *_obs("T4", "Qwen/Qwen3-1.7B", 1024, 2),
        *_obs("H200-SXM", "Qwen/Qwen3-1.7B", 512, 4), *_obs("H200-SXM", "Qwen/Qwen3-8B", 2048, 8),
    ]


def test_time_fit_recovers_known_parameters() -> None:
    f = model_fit.fit_time(_synthetic())
    for gpu, (_host, eff) in TRUTH.items():
        assert f.params(gpu).efficiency == pytest.approx(eff, rel=0.03)
    # the GPU floor per launch is hardly seen in wall times (it comes from traces): not checked
    # the H200 data include host-bound splits; the T4 ones are all GPU-bound
    assert f.params("H200-SXM").host_s_per_launch == pytest.approx(TRUTH["H200-SXM"][0],
                                                                   rel=0.03)
    assert f.scale == pytest.approx(1.0)
    fitted = {r.name for r in f.reports() if r.fitted}
    assert {"stack_eff", "host_base"} <= fitted


def test_three_gpu_bound_splits_fix_the_efficiency() -> None:
    obs = _obs("T4", "Qwen/Qwen3-1.7B", 512, 4, host=2e-6)
    f = model_fit.fit_time(obs)
    assert f.params("T4").efficiency == pytest.approx(0.80, rel=0.03)
    for o in obs:
        band = f.predict(o.gpu, o.costs, o.rates, o.m, o.k)
        assert band.low < o.seconds < band.high
        assert band.value == pytest.approx(o.seconds, rel=0.01)


def test_leave_one_out_on_exact_data_is_exact() -> None:
    rows = model_fit.loo_time(_synthetic())
    assert max(abs(r.rel_error) for r in rows) < 0.03
    assert all(r.covered for r in rows)


def test_unprofiled_gpu_gets_the_prior_and_a_wider_band() -> None:
    f = model_fit.fit_time(_synthetic())
    costs = time_model.work_costs(_arch("Qwen/Qwen3-8B"), _setup(2048))
    bands = {}
    for gpu in ("H200-SXM", "L40S"):
        rates = time_model.gpu_rates(SPECS[gpu], "fp16")
        assert rates is not None
        bands[gpu] = f.predict(gpu, costs, rates, 4, 2)
        assert bands[gpu].low < bands[gpu].value < bands[gpu].high
    width = {g: math.log(b.high / b.low) for g, b in bands.items()}
    # both carry the model's structural error (model_sd); the L40S also its priors
    assert width["L40S"] > width["H200-SXM"] + 0.05
    assert not f.has_data("L40S") and f.has_data("H200-SXM")


def test_fixed_parameters_stay_at_their_prior() -> None:
    prior = model_fit.Prior(0.5, 0.1)
    f = model_fit.fit_time(_obs("T4", "Qwen/Qwen3-1.7B", 512, 4), priors={"stack_eff": prior},
                     fixed=("stack_eff", "gpu_launch", "gpu_eff:T4"))
    assert f.params("T4").efficiency == pytest.approx(0.5)
    assert [r.name for r in f.reports()] == ["host_base", "host_dev:T4"]


def _peaks(slack_by_gpu: dict[str, float]) -> list[model_fit.MemObservation]:
    """Peaks the memory model gives with activation scale 1.15 and each GPU's slack."""
    obs = []
    for gpu, slack in slack_by_gpu.items():
        for model, seq in (("Qwen/Qwen3-1.7B", 512), ("Qwen/Qwen3-8B", 1024)):
            costs = memory_model.memory_costs(_arch(model), _setup(seq))
            for m in (1, 2, 4, 8):
                truth = memory_model.MemParams(1.15, slack)
                peak = memory_model.peak_reserved_gib(costs, truth, m, 1)  # k = 1, as below
                obs.append(model_fit.MemObservation(gpu, costs, m, peak, f"{gpu} {model} {m}", 1))
    return obs


def test_memory_fit_recovers_scale_and_slack() -> None:
    obs = _peaks({"T4": 1.2, "H200-SXM": 0.4})
    f = model_fit.fit_memory(obs)
    assert f.params("T4").activation_scale == pytest.approx(1.15, rel=0.02)
    assert f.params("T4").slack_gib == pytest.approx(1.2, abs=0.05)
    assert f.params("H200-SXM").slack_gib == pytest.approx(0.4, abs=0.05)
    assert f.params("L4").slack_gib == model_fit.MEM_PRIORS["slack"].center
    assert max(abs(r.rel_error) for r in model_fit.loo_memory(obs)) < 0.01


def test_a_gpu_without_a_memory_profile_takes_its_architectures_slack() -> None:
    """The allocator's reserve beyond the model's terms is the software stack's: a Hopper
    card nobody measured takes the H200's fitted slack (the prior's spread kept); an
    architecture nobody measured keeps the prior; the priors travel with the saved fit."""
    f = model_fit.with_sibling_slack(model_fit.fit_memory(_peaks({"T4": 1.2, "H200-SXM": 0.4})))
    assert f.params("H100-SXM").slack_gib == pytest.approx(0.4, abs=0.05)
    assert f.params("GH200").slack_gib == f.params("H100-SXM").slack_gib
    assert f.params("L4").slack_gib == model_fit.MEM_PRIORS["slack"].center  # Ada: none
    _, cov, _ = f.fit.distribution(["slack:H100-SXM"])
    assert cov[0][0] == pytest.approx(model_fit.MEM_PRIORS["slack"].sd ** 2)
    saved = model_fit.mem_fit_from_dict(model_fit.fit_to_dict(f.fit))
    assert saved.params("H100-SXM") == f.params("H100-SXM")
    # the H100's own peaks, where it has some, win over its sibling's, and a measured GPU
    # keeps its own prior
    own = model_fit.with_sibling_slack(
        model_fit.fit_memory(_peaks({"H200-SXM": 0.4, "H100-SXM": 1.0})))
    assert own.params("H100-SXM").slack_gib == pytest.approx(1.0, abs=0.05)
    assert "slack:H100-SXM" not in own.fit.overrides
    assert "slack:H200-SXM" not in f.fit.overrides and "slack:GH200" in own.fit.overrides


def test_time_ratio_keeps_shared_parameters_correlated() -> None:
    model = predictor.FittedModel(
        model_fit.fit_time(_synthetic()), model_fit.fit_memory([]), (), ()
    )
    arch, setup = _arch("Qwen/Qwen3-8B"), _setup(2048)
    a = predictor.RatioSide(SPECS["L40S"], 4, 2)
    b = predictor.RatioSide(SPECS["A100-80GB-SXM"], 4, 2)
    ratio = model.time_ratio(arch, setup, a, b)
    assert ratio is not None
    ba, bb = model.seconds(arch, setup, a.gpu, 4, 2), model.seconds(arch, setup, b.gpu, 4, 2)
    assert ba is not None and bb is not None
    assert ratio.value == pytest.approx(ba.value / bb.value)
    assert ratio.high / ratio.low < (ba.high / bb.low) / (ba.low / bb.high)
    same = model.time_ratio(arch, setup, a, a)
    assert same is not None and same.value == pytest.approx(1.0)


def test_estimates_carry_bands_and_mark_measured_vs_predicted() -> None:
    arch = _arch("Qwen/Qwen3-1.7B")
    t4 = next(p for p in predictor.reference_profiles() if p.gpu == "T4")
    rows, skipped = estimate_splits(arch, _setup(512), [SPECS["T4"], SPECS["L40S"]],
                                    [(1, 4), (2, 2), (4, 1)], [t4], 0.1)
    assert not skipped
    for e in rows:
        assert e.seconds_band is not None and e.peak_high_gib is not None
        assert e.seconds_band[0] <= (e.seconds_per_update or 0) <= e.seconds_band[1]
        assert e.time_source == ("measured" if e.gpu == "T4" else "predicted")
        assert e.headroom_gib is not None
    assert all("measured" in e.basis for e in rows if e.gpu == "T4")
    assert all("transferred" in e.basis for e in rows if e.gpu == "L40S")


def test_recommend_reports_fits_bands_and_calibration_advice() -> None:
    job = load_job(Path(__file__).parent.parent / "examples" / "qwen3-1.7b-lora.yaml")
    job = job.model_copy(update={"gpus": ["L4", "L40S"]})

    def offers(l4_rate: float) -> list[Offer]:
        return [
            Offer("test", "r1", "l4-box", "L4", 1, 24, 8, 32, l4_rate, None, "test", "2026-01"),
            Offer("test", "r1", "l40s-box", "L40S", 1, 48, 8, 64, 0.80, None, "test", "2026-01"),
        ]

    # price the L4 so that both GPUs cost about the same per fine-tune: predicted times
    # then decide, and their bands overlap
    best = recommend(job, offers(0.80)).best
    report = recommend(job, offers(0.80 * best["L40S"].seconds_per_update
                                   / best["L4"].seconds_per_update))
    assert report.calibrate and set(report.calibrate) <= {"L4", "L40S"}
    assert any("reaches 1" in a for a in report.advice)
    assert report.model_fit and "T4" in report.model_fit[0] and "H200-SXM" in report.model_fit[0]
    text = render_text(report)
    assert "90% band" in text and "calibrate:" in text and "headroom" in text
    assert '"seconds_low"' in json.dumps(report_dict(report))


def test_levers_on_auto_are_planned_with_compile_time_amortised_per_run() -> None:
    from gacost.advisor.estimate import lever_choices

    job = load_job(Path(__file__).parent.parent / "examples" / "qwen3-1.7b-lora.yaml")
    assert lever_choices(job) == [()]  # false by default: nothing changes
    auto = job.model_copy(update={"gpus": ["L4"], "torch_compile": "auto", "liger": True})
    assert lever_choices(auto) == [("liger",), ("torch_compile", "liger")]
    offers = [Offer("test", "r1", "l4-box", "L4", 1, 24, 8, 32, 0.80, None, "test", "2026-01")]
    report = recommend(auto, offers)
    by_split = {(e.split_label, e.setup_seconds) for e in report.estimates}
    assert ("4x1 +liger", 0.0) in by_split
    compiled = [e for e in report.estimates if "torch_compile" in e.levers]
    assert compiled and all(e.setup_seconds == pytest.approx(
        time_model.compile_seconds(_arch("Qwen/Qwen3-1.7B"))) for e in compiled)
    w = report.recommended
    saves = 10 * 0.209190912  # TRL's ten checkpoints (tests/test_budget.py)
    hours = (w.estimate.seconds_per_update * auto.updates + w.estimate.setup_seconds
             + saves) / 3600
    assert w.hours_per_run == pytest.approx(hours)
    assert any(n.startswith("levers on L4 at ") for n in report.notes)
    # fewer launches with compile: the host term, and so the time, is lower
    plain = {(e.micro_batch, e.grad_accum): e for e in report.estimates if e.levers == ("liger",)}
    for e in compiled:
        base = plain[(e.micro_batch, e.grad_accum)]
        assert e.seconds_per_update is not None and base.seconds_per_update is not None
        assert e.seconds_per_update < base.seconds_per_update


def test_a_host_bound_prediction_says_the_host_decides_it() -> None:
    job = load_job(Path(__file__).parent.parent / "examples" / "qwen3-1.7b-lora.yaml")
    job = job.model_copy(update={"gpus": ["H100-SXM"], "model": "Qwen/Qwen3-0.6B",
                                 "sequence_length": 256})
    offers = [Offer("test", "r1", "h100-box", "H100-SXM", 1, 80, 8, 64, 2.0, None, "test",
                    "2026-01")]
    report = recommend(job, offers)
    assert report.recommended.time_source == "predicted"
    host = [a for a in report.advice if "the host's CPU decides it" in a]
    assert host and "`gacost probe` on the rented instance" in host[0]
    unmeasured = predictor.reference_model().params("H100-SXM").host_s_per_launch
    assert f"a machine nobody measured: about {unmeasured * 1e6:.0f} us per kernel" in host[0]
    assert "`gacost calibrate` there measures it" in host[0]
    # the same job on a slow GPU is GPU-bound: no such line
    t4 = job.model_copy(update={"gpus": ["T4"], "precision": "fp16"})
    t4_offers = [Offer("test", "r1", "t4-box", "T4", 1, 16, 4, 16, 0.3, None, "test", "2026-01")]
    assert not any("host's CPU" in a for a in recommend(t4, t4_offers).advice)


def test_a_gpu_nobody_measured_takes_its_architectures_gemm_efficiency() -> None:
    """No shipped profile is an H100's; the H200's are (the same Hopper chip; run 19 ran the
    same splits' GEMMs 1-6 % apart on the two): the H100's device term is centred on the
    H200's fitted one with a narrow spread, not on the default an A100 (an architecture
    nobody measured) keeps."""
    import math

    from gacost.advisor import model_fit

    fit = predictor.reference_model().time
    h200 = fit.params("H200-SXM").efficiency
    h100 = fit.params("H100-SXM").efficiency
    a100 = fit.params("A100-80GB-SXM").efficiency
    assert abs(math.log(h100 / h200)) < model_fit.SIBLING_EFF_SD
    assert h100 > 1.05 * a100
    _, cov, _ = fit.fit.distribution(["gpu_eff:H100-SXM", "gpu_eff:A100-80GB-SXM"])
    assert cov[0][0] == pytest.approx(model_fit.SIBLING_EFF_SD**2)
    assert cov[1][1] > 4 * cov[0][0]


def test_a_profile_moves_only_its_own_gpus_host() -> None:
    """A user's profile of another workload on the L4, its times x10 (issue 19's case: it
    moved the global host base 28 -> 60 us and an L40S prediction 0.53 -> 0.76 s): now the
    L4's terms move, no other GPU's."""
    from dataclasses import replace

    job = load_job(Path(__file__).parent.parent / "examples" / "qwen3-1.7b-lora.yaml")
    # 1024 tokens: no shipped L4 measurement of this workload, so the L4 is predicted
    job = job.model_copy(update={"gpus": ["L4", "L40S", "H100-SXM"], "sequence_length": 1024})
    offers = [Offer("test", "r1", f"{g}-box", g, 1, 80, 8, 64, 1.0, None, "test", "2026-01")
              for g in ("L4", "L40S", "H100-SXM")]
    other = next(p for p in predictor.reference_profiles()
                 if p.gpu == "H200-SXM" and "Qwen3-0.6B" in p.workload.model)
    slow = replace(other, gpu="L4", splits=tuple(
        replace(s, seconds_per_update=s.seconds_per_update * 10 if s.seconds_per_update else None)
        for s in other.splits))
    alone = recommend(job, offers).best
    informed = recommend(job, offers, [slow])
    for gpu in ("L40S", "H100-SXM"):
        assert informed.best[gpu].seconds_per_update == pytest.approx(
            alone[gpu].seconds_per_update, rel=1e-6)
    assert informed.best["L4"].seconds_per_update > 1.2 * alone["L4"].seconds_per_update
    assert any("informs L4's host and device terms only" in n for n in informed.notes)


def test_a_memory_profile_moves_only_its_own_gpus_slack() -> None:
    """A user's H100 profile whose peaks read 2 GiB over the H200's moves the H100's slack;
    the other Hopper cards keep the reference's sibling slack (the H200's), not the user's
    (the shared activation scale is fitted on every profile, so their peaks may move a
    little)."""
    from dataclasses import replace

    other = next(p for p in predictor.reference_profiles()
                 if p.gpu == "H200-SXM" and "Qwen3-0.6B" in p.workload.model)
    heavy = replace(other, gpu="H100-SXM", splits=tuple(
        replace(s, peak_reserved_gib=s.peak_reserved_gib + 2.0 if s.peak_reserved_gib
                else None) for s in other.splits))
    assert any(s.peak_reserved_gib for s in heavy.splits)
    reference = predictor.reference_model().memory
    informed = predictor.with_user_profiles(_arch("Qwen/Qwen3-0.6B"), [heavy]).memory
    assert informed.params("H100-SXM").slack_gib > reference.params("H100-SXM").slack_gib + 1.5
    for gpu in ("GH200", "H100-PCIe"):  # the activation scale is global: it may move
        assert informed.params(gpu).slack_gib == reference.params(gpu).slack_gib
    assert reference.params("H100-SXM").slack_gib == reference.params("H200-SXM").slack_gib
    # the same, fitted in this process rather than read from data/reference_fit.json
    predictor._CACHE.clear()
    fresh = predictor.fitted_model(predictor.reference_profiles()).memory
    assert fresh.params("H100-SXM").slack_gib == pytest.approx(
        fresh.params("H200-SXM").slack_gib)
    assert fresh.params("H100-SXM").slack_gib != model_fit.MEM_PRIORS["slack"].center
    # the JSON's basis says where each GPU's slack comes from
    model = predictor.reference_model()
    assert "memory slack as H200-SXM (Hopper)" in model.basis("H100-SXM")
    assert "memory slack fitted to the H200-SXM profile(s)" in model.basis("H200-SXM")
    assert "memory slack at its prior" in model.basis("A100-80GB-SXM")


def test_a_recorded_run_wins_over_a_calibration_of_the_same_workload() -> None:
    """GacostCallback timed the user's own run within 0.6% of its script's timer; a
    calibration of the same workload and GPU read 10-31% off: the recorded run wins, in
    either order."""
    from dataclasses import replace

    from gacost.base.profile import RECORDED_SOURCE

    t4 = next(p for p in predictor.reference_profiles() if p.gpu == "T4")
    recorded = replace(t4, source=RECORDED_SOURCE, splits=tuple(
        replace(s, seconds_per_update=s.seconds_per_update * 1.3 if s.seconds_per_update
                else None) for s in t4.splits))
    arch = _arch("Qwen/Qwen3-1.7B")
    for order in ([t4, recorded], [recorded, t4]):
        rows, _ = estimate_splits(arch, _setup(512), [SPECS["T4"]], [(4, 1)], order, 0.1)
        (row,) = rows
        assert row.seconds_per_update == recorded.split(4, 1).seconds_per_update
        assert RECORDED_SOURCE in row.basis


def test_the_host_belongs_to_the_machine_a_profile_ran_on() -> None:
    """Two machines with the same GPU kind: a slow host's profile fits that machine's host
    term; predictions for that GPU use it only on that machine (your profile: calibrate
    where you would rent); an unmeasured machine keeps the host of all measured machines
    with the spread between machines in its band."""
    from dataclasses import replace

    from gacost.base.profile import Profile

    arch = _arch("Qwen/Qwen3-0.6B")
    ref = predictor.reference_model()
    other = next(p for p in predictor.reference_profiles()
                 if p.gpu == "H200-SXM" and "Qwen3-0.6B" in p.workload.model)
    slow_host = {"system_vendor": "Example Cloud", "system_product": "vm-1", "cpu": "Slow CPU",
                 "cpu_count": "4", "hypervisor": "yes", "driver": "1"}
    # x1.8 (x1.6 until a machine nobody measured moved to the centre of the measured
    # machines, 1.07x host_base: the slow host must stay 1.3x beyond that)
    slow: Profile = replace(other, host=slow_host, splits=tuple(
        replace(s, seconds_per_update=s.seconds_per_update * 1.8 if s.seconds_per_update
                else None) for s in other.splits))
    assert slow.machine == "H200-SXM on Example Cloud, vm-1, Slow CPU, 4, yes"
    assert replace(slow, host={**slow_host, "driver": "2"}).machine == slow.machine
    assert other.machine != slow.machine
    fitted = predictor.fitted_model([*predictor.reference_profiles(), slow], archs=[arch],
                                    anchor=ref)
    assert fitted.time.has_machine(slow.machine)
    setup = predictor.setup_for(other.workload)
    spec = SPECS["H200-SXM"]
    unmeasured = fitted.seconds(arch, setup, spec, 2, 8)
    on_slow = fitted.on_machines({"H200-SXM": slow.machine}).seconds(arch, setup, spec, 2, 8)
    reference = ref.seconds(arch, setup, spec, 2, 8)
    assert unmeasured and on_slow and reference
    assert on_slow.value > 1.3 * unmeasured.value  # host-bound split, the slow host's
    assert unmeasured.value == pytest.approx(reference.value, rel=0.05)
    # the user's slow machine is measured, not a vote for the machines nobody measured
    assert fitted.time.unmeasured_host == ref.time.unmeasured_host
    # an unmeasured machine's band carries the spread between machines (today 1.38x the
    # measured machine's log-width; both carry the reference fit's residual scale, 2.98)
    assert math.log(unmeasured.high / unmeasured.low) > 1.3 * math.log(on_slow.high / on_slow.low)
    assert "unmeasured machine" in fitted.basis("H200-SXM")
    assert slow.machine in fitted.on_machines({"H200-SXM": slow.machine}).basis("H200-SXM")


def test_a_machine_nobody_measured_is_at_the_centre_of_the_measured_machines() -> None:
    """The reference fit's machines (the lent H200's host and the Colab runtimes of the two
    published rows), one vote each: a machine nobody measured gets their geometric mean host,
    not the prior's centre on host_base, which the fit pulls toward the machines of the
    global fit alone."""
    ref = predictor.reference_model()
    hosts = {r.name: r.value for r in ref.time.reports() if r.name.startswith("host_dev:")}
    assert len(hosts) == 3 and any("L4" in n for n in hosts) and any("T4" in n for n in hosts)
    centre = math.prod(hosts.values()) ** (1 / len(hosts))
    assert ref.time.unmeasured_host == pytest.approx(centre)
    assert 1.0 < centre < max(hosts.values())  # the L4 runtime's host is the slowest
    base = ref.time.params("A100-80GB-SXM", "")
    for gpu, machine in (("H100-SXM", ""), ("L40S", "somewhere else")):
        assert ref.time.params(gpu, machine).host_s_per_launch == pytest.approx(
            base.host_s_per_launch)
    host_base = dict(zip(model_fit.TIME_GLOBALS, ref.time.distribution(
        model_fit.TIME_GLOBALS)[0], strict=True))["host_base"]
    assert base.host_s_per_launch == pytest.approx(math.exp(host_base) * centre)


def test_a_fit_centres_the_unmeasured_host_on_its_own_machines_or_its_anchors() -> None:
    """Without an anchor a fit's machines vote, one each; with one, the anchor's centre is
    kept, and the new machines' priors are drawn from it."""
    from dataclasses import replace

    other = next(p for p in predictor.reference_profiles()
                 if p.gpu == "H200-SXM" and "Qwen3-0.6B" in p.workload.model)

    def on(name: str, factor: float) -> object:
        return replace(other, host={"cpu": name}, splits=tuple(
            replace(s, seconds_per_update=s.seconds_per_update * factor
                    if s.seconds_per_update else None) for s in other.splits))

    fast, slow = on("fast CPU", 0.8), on("slow CPU", 1.6)
    own = predictor.fitted_model([fast, slow])  # H200 only: a fit of its own, no anchor
    hosts = [r.value for r in own.time.reports() if r.name.startswith("host_dev:")]
    assert len(hosts) == 2 and hosts[1] > 1.5 * hosts[0]
    assert own.time.unmeasured_host == pytest.approx(math.sqrt(hosts[0] * hosts[1]))
    assert own.time.params("L40S").host_s_per_launch == pytest.approx(
        own.time.params("L40S", "").host_s_per_launch)
    base = replace(own.time, unmeasured_host=1.0).params("L40S").host_s_per_launch
    assert own.time.params("L40S").host_s_per_launch == pytest.approx(
        base * own.time.unmeasured_host)
    # a third machine fitted against it: measured, but no vote for the machines nobody measured
    third = predictor.fitted_model([on("third CPU", 3.0)], anchor=own)
    assert third.time.unmeasured_host == own.time.unmeasured_host
    assert third.time.fit.prior_of("host_dev:H200-SXM on third CPU").center == pytest.approx(
        own.time.unmeasured_host)
    # the saved reference fit keeps its centre (recommend loads it instead of fitting)
    saved = model_fit.time_fit_from_dict(json.loads(
        (Path(__file__).parent.parent / "data" / predictor.REFERENCE_FIT).read_text())["time"])
    assert saved.unmeasured_host == pytest.approx(
        model_fit.typical_host_dev(saved)) and saved.unmeasured_host > 1.0


def test_a_calibration_run_one_split_per_process_gets_no_in_process_host_correction() -> None:
    from dataclasses import replace

    from gacost.base.profile import OWN_PROCESS

    cal = next(p for p in predictor.reference_profiles()
               if p.source.startswith("measured by gacost calibrate"))
    assert predictor.first_in_process(cal) is not None  # measured in one process
    isolated = replace(cal, provenance=cal.provenance + "; " + OWN_PROCESS)
    assert predictor.first_in_process(isolated) is None
    costs = time_model.work_costs(_arch("Qwen/Qwen3-1.7B"), _setup(512, "bf16"))
    assert predictor.as_measured(costs, isolated, 4) == costs


def test_a_measured_host_bound_split_carries_the_hosts_drift_in_its_band() -> None:
    """The next run of a measured split moves with the host (the same host-bound split ran
    10-20 % apart in back-to-back processes): its band is the measurement's interval widened
    by NOISE_HOST x the host share; a GPU-bound split keeps about its interval."""
    from gacost.advisor import split_estimates
    from gacost.base.profile import SplitResult

    r = SplitResult(4, 1, "ok", seconds_per_update=0.40, ci_low_s=0.39, ci_high_s=0.41)
    assert split_estimates._measured_band(r, 0.0) == pytest.approx((0.39, 0.41))
    lo, hi = split_estimates._measured_band(r, 1.0)
    drift = math.exp(model_fit.Z90 * model_fit.NOISE_HOST)
    assert hi / 0.40 == pytest.approx(math.exp(math.hypot(math.log(0.41 / 0.40),
                                                          math.log(drift))))
    assert 0.40 / lo > 1.2 and hi / 0.40 > 1.2
    # through recommend's estimates: the measured H200 profile of the example workload
    job = load_job(Path(__file__).parent.parent / "examples" / "qwen3-1.7b-lora.yaml")
    job = job.model_copy(update={"gpus": ["H200-SXM"], "precision": "bf16"})
    from gacost.advisor.estimate import estimate_job

    measured = [e for e in estimate_job(job, []).estimates if e.time_source == "measured"]
    assert measured
    for e in measured:
        assert e.seconds_low and e.seconds_high and e.seconds_per_update
        assert e.seconds_high / e.seconds_per_update > 1.15  # host-bound on the H200


def test_quadratic_form_is_grad_cov_grad_transposed() -> None:
    """Predictions from a saved fit propagate its covariance in plain floats (no numpy)."""
    grad = [[1.0, 2.0], [0.0, 1.0], [3.0, -1.0]]
    cov = [[2.0, 1.0], [1.0, 3.0]]
    # by hand: (g_i . cov . g_j) for the three gradient rows
    expected = [[18.0, 7.0, 5.0], [7.0, 3.0, 0.0], [5.0, 0.0, 15.0]]
    assert model_fit.quadratic_form(grad, cov) == expected
