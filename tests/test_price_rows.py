"""One rule per price-row question: what makes two rows the same offer (``Offer.identity``,
for the quality rules, a user's price file and the cache/snapshot merge alike), what a row
must hold (the offer parser, also for ``rejected.csv``), and how a price file that cannot
be read is reported (``base.inputfile.read_text``, for every reader)."""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest

from gacost.base.errors import DataError
from gacost.base.records import Offer
from gacost.pricing import combine, quality
from gacost.pricing.price_file import CONFLICT, DUPLICATE, read_price_file
from gacost.pricing.quality import Rejection
from gacost.pricing.snapshot import (
    HEADER,
    REJECTED_EXTRA,
    REJECTED_FILE,
    SNAPSHOT_FIX,
    load_snapshot,
    read_offers_csv,
    read_rejections,
    read_rejections_file,
    write_offers_csv,
    write_rejections_csv,
    write_snapshot,
)

ROOT = Path(__file__).resolve().parent.parent


def offer(**fields: object) -> Offer:
    base: dict[str, object] = {
        "provider": "gcp", "region": "us-central1", "instance_type": "n1-highmem-8+1xT4",
        "gpu": "T4", "gpu_count": 1.0, "gpu_memory_gib": 16.0, "vcpus": 8.0,
        "ram_gib": 52.0, "price_hour": 0.8, "spot_hour": 0.3, "source": "test",
        "fetched_at": "2026-12-02",
    }  # fmt: skip
    base.update(fields)
    return Offer(**base)  # type: ignore[arg-type]


# rows a user or a catalog may repeat: exact copies, the same offer at another price, the
# same instance type claimed with another GPU or count, and distinct offers
ROWS = [
    offer(),
    offer(region="europe-west4"),
    offer(price_hour=0.9),  # same offer, another price: conflict
    offer(),  # exact copy
    offer(gpu="V100-SXM2-16GB"),  # same instance type, another GPU: conflict
    offer(gpu_count=2.0, price_hour=1.6),  # same instance type, another count: conflict
    offer(instance_type="n1-highmem-8+2xT4", gpu_count=2.0, price_hour=1.6),
    offer(provider="aws", instance_type="g4dn.xlarge"),
]


def test_identity_is_provider_region_and_instance_type() -> None:
    assert offer().identity == ("gcp", "us-central1", "n1-highmem-8+1xT4")
    assert offer(gpu="L4", gpu_count=4.0, price_hour=9.0).identity == offer().identity
    assert offer(region="x").identity != offer().identity


def test_the_quality_rules_and_a_price_file_drop_the_same_rows(tmp_path: Path) -> None:
    no_outlier_tests = quality.QualityRules(outlier_min_group=99, market_min_providers=99)
    report = quality.review_offers(ROWS, no_outlier_tests)
    assert report.kept == [ROWS[0], ROWS[1], ROWS[6], ROWS[7]]
    assert [(r.offer, r.reason) for r in report.rejections] == [
        (ROWS[2], quality.CONFLICT), (ROWS[3], quality.DUPLICATE),
        (ROWS[4], quality.CONFLICT), (ROWS[5], quality.CONFLICT),
    ]  # fmt: skip
    path = tmp_path / "mine.csv"
    write_offers_csv(path, ROWS)
    read = read_price_file(str(path))
    assert list(read.table.offers) == report.kept
    assert read.counts == {CONFLICT: 3, DUPLICATE: 1}
    assert quality.SAME_OFFER in CONFLICT and quality.SAME_OFFER in quality.CONFLICT


def test_the_merge_of_cached_sources_keys_offers_alike() -> None:
    now = datetime(2026, 12, 3, tzinfo=timezone.utc)
    first = combine.Part("first", "first", 2, now, (offer(price_hour=0.7),))
    second = combine.Part("second", "second", 1, now,
                          (offer(gpu="T4-as-named-elsewhere", price_hour=0.8), offer(region="b")))
    empty = combine.Part(combine.SNAPSHOT, "snapshot", 0, now, ())
    used = combine.merge([second, first], empty)
    # the higher-priority source's row wins its offer, even where another names its GPU
    # otherwise; the other offers of the lower one stay
    assert [(p.name, [o.region for o in p.offers]) for p in used] == [
        ("first", ["us-central1"]), ("second", ["b"])]


# -- rejected.csv: the offer parser, less what the quality rules judge


REJECTED_COLUMNS = (*HEADER, *REJECTED_EXTRA)


