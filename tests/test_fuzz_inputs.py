"""Fuzzing the real CLI entry point with generated job files, model configs, profiles and
price files (hypothesis): every case exits 0 with a finite answer, or non-zero with short
``error:`` lines; never a traceback, a hang or unbounded memory.

``GACOST_FUZZ_EXAMPLES`` sets the cases per target of the full run (default 200, marked
slow: about 20 s a target on two cores; ``bench/fuzz.py`` runs thousands); the inner loop
(``-m "not slow"``) runs a smoke test of 20 cases a target. Cases come from a fixed seed,
so a run repeats; ``GACOST_FUZZ_SEED`` picks another set.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from fuzz_cases import EXAMPLE_JOB, TARGETS, run_case, run_cli, special_files, verdict
from hypothesis import HealthCheck, given, seed, settings

from gacost.commands.cli import main

EXAMPLES = int(os.environ.get("GACOST_FUZZ_EXAMPLES", "200"))
SMOKE = 20
SEED = int(os.environ.get("GACOST_FUZZ_SEED", "14"))
MAX_SECONDS = 10.0
MAX_PEAK_MIB = 1500.0  # the child's peak RSS, interpreter and imports included


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    """Fill the caches (fitted model, GPU table, snapshot) once, before the children fork."""
    with open(os.devnull, "w") as sink:
        import contextlib
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            main(["recommend", "--job", str(EXAMPLE_JOB)])
            main(["budget", "--job", str(EXAMPLE_JOB)])


def _fuzz(name: str, robust_only: bool = False, examples: int = EXAMPLES) -> None:
    """Run the target's cases; ``robust_only`` checks only for tracebacks, hangs and
    memory (not that an exit 0 gives a finite answer)."""
    target = TARGETS[name]

    @seed(SEED)
    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(content=target.contents)
    def case(content: bytes) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            result = run_case(target, content, Path(tmp), timeout=MAX_SECONDS)
        problem = verdict(result, MAX_SECONDS)
        if robust_only and problem is not None and problem.startswith("exit 0 with"):
            problem = None
        assert problem is None, f"{problem}\nstderr: {result.stderr[-2000:]}"
        assert result.peak_mib < MAX_PEAK_MIB, f"peak RSS {result.peak_mib:.0f} MiB"

    case()


def test_fuzz_smoke() -> None:
    for name in ("job-recommend", "job-budget", "trl-config", "model-config", "profile"):
        _fuzz(name, examples=SMOKE)
    _fuzz("prices", robust_only=True, examples=SMOKE)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["job-recommend", "job-budget", "trl-config", "model-config", "profile"])
def test_fuzz(name: str) -> None:
    _fuzz(name)


@pytest.mark.slow
def test_fuzz_price_files_never_crash() -> None:
    _fuzz("prices", robust_only=True)


@pytest.mark.slow
def test_fuzz_price_files_give_finite_answers() -> None:
    """Bounded prices and real dates (issue 13's price rows): no $inf plan, no nan date."""
    _fuzz("prices")


def test_special_files_give_one_line(tmp_path: Path) -> None:
    for name, argv in special_files(tmp_path):
        result = run_cli(argv, timeout=MAX_SECONDS)
        problem = verdict(result, MAX_SECONDS)
        assert problem is None, f"{name}: {problem}\n{result.stderr[-2000:]}"
        assert result.code != 0, name
        assert result.peak_mib < MAX_PEAK_MIB, f"{name}: peak RSS {result.peak_mib:.0f} MiB"
