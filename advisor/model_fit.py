"""Fit the time and memory models to measurements: MAP least squares with documented priors.

Every parameter has a prior (log-normal for positive scales, normal for the memory slack).
The fit minimises the measurement residuals (log seconds over their noise; GiB over theirs)
plus the prior residuals with ``scipy.optimize.least_squares``; parameters the data do not
constrain stay at their prior. The posterior covariance (Gauss-Newton, scaled up by the
residual chi-square when it exceeds its degrees of freedom) gives every prediction a band.
Pure functions: no I/O, no torch. numpy and scipy load only to fit: a fit's results are plain
floats, so predicting from a saved fit (every ``recommend``) imports neither.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gacost.advisor import memory_model, time_model
from gacost.advisor.memory_model import MemoryCosts, MemParams
from gacost.advisor.time_model import GpuRates, TimeParams, WorkCosts
from gacost.base import gpu_table

if typing.TYPE_CHECKING:  # (not a name of its own: model_constants lists upper-case names)
    import numpy as np
    import numpy.typing as npt

    Vec = npt.NDArray[np.float64]

Floats = tuple[float, ...]
Matrix = tuple[Floats, ...]

Z90 = 1.6448536269514722  # two-sided 90 % band
TIME_NOISE = 0.05  # log sd of a median s/update without a CI (published, unknown protocol)
NOISE_GPU = 0.015  # run-to-run log sd of a GPU-bound split (H200 repeats: 0.2-2 %)
# extra run-to-run log sd of a host-bound split: the same split on the same GPU kind moves
# with the host (CPU, VM neighbours, the day). Pooled within-group log sd of 7 host-bound
# splits measured 2-3 times each on the lent H200 across hours and days (12 df: 0.142;
# bench/MODEL.md "Host spread"); it was 0.085 from repeats within one hour.
NOISE_HOST = 0.14
MEM_NOISE_FRAC = 0.02  # relative sd of a predicted peak beyond the fitted terms
MEM_NOISE_GIB = 0.05


@dataclass(frozen=True)
class Prior:
    """A prior: log-normal (``sd`` in natural-log units) or normal (``log=False``)."""

    center: float
    sd: float
    log: bool = True
    why: str = ""

    @property
    def mean(self) -> float:
        """The prior mean in fit coordinates."""
        return math.log(self.center) if self.log else self.center

    def value(self, x: float) -> float:
        """The parameter value of fit coordinate ``x``."""
        return math.exp(x) if self.log else x


def has_sustained_rate(gpu: str) -> bool:
    """Whether the GPU table gives ``gpu`` a sourced sustained matmul rate. The time model
    runs GEMMs at that rate (``time_model.gpu_rates``); a GPU without one falls back to its
    datasheet rate x matmul fraction and gets a wider prior on its deviation."""
    spec = gpu_table.gpu_specs().get(gpu)
    return spec is not None and spec.sustained_tflops is not None


TIME_PRIORS: dict[str, Prior] = {
    "stack_eff": Prior(0.9, 0.2, why="best efficiency of the frozen GEMMs against the sustained "
                       "matmul rate (H200 traces, the LoRA GEMMs' bytes taken out: 0.95-1.03 "
                       "of 794.5 TFLOP/s at large shapes)"),
    # the centre: the memory-bound GPU time's floor per launch fitted to the H200 traces
    # (bench/model_v2.py, "gpu_s_per_launch": 1.235 us)
    "gpu_launch": Prior(1.24e-6, 0.4,
                        why="GPU time floor per launched kernel (H200 sweep traces)"),
    "host_base": Prior(30e-6, 0.35, why="host seconds per kernel launch (lent H200 host 22-35 us "
                       "by configuration; a rented host's CPU is unknown)"),
    "host_dev": Prior(1.0, 0.3, why="one machine's host relative to host_base (CPU, VM, "
                      "stack): a machine nobody measured keeps this spread, centred on the "
                      "measured machines (TimeFit.unmeasured_host), the spread between "
                      "machines (lent H200 host 22-43 us by configuration and day, the Colab "
                      "hosts of the published rows about 45 us)"),
    "gpu_eff": Prior(1.0, 0.15, why="GPU deviation from its sustained-rate and stream transfer"),
    "gpu_eff_unlisted": Prior(1.0, 0.35, why="as gpu_eff, GPU without a sustained matmul rate"),
}
# A GPU nobody measured whose architecture the anchor measured on another GPU: its gpu_eff
# centred on that GPU's (geometric mean where several), with this spread. The same splits'
# GEMMs ran 1-6 % slower on a lent H100 than on the H200 (run 19, bench/MODEL.md "Memory-bound
# work on two Hopper GPUs").
SIBLING_EFF_SD = 0.06
MEM_PRIORS: dict[str, Prior] = {
    "act_scale": Prior(1.0, 0.25, why="scale of the analytic activation bytes per token"),
    "slack": Prior(0.25, 0.6, log=False, why="GiB the stack reserves beyond the model terms"),
}
# A GPU without a memory profile whose architecture was measured on another GPU: its slack
# centred on that GPU's (sibling_priors), the prior's spread kept. What the caching allocator
# reserves beyond the model's terms belongs to the software stack, not to the card: the same
# calibration (Qwen3-1.7B LoRA at 1x4, 2x2 and 4x1) reserved the same bytes, 3.799, 3.959 and
# 4.264 GiB, on the lent H200 (five starts) and the lent H100 (eight starts), same software
# (bench/results/heldout-*/other-workload-profile.json); another stack on a card reserves
# otherwise (the Colab T4 runtime's fitted slack is 1.7 GiB), so the spread stays wide.
SIBLING_SLACK_WHY = "the software stack's reserve, not the card's"


@dataclass(frozen=True)
class MapResult:
    """A MAP fit: coordinates, covariance and the residual statistics."""

    x: Floats
    cov: Matrix
    data_residuals: Floats
    scale: float
    dof: float


def map_fit(
    priors: Sequence[Prior], data_residuals: Callable[[Vec], Vec], n_data: int
) -> MapResult:
    """Minimise data residuals (already divided by their sd) plus prior residuals."""
    import numpy as np
    from scipy.optimize import least_squares

    mean = np.array([p.mean for p in priors])
    sd = np.array([p.sd for p in priors])

    def fun(x: Vec) -> Vec:
        return np.concatenate([data_residuals(x), (x - mean) / sd])

    res = least_squares(fun, mean.copy(), method="trf", x_scale=sd, xtol=1e-10, ftol=1e-10)
    x = np.asarray(res.x, dtype=np.float64)
    jac = np.asarray(res.jac, dtype=np.float64)
    cov = np.asarray(np.linalg.pinv(jac.T @ jac), dtype=np.float64)
    r = data_residuals(x)
    jd = jac[:n_data]
    n_eff = float(np.trace(jd @ cov @ jd.T)) if n_data else 0.0
    dof = n_data - n_eff
    chi2 = float(r @ r)
    scale = max(1.0, chi2 / dof) if dof > 0.5 else 1.0
    return MapResult(tuple(x.tolist()), _matrix(cov.tolist()), tuple(r.tolist()), scale, dof)


def _matrix(rows: Sequence[Sequence[float]]) -> Matrix:
    return tuple(tuple(float(v) for v in row) for row in rows)


def quadratic_form(grad: Sequence[Sequence[float]], cov: Sequence[Sequence[float]]
                   ) -> list[list[float]]:
    """``grad @ cov @ grad.T``: the covariance of outputs whose gradients are ``grad``'s
    rows, of inputs with covariance ``cov`` (a few parameters: plain floats suffice)."""
    left = [[sum(g[a] * cov[a][b] for a in range(len(g))) for b in range(len(g))]
            for g in grad]
    return [[sum(x * h for x, h in zip(row, g, strict=True)) for g in grad] for row in left]


@dataclass(frozen=True)
class Band:
    """A central value with a 90 % band."""

    value: float
    low: float
    high: float


# --- time ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimeObservation:
    """One measured split: seconds per update with its log-space noise.

    ``machine``: the host it ran on (``Profile.machine``); its host term is that machine's
    (empty: a machine named after its GPU)."""

    gpu: str
    costs: WorkCosts
    rates: GpuRates
    m: int
    k: int
    seconds: float
    sigma: float
    label: str
    machine: str = ""


@dataclass(frozen=True)
class TimeQuery:
    """One split to predict; ``machine`` as in :class:`TimeObservation` (a machine without
    observations keeps the ``host_dev`` prior: the spread between machines)."""

    gpu: str
    costs: WorkCosts
    rates: GpuRates
    m: int
    k: int
    machine: str = ""
    host: HostScale | None = None


@dataclass(frozen=True)
class HostScale:
    """A host probe's word on a machine's host (:mod:`gacost.calibration.host_probe`): its
    host seconds times ``factor``, with ``log_sd`` the probe's error as a predictor of the
    host's time (bench/MODEL.md, "Host speed: a probe").

    Two uses. A measured machine carried to another instance of it: ``factor`` is the two
    instances' probe ratio. A machine nobody measured (``unmeasured``): ``factor`` is its
    probe against the measured machines' typical probe, and it stands in for the spread
    between machines (the ``host_dev`` prior) in the bands."""

    factor: float
    log_sd: float
    unmeasured: bool = False

    def apply(self, params: TimeParams) -> TimeParams:
        return replace(params, host_s_per_launch=params.host_s_per_launch * self.factor)


def _gpu_eff_prior(gpu: str) -> Prior:
    return TIME_PRIORS["gpu_eff" if has_sustained_rate(gpu) else "gpu_eff_unlisted"]


TIME_GLOBALS = ("stack_eff", "gpu_launch", "host_base")


def time_param_names(gpu: str, machine: str = "") -> tuple[str, ...]:
    """The parameter names a prediction on ``gpu`` in ``machine`` depends on: the device
    term belongs to the GPU kind, the host term to the machine."""
    return (*TIME_GLOBALS, f"gpu_eff:{gpu}", f"host_dev:{machine or gpu}")


def time_prior(name: str) -> Prior:
    """The prior of a time parameter name."""
    if name.startswith("gpu_eff:"):
        return _gpu_eff_prior(name.split(":", 1)[1])
    return TIME_PRIORS[name.split(":", 1)[0]]


def _time_params(gpu: str, values: Sequence[float]) -> TimeParams:
    stack, launch, host_base, gpu_eff, host_dev = values
    return TimeParams(host_s_per_launch=host_base * host_dev, efficiency=stack * gpu_eff,
                      gpu_s_per_launch=launch)


def run_noise(share: float) -> float:
    """Run-to-run log sd of a median s/update whose micro-steps are ``share`` host-bound."""
    return math.hypot(NOISE_GPU, NOISE_HOST * share)


def _obs_sigma(o: TimeObservation, params: TimeParams) -> float:
    share = time_model.host_share(o.costs, o.rates, params, o.m)
    return math.hypot(o.sigma, NOISE_HOST * share)


def _log_seconds(o: TimeObservation, params: TimeParams) -> float:
    return math.log(time_model.update_seconds(o.costs, o.rates, params, o.m, o.k))


@dataclass(frozen=True)
class ParamReport:
    """One parameter after a fit: value, 90 % band and what informed it."""

    name: str
    value: float
    low: float
    high: float
    prior: float
    fitted_on: tuple[str, ...]

    @property
    def fitted(self) -> bool:
        """Whether any measurement informed the parameter (else it is its prior)."""
        return bool(self.fitted_on)


@dataclass(frozen=True)
class _Fit:
    names: tuple[str, ...]
    priors: tuple[Prior, ...]
    result: MapResult
    labels: tuple[str, ...]
    prior_of: Callable[[str], Prior]
    informed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # priors that replaced the defaults (an anchored fit's globals), saved with the fit
    overrides: Mapping[str, Prior] = field(default_factory=dict)

    def index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.names)}

    def distribution(self, names: Sequence[str]
                     ) -> tuple[list[float], list[list[float]], tuple[Prior, ...]]:
        """Mean and covariance (fit coordinates) of ``names``; unfitted ones at their prior."""
        idx = self.index()
        pri = tuple(self.prior_of(n) for n in names)
        mean = [self.result.x[idx[n]] if n in idx else p.mean
                for n, p in zip(names, pri, strict=True)]
        cov = [[0.0] * len(names) for _ in names]
        for a, na in enumerate(names):
            for b, nb in enumerate(names):
                if na in idx and nb in idx:
                    cov[a][b] = self.result.scale * self.result.cov[idx[na]][idx[nb]]
            if na not in idx:
                cov[a][a] = pri[a].sd ** 2
        return mean, cov, pri

    def reports(self) -> list[ParamReport]:
        out = []
        for i, (n, p) in enumerate(zip(self.names, self.priors, strict=True)):
            x = self.result.x[i]
            sd = math.sqrt(max(self.result.scale * self.result.cov[i][i], 0.0))
            out.append(ParamReport(n, p.value(x), p.value(x - Z90 * sd), p.value(x + Z90 * sd),
                                   p.center, self.informed.get(n, ())))
        return out


def fit_to_dict(f: _Fit) -> dict[str, object]:
    """A fit's numbers as JSON-ready data (its priors are looked up again on reading)."""
    r = f.result
    return {"names": list(f.names), "x": list(r.x), "cov": [list(row) for row in r.cov],
            "data_residuals": list(r.data_residuals), "scale": r.scale, "dof": r.dof,
            "labels": list(f.labels), "informed": {k: list(v) for k, v in f.informed.items()},
            "priors": {n: [p.center, p.sd, p.log, p.why] for n, p in f.overrides.items()}}


