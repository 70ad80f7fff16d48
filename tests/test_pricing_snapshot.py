"""Snapshot CSV format, atomic writes, the committed snapshot and its build."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gacost.base.errors import DataError
from gacost.base.records import Offer
from gacost.pricing import build_snapshot, snapshot
from gacost.pricing.snapshot import (
    HEADER,
    load_snapshot,
    read_offers_csv,
    read_rejections,
    write_offers_csv,
    write_snapshot,
)

FIXTURES = Path(__file__).parent / "fixtures" / "pricing"
HEADER_LINE = ",".join(HEADER)
ROW = "aws,us-east-1,g4dn.xlarge,T4,1,16,4,16,0.526,0.2,test,2026-12-02"

OFFERS = [
    Offer("aws", "us-east-1", "g6f.2xlarge", "L4", 0.25, 22.35, 8.0, 32.0, 0.475, 0.1697,
          "skypilot-catalog v8 aws@00148f2a", "2026-12-02"),
    Offer("aws", "us-east-2", "p5e.48xlarge", "H200-SXM", 8.0, 141.0, 192.0, 2048.0, None,
          62.9957, "skypilot-catalog v8 aws@00148f2a", "2026-12-02"),
    Offer("vast", "Hafnarfjarðarkaupstaður, IS, EU", "2x-RTX_5090-32-65536", "RTX-5090", 2.0,
          31.84, None, None, 0.93, None, "skypilot-catalog v8 vast@01b8cdda", "2026-12-02"),
    Offer("gcp", "us-central1", "a2-highgpu-1g", "A100-40GB-SXM", 1.0, 40.0, 12.0, 85.0,
          3.67339, 1.80385, "skypilot-catalog v8 gcp@006059e0", "2026-12-02"),
]  # fmt: skip


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "snapshot.csv"
    write_offers_csv(path, OFFERS)
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == HEADER_LINE
    assert "0.25,22.35,8,32,0.475,0.1697" in text
    assert read_offers_csv(path) == OFFERS
    assert read_offers_csv(str(path)) == OFFERS
    assert read_offers_csv(text) == OFFERS


def test_empty_cells_are_none() -> None:
    row = "lambda,us-east-1,gpu_1x_a10,A10,1,,,,1.29,,t,2026-12-02"
    (offer,) = read_offers_csv(f"{HEADER_LINE}\n{row}\n")
    assert (offer.gpu_memory_gib, offer.vcpus, offer.ram_gib, offer.spot_hour) == (None,) * 4
    assert offer.price_hour == 1.29


def _failing(offers: list[Offer]) -> Iterator[Offer]:
    yield offers[0]
    raise RuntimeError("disk full")


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path: Path) -> None:
    path = tmp_path / "snapshot.csv"
    write_offers_csv(path, OFFERS[:2])
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="disk full"):
        write_offers_csv(path, _failing(OFFERS))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snapshot.csv"]  # no temp file left
    bad = replace(OFFERS[0], price_hour="cheap")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        write_offers_csv(path, [OFFERS[1], bad])
    assert path.read_bytes() == before


def test_atomic_write_creates_new_file(tmp_path: Path) -> None:
    path = tmp_path / "new.csv"
    write_offers_csv(path, OFFERS)
    assert read_offers_csv(path) == OFFERS
    assert path.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"empty"),
        (f"{HEADER_LINE}\n", r"no offers"),
        (HEADER_LINE.replace(",spot_hour", "") + "\n", r"row 1: .*missing column\(s\) spot_hour"),
        (HEADER_LINE + ",extra\n", r"row 1: .*unknown column\(s\) extra"),
        (f"{HEADER_LINE}\n{ROW}\n{ROW.replace('0.526', 'abc')}\n",
         r"row 3, column price_hour: 'abc' is not a number"),
        (f"{HEADER_LINE}\n{ROW}\n{ROW}\n{ROW.replace(',16,4,', ',x,4,')}\n",
         r"row 4, column gpu_memory_gib: 'x'"),
        (f"{HEADER_LINE}\n{ROW.replace(',T4,1,', ',T4,0,')}\n", r"row 2, column gpu_count"),
        (f"{HEADER_LINE}\n{ROW.replace('aws,', ',', 1)}\n", r"row 2, column provider: empty"),
        (f"{HEADER_LINE}\n{ROW.replace('0.526,0.2', ',')}\n", r"row 2, column price_hour"),
        (f"{HEADER_LINE}\n{ROW.replace('0.526', '-1')}\n", r"row 2, column price_hour: '-1'"),
        (f"{HEADER_LINE}\n{ROW.rsplit(',', 2)[0]}\n", r"row 2: 10 cells, expected 12"),
        (f'{HEADER_LINE}\n{ROW}\n{ROW.replace("test", chr(34) + "test")}', r"malformed CSV"),
    ],
)  # fmt: skip
def test_corrupt_snapshot_names_file_row_and_column(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "snapshot.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message) as caught:
        read_offers_csv(path)
    assert str(path) in str(caught.value)
    assert "gacost.pricing.build_snapshot" in str(caught.value)  # the fix hint


# cells a price row can hold, valid or not: each check of a row has a value on both sides
_CELLS = st.sampled_from([
    "", " ", "aws", " us-east-1 ", "T4", "0", "1", " 8 ", "64", "65", "0.5", "-1", "-0.0",
    "1e3", "1000", "1000.01", "64001", "nan", "inf", "-inf", "x", "1_0", "2026-12-02",
    "2026-12-02T10:00:00Z", "2026-1-2", "test",
])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(HEADER)), _CELLS), max_size=3))
@example([])
def test_the_quick_row_read_agrees_with_the_full_check(
    changes: list[tuple[int, str]]
) -> None:
    """``recommend`` reads the snapshot's rows with a quick check that hands any row it
    doubts to the full one: whatever it accepts, the full check accepts as the same offer.
    Rows: a valid one with up to three cells changed (index 12 appends a cell)."""
    row = ROW.split(",")
    for at, cell in changes:
        row[at:at + 1] = [cell]
    quick = snapshot._plain_offer(row)
    try:
        full = snapshot._parse_record(dict(zip(HEADER, row, strict=False)), len(row),
                                      len(HEADER), 2, "test.csv", "fix it")
    except DataError:
        assert quick is None
    else:
        assert quick in (None, full)


def test_every_committed_row_takes_the_quick_read() -> None:
    lines = (snapshot._embedded_prices() / "snapshot.csv").read_text().splitlines()[1:]
    offers = load_snapshot().offers
    assert [snapshot._plain_offer(line.split(",")) for line in lines if '"' not in line] == [
        o for o, line in zip(offers, lines, strict=True) if '"' not in line]


def test_missing_file_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"cannot read .*nope.csv \(No such file or directory\)"
                       r"; regenerate it"):
        read_offers_csv(tmp_path / "nope.csv")


def test_load_snapshot_from_folder_checks_metadata(tmp_path: Path) -> None:
    write_snapshot(tmp_path, OFFERS, as_of="2026-12-02", sources=["a", "b"])
    table = load_snapshot(tmp_path)
    assert table.offers == tuple(OFFERS)
    assert (table.as_of, table.source) == ("2026-12-02", "a; b")
    meta = json.loads((tmp_path / "snapshot.json").read_text(encoding="utf-8"))
    assert meta == {"as_of": "2026-12-02", "sources": ["a", "b"], "rows": 4}
    (tmp_path / "snapshot.json").write_text(json.dumps({**meta, "rows": 5}), encoding="utf-8")
    with pytest.raises(DataError, match="says 5 rows"):
        load_snapshot(tmp_path)
    (tmp_path / "snapshot.json").write_text("{", encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON"):
        load_snapshot(tmp_path)
    (tmp_path / "snapshot.json").unlink()
    with pytest.raises(DataError, match=r"cannot read .*snapshot.json \(No such file or "):
        load_snapshot(tmp_path)


def test_committed_snapshot_loads_with_the_main_gpus() -> None:
    table = load_snapshot()
    assert table.as_of == "2026-12-02"
    assert "skypilot-catalog v8 aws@e385a0d3" in table.sources
    assert table.source.startswith("skypilot-catalog v8 (aws, cudo, daytona, gcp, ")
    assert len(table.source) < 250  # the report's prices line stays readable
    on_demand = [o for o in table.offers if o.price_hour is not None]
    gpus = {o.gpu for o in on_demand}
    for name in ("T4", "L4", "A10G", "H200-SXM", "L40S"):
        assert name in gpus
    for prefix in ("A100-40GB", "A100-80GB", "H100"):
        assert any(g.startswith(prefix) for g in gpus), prefix
    providers = {o.provider for o in on_demand}
    for cloud in ("aws", "gcp", "azure", "lambda", "runpod", "vast", "nebius", "oci"):
        assert cloud in providers, cloud
    # every catalog gives offers; Mithril's are spot only (its catalog's one price is spot)
    assert providers == {o.provider for o in table.offers} - {"mithril"}
    assert len(providers) + 1 == len(list((FIXTURES / "full").iterdir())) - 2  # less .md/.json
    assert {o.fetched_at for o in table.offers} == {"2026-12-02"}


def test_committed_snapshot_is_reproducible_from_the_fixtures() -> None:
    table = load_snapshot()
    offers, summaries, _ = build_snapshot.build(FIXTURES / "full", table.as_of)
    assert tuple(offers) == table.offers
    assert tuple(s.label for s in summaries) == table.sources


def test_build_snapshot_main(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "prices"
    assert build_snapshot.main(["--from", str(FIXTURES), "--out", str(out),
                                "--as-of", "2026-01-01"]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "skypilot-catalog v8 gcp@006059e0: 85 rows -> 22 offers" in printed
    assert "gcp GPU price with no host row in its zone" in printed
    table = load_snapshot(out)
    per_source = [int(n) for n in re.findall(r"rows -> (\d+) offers", printed)]
    assert table.as_of == "2026-01-01" and len(table.offers) == sum(per_source) == 230
    rejected = read_rejections(out)
    assert rejected and all(r.reason and r.action for r in rejected)
    assert {o.provider for o in table.offers} == {"aws", "azure", "gcp", "lambda", "runpod", "vast"}


def test_build_snapshot_sources_file_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    (src / "lambda").mkdir(parents=True)
    text = (FIXTURES / "skypilot_lambda" / "vms_v8_gpu_sample.csv").read_text(encoding="utf-8")
    (src / "lambda" / "vms.csv").write_text(text, encoding="utf-8")
    (src / "sources.json").write_text('{"lambda": {"commit": "abcdef0123456789"}}', "utf-8")
    offers, summaries, _ = build_snapshot.build(src, "2026-12-02")
    assert [s.label for s in summaries] == ["skypilot-catalog v8 lambda@abcdef01"]
    assert {o.source for o in offers} == {"skypilot-catalog v8 lambda@abcdef01"}
    empty = tmp_path / "empty"
    empty.mkdir()
    assert build_snapshot.main(["--from", str(empty), "--out", str(tmp_path / "o")]) == 1
    assert "error: " in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    with pytest.raises(SystemExit) as exited:  # no default folder: the catalogs are named
        build_snapshot.main(["--out", str(tmp_path / "o")])
    assert exited.value.code == 2 and "--from" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
