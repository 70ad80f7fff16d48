"""Formatting shared by the command modules: the three output formats of a listing, CSV from
dict rows, text tables of chosen columns, and fitting text to a terminal (:data:`WIDTH`
columns: tables choose their columns for it, prose lines are wrapped)."""

from __future__ import annotations

import argparse
import csv
import io
import json
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tabulate import tabulate

Column = tuple[str, str, Callable[[Any], str]]
WIDTH = 120  # the default reports fit this many columns; --wide shows every column
REGION_CHARS = 16
FORMATS = ("table", "json", "csv")  # every report and listing command's ``--format``


def add_format_flag(p: argparse.ArgumentParser) -> None:
    """``--format table|json|csv``, the same on every report and listing command."""
    p.add_argument("--format", choices=FORMATS, default="table")


def _csv_value(v: Any) -> Any:
    """Booleans as ``true``/``false`` (as JSON and most CSV readers spell them)."""
    return str(v).lower() if isinstance(v, bool) else v


def rows_csv(rows: Sequence[dict[str, Any]]) -> str:
    """Dict rows as CSV text with the first row's keys as header; booleans lowercase."""
    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: _csv_value(v) for k, v in r.items()} for r in rows)
    return buf.getvalue()


def listing(
    fmt: str,
    rows: Sequence[dict[str, Any]],
    key: str,
    table: Callable[[], str],
    *,
    head: Mapping[str, Any] | None = None,
    tail: Mapping[str, Any] | None = None,
    csv_rows: Sequence[dict[str, Any]] | None = None,
) -> str:
    """A listing in one of :data:`FORMATS`: ``csv``, the rows (or ``csv_rows``, flattened
    for CSV) with their keys as header; ``json``, ``{**head, key: rows, **tail}``; ``table``,
    what ``table()`` draws (called only then)."""
    if fmt == "csv":
        return rows_csv(rows if csv_rows is None else csv_rows).rstrip("\n")
    if fmt == "json":
        return json.dumps({**(head or {}), key: list(rows), **(tail or {})}, indent=2)
    return table()


def short_region(region: Any) -> str:
    """A region for a narrow table: a marketplace's ``City, CC, Continent`` loses the
    continent (and the city is shortened to fit), anything else longer than
    :data:`REGION_CHARS` is cut (``...``)."""
    text = "" if region is None else str(region)
    parts = [p.strip() for p in text.split(",")]
    if len(parts) == 3 and len(parts[2]) == 2 and parts[2].isupper():
        city, country = parts[0], parts[1]
        room = REGION_CHARS - len(country) - 2
        if len(city) > room:
            city = city[: room - 1] + "."
        return f"{city}, {country}"
    return text if len(text) <= REGION_CHARS else text[: REGION_CHARS - 3] + "..."


def fit_width(lines: Sequence[str], width: int = WIDTH) -> list[str]:
    """Prose lines longer than ``width`` wrapped (continuations indented); a table (an
    entry holding newlines) is left as it is."""
    out: list[str] = []
    for entry in lines:
        parts = entry.split("\n")
        if len(parts) > 1 and parts[1].startswith("-"):  # a table: header, rule, rows
            out.append(entry)
            continue
        for line in parts:
            lead = len(line) - len(line.lstrip(" "))
            out += textwrap.wrap(line, width=width, subsequent_indent=" " * (lead + 2),
                                 break_on_hyphens=False, break_long_words=False) or [""]
    return out


def compact_table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    """A text table with two spaces between columns, each as wide as its widest cell or
    header (tabulate pads every header by two more)."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def fixed(digits: int) -> Callable[[Any], str]:
    """A number with ``digits`` decimals, blank for None."""
    return lambda v: "" if v is None else f"{v:.{digits}f}"


def yes_no(v: Any) -> str:
    """``yes``/``no``, blank for None."""
    return "" if v is None else ("yes" if v else "no")


def plain(v: Any) -> str:
    """``str(v)``, blank for None."""
    return "" if v is None else str(v)


def table_text(rows: Sequence[dict[str, Any]], columns: Sequence[Column],
               compact: bool = False) -> str:
    """Dict rows as a text table of the columns present in the rows (``compact``: no
    padding beyond two spaces, :func:`compact_table`)."""
    present = [c for c in columns if rows and c[0] in rows[0]]
    cells = [[fmt(r[key]) for key, _, fmt in present] for r in rows]
    headers = [h for _, h, _ in present]
    if compact:
        return compact_table(cells, headers)
    return tabulate(cells, headers=headers, disable_numparse=True)