def _fit_from_dict(d: Mapping[str, Any], default: Callable[[str], Prior]) -> _Fit:
    overrides = {str(n): Prior(float(c), float(sd), bool(log), str(why))
                 for n, (c, sd, log, why) in d.get("priors", {}).items()}
    prior_of = _prior_lookup(default, overrides)
    names = tuple(str(n) for n in d["names"])
    result = MapResult(tuple(float(v) for v in d["x"]), _matrix(d["cov"]),
                       tuple(float(v) for v in d["data_residuals"]),
                       float(d["scale"]), float(d["dof"]))
    return _Fit(names, tuple(prior_of(n) for n in names), result,
                tuple(str(x) for x in d["labels"]), prior_of,
                {str(k): tuple(v) for k, v in d["informed"].items()}, overrides)


def time_fit_from_dict(d: Mapping[str, Any]) -> TimeFit:
    """A :class:`TimeFit` saved with :func:`fit_to_dict` (default priors, but those it
    was fitted with) and its ``unmeasured_host``."""
    return TimeFit(_fit_from_dict(d, time_prior), float(d["unmeasured_host"]))


def typical_host_dev(fit: TimeFit) -> float:
    """The centre of the machines ``fit`` measured: the geometric mean of their fitted
    ``host_dev``, one vote each (1.0 without any)."""
    logs = [x for n, x in zip(fit.fit.names, fit.fit.result.x, strict=True)
            if n.startswith("host_dev:")]
    return math.exp(sum(logs) / len(logs)) if logs else 1.0