def _csv(columns: tuple[str, ...], *rows: dict[str, str]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _row(**cells: str) -> dict[str, str]:
    return {"provider": "seeweb", "region": "it-fr2", "instance_type": "ECS1GPU6",
            "gpu": "L4", "gpu_count": "1", "gpu_memory_gib": "24", "vcpus": "4",
            "ram_gib": "32", "price_hour": "0.38", "spot_hour": "", "source": "test",
            "fetched_at": "2026-12-02", "reason": "some rule", "action": "dropped", **cells}


def test_rows_the_rules_judged_are_read_back(tmp_path: Path) -> None:
    judged = [
        offer(region=""),  # no region
        offer(price_hour=None, spot_hour=None),  # no price
        offer(price_hour=-1.0),  # negative price
        offer(gpu_count=0.0),  # zero GPUs
        offer(gpu_count=-1.0),
        offer(price_hour=5000.0, spot_hour=None),  # absurd per GPU-hour
        offer(spot_hour=-0.5),
    ]
    rejected = [Rejection(o, f"rule {i}", quality.DROPPED) for i, o in enumerate(judged)]
    path = tmp_path / REJECTED_FILE
    write_rejections_csv(path, rejected)
    assert read_rejections_file(path) == rejected


def test_the_shipped_rejected_rows_read_back() -> None:
    rows = read_rejections()
    assert len(rows) == len((ROOT / "data" / "prices" / REJECTED_FILE).read_text(
        encoding="utf-8").strip().splitlines()) - 1
    assert {r.action for r in rows} <= {quality.DROPPED, quality.ON_DEMAND_CLEARED,
                                        quality.SPOT_CLEARED, quality.FLAGGED, quality.CORRECTED}


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        ({"price_hour": "abc"}, r"row 2, column price_hour: 'abc' is not a number"),
        ({"spot_hour": "nan"}, r"row 2, column spot_hour: 'nan' is not a finite number"),
        ({"price_hour": "inf"}, r"row 2, column price_hour: 'inf' is not a finite number"),
        ({"gpu_count": "100"}, r"row 2, column gpu_count: 100 is more than 64 GPUs"),
        ({"vcpus": "-4"}, r"row 2, column vcpus: '-4' is not a finite number >= 0"),
        ({"fetched_at": "yesterday"}, r"row 2, column fetched_at: 'yesterday' is not a date"),
        ({"gpu_count": ""}, r"row 2, column gpu_count: must be a number > 0"),
    ],
)
def test_a_malformed_rejected_row_is_refused_as_an_offer_row_is(
    tmp_path: Path, cells: dict[str, str], message: str
) -> None:
    path = tmp_path / REJECTED_FILE
    path.write_text(_csv(REJECTED_COLUMNS, _row(**cells)), encoding="utf-8")
    with pytest.raises(DataError, match=message) as caught:
        read_rejections_file(path)
    assert str(path) in str(caught.value) and "build_snapshot" in str(caught.value)
    offers = tmp_path / "offers.csv"  # the same cell in an offer row: the same words
    offers.write_text(_csv(HEADER, _row(**cells)), encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_offers_csv(offers)


def test_a_rejected_row_of_the_wrong_width_or_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / REJECTED_FILE
    path.write_text(_csv(REJECTED_COLUMNS, _row()).replace(",dropped\n", "\n"), "utf-8")
    with pytest.raises(DataError, match="row 2: 13 cells, expected 14"):
        read_rejections_file(path)
    path.write_text("provider,region\n", encoding="utf-8")
    with pytest.raises(DataError, match="bad header"):
        read_rejections_file(path)


# -- reading a price file: one helper, one set of messages

READERS: dict[str, tuple[Callable[[Path], object], str, str]] = {
    # reader, the flag it names, the advice it ends with
    "--prices": (lambda p: read_price_file(str(p)), "--prices: ", ""),
    "cache": (read_offers_csv, "", f"; {SNAPSHOT_FIX}"),
    "rejected": (read_rejections_file, "", f"; {SNAPSHOT_FIX}"),
}
PROBLEMS: dict[str, tuple[Callable[[Path], object], str]] = {
    "missing": (lambda p: None, "cannot read {path} (No such file or directory)"),
    "folder": (lambda p: p.mkdir(), "{path} is a folder; give a file"),
    "not UTF-8": (lambda p: p.write_bytes(b"provider,region\n\xff\n"),
                  "{path} is not UTF-8 text (byte 16); save it as UTF-8"),
}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("problem", PROBLEMS)
def test_every_price_reader_reports_an_unreadable_file_alike(
    tmp_path: Path, reader: str, problem: str
) -> None:
    path = tmp_path / "prices.csv"
    make, said = PROBLEMS[problem]
    make(path)
    read, flag, advice = READERS[reader]
    with pytest.raises(DataError) as caught:
        read(path)
    assert str(caught.value) == f"{flag}{said.format(path=path)}{advice}"


def test_a_snapshot_in_a_zip_is_read_through_the_same_helper(tmp_path: Path) -> None:
    folder = tmp_path / "prices"
    rejected = [Rejection(offer(region=""), "no region", quality.DROPPED)]
    write_snapshot(folder, [offer()], as_of="2026-12-02", sources=["test"], rejected=rejected)
    archive = tmp_path / "data.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name in ("snapshot.csv", "snapshot.json", REJECTED_FILE):
            zf.write(folder / name, f"prices/{name}")
        zf.writestr("prices/old/", "")
    root = zipfile.Path(archive, "prices/")  # a package resource, not a file path
    assert load_snapshot(root).offers == (offer(),)
    assert read_rejections(root) == rejected
    with pytest.raises(DataError, match=r"prices/old/ is a folder; give a file; regenerate"):
        read_rejections_file(root / "old/")
