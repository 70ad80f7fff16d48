"""Issue 20 item 5: every sold GPU is known to the advisor, or the report says which are
not (with offer counts); QLoRA on an AMD GPU carries its caveat."""

from __future__ import annotations

from pathlib import Path

import pytest

from gacost.advisor.estimate import amd_qlora_note, unpriced_note
from gacost.advisor.recommend import recommend
from gacost.base import gpu_table
from gacost.base.gpu_names import canonical_gpu
from gacost.base.job import load_job
from gacost.base.records import Offer
from gacost.commands.recommend import render_text, report_dict

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "qwen3-1.7b-lora.yaml"


def _offer(gpu: str, memory: float, price: float, count: float = 1) -> Offer:
    return Offer("test", "r1", f"{gpu}-box", gpu, count, memory, 8, 64, price, None, "test",
                 "2026-01-01")


@pytest.mark.parametrize(
    ("spellings", "expected"),
    [
        (["B200", "NVIDIA B200", "B200 SXM6"], "B200"),  # Lambda's API says "B200 SXM6"
        (["GH200", "GH200 Superchip"], "GH200"),
        (["L40", "NVIDIA L40"], "L40"),
        (["A40", "NVIDIA A40"], "A40"),
        (["RTX6000-Ada", "RTX 6000 Ada", "RTX6000Ada"], "RTX-6000-ADA"),
    ],
)
def test_catalog_spellings_resolve_to_the_new_rows(spellings: list[str], expected: str) -> None:
    assert {canonical_gpu(s) for s in spellings} == {expected}
    assert expected in gpu_table.gpu_specs()


def test_the_new_gpus_get_predictions_from_the_embedded_snapshot() -> None:
    from gacost.base.embedded import data_root
    from gacost.pricing.snapshot import read_offers_csv

    offers = read_offers_csv(data_root() / "prices" / "snapshot.csv")
    new = ("B200", "GH200", "L40", "A40", "RTX-6000-ADA")
    assert all(any(o.gpu == g and o.gpu_count == 1 for o in offers) for g in new)
    job = load_job(EXAMPLE).model_copy(update={"gpus": list(new)})
    report = recommend(job, offers)
    predicted = {e.gpu for e in report.estimates if e.seconds_per_update and e.fits}
    assert predicted == set(new)
    assert set(report.best) == set(new)  # each has a cheapest priced plan


def test_unpriced_note_counts_offers_per_gpu_most_first() -> None:
    note = unpriced_note({"P100": 3, "RADEON-PRO-V520": 12, "K80": 1})
    assert note == ("16 offers left out, no spec for: RADEON-PRO-V520 (12 offers), P100 (3), "
                    "K80 (1) (data/GPUS.md lists the GPU table)")


def test_recommend_says_which_offers_it_cannot_price() -> None:
    job = load_job(EXAMPLE)
    assert job.gpus is None  # the note is for jobs that let gacost pick among all GPUs
    offers = [_offer("L4", 24, 0.8), _offer("P100", 16, 0.4), _offer("P100", 16, 0.5),
              _offer("K80", 12, 0.2), _offer("K80", 12, 0.9, count=4)]
    report = recommend(job, offers)
    wanted = "3 offers left out, no spec for: P100 (2 offers), K80 (1)"
    assert any(n.startswith(wanted) for n in report.notes)
    assert any(n.startswith(wanted) for n in report_dict(report)["notes"])
    assert f"note: {wanted}" in render_text(report, wide=True)


def test_no_unpriced_note_when_the_job_names_its_gpus() -> None:
    job = load_job(EXAMPLE).model_copy(update={"gpus": ["L4"]})
    report = recommend(job, [_offer("L4", 24, 0.8), _offer("P100", 16, 0.4)])
    assert not any("no spec for" in n for n in report.notes)


def test_amd_qlora_caveat() -> None:
    assert gpu_table.vendor("MI300X") == "AMD"
    assert gpu_table.vendor("H100-SXM") == "NVIDIA"
    note = amd_qlora_note("qlora", ["H100-SXM", "MI300X"])
    assert note is not None and note.startswith("QLoRA on AMD (MI300X): bitsandbytes 4-bit on ROCm")
    assert amd_qlora_note("lora", ["MI300X"]) is None
    assert amd_qlora_note("qlora", ["H100-SXM"]) is None


def test_recommend_puts_the_amd_qlora_caveat_in_the_report() -> None:
    job = load_job(ROOT / "examples" / "llama-8b-qlora-deadline.yaml").model_copy(
        update={"gpus": ["MI300X", "H100-SXM"], "providers": None})
    report = recommend(job, [_offer("MI300X", 192, 3.0), _offer("H100-SXM", 80, 2.5)])
    assert any(n.startswith("QLoRA on AMD (MI300X)") for n in report.notes)