def mem_fit_from_dict(d: Mapping[str, Any]) -> MemFit:
    """A :class:`MemFit` saved with :func:`fit_to_dict` (default priors, but those saved with
    it: the sibling slack of :func:`with_sibling_slack`)."""
    return MemFit(_fit_from_dict(d, mem_prior))


def _fit(
    names: Sequence[str],
    prior_of: Callable[[str], Prior],
    labels: Sequence[str],
    residual_of: Callable[[dict[str, float]], Vec],
    fixed: Collection[str],
    overrides: Mapping[str, Prior] | None = None,
) -> _Fit:
    """MAP fit of the parameters ``names`` not in ``fixed`` (those stay at their prior);
    ``overrides``: the priors that replaced the defaults, kept with the fit."""
    free = tuple(n for n in names if n not in fixed)
    held = {n: prior_of(n).center for n in names if n in fixed}
    priors = tuple(prior_of(n) for n in free)

    def resid(x: Iterable[float]) -> Vec:
        values = dict(held)
        values.update({n: p.value(float(v)) for n, p, v in zip(free, priors, x, strict=True)})
        return residual_of(values)

    result = map_fit(priors, resid, len(labels))
    jac = _jacobian(resid, result.x)
    informed = _informed(free, priors, labels, result, jac)
    return _Fit(free, priors, result, tuple(labels), prior_of, informed, dict(overrides or {}))


