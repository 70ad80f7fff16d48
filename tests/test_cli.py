"""The ``gacost`` command end to end: the real entry point (``main``) in-process for exit
codes, output and data; one subprocess each for the console entry point and for what a
fresh interpreter imports."""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gacost.advisor.recommend import recommend
from gacost.base.job import load_job
from gacost.base.records import Offer
from gacost.commands.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "qwen3-1.7b-lora.yaml"
JOBS = Path(__file__).parent / "fixtures" / "jobs"


def gacost(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run the CLI's entry point in this process, as ``gacost ARGS`` in ``cwd`` would."""
    out, err = io.StringIO(), io.StringIO()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse: --help, usage errors
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess(["gacost", *args], code, out.getvalue(), err.getvalue())


def test_the_console_entry_point_runs() -> None:
    result = subprocess.run([sys.executable, "-m", "gacost", "--version"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.startswith("gacost "), result.stderr


def _error_lines(stderr: str) -> list[str]:
    """The ``error:`` lines; any other stderr line may only be a one-line ``warning:``."""
    lines = stderr.strip().splitlines()
    assert all(line.startswith(("error: ", "warning: ")) for line in lines), stderr
    return [line for line in lines if line.startswith("error: ")]


def test_help_lists_the_commands() -> None:
    result = gacost("--help")
    assert result.returncode == 0
    for command in ("recommend", "calibrate", "gpus", "prices", "models"):
        assert command in result.stdout


def test_recommend_the_example() -> None:
    result = gacost("recommend", "--job", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    assert "Recommended:" in result.stdout and "per fine-tune" in result.stdout
    assert "is cheaper than" in result.stdout  # break-even lines
    assert "as of" in result.stdout


def test_default_tables_fit_120_columns_and_wide_shows_everything() -> None:
    for command in ("recommend", "budget"):
        for job in sorted(EXAMPLE.parent.glob("*.yaml")):
            narrow = gacost(command, "--job", str(job))
            assert narrow.returncode == 0, narrow.stderr
            assert max(map(len, narrow.stdout.splitlines())) <= 120, (command, job.name)
            wide = gacost(command, "--job", str(job), "--wide")
            assert "instance" in wide.stdout and "instance" not in narrow.stdout.split(
                "\n\n")[2].splitlines()[0]
    wide = gacost("recommend", "--job", str(EXAMPLE), "--wide").stdout
    for header in ("90% band", "fits VRAM", "peak GiB"):
        assert header in wide


def test_csv_writes_lowercase_booleans() -> None:
    rows = gacost("recommend", "--job", str(EXAMPLE), "--format", "csv").stdout
    fits = {row["fits"] for row in csv.DictReader(io.StringIO(rows))}
    assert fits and fits <= {"true", "false"}


def test_json_and_csv_carry_the_same_plans() -> None:
    as_json = json.loads(
        gacost("recommend", "--job", str(EXAMPLE), "--format", "json", "--top", "3").stdout
    )
    rows = gacost("recommend", "--job", str(EXAMPLE), "--format", "csv", "--top", "3").stdout
    lines = rows.strip().splitlines()
    assert len(as_json["plans"]) == 3 and len(lines) == 4
    header = lines[0].split(",")
    for key in ("gpu", "provider", "split", "seconds_per_update", "cost_per_run", "fits"):
        assert key in header and key in as_json["plans"][0]
    for plan in as_json["plans"]:
        # 5000 updates, a checkpoint every 500 (TRL's default): ten saves
        assert plan["checkpoints"] == 10 and plan["checkpoint_seconds"] > 0
        assert plan["cost_per_run"] == pytest.approx(
            (plan["seconds_per_update"] * as_json["updates"] + plan["checkpoint_seconds"])
            * plan["rate_hour"] / 3600
        )
        assert plan["cost_all_runs"] == pytest.approx(plan["cost_per_run"] * as_json["runs"])


def test_published_t4_profile_cost_is_exact() -> None:
    job = load_job(EXAMPLE).model_copy(update={"gpus": ["T4"]})
    offer = Offer("test", "r1", "t4-box", "T4", 1, 16, 4, 16, 0.526, None, "test", "2026-01-01")
    report = recommend(job, [offer])
    best = report.recommended
    e = best.estimate
    assert (e.time_source, e.micro_batch, e.grad_accum) == ("measured", 4, 1)
    assert e.seconds_per_update == 2.3792
    # and ten checkpoints of 209,190,912 bytes (tests/test_budget.py), at 1 s per GB
    assert best.cost_per_run == pytest.approx(
        (2.3792 * job.updates + 10 * 0.209190912) * 0.526 / 3600)


@pytest.mark.parametrize(
    ("job", "code", "message"),
    [
        (JOBS / "invalid" / "typo-key.yaml", 2, "did you mean 'sequence_length'"),
        (JOBS / "invalid" / "bad-yaml.yaml", 2, "line 3"),
        (JOBS / "nope.yaml", 2, "cannot read"),
    ],
)
def test_bad_jobs_exit_cleanly(job: Path, code: int, message: str) -> None:
    result = gacost("recommend", "--job", str(job))
    assert result.returncode == code
    assert _error_lines(result.stderr) and message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        ({"gpus": ["T4", "Q100"]}, 2, "unknown GPU 'Q100' (did you mean 'V100'?)"),
        ({"gpus": ["P100"]}, 2, "gpus: no spec for P100 (a GPU of the price data only)"),
        ({"providers": ["asw"]}, 2, "providers[0]: unknown provider 'asw' (did you mean 'aws'?)"),
        ({"model": "Qwen3-17B"}, 2, "model: 'Qwen3-17B' is not a shipped config"),
        (
            {"objective": "min_cost_under_deadline", "deadline_hours": 0.01},
            3,
            "raise deadline_hours to at least",
        ),
        (
            {"objective": "min_time_under_budget", "budget_usd": 0.01},
            3,
            "raise budget_usd to at least",
        ),
    ],
)
def test_impossible_or_unknown_names(
    tmp_path: Path, extra: dict[str, object], code: int, message: str
) -> None:
    text = EXAMPLE.read_text()
    if "model" in extra:
        text = text.replace("model: Qwen/Qwen3-1.7B", f"model: {extra.pop('model')}")
    path = tmp_path / "job.yaml"
    kept = [line for line in text.splitlines() if line.split(":")[0] not in extra]
    path.write_text("\n".join(kept) + "\n"
                    + "".join(f"{k}: {json.dumps(v)}\n" for k, v in extra.items()))
    result = gacost("recommend", "--job", str(path))
    assert result.returncode == code, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_corrupt_profile_and_price_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = gacost("recommend", "--job", str(EXAMPLE), "--profile", str(bad))
    assert result.returncode == 1 and "not valid JSON" in result.stderr
    prices = tmp_path / "prices.csv"
    prices.write_text("provider,region\naws,us-east-1\n")
    result = gacost("recommend", "--job", str(EXAMPLE), "--prices", str(prices))
    assert result.returncode == 1 and _error_lines(result.stderr)
    assert "Traceback" not in result.stderr


def test_user_profile_for_another_workload_is_flagged(tmp_path: Path) -> None:
    profile = (
        ROOT / "data" / "profiles" / "H200-SXM--Qwen3-1.7B--lora-r16-seq512-bf16-B4--measured.json"
    )
    result = gacost("recommend", "--job", str(EXAMPLE), "--profile", str(profile))
    assert result.returncode == 0
    assert (
        "profile for H200-SXM of another workload (precision 'bf16' vs job 'fp16'): it "
        "informs H200-SXM's host and device terms only, no measured time here"
        in " ".join(result.stdout.split())
    )


def _format_choices(parser: argparse.ArgumentParser) -> dict[str, tuple[str, ...]]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name: tuple(a.choices or ())
        for name, p in sub.choices.items()
        for a in p._actions
        if "--format" in a.option_strings
    }


def test_every_listing_and_report_command_takes_the_same_format_flag() -> None:
    choices = _format_choices(build_parser())
    assert set(choices) == {"recommend", "budget", "compare", "gpus", "prices", "models"}
    assert set(choices.values()) == {("table", "json", "csv")}


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (("gpus",), "gpus"),
        (("models",), "models"),
        (("prices",), "gpus"),
        (("prices", "--gpu", "L4"), "offers"),
        (("prices", "--compare", "L4"), "offers"),
        (("prices", "--rejected", "--provider", "gcp"), "rejected"),
        (("prices", "--list-sources"), "sources"),
    ],
)
def test_listings_carry_the_same_rows_in_json_and_csv(args: tuple[str, ...], key: str) -> None:
    as_json, as_csv = gacost(*args, "--format", "json"), gacost(*args, "--format", "csv")
    assert as_json.returncode == as_csv.returncode == 0, as_json.stderr + as_csv.stderr
    rows = json.loads(as_json.stdout)[key]
    table = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert rows and len(rows) == len(table) and list(rows[0]) == list(table[0])
    assert gacost(*args).stdout == gacost(*args, "--format", "table").stdout


