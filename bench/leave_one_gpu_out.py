"""Leave one GPU out: the published L4 and T4 rows predicted without their own data.

For each held-out GPU (L4, T4) the model is fitted to every shipped reference profile of
the other GPUs (the H200 measurements and the other published row) and predicts the held-out
row's three splits; the table gives the error per split, the predicted and published fastest
split, and the T4-vs-L4 break-even price ratio (T4's time over L4's at each one's fastest
split, inverted) from the predictions against the published rows. Prints a table and writes
``bench/results/leave_one_gpu_out.json``.

    python bench/leave_one_gpu_out.py

Target (issue 19 item 4): every split within 15%, the same fastest split (L4's 2x2 vs 4x1 is
a 4% gap: a stated tie is fine).
"""

from __future__ import annotations

import json
from pathlib import Path

from gacost.advisor import predictor
from gacost.advisor.predictor import RatioSide
from gacost.advisor.time_model import TrainSetup
from gacost.base import gpu_table
from gacost.base.profile import Profile
from gacost.base.records import GpuSpec, ModelArch
from gacost.base.split import Split

OUT = Path(__file__).resolve().parent / "results" / "leave_one_gpu_out.json"
HELD = ("L4", "T4")


def held_setup(held: Profile) -> tuple[ModelArch, TrainSetup, GpuSpec]:
    """The model, training setup and GPU of ``held``'s measurements."""
    arch = predictor.arch_for(held.workload.model)
    assert arch is not None
    return (arch, predictor.setup_for(held.workload, held.software),
            gpu_table.gpu_specs()[held.gpu])


def predict(model: predictor.FittedModel, held: Profile) -> dict[str, float]:
    """Seconds per update of ``held``'s splits from ``model``."""
    arch, setup, spec = held_setup(held)
    out = {}
    for s in held.splits:
        band = model.seconds(arch, setup, spec, s.micro_batch, s.grad_accum)
        assert band is not None
        out[f"{s.micro_batch}x{s.grad_accum}"] = band.value
    return out


def split_ratio(model: predictor.FittedModel, held: Profile, a: str, b: str) -> dict[str, float]:
    """The model's time ratio of split ``a`` over split ``b`` (``"MxK"``) of ``held`` on its
    GPU, with its 90 % band: a band that holds 1 is a tie, which ``recommend`` states on its
    ``calibrate:`` line for the GPU it recommends (calibrating there picks the split)."""
    arch, setup, spec = held_setup(held)
    (ma, ka), (mb, kb) = Split.parse(a), Split.parse(b)
    band = model.time_ratio(arch, setup, RatioSide(spec, ma, ka), RatioSide(spec, mb, kb))
    assert band is not None
    return {"ratio": band.value, "low": band.low, "high": band.high,
            "tie": band.low <= 1.0 <= band.high}


def main() -> None:
    profiles = predictor.reference_profiles()
    rows, fastest, results, ties = [], {}, {}, {}
    for gpu in HELD:
        held = next(p for p in profiles if p.gpu == gpu)
        model = predictor.fitted_model([p for p in profiles if p.gpu != gpu])
        pred = predict(model, held)
        meas = {f"{s.micro_batch}x{s.grad_accum}": float(s.seconds_per_update or 0)
                for s in held.splits}
        results[gpu] = {"predicted": pred, "published": meas}
        for split in meas:
            rows.append({"gpu": gpu, "split": split, "published_s": meas[split],
                         "predicted_s": round(pred[split], 4),
                         "error": round(pred[split] / meas[split] - 1, 4)})
        fastest[gpu] = (min(pred, key=lambda k: pred[k]), min(meas, key=lambda k: meas[k]))
        if fastest[gpu][0] != fastest[gpu][1]:  # the published fastest over the predicted one
            ties[gpu] = split_ratio(model, held, fastest[gpu][1], fastest[gpu][0])
    ratio_pred = min(results["L4"]["predicted"].values()) / min(results["T4"]["predicted"].values())
    ratio_pub = min(results["L4"]["published"].values()) / min(results["T4"]["published"].values())
    print(f"{'GPU':4s} {'split':5s} {'published':>10s} {'predicted':>10s} {'error':>7s}")
    for r in rows:
        print(f"{r['gpu']:4s} {r['split']:5s} {r['published_s']:10.3f} {r['predicted_s']:10.3f} "
              f"{r['error']:+7.1%}")
    for gpu, (p, m) in fastest.items():
        print(f"{gpu}: fastest split predicted {p}, published {m}")
        if gpu in ties:
            t = ties[gpu]
            verdict = ("a tie (the band holds 1)" if t["tie"]
                       else "not a tie: the wrong split")
            print(f"  predicted {m} / {p}: {t['ratio']:.2f}x (90% band {t['low']:.2f}-"
                  f"{t['high']:.2f}): {verdict}")
    print(f"T4 is cheaper than L4 only below {ratio_pred:.2f}x L4's hourly rate (predicted; "
          f"published rows: {ratio_pub:.2f}x)")
    OUT.write_text(json.dumps({"rows": rows, "fastest": fastest, "fastest_ties": ties,
                               "break_even_t4_vs_l4": {"predicted": ratio_pred,
                                                       "published": ratio_pub}}, indent=1) + "\n")


if __name__ == "__main__":
    main()