def _informed(names: Sequence[str], priors: Sequence[Prior], labels: Sequence[str],
              result: MapResult, jac: Sequence[Sequence[float]]
              ) -> dict[str, tuple[str, ...]]:
    """Per parameter, the observations that moved it: it must be constrained (posterior sd
    below 80 % of the prior sd) and the observation sensitive to it."""
    out: dict[str, tuple[str, ...]] = {}
    for j, (n, p) in enumerate(zip(names, priors, strict=True)):
        post = math.sqrt(max(result.cov[j][j], 0.0))
        if post > 0.8 * p.sd:
            continue
        out[n] = tuple(lab for lab, row in zip(labels, jac, strict=True)
                       if abs(row[j]) * p.sd > 0.1)
    return out


def _jacobian(fun: Callable[[list[float]], Iterable[float]], x: Sequence[float],
              eps: float = 1e-6) -> list[list[float]]:
    """Forward differences of ``fun`` at ``x``: a row per output, a column per coordinate."""
    base = [float(v) for v in fun(list(x))]
    columns = []
    for j in range(len(x)):
        moved = list(x)
        moved[j] += eps
        columns.append([(float(v) - b) / eps for v, b in zip(fun(moved), base, strict=True)])
    return [list(row) for row in zip(*columns, strict=True)] if columns else [[] for _ in base]


