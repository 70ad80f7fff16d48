"""Formatting shared by the reports: CSV from dict rows, and text tables of chosen columns."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from typing import Any

from tabulate import tabulate

Column = tuple[str, str, Callable[[Any], str]]


def rows_csv(rows: Sequence[dict[str, Any]]) -> str:
    """Dict rows as CSV text with the first row's keys as header."""
    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return buf.getvalue()


def fixed(digits: int) -> Callable[[Any], str]:
    """A number with ``digits`` decimals, blank for None."""
    return lambda v: "" if v is None else f"{v:.{digits}f}"


def yes_no(v: Any) -> str:
    """``yes``/``no``, blank for None."""
    return "" if v is None else ("yes" if v else "no")


def plain(v: Any) -> str:
    """``str(v)``, blank for None."""
    return "" if v is None else str(v)


def table_text(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> str:
    """Dict rows as a text table of the columns present in the rows."""
    present = [c for c in columns if rows and c[0] in rows[0]]
    return tabulate([[fmt(r[key]) for key, _, fmt in present] for r in rows],
                    headers=[h for _, h, _ in present], disable_numparse=True)
