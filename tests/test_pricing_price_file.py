"""A user's --prices file: columns by name, zero and duplicate rows counted, advice for it."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from gacost.base.errors import DataError
from gacost.commands.cli import main
from gacost.pricing import price_file
from gacost.pricing.price_file import read_price_file
from gacost.pricing.snapshot import HEADER, load_snapshot

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "qwen3-1.7b-lora.yaml"


def _real_rows(n: int = 6) -> list[dict[str, str]]:
    """Real snapshot rows (L4 on several clouds) as dicts of cells."""
    text = (ROOT / "data" / "prices" / "snapshot.csv").read_text(encoding="utf-8")
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["gpu"] == "L4" and r["spot_hour"]]
    return rows[:n]


def _write(path: Path, rows: list[dict[str, str]], columns: list[str]) -> Path:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def test_columns_are_read_by_name_in_any_order(tmp_path: Path) -> None:
    rows = _real_rows()
    straight = read_price_file(str(_write(tmp_path / "a.csv", rows, list(HEADER))))
    swapped = list(HEADER)
    i, j = swapped.index("price_hour"), swapped.index("spot_hour")
    swapped[i], swapped[j] = swapped[j], swapped[i]
    reordered = read_price_file(str(_write(tmp_path / "b.csv", rows, swapped[::-1])))
    assert reordered.table.offers == straight.table.offers
    first = reordered.table.offers[0]
    assert first.price_hour == float(rows[0]["price_hour"])
    assert first.spot_hour == float(rows[0]["spot_hour"])
    assert first.spot_hour < first.price_hour  # not swapped by position


def test_optional_columns_may_be_left_out(tmp_path: Path) -> None:
    rows = _real_rows(2)
    core = ["provider", "region", "instance_type", "gpu", "gpu_count", "price_hour"]
    read = read_price_file(str(_write(tmp_path / "mine.csv", rows, core)))
    assert [o.price_hour for o in read.table.offers] == [float(r["price_hour"]) for r in rows]
    assert all(o.spot_hour is None and o.source.endswith("mine.csv") for o in read.table.offers)


def test_zero_and_duplicate_rows_are_counted(tmp_path: Path) -> None:
    rows = _real_rows(4)
    zero_price = {**rows[1], "price_hour": "0"}
    all_zero = {**rows[2], "price_hour": "0", "spot_hour": "0"}
    conflict = {**rows[0], "price_hour": str(float(rows[0]["price_hour"]) * 2)}
    data = [rows[0], zero_price, all_zero, rows[3], rows[0], conflict]
    read = read_price_file(str(_write(tmp_path / "p.csv", data, list(HEADER))))
    assert read.counts == {
        price_file.ZERO: 2, price_file.NO_PRICE: 1, price_file.DUPLICATE: 1,
        price_file.CONFLICT: 1,
    }  # fmt: skip
    assert len(read.table.offers) == 3
    assert read.table.offers[0].price_hour == float(rows[0]["price_hour"])  # the first kept
    assert read.table.offers[1].price_hour is None  # zero read as no price; spot kept
    assert all("p.csv: " in line for line in read.notes())


def test_errors_give_advice_for_the_users_file(tmp_path: Path) -> None:
    rows = _real_rows(2)
    zeros = [{**r, "price_hour": "0", "spot_hour": ""} for r in rows]
    path = _write(tmp_path / "zeros.csv", zeros, list(HEADER))
    with pytest.raises(DataError) as err:
        read_price_file(str(path))
    message = str(err.value)
    assert "no row has a price above 0" in message and "sequence_length" not in message
    assert f"fix {path}" in message and "build_snapshot" not in message
    bad = tmp_path / "typo.csv"
    bad.write_text("provider,region,instance_type,gpu,gpu_count,prce_hour\naws,x,y,T4,1,1\n")
    with pytest.raises(DataError, match=r"unknown column\(s\) prce_hour.*fix .*typo.csv"):
        read_price_file(str(bad))
    with pytest.raises(DataError, match=r"^--prices: cannot read .*missing.csv \(No such file"):
        read_price_file(str(tmp_path / "missing.csv"))


def test_recommend_reports_the_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = load_snapshot()
    rows = [
        {c: ("" if getattr(o, c) is None else str(getattr(o, c))) for c in HEADER}
        for o in snapshot.offers
        if o.gpu in ("L4", "T4") and o.price_hour
    ]
    rows.append({**rows[0], "price_hour": "0", "spot_hour": ""})
    path = _write(tmp_path / "mine.csv", rows, list(HEADER))
    code = main(["recommend", "--job", str(EXAMPLE), "--prices", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"warning: {path}: 1 row(s) with {price_file.NO_PRICE}" in err
    assert f"price file {path}" in out