@dataclass(frozen=True)
class TimeFit:
    """The time model fitted to observations.

    ``unmeasured_host``: the ``host_dev`` of a machine no observation informed, the centre
    of the measured machines' hosts (:func:`typical_host_dev`; its spread stays the prior's).
    """

    fit: _Fit
    unmeasured_host: float = 1.0

    def distribution(self, names: Sequence[str]
                     ) -> tuple[list[float], list[list[float]], tuple[Prior, ...]]:
        """The fit's distribution of ``names``, a machine nobody measured centred on
        ``unmeasured_host``."""
        mean, cov, pri = self.fit.distribution(names)
        fitted = self.fit.index()
        shift = math.log(self.unmeasured_host)
        return [x + shift if n.startswith("host_dev:") and n not in fitted else x
                for n, x in zip(names, mean, strict=True)], cov, pri

    def params(self, gpu: str, machine: str = "") -> TimeParams:
        """Central parameters for ``gpu`` in ``machine`` (priors where no profile informed
        them)."""
        mean, _, pri = self.distribution(time_param_names(gpu, machine))
        return _time_params(gpu, [p.value(x) for p, x in zip(pri, mean, strict=True)])

    def has_data(self, gpu: str) -> bool:
        """Whether any observation on ``gpu`` was fitted."""
        return f"gpu_eff:{gpu}" in self.fit.names

    def has_machine(self, machine: str) -> bool:
        """Whether any observation on ``machine`` was fitted."""
        return f"host_dev:{machine}" in self.fit.names

    def predict(self, gpu: str, costs: WorkCosts, rates: GpuRates, m: int, k: int,
                machine: str = "", host: HostScale | None = None) -> Band:
        """Seconds per update with a 90 % band (fit covariance, priors, run-to-run noise);
        ``host``: the machine's host carried to another instance."""
        centre, cov = self.joint([TimeQuery(gpu, costs, rates, m, k, machine, host)])
        sd = math.sqrt(cov[0][0])
        c = centre[0]
        return Band(math.exp(c), math.exp(c - Z90 * sd), math.exp(c + Z90 * sd))

    def joint(self, queries: Sequence[TimeQuery]) -> tuple[list[float], list[list[float]]]:
        """Log seconds of several predictions and their joint covariance (shared parameters
        correlate them; the run-to-run noise does not)."""
        names = tuple(dict.fromkeys(n for q in queries
                                    for n in time_param_names(q.gpu, q.machine)))
        mean, cov, pri = self.distribution(names)
        pos = {n: i for i, n in enumerate(names)}
        sel = [[pos[n] for n in time_param_names(q.gpu, q.machine)] for q in queries]

        def params_of(q: TimeQuery, values: Sequence[float], s: Sequence[int]) -> TimeParams:
            params = _time_params(q.gpu, [values[i] for i in s])
            return q.host.apply(params) if q.host is not None else params

        def log_t(x: Sequence[float]) -> list[float]:
            values = [p.value(v) for p, v in zip(pri, x, strict=True)]
            return [
                math.log(time_model.update_seconds(
                    q.costs, q.rates, params_of(q, values, s), q.m, q.k))
                for q, s in zip(queries, sel, strict=True)
            ]

        centre = log_t(mean)
        grad = _jacobian(log_t, mean)
        for i, q in enumerate(queries):
            if q.host is not None and q.host.unmeasured:
                # the probe's error replaces the spread between machines (no observation
                # informed this machine's host_dev: it is its prior)
                name = time_param_names(q.gpu, q.machine)[-1]
                assert not self.has_machine(name.split(":", 1)[1]), name
                grad[i][pos[name]] = 0.0
        values = [p.value(v) for p, v in zip(pri, mean, strict=True)]
        out = quadratic_form(grad, cov)
        for i, (q, s) in enumerate(zip(queries, sel, strict=True)):
            share = time_model.host_share(q.costs, q.rates, params_of(q, values, s), q.m)
            # plus the model's structural error, one term per query (the terms its costs
            # carry), and a carried host's probe error on the host's share
            carried = share * q.host.log_sd if q.host is not None else 0.0
            out[i][i] += (self.fit.result.scale * run_noise(share)**2
                          + q.costs.terms.model_sd**2 + carried**2)
        return centre, out

    def reports(self) -> list[ParamReport]:
        """Every fitted parameter with its band and the observations that informed it."""
        return self.fit.reports()

    @property
    def scale(self) -> float:
        """Residual chi-square per degree of freedom (at least 1)."""
        return self.fit.result.scale


