"""The split of an effective batch: ``micro_batch`` sequences per forward and backward pass
times ``grad_accum`` passes per optimizer update, written ``4x2``.

:class:`Split` is the one value type of a split, ``str(split)`` its one formatter and
:meth:`Split.parse` its one parser: reports, ``calibrate --splits``, profile messages and
plots all go through them. A split is a named pair, so ``m, k = split`` and sorting (by
micro-batch, then accumulation steps) work as for the ``(m, k)`` tuples it replaces.
Records saved to disk (profiles, calibration requests, the JSON reports) keep their
``micro_batch`` and ``grad_accum`` fields; they offer the pair as a ``split`` property.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from gacost.base.errors import JobSpecError

# "4x2", "4X2" or "4*2", spaces around the parts allowed
_SPLIT_TEXT = re.compile(r"\s*(\d+)\s*[xX*]\s*(\d+)\s*")


class Split(NamedTuple):
    """``micro_batch`` sequences per pass x ``grad_accum`` passes per optimizer update (per
    GPU: a data-parallel run multiplies the effective batch by its GPU count)."""

    micro_batch: int
    grad_accum: int

    @property
    def effective_batch(self) -> int:
        """Sequences per optimizer update on one GPU: ``micro_batch x grad_accum``."""
        return self.micro_batch * self.grad_accum

    def __str__(self) -> str:
        return f"{self.micro_batch}x{self.grad_accum}"

    @classmethod
    def parse(cls, text: str) -> Split:
        """``"4x2"`` -> ``Split(4, 2)``; :class:`JobSpecError` naming ``text`` when it is
        not ``MxK`` with both parts at least 1."""
        found = _SPLIT_TEXT.fullmatch(text)
        if not found:
            raise JobSpecError(f"'{text}' is not of the form MxK (e.g. 2x2)")
        split = cls(int(found.group(1)), int(found.group(2)))
        if split.micro_batch < 1 or split.grad_accum < 1:
            raise JobSpecError(
                f"'{text}': the micro-batch and the accumulation steps are each at least 1"
            )
        return split
