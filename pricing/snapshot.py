"""The embedded price snapshot: ``prices/snapshot.csv`` plus ``prices/snapshot.json``.

The CSV has exactly the columns of :data:`HEADER` (an empty cell is None); prices are USD
per instance-hour with at most 6 decimals. The JSON holds ``{"as_of", "sources", "rows"}``
and ``price_dates`` (per provider, the date of its prices apart from ``as_of``, the day
they were read: :mod:`gacost.pricing.price_dates`).
Both live in the package ``gacost.data`` (the repository's ``data/`` directory) and are
rebuilt by ``python -m gacost.pricing.build_snapshot``. Every write is atomic.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from gacost.base.atomic import atomic_open
from gacost.base.errors import DataError
from gacost.base.inputfile import read_text
from gacost.base.records import Offer
from gacost.pricing.price_dates import PriceDate, parse_price_dates
from gacost.pricing.quality import Rejection

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

HEADER: tuple[str, ...] = (
    "provider", "region", "instance_type", "gpu", "gpu_count", "gpu_memory_gib",
    "vcpus", "ram_gib", "price_hour", "spot_hour", "source", "fetched_at",
)  # fmt: skip
_TEXT_COLUMNS = ("provider", "region", "instance_type", "gpu", "source", "fetched_at")
_OPTIONAL_NUMBERS = ("gpu_memory_gib", "vcpus", "ram_gib", "price_hour", "spot_hour")
# plausibility bounds of a price row: the dearest GPU rows of the 21 catalogs are under
# 20 USD per GPU-hour and 16 GPUs per instance
MAX_USD_PER_GPU_HOUR = 1000.0
MAX_GPUS_PER_OFFER = 64
# the most bytes of a price file read: the snapshot is 0.5 MB, a cloud's GPU rows a few MB
MAX_PRICE_FILE_BYTES = 32 << 20
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ][0-9:.+\-Z]*)?$")
_FIX = "regenerate it with `python -m gacost.pricing.build_snapshot` or restore it from git"
SNAPSHOT_FIX = _FIX  # the advice that ends every DataError raised here
_DATA_PACKAGE = "gacost.data"
REJECTED_FILE = "rejected.csv"
REJECTED_EXTRA = ("reason", "action")


@dataclass(frozen=True)
class PriceTable:
    """The offers of one price snapshot, where they come from, and their date."""

    offers: tuple[Offer, ...]
    source: str
    as_of: str
    sources: tuple[str, ...] = ()  # every source label in full (``source`` may summarise)
    # provider -> the date of the snapshot's prices of that provider (``as_of`` is the day
    # they were read)
    price_dates: Mapping[str, PriceDate] = field(default_factory=dict)


# --- reading -------------------------------------------------------------------------


def read_offers_csv(
    source: str | os.PathLike[str], *, name: str | None = None, fix: str = _FIX
) -> list[Offer]:
    """Read offers from a snapshot CSV file, or from its text.

    A path object is always a file; a string is CSV text when it holds a newline or a
    comma, and a file name otherwise. Any defect raises :class:`DataError` naming the
    file, the row (1 = header) and the column, and ending in ``fix``.
    """
    if isinstance(source, str) and ("\n" in source or "," in source):
        return parse_offers_csv(source, name or "<price CSV text>", fix=fix)
    path = Path(source)
    text = read_text(path, "", DataError, MAX_PRICE_FILE_BYTES, fix=fix)
    return parse_offers_csv(text, name or str(path), fix=fix)


def parse_offers_csv(
    text: str, name: str, *, fix: str = _FIX, required: Sequence[str] = HEADER
) -> list[Offer]:
    """Parse price CSV ``text`` by column name (any order); ``name`` and ``fix`` go into
    error messages. Columns of :data:`HEADER` outside ``required`` may be left out."""
    if not text.strip():
        raise DataError(f"{name}: the price file is empty; {fix}")
    reader = csv.reader(io.StringIO(text), strict=True)
    try:
        header = [h.strip() for h in next(reader)]
        _check_header(header, name, fix, required)
        in_order = tuple(header) == HEADER
        offers = [
            (in_order and _plain_offer(r))
            or _parse_record(dict(zip(header, r, strict=False)), len(r), len(header),
                             reader.line_num, name, fix)
            for r in reader
            if r
        ]  # fmt: skip
    except csv.Error as exc:
        raise DataError(f"{name} row {reader.line_num}: malformed CSV ({exc}); {fix}") from exc
    if not offers:
        raise DataError(f"{name}: the price file has a header but no offers; {fix}")
    return offers


def _check_header(header: list[str], name: str, fix: str, required: Sequence[str]) -> None:
    missing = [c for c in required if c not in header]
    extra = [c for c in header if c not in HEADER]
    repeated = sorted({c for c in header if header.count(c) > 1})
    if missing or extra or repeated:
        parts = []
        if missing:
            parts.append(f"missing column(s) {', '.join(missing)}")
        if extra:
            parts.append(f"unknown column(s) {', '.join(extra)}")
        if repeated:
            parts.append(f"repeated column(s) {', '.join(repeated)}")
        raise DataError(
            f"{name} row 1: bad header ({'; '.join(parts)}); the columns are "
            f"{','.join(HEADER)}; {fix}"
        )


def _plain_offer(row: Sequence[str]) -> Offer | None:
    """A price row in :data:`HEADER`'s order as an :class:`Offer` when every cell passes
    :func:`_parse_record`'s checks, else None for that function to name the defect.

    The same rules as plain comparisons: the embedded snapshot's 4,912 rows are read on
    every ``recommend``, and naming each cell for an error that never comes was a quarter
    of the read (45 -> 34 ms; ``bench/RESULTS.md``, start-up).
    """
    if len(row) != len(HEADER):
        return None
    (provider, region, instance_type, gpu, count_text, *number_texts, source,
     fetched_at) = (cell.strip() for cell in row)  # fmt: skip
    if not (provider and region and instance_type and gpu and source and fetched_at
            and _DATE.match(fetched_at)):
        return None
    try:
        count = float(count_text)
        memory, vcpus, ram, price, spot = (float(t) if t else None for t in number_texts)
    except ValueError:
        return None
    if not 0.0 < count <= MAX_GPUS_PER_OFFER or (price is None and spot is None):
        return None
    most = MAX_USD_PER_GPU_HOUR * count
    for value, limit in ((memory, math.inf), (vcpus, math.inf), (ram, math.inf),
                         (price, most), (spot, most)):  # fmt: skip
        if value is not None and not (0.0 <= value <= limit and math.isfinite(value)):
            return None
    return Offer(provider=provider, region=region, instance_type=instance_type, gpu=gpu,
                 gpu_count=count, gpu_memory_gib=memory, vcpus=vcpus, ram_gib=ram,
                 price_hour=price, spot_hour=spot, source=source, fetched_at=fetched_at)


def _parse_record(
    cells: dict[str, str], width: int, expected: int, row: int, name: str, fix: str,
    *, rejected: bool = False,
) -> Offer:
    """One price row as an :class:`Offer`, every cell checked, or a :class:`DataError`
    naming the row and column.

    ``rejected``: a row of ``rejected.csv``, one a quality rule acted on. What those rules
    judge (an empty cell, no price, a price or GPU count that is zero, negative or absurd)
    may be the very reason it is listed, so it is not an error there; the form of every
    cell (the row's width, a finite number, at most :data:`MAX_GPUS_PER_OFFER` GPUs, a
    size of 0 or more, a date) is checked as for an offer.
    """
    if width != expected:
        raise DataError(f"{name} row {row}: {width} cells, expected {expected}; {fix}")
    where = f"{name} row {row}, column"
    for column in _TEXT_COLUMNS:
        if column in cells and not cells[column].strip() and not rejected:
            raise DataError(f"{where} {column}: empty; {fix}")
    # in a rejected row a count or price below 0 is for the quality rules to judge
    least = None if rejected else 0.0
    count = _number(cells["gpu_count"], f"{where} gpu_count", fix, least=least)
    if count is None or (count <= 0 and not rejected):
        raise DataError(f"{where} gpu_count: must be a number > 0; {fix}")
    if count > MAX_GPUS_PER_OFFER:
        raise DataError(f"{where} gpu_count: {count:g} is more than {MAX_GPUS_PER_OFFER} "
                        f"GPUs in one instance; {fix}")
    values = {
        c: _number(cells.get(c, ""), f"{where} {c}", fix,
                   least=least if c in ("price_hour", "spot_hour") else 0.0)
        for c in _OPTIONAL_NUMBERS
    }  # fmt: skip
    if values["price_hour"] is None and values["spot_hour"] is None and not rejected:
        raise DataError(f"{where} price_hour: empty, and so is spot_hour; {fix}")
    for column in ("price_hour", "spot_hour"):
        price = values[column]
        if price is not None and price > MAX_USD_PER_GPU_HOUR * count and not rejected:
            raise DataError(f"{where} {column}: {price:.6g} USD per hour is more than "
                            f"{MAX_USD_PER_GPU_HOUR:g} per GPU; {fix}")
    fetched = cells.get("fetched_at", "").strip()
    if fetched and not _DATE.match(fetched):
        raise DataError(f"{where} fetched_at: {fetched[:40]!r} is not a date like 2026-12-02; "
                        f"{fix}")
    return Offer(
        provider=cells["provider"].strip(),
        region=cells["region"].strip(),
        instance_type=cells["instance_type"].strip(),
        gpu=cells["gpu"].strip(),
        gpu_count=count,
        gpu_memory_gib=values["gpu_memory_gib"],
        vcpus=values["vcpus"],
        ram_gib=values["ram_gib"],
        price_hour=values["price_hour"],
        spot_hour=values["spot_hour"],
        source=cells.get("source", name).strip() or name,
        fetched_at=cells.get("fetched_at", "").strip(),
    )


def _number(value: str, where: str, fix: str = _FIX, *, least: float | None = 0.0
            ) -> float | None:
    """The number in a cell (None when empty): finite, and at least ``least`` unless None."""
    text = value.strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        raise DataError(f"{where}: {value[:40]!r} is not a number; {fix}") from None
    if not math.isfinite(number) or (least is not None and number < least):
        at_least = "" if least is None else f" >= {least:g}"
        raise DataError(f"{where}: {value[:40]!r} is not a finite number{at_least}; {fix}")
    return number


# --- writing -------------------------------------------------------------------------


def write_offers_csv(path: str | os.PathLike[str], offers: Iterable[Offer]) -> None:
    """Write offers as snapshot CSV, atomically: the old file stays if anything fails."""
    with atomic_open(Path(path)) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(HEADER)
        for offer in offers:
            writer.writerow(_offer_cells(offer))


def write_snapshot(
    directory: str | os.PathLike[str],
    offers: Sequence[Offer],
    *,
    as_of: str,
    sources: Sequence[str],
    rejected: Sequence[Rejection] = (),
    price_dates: Mapping[str, PriceDate] | None = None,
) -> None:
    """Write ``snapshot.csv``, ``rejected.csv`` (every row a quality rule dropped, changed
    or flagged, with its reason) and then ``snapshot.json`` (with ``price_dates`` when
    given), each atomically."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    write_offers_csv(folder / "snapshot.csv", offers)
    write_rejections_csv(folder / REJECTED_FILE, rejected)
    meta: dict[str, object] = {"as_of": as_of, "sources": list(sources), "rows": len(offers)}
    if price_dates:
        meta["price_dates"] = {p: d.as_dict() for p, d in sorted(price_dates.items())}
    with atomic_open(folder / "snapshot.json") as handle:
        handle.write(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")


def write_rejections_csv(path: str | os.PathLike[str], rejected: Iterable[Rejection]) -> None:
    """Rejected rows as snapshot CSV plus ``reason`` and ``action`` columns, atomically."""
    with atomic_open(Path(path)) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([*HEADER, *REJECTED_EXTRA])
        for item in rejected:
            writer.writerow([*_offer_cells(item.offer), item.reason, item.action])


def read_rejections(folder: Traversable | None = None) -> list[Rejection]:
    """The rejected rows stored beside a snapshot (none when the file is absent)."""
    base = folder if folder is not None else _embedded_prices()
    resource = base / REJECTED_FILE
    if not resource.is_file():
        return []
    return read_rejections_file(resource)


def read_rejections_file(resource: Traversable | Path) -> list[Rejection]:
    """The rejected rows of one ``rejected.csv`` file (a snapshot's or a cache's), each
    row checked as an offer row is, less what the quality rules judge (:func:`_parse_record`)."""
    name = str(resource)
    columns = (*HEADER, *REJECTED_EXTRA)
    reader = csv.reader(io.StringIO(_read_resource(resource)), strict=True)
    out = []
    try:
        if tuple(next(reader, ())) != columns:
            raise DataError(f"{name}: bad header; {_FIX}")
        for row in reader:
            if not row:
                continue
            cells = dict(zip(columns, row, strict=False))
            offer = _parse_record(cells, len(row), len(columns), reader.line_num, name, _FIX,
                                  rejected=True)
            out.append(Rejection(offer, cells["reason"], cells["action"]))
    except csv.Error as exc:
        raise DataError(f"{name} row {reader.line_num}: malformed CSV ({exc}); {_FIX}") from exc
    return out


def _offer_cells(offer: Offer) -> list[str]:
    return [
        offer.provider,
        offer.region,
        offer.instance_type,
        offer.gpu,
        _format(offer.gpu_count),
        _format(offer.gpu_memory_gib),
        _format(offer.vcpus),
        _format(offer.ram_gib),
        _format(offer.price_hour),
        _format(offer.spot_hour),
        offer.source,
        offer.fetched_at,
    ]


def _format(value: float | None) -> str:
    if value is None:
        return ""
    rounded = round(float(value), 6)
    if rounded.is_integer():
        return str(int(rounded))
    return repr(rounded)


# --- the embedded snapshot -------------------------------------------------------------


def load_snapshot(folder: Traversable | None = None) -> PriceTable:
    """Load the embedded snapshot (or the one in ``folder``) with its date and sources."""
    base = folder if folder is not None else _embedded_prices()
    csv_file, meta_file = base / "snapshot.csv", base / "snapshot.json"
    offers = parse_offers_csv(_read_resource(csv_file), str(csv_file))
    as_of, sources, rows, dates = _read_meta(_read_resource(meta_file), str(meta_file))
    if rows != len(offers):
        raise DataError(f"{meta_file}: says {rows} rows but {csv_file} has {len(offers)}; {_FIX}")
    return PriceTable(
        offers=tuple(offers), source=summarize_sources(sources), as_of=as_of,
        sources=tuple(sources), price_dates=dates,
    )  # fmt: skip


def summarize_sources(labels: Sequence[str]) -> str:
    """One short line for many catalog labels: ``skypilot-catalog v8 (aws, gcp, ...)``;
    the commits stay in ``snapshot.json`` and ``SOURCES.md``."""
    groups: dict[str, list[str]] = {}
    for label in labels:
        head, sep, tail = label.partition(" v8 ")
        if sep:
            groups.setdefault(f"{head} v8", []).append(tail.split("@")[0])
        else:
            groups.setdefault(label, [])
    return "; ".join(f"{h} ({', '.join(c)})" if c else h for h, c in groups.items())


def _embedded_prices() -> Traversable:
    try:
        return resources.files(_DATA_PACKAGE) / "prices"
    except ModuleNotFoundError:
        raise DataError(
            f"the data package {_DATA_PACKAGE!r} is not installed; reinstall gacost "
            "(`pip install -e .` in a checkout)"
        ) from None


def _read_resource(resource: Traversable | Path) -> str:
    """A file of the snapshot (or of the cache), read as every price file is."""
    return read_text(resource, "", DataError, MAX_PRICE_FILE_BYTES, fix=_FIX)


def _read_meta(text: str, name: str) -> tuple[str, list[str], int, dict[str, PriceDate]]:
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"{name}: not valid JSON ({exc}); {_FIX}") from None
    if not isinstance(meta, dict):
        raise DataError(f"{name}: expected a JSON object; {_FIX}")
    as_of, sources, rows = meta.get("as_of"), meta.get("sources"), meta.get("rows")
    if not isinstance(as_of, str) or not as_of:
        raise DataError(f"{name}: 'as_of' must be a date string; {_FIX}")
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise DataError(f"{name}: 'sources' must be a list of strings; {_FIX}")
    if not isinstance(rows, int) or isinstance(rows, bool):
        raise DataError(f"{name}: 'rows' must be an integer; {_FIX}")
    dates = parse_price_dates(meta.get("price_dates", {}), name, _FIX)
    return as_of, sources, rows, dates