def _prior_lookup(
    default: Callable[[str], Prior], overrides: Mapping[str, Prior] | None
) -> Callable[[str], Prior]:
    table = dict(overrides or {})

    def prior_of(name: str) -> Prior:
        return table[name] if name in table else default(name)

    return prior_of


def fit_time(
    observations: Sequence[TimeObservation],
    priors: Mapping[str, Prior] | None = None,
    fixed: Collection[str] = (),
    unmeasured_host: float | None = None,
) -> TimeFit:
    """Fit the time model: global ``stack_eff``, ``gpu_launch``, ``host_base``; per GPU kind
    ``gpu_eff``, per machine ``host_dev``.

    ``priors`` overrides priors by name; ``fixed`` names stay at their prior centre (their
    prior sd still widens the bands). ``unmeasured_host``: the centre of the machines another
    fit measured (an anchor's), which this fit's machines are drawn from (their ``host_dev``
    priors centred on it) and a machine nobody measured gets; None: the centre of this fit's
    own machines (:func:`typical_host_dev`), their priors at the default.
    """
    import numpy as np

    gpus = sorted({o.gpu for o in observations})
    machines = sorted({o.machine or o.gpu for o in observations})
    names = (*TIME_GLOBALS, *(f"gpu_eff:{g}" for g in gpus),
             *(f"host_dev:{h}" for h in machines))
    if unmeasured_host is not None:
        spread = TIME_PRIORS["host_dev"]
        priors = {**{f"host_dev:{h}": Prior(unmeasured_host, spread.sd, spread.log,
                                            why="the anchor's centre of measured machines "
                                            f"({spread.why})") for h in machines},
                  **(priors or {})}
    meas = np.array([math.log(o.seconds) for o in observations])
    prior_of = _prior_lookup(time_prior, priors)
    labels = [o.label for o in observations]
    centre = {n: prior_of(n).center for n in names}
    fitted: _Fit | None = None
    for _ in range(2):  # weights from the host share at the prior, then at the first fit
        sig = np.array([_obs_sigma(o, _time_params(o.gpu, [
            centre[n] for n in time_param_names(o.gpu, o.machine)])) for o in observations])

        def resid(values: dict[str, float], sig: Vec = sig) -> Vec:
            pred = np.array([
                _log_seconds(o, _time_params(o.gpu, [
                    values[n] for n in time_param_names(o.gpu, o.machine)]))
                for o in observations
            ])
            return np.asarray((pred - meas) / sig, dtype=np.float64)

        fitted = _fit(names, prior_of, labels, resid, fixed, priors)
        centre.update({n: p.value(float(x)) for n, p, x in
                       zip(fitted.names, fitted.priors, fitted.result.x, strict=True)})
    assert fitted is not None
    fit = TimeFit(fitted)
    return replace(fit, unmeasured_host=(typical_host_dev(fit) if unmeasured_host is None
                                         else unmeasured_host))