def test_gpus_models_and_prices_list_the_embedded_data() -> None:
    gpus = gacost("gpus")
    assert gpus.returncode == 0 and "H200-SXM" in gpus.stdout and "T4" in gpus.stdout
    models = gacost("models")
    assert models.returncode == 0 and "Qwen/Qwen3-1.7B" in models.stdout
    prices = gacost("prices", "--gpu", "L4")
    assert prices.returncode == 0 and "L4" in prices.stdout and "as of" in prices.stdout


def test_recommend_needs_neither_torch_nor_httpx(tmp_path: Path) -> None:
    code = (
        "import sys, io, contextlib\n"
        "from gacost.commands.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main(['recommend', '--job', {str(EXAMPLE)!r}])\n"
        "mods = ('torch', 'httpx', 'transformers', 'trl', 'peft')\n"
        "heavy = [m for m in mods if m in sys.modules]\n"
        "print(rc, heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert result.stdout.strip() == "0 []", result.stderr


@pytest.mark.parametrize(("argv", "unloaded"), [
    # recommend: no other command, no SkyPilot adapter (only with --sky-task), no TRL-config
    # reader (only with --trl-config), and no numpy or scipy: predicting from the saved fit
    # is plain floats; only a fit to a profile loads them
    (["recommend", "--job", str(EXAMPLE)],
     ["gacost.commands.calibrate", "gacost.commands.budget", "gacost.commands.prices",
      "gacost.launch.skypilot", "gacost.calibration.trl_config", "numpy", "scipy"]),
    # listing GPUs loads no model (numpy, pydantic) and no prices
    (["gpus"], ["numpy", "pydantic", "gacost.advisor.predictor", "gacost.pricing.snapshot"]),
])
def test_a_command_loads_only_what_it_uses(tmp_path: Path, argv: list[str],
                                           unloaded: list[str]) -> None:
    """The command line imports the module of the command given, not all seven (start-up
    time: bench/RESULTS.md, "recommend's start-up")."""
    code = (
        "import sys, io, contextlib\n"
        "from gacost.commands.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    rc = main({argv!r})\n"
        f"print(rc, [m for m in {unloaded!r} if m in sys.modules])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert result.stdout.strip() == "0 []", result.stdout + result.stderr


def test_flags_are_taken_only_as_spelled() -> None:
    """``--gpu`` is not an abbreviation of ``--gpus-per-run`` (it failed with "expected an
    integer, got 'H200-SXM'")."""
    done = gacost("recommend", "--job", str(EXAMPLE), "--gpu", "H200-SXM")
    assert done.returncode == 2
    assert "unrecognized arguments: --gpu H200-SXM" in done.stderr
    assert "expected an integer" not in done.stderr
    assert gacost("prices", "--gpu", "H100").returncode == 0
