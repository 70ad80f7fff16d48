"""Fuzz benchmark: generated bad inputs through the real CLI entry point, counted.

Runs every target of ``tests/fuzz_cases.py`` (job files through ``recommend`` and
``budget``, model configs, profiles, price files) plus the special files (FIFO, devices,
folders, big files), each case in a forked child with a timeout and a memory cap, and
prints per target: cases, exit codes, failures (tracebacks, hangs, long or unnamed errors),
the slowest case and the largest peak RSS. Writes the same as JSON.

    python bench/fuzz.py --cases 1000 --json bench/results/fuzz.json

Exit code 1 when any case failed; the first failures are printed with their input.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fuzz_cases import (  # type: ignore[import-not-found]  # noqa: E402
    EXAMPLE_JOB,
    TARGETS,
    Result,
    anonymous,
    run_case,
    run_cli,
    special_files,
    verdict,
)
from hypothesis import HealthCheck, given, settings  # noqa: E402

from gacost.commands.cli import main  # noqa: E402


class Stats:
    """What one target's cases did."""

    def __init__(self) -> None:
        self.cases = 0
        self.codes: collections.Counter[int] = collections.Counter()
        self.failures: list[tuple[str, str]] = []
        self.slowest = (0.0, "")
        self.peak = (0.0, "")
        self.first_errors: collections.Counter[str] = collections.Counter()

    def add(self, label: str, result: Result, max_seconds: float) -> None:
        self.cases += 1
        self.codes[result.code] += 1
        problem = verdict(result, max_seconds)
        if problem is not None:
            stderr = result.stderr.strip().replace("\n", " | ")[:300]
            self.failures.append((problem, f"{label[:4000]} -> stderr: {stderr}"))
        if result.seconds > self.slowest[0]:
            self.slowest = (result.seconds, label[:120])
        if result.peak_mib > self.peak[0]:
            self.peak = (result.peak_mib, label[:120])
        errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error: ")]
        if errors:
            field = errors[0].removeprefix("error: ").split(":")[0][:40]
            self.first_errors[field] += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "exit_codes": dict(sorted(self.codes.items())),
            "failures": len(self.failures),
            "tracebacks": sum(1 for p, _ in self.failures if p.startswith("traceback")),
            "timeouts": sum(1 for p, _ in self.failures if p.startswith("ran over")),
            "slowest_s": round(self.slowest[0], 3),
            "slowest_case": self.slowest[1],
            "peak_rss_mib": round(self.peak[0], 1),
            "peak_case": self.peak[1],
            "first_failures": [{"problem": p, "input": i} for p, i in self.failures[:5]],
            "top_error_fields": dict(self.first_errors.most_common(8)),
        }


def fuzz_target(name: str, cases: int, max_seconds: float, seed: int | None) -> Stats:
    target = TARGETS[name]
    stats = Stats()

    @settings(max_examples=cases, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(content=target.contents)
    def case(content: bytes) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            result = run_case(target, content, Path(tmp), timeout=max_seconds)
        stats.add(repr(content[:4000]), result, max_seconds)

    if seed is not None:
        from hypothesis import seed as with_seed
        case = with_seed(seed)(case)
    case()
    return stats


def main_bench() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=400, help="cases per target")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per case")
    parser.add_argument("--seed", type=int, default=None, help="fixed hypothesis seed")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--target", action="append", choices=sorted(TARGETS),
                        help="only this target (repeatable)")
    args = parser.parse_args()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), \
            contextlib.redirect_stderr(sink):  # warm the caches before forking
        main(["recommend", "--job", str(EXAMPLE_JOB)])
        main(["budget", "--job", str(EXAMPLE_JOB)])
    results: dict[str, Stats] = {}
    started = time.perf_counter()
    for name in args.target or list(TARGETS):
        results[name] = fuzz_target(name, args.cases, args.timeout, args.seed)
    special = Stats()
    with tempfile.TemporaryDirectory() as tmp:
        for label, argv in special_files(Path(tmp)):
            special.add(label, anonymous(run_cli(argv, timeout=args.timeout), Path(tmp)),
                        args.timeout)
    results["special files"] = special
    wall = time.perf_counter() - started
    header = f"{'target':<15} {'cases':>6} {'exit 0/1/2/3':>16} {'fail':>5} {'tracebacks':>10} " \
             f"{'slowest s':>9} {'peak MiB':>9}"
    print(header)
    print("-" * len(header))
    for name, s in results.items():
        codes = "/".join(str(s.codes.get(c, 0)) for c in (0, 1, 2, 3))
        d = s.as_dict()
        print(f"{name:<15} {s.cases:>6} {codes:>16} {len(s.failures):>5} {d['tracebacks']:>10} "
              f"{s.slowest[0]:>9.2f} {s.peak[0]:>9.0f}")
    total = sum(s.cases for s in results.values())
    failed = sum(len(s.failures) for s in results.values())
    print(f"\n{total} cases in {wall:.0f} s, {failed} failed")
    for name, s in results.items():
        for problem, label in s.failures[:3]:
            print(f"  {name}: {problem}\n    input: {label[:700]}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
                       f"{platform.python_version()}",
            "cases_per_target": args.cases,
            "timeout_s": args.timeout,
            "wall_s": round(wall, 1),
            "total_cases": total,
            "total_failures": failed,
            "targets": {n: s.as_dict() for n, s in results.items()},
        }, indent=2) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main_bench())