def anchored_priors(reference: TimeFit) -> dict[str, Prior]:
    """The global parameters of ``reference`` as priors held at its fitted values, to keep
    them while other profiles fit only their own GPUs' terms.

    Held as constants (a negligible sd): the globals' marginal spread in ``reference`` is
    mostly their trade-off with its GPUs' own terms (``host_base`` against
    ``host_dev:H200-SXM``: only the product is measured), which an independent prior would
    add again to every prediction; the spread between GPUs and hosts is in the per-GPU
    priors (``host_dev``, ``gpu_eff``) and the run-to-run noise. With them, the ``gpu_eff``
    priors of GPUs that share an architecture with one ``reference`` measured
    (:func:`sibling_priors`)."""
    mean, _, pri = reference.fit.distribution(TIME_GLOBALS)
    held = {
        name: Prior(p.value(float(x)), 1e-6, p.log,
                    why=f"held at the reference fit ({p.why})")
        for name, p, x in zip(TIME_GLOBALS, pri, mean, strict=True)
    }
    # an anchored reference carries the sibling priors it was given (so another profile
    # moves no GPU's prediction but its own); the core fit derives them
    siblings = ({n: p for n, p in reference.fit.overrides.items() if n.startswith("gpu_eff:")}
                if reference.fit.overrides else sibling_priors(reference.fit))
    return {**held, **siblings}


def sibling_priors(fit: _Fit, kind: typing.Literal["gpu_eff", "slack"] = "gpu_eff",
                   sd: float = SIBLING_EFF_SD, default: Callable[[str], Prior] = time_prior,
                   why: str = "within one architecture's spread") -> dict[str, Prior]:
    """``kind`` priors (``gpu_eff``, or the memory model's ``slack``) for the table's GPUs that
    ``fit`` did not measure but whose architecture it measured on another GPU (an H100 from
    the H200): centred on the measured GPUs' fitted values (their mean in fit coordinates),
    spread ``sd``."""
    specs = gpu_table.gpu_specs()
    idx = fit.index()
    measured = {g: fit.result.x[idx[f"{kind}:{g}"]] for g in specs if f"{kind}:{g}" in idx}
    out = {}
    for name, spec in specs.items():
        same = sorted(g for g in measured
                      if spec.architecture and specs[g].architecture == spec.architecture)
        if name in measured or not same:
            continue
        base = default(f"{kind}:{name}")
        centre = sum(measured[g] for g in same) / len(same)
        out[f"{kind}:{name}"] = Prior(base.value(centre), sd, base.log,
                                      why=f"as {', '.join(same)} ({spec.architecture}), {why}")
    return out


# --- memory --------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemObservation:
    """One measured peak (``torch.cuda.max_memory_reserved``, GiB)."""

    gpu: str
    costs: MemoryCosts
    m: int
    reserved_gib: float
    label: str
    k: int = 0

    @property
    def sigma(self) -> float:
        """Noise of the measured peak (GiB)."""
        return max(MEM_NOISE_GIB, MEM_NOISE_FRAC * self.reserved_gib)


def mem_param_names(gpu: str) -> tuple[str, str]:
    """The parameter names one GPU's memory prediction depends on."""
    return ("act_scale", f"slack:{gpu}")


def mem_prior(name: str) -> Prior:
    """The prior of a memory parameter name."""
    return MEM_PRIORS[name.split(":", 1)[0]]


def _mem_params(values: Sequence[float]) -> MemParams:
    return MemParams(activation_scale=values[0], slack_gib=values[1])


@dataclass(frozen=True)
class MemFit:
    """The memory model fitted to observations."""

    fit: _Fit

    def params(self, gpu: str) -> MemParams:
        """Central parameters for ``gpu`` (prior slack where no profile informed it)."""
        mean, _, pri = self.fit.distribution(mem_param_names(gpu))
        return _mem_params([p.value(x) for p, x in zip(pri, mean, strict=True)])

    def predict(self, gpu: str, costs: MemoryCosts, m: int, k: int = 0) -> Band:
        """Peak reserved GiB with a 90 % band (``k``: micro-steps per update, 0 unknown)."""
        mean, cov, pri = self.fit.distribution(mem_param_names(gpu))

        def peak(x: Sequence[float]) -> list[float]:
            values = [p.value(v) for p, v in zip(pri, x, strict=True)]
            return [memory_model.peak_reserved_gib(costs, _mem_params(values), m, k)]

        (centre,) = peak(mean)
        grad = _jacobian(peak, mean)
        noise = max(MEM_NOISE_GIB, MEM_NOISE_FRAC * centre)
        sd = math.sqrt(quadratic_form(grad, cov)[0][0] + noise**2)
        return Band(centre, centre - Z90 * sd, centre + Z90 * sd)

    def reports(self) -> list[ParamReport]:
        """Every fitted parameter with its band and the observations that informed it."""
        return self.fit.reports()

    def slack_basis(self, gpu: str) -> str:
        """Where ``gpu``'s allocator slack comes from, in words."""
        name = f"slack:{gpu}"
        if name in self.fit.index():
            return f"memory slack fitted to the {gpu} profile(s)"
        sibling = self.fit.overrides.get(name)
        return f"memory slack {sibling.why}" if sibling else "memory slack at its prior"


def with_sibling_slack(fit: MemFit) -> MemFit:
    """``fit`` with the ``slack`` priors of the GPUs it did not measure but whose architecture
    it measured on another GPU (:func:`sibling_priors`, :data:`SIBLING_SLACK_WHY`), kept with
    the fit (a fit anchored on it takes them as its priors)."""
    siblings = sibling_priors(fit.fit, "slack", MEM_PRIORS["slack"].sd, mem_prior,
                              SIBLING_SLACK_WHY)
    overrides = {**siblings, **fit.fit.overrides}
    return MemFit(replace(fit.fit, overrides=overrides,
                          prior_of=_prior_lookup(mem_prior, overrides)))


def fit_memory(
    observations: Sequence[MemObservation],
    priors: Mapping[str, Prior] | None = None,
    fixed: Collection[str] = (),
) -> MemFit:
    """Fit the memory model: global ``act_scale``, per GPU (software stack) ``slack``."""
    import numpy as np

    gpus = sorted({o.gpu for o in observations})
    names = ("act_scale", *(f"slack:{g}" for g in gpus))
    meas = np.array([o.reserved_gib for o in observations])
    sig = np.array([o.sigma for o in observations])

    def resid(values: dict[str, float]) -> Vec:
        pred = np.array([
            memory_model.peak_reserved_gib(
                o.costs, _mem_params([values[n] for n in mem_param_names(o.gpu)]), o.m, o.k)
            for o in observations
        ])
        return np.asarray((pred - meas) / sig, dtype=np.float64)

    prior_of = _prior_lookup(mem_prior, priors)
    labels = [o.label for o in observations]
    return MemFit(_fit(names, prior_of, labels, resid, fixed, priors))


# --- leave-one-out -------------------------------------------------------------------------


@dataclass(frozen=True)
class LooRow:
    """A held-out measurement and its prediction from a fit without it."""

    label: str
    measured: float
    predicted: float
    low: float
    high: float

    @property
    def rel_error(self) -> float:
        """(predicted - measured) / measured."""
        return (self.predicted - self.measured) / self.measured

    @property
    def covered(self) -> bool:
        """Whether the measurement lies inside the 90 % band."""
        return self.low <= self.measured <= self.high


def loo_time(observations: Sequence[TimeObservation],
             held: Sequence[int] | None = None) -> list[LooRow]:
    """Refit without each held-out observation (default: every one) and predict it."""
    rows = []
    for i in held if held is not None else range(len(observations)):
        o = observations[i]
        rest = [x for j, x in enumerate(observations) if j != i]
        band = fit_time(rest).predict(o.gpu, o.costs, o.rates, o.m, o.k)
        rows.append(LooRow(o.label, o.seconds, band.value, band.low, band.high))
    return rows


def loo_memory(observations: Sequence[MemObservation],
               held: Sequence[int] | None = None) -> list[LooRow]:
    """Refit without each held-out peak and predict it."""
    rows = []
    for i in held if held is not None else range(len(observations)):
        o = observations[i]
        rest = [x for j, x in enumerate(observations) if j != i]
        band = fit_memory(rest).predict(o.gpu, o.costs, o.m, o.k)
        rows.append(LooRow(o.label, o.reserved_gib, band.value, band.low, band.high))
    return rows

